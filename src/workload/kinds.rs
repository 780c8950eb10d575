//! The table of workload kinds: each kind's name, parameters (type,
//! default, unit), one-line doc and parser. `schedlab workloads`, the
//! unknown-kind and unknown-parameter errors and docs/model.md's list (checked
//! by a test) come from it.

use super::params::Params;
use super::{
    context1, cyclictest, fork, hackbench, irq_complete, kernbench, kthread, periodic, pipe,
    replay, rtapp, schbench, stress_ng, Workload,
};
use std::rc::Rc;

/// A parameter's type (and so its unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A whole number.
    Int,
    Bool,
    /// A time: ns, us, ms or s (`100us`, `2s`).
    Duration,
    /// A time per use: fixed (`8ms`), uniform (`1ms..3ms`) or exponential
    /// (`exp:2ms`).
    Dist,
    /// One of these words; the first is the default.
    Choice(&'static [&'static str]),
    /// A file name.
    Path,
    /// Task names (comms) separated by `|`.
    Comms,
}

/// One parameter of a workload kind.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
    /// The default as the kind's doc gives it (a value, or e.g. `(all)`).
    pub default: &'static str,
}

/// One workload kind.
pub struct Kind {
    pub name: &'static str,
    pub params: &'static [Param],
    pub doc: &'static str,
    /// Parse parameters already checked against `params`.
    pub parse: fn(&Params) -> Result<Workload, String>,
}

impl Kind {
    /// The parameter names, in the table's order.
    pub fn keys(&self) -> Vec<&'static str> {
        self.params.iter().map(|p| p.name).collect()
    }

    /// `name=default,...` (a choice lists its words, the default first).
    pub fn usage(&self) -> String {
        let param = |p: &Param| match p.ty {
            Ty::Choice(words) => format!("{}={}", p.name, words.join("|")),
            _ => format!("{}={}", p.name, p.default),
        };
        self.params.iter().map(param).collect::<Vec<_>>().join(",")
    }
}

/// The kind called `name`.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.name == name)
}

const fn p(name: &'static str, ty: Ty, default: &'static str) -> Param {
    Param { name, ty, default }
}

const POLICIES: &[&str] = &["normal", "batch", "idle", "fifo", "rr"];
/// POLICIES and SCHED_DEADLINE, for the kinds with the `dl-*` keys.
const DL_POLICIES: &[&str] = &["normal", "batch", "idle", "fifo", "rr", "deadline"];
const SPAWN: &[&str] = &["fork", "vfork", "clone"];

pub const KINDS: &[Kind] = &[
    Kind {
        name: "hackbench",
        params: &[
            p("groups", Ty::Int, "10"),
            p("fds", Ty::Int, "20"),
            p("loops", Ty::Int, "100"),
            p("datasize", Ty::Int, "100"),
            p("ipc", Ty::Choice(&["socket", "pipe"]), "socket"),
            p("mode", Ty::Choice(&["process", "thread"]), "process"),
            p("output", Ty::Choice(&["hackbench", "perf"]), "hackbench"),
            p("policy", Ty::Choice(POLICIES), "normal"),
            p("prio", Ty::Int, "50"),
            p("slice", Ty::Duration, "0"),
            p("nice", Ty::Int, "0"),
        ],
        doc: "rt-tests hackbench / perf bench sched messaging: groups of senders spraying receivers",
        parse: |p| Ok(Workload::Hackbench(hackbench::Hackbench::parse(p)?)),
    },
    Kind {
        name: "pipe",
        params: &[
            p("loops", Ty::Int, "1000000"),
            p("threads", Ty::Bool, "false"),
            p("variant", Ty::Choice(&["current", "pingpong"]), "current"),
            p("cpu", Ty::Int, "(any)"),
        ],
        doc: "perf bench sched pipe: two tasks passing tokens through two pipes",
        parse: |p| Ok(Workload::Pipe(pipe::PipeBench::parse(p)?)),
    },
    Kind {
        name: "schbench",
        params: &[
            p("m", Ty::Int, "1"),
            p("t", Ty::Int, "ncpus/m"),
            p("r", Ty::Duration, "30s"),
            p("s", Ty::Duration, "100us"),
            p("F", Ty::Int, "256"),
            p("n", Ty::Int, "5"),
            p("lock", Ty::Bool, "true"),
            p("R", Ty::Int, "0"),
        ],
        doc: "schbench (current): m message threads wake t workers each; wakeup/request latency, rps",
        parse: |p| Ok(Workload::Schbench(schbench::Schbench::parse(p, false)?)),
    },
    Kind {
        name: "schbench-old",
        params: &[
            p("m", Ty::Int, "2"),
            p("t", Ty::Int, "16"),
            p("r", Ty::Duration, "30s"),
            p("s", Ty::Duration, "30ms"),
            p("c", Ty::Duration, "30ms"),
            p("C", Ty::Duration, "0"),
            p("w", Ty::Duration, "0"),
        ],
        doc: "schbench 2016-2021: workers spin c, message threads spin C then sleep s..1.25s; wakeup latency after w of warmup",
        parse: |p| Ok(Workload::Schbench(schbench::Schbench::parse(p, true)?)),
    },
    Kind {
        name: "context1",
        params: &[
            p("copies", Ty::Int, "1"),
            p("duration", Ty::Duration, "10s"),
            p("stagger", Ty::Duration, "0"),
            p("pin", Ty::Bool, "false"),
        ],
        doc: "UnixBench pipe-based context switching: parent/child pass a counter through two pipes; stagger starts copy i i×stagger late, pin puts parent i on CPU i and its child on CPU i+1",
        parse: |p| Ok(Workload::Context1(context1::Context1::parse(p)?)),
    },
    Kind {
        name: "cyclictest",
        params: &[
            p("threads", Ty::Int, "1"),
            p("interval", Ty::Duration, "1000us"),
            p("distance", Ty::Duration, "500us"),
            p("prio", Ty::Int, "80"),
            p("policy", Ty::Choice(&["fifo", "rr", "normal", "batch", "idle"]), "fifo"),
            p("slice", Ty::Duration, "0"),
            p("loops", Ty::Int, "0"),
            p("duration", Ty::Duration, "1s"),
            p("histogram", Ty::Int, "0"),
        ],
        doc: "rt-tests cyclictest: threads sleep to absolute deadlines; wakeup latency, T: lines, -h histogram",
        parse: |p| Ok(Workload::Cyclictest(cyclictest::Cyclictest::parse(p)?)),
    },
    Kind {
        name: "periodic",
        params: &[
            p("tasks", Ty::Int, "1"),
            p("run", Ty::Dist, "8ms"),
            p("sleep", Ty::Dist, "8ms"),
            p("nice", Ty::Int, "0"),
            p("pin", Ty::Bool, "false"),
            p("barrier", Ty::Bool, "false"),
            p("mode", Ty::Choice(&["user", "kernel"]), "user"),
            p("cond_resched", Ty::Duration, "0"),
            p("atomic", Ty::Bool, "false"),
            p("policy", Ty::Choice(DL_POLICIES), "normal"),
            p("prio", Ty::Int, "50"),
            p("slice", Ty::Duration, "0"),
            p("dl-runtime", Ty::Duration, "10ms"),
            p("dl-period", Ty::Duration, "20ms"),
            p("dl-deadline", Ty::Duration, "(dl-period)"),
        ],
        doc: "tasks that run then sleep forever (durations: 8ms, 1ms..3ms, exp:2ms)",
        parse: |p| Ok(Workload::Periodic(periodic::Periodic::parse(p)?)),
    },
    Kind {
        name: "fork",
        params: &[p("mode", Ty::Choice(SPAWN), "fork"), p("loops", Ty::Int, "1000")],
        doc: "UnixBench spawn: create a child that exits at once, wait for it; vfork waits on a completion",
        parse: |p| Ok(Workload::Spawn(fork::Spawn::parse(p)?)),
    },
    Kind {
        name: "forky",
        params: &[p("count", Ty::Int, "1000"), p("mode", Ty::Choice(SPAWN), "fork")],
        doc: "seed 003's fork bomb: count forks back to back, a histogram of the time per fork",
        parse: |p| Ok(Workload::Forky(fork::Forky::parse(p)?)),
    },
    Kind {
        name: "kernbench",
        params: &[
            p("jobs", Ty::Int, "32"),
            p("files", Ty::Int, "500"),
            p("spawn", Ty::Choice(&["vfork", "fork"]), "vfork"),
        ],
        doc: "make -j: spawn sh, which runs cc1 and as, per file; reports real/user/sys like `time make`",
        parse: |p| Ok(Workload::Kernbench(kernbench::Kernbench::parse(p)?)),
    },
    Kind {
        name: "kthread",
        params: &[p("count", Ty::Int, "100")],
        doc: "kthread_create/run/park/unpark/stop of count threads through kthreadd, each step a completion",
        parse: |p| Ok(Workload::Kthread(kthread::KthreadBench::parse(p)?)),
    },
    Kind {
        name: "irq-complete",
        params: &[
            p("waiters", Ty::Int, "1"),
            p("period", Ty::Duration, "1ms"),
            p("all", Ty::Bool, "false"),
            p("cpu", Ty::Int, "0"),
            p("work", Ty::Dist, "2us"),
        ],
        doc: "N tasks wait on a completion that a periodic device interrupt completes (all: complete_all)",
        parse: |p| Ok(Workload::IrqComplete(irq_complete::IrqComplete::parse(p)?)),
    },
    Kind {
        name: "stress-ng",
        params: &[
            p("cpu", Ty::Int, "(all)"),
            p("cpu-load", Ty::Int, "100"),
            p("cpu-ops", Ty::Int, "(none)"),
            p("cpu-load-slice", Ty::Int, "64"),
            p("op-time", Ty::Dist, "1ms"),
            p("timeout", Ty::Duration, "(none)"),
            p("cpus", Ty::Int, "(all)"),
        ],
        doc: "stress-ng --cpu N --cpu-load P --cpu-ops K: workers with a self-correcting busy/sleep duty cycle",
        parse: |p| Ok(Workload::StressNg(stress_ng::StressNg::parse(p)?)),
    },
    Kind {
        name: "rtapp",
        params: &[p("file", Ty::Path, "PATH")],
        doc: "an rt-app JSON workload (tasks, phases, run/sleep/timer/lock/wait/signal/barrier/fork/suspend...); also rtapp:PATH",
        parse: |p| Ok(Workload::RtApp(Rc::new(rtapp::RtApp::parse(p)?))),
    },
    Kind {
        name: "replay",
        params: &[
            p("file", Ty::Path, "PATH"),
            p("select", Ty::Comms, "COMM|COMM"),
            p("fidelity", Ty::Bool, "false"),
            p("handover", Ty::Bool, "false"),
            p("pin", Ty::Bool, "false"),
            p("any_waker", Ty::Bool, "false"),
            p("autogroup", Ty::Bool, "true"),
        ],
        doc: "causal replay of a perf script / ftrace / trace-cmd / systrace trace (`schedlab replay FILE`)",
        parse: |p| Ok(Workload::Replay(Rc::new(replay::Replay::parse(p)?))),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec for `kind` with `key=value`, plus the file a kind needs.
    fn spec(kind: &Kind, key: &str, value: &str) -> Params {
        let file = match kind.name {
            "rtapp" => ",file=tests/data/rtapp-example.json",
            "replay" => ",file=tests/data/messaging-g1-l20.ftrace.txt",
            _ => "",
        };
        Params::parse_spec(&format!("{}:{key}={value}{file}", kind.name)).unwrap()
    }

    #[test]
    fn every_choice_and_typed_default_in_the_table_parses() {
        for kind in KINDS {
            for p in kind.params {
                let values: Vec<&str> = match p.ty {
                    Ty::Choice(words) => words.to_vec(),
                    Ty::Bool | Ty::Duration | Ty::Dist if !p.default.starts_with('(') => {
                        vec![p.default]
                    }
                    _ => continue,
                };
                for v in values {
                    let r = Workload::parse(&spec(kind, p.name, v));
                    assert!(r.is_ok(), "{}:{}={v}: {:?}", kind.name, p.name, r.err());
                }
            }
        }
    }

    #[test]
    fn a_key_outside_the_table_is_rejected_with_the_known_ones() {
        for kind in KINDS {
            let err = Workload::parse(&spec(kind, "bogus", "1")).err().unwrap();
            assert!(err.contains("unknown parameter `bogus`"), "{err}");
            assert!(err.contains(&kind.keys().join(", ")), "{err}");
        }
    }

    #[test]
    fn the_models_workload_section_names_every_kind() {
        let model = include_str!("../../docs/model.md");
        let section = model
            .split("\n## ")
            .find(|s| s.starts_with("Workloads\n"))
            .expect("docs/model.md has a `## Workloads` section");
        for kind in KINDS {
            assert!(
                section.contains(&format!("`{}`", kind.name)),
                "docs/model.md's Workloads section does not name `{}`",
                kind.name
            );
        }
    }
}
