# %% [markdown]
# # The wakelist policy, in Python
# Run from the repository root after `pip install ./python` (add `ray` for the last cell).

# %%
import schedlab

r = schedlab.run(machine="xeon-8269cy", workloads=["hackbench:groups=4,loops=200"],
                 set={"kernel.wakelist": "idle"}, seed=1)
print(r.benchmark["time_s"], r.totals["context_switches"])
r.tasks.groupby("comm")[["nr_switches", "nr_migrations"]].sum()

# %% One row per tracepoint: who woke whom, on which CPU
t = r.trace()
t[t.event == "sched_wakeup"].target_cpu.value_counts().head()

# %% A/B with every run's values
c = schedlab.compare(a={"set": {"kernel.wakelist": "on_cpu_nr_le1"}}, b={"set": {"kernel.wakelist": "idle"}},
                     machine="xeon-8269cy", workloads=["hackbench:groups=1,loops=2000"], runs=5)
c.stats[c.stats.significant][["metric", "a_mean", "b_mean", "change_pct", "p_value"]]

# %% A sweep: the summary as a DataFrame, means over seeds
df = schedlab.sweep(grid={"kernel.wakelist": ["on_cpu_nr_le1", "idle"], "machine.preset": ["xeon-8269cy", "altra-80"]},
                    workloads=["hackbench:groups=1,loops=2000"], seeds=range(10), out="results/py-wakelist",
                    force=True)
df.groupby(["machine.preset", "kernel.wakelist"])["benchmark.time_s"].agg(["mean", "std"])

# %% The same sweep on Ray (a local Ray here; address="auto" for a cluster)
df_ray = schedlab.sweep(grid={"kernel.wakelist": ["on_cpu_nr_le1", "idle"], "machine.preset": ["xeon-8269cy", "altra-80"]},
                        workloads=["hackbench:groups=1,loops=2000"], seeds=range(10), out="results/py-wakelist-ray",
                        force=True, backend="ray")
