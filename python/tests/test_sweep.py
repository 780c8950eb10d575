"""sweep(): the results directory, resume, bad input."""

import json
import subprocess
import sys
import time

import pytest

import schedlab


def without_wall(df):
    return df[[c for c in df.columns if "wall" not in c]]


def test_sweep_keywords_and_file_give_the_same_summary(tmp_path, sweep_file):
    a = schedlab.sweep(file=sweep_file, out=tmp_path / "a", jobs=2)
    b = schedlab.sweep(machine="smp:cpus=4", workloads=["hackbench:groups=1,loops=40"], seeds=3,
                       grid={"kernel.wakelist": ["on_cpu_nr_le1", "idle"], "kernel.hz": [250, 1000]},
                       out=tmp_path / "b", jobs=1)
    assert len(a) == 12 and list(a.columns[:3]) == ["kernel.hz", "kernel.wakelist", "seed"]
    assert without_wall(a).equals(without_wall(b))
    assert (a.error == "").all()
    assert (tmp_path / "a" / "manifest.json").exists()
    assert len(list((tmp_path / "a").glob("*.json"))) == 12 + 2  # points, manifest, plan
    # Numbers come back as numbers, so 250 sorts before 1000; words stay text.
    assert a["kernel.hz"].dtype.kind == "i" and set(a["kernel.hz"]) == {250, 1000}
    assert list(a.sort_values("kernel.hz")["kernel.hz"].iloc[[0, -1]]) == [250, 1000]
    assert set(a["kernel.wakelist"]) == {"on_cpu_nr_le1", "idle"}


def test_resume_after_a_kill_gives_the_same_summary(tmp_path, sweep_file):
    whole = schedlab.sweep(file=sweep_file, out=tmp_path / "whole")
    out = tmp_path / "killed"
    code = ("import schedlab, sys; "
            f"schedlab.sweep(file={str(sweep_file)!r}, out={str(out)!r}, jobs=1)")
    p = subprocess.Popen([sys.executable, "-c", code])
    while len(list(out.glob("*.json"))) < 5 and p.poll() is None:  # manifest, plan + 3 runs
        time.sleep(0.001)
    p.kill()
    p.wait()
    resumed = schedlab.sweep(file=sweep_file, out=out, resume=True)
    assert without_wall(resumed).equals(without_wall(whole))


def test_variants_cross_the_grid(tmp_path):
    df = schedlab.sweep(machine="smp:cpus=2", workloads=["pipe:loops=200"], seeds=[5],
                        grid={"kernel.hz": [250, 1000]},
                        variants={"base": {}, "noqueue": {"kernel.features.TTWU_QUEUE": False}},
                        metrics=["totals.ttwu_wakelist", "benchmark.usecs_per_op"], out=tmp_path / "v")
    assert list(df.columns) == ["variant", "kernel.hz", "seed", "totals.ttwu_wakelist",
                                "benchmark.usecs_per_op", "error"]
    assert (df[df.variant == "noqueue"]["totals.ttwu_wakelist"] == 0).all()


@pytest.mark.parametrize("kw, match", [
    (dict(grid={"kernel.nope": [1]}), r'key `grid."kernel.nope"`'),
    (dict(grid={"kernel.hz": []}), r"empty list"),
    (dict(seeds=0), r"key `seeds`"),
])
def test_bad_sweeps_raise_input_error(kw, match):
    with pytest.raises(schedlab.InputError, match=match):
        schedlab.sweep(workloads=["pipe"], **kw)


def test_malformed_file_and_foreign_directory(tmp_path, sweep_file):
    bad = tmp_path / "bad.toml"
    bad.write_text("seeds = 2\n[grid\n")
    with pytest.raises(schedlab.InputError, match=r"bad.toml:2: malformed TOML"):
        schedlab.sweep(file=bad)
    out = tmp_path / "o"
    schedlab.sweep(file=sweep_file, out=out)
    with pytest.raises(schedlab.InputError, match=r"manifest.json.*another sweep"):
        schedlab.sweep(workloads=["pipe:loops=100"], out=out)
    df = schedlab.sweep(workloads=["pipe:loops=100"], out=out, force=True)
    assert len(df) == 1
    assert json.loads((out / "manifest.json").read_text())["sweep_file"] == "<sweep()>"
