"""The Ray backend against a real local Ray (2 CPUs)."""

import os
import shutil
import subprocess

import pytest

import schedlab

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def without_wall(df):
    return df[[c for c in df.columns if "wall" not in c]]


def test_ray_gives_the_local_summary_and_resumes(tmp_path, sweep_file, local_ray):
    local = schedlab.sweep(file=sweep_file, out=tmp_path / "local")
    on_ray = schedlab.sweep(file=sweep_file, out=tmp_path / "ray", backend="ray")
    assert without_wall(on_ray).equals(without_wall(local))
    # Lose some results; resume on Ray runs only those.
    runs = sorted((tmp_path / "ray").glob("*.json"))
    points = [p for p in runs if p.name not in ("manifest.json", "plan.json")]
    for p in points[:4]:
        p.unlink()
    before = {p: p.stat().st_mtime_ns for p in points[4:]}
    again = schedlab.sweep(file=sweep_file, out=tmp_path / "ray", backend="ray", resume=True)
    assert without_wall(again).equals(without_wall(local))
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())


def test_unreachable_address_is_an_input_error(tmp_path, sweep_file):
    if ray.is_initialized():
        ray.shutdown()
    with pytest.raises(schedlab.InputError, match=r"Ray address `127.0.0.1:1`: unreachable"):
        schedlab.sweep(file=sweep_file, out=tmp_path / "x", backend="ray", address="127.0.0.1:1")


def test_an_address_other_than_the_connected_cluster_is_refused(tmp_path, sweep_file):
    if not ray.is_initialized():
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(schedlab.InputError, match="already connected to Ray at"):
            schedlab.sweep(file=sweep_file, out=tmp_path / "x", backend="ray", address="127.0.0.1:1")
    finally:
        ray.shutdown()


def test_cli_backend_ray(tmp_path, sweep_file):
    exe = os.environ.get("SCHEDLAB_BIN") or shutil.which("schedlab")
    if not exe:
        pytest.skip("no schedlab binary (set SCHEDLAB_BIN)")
    env = dict(os.environ, SCHEDLAB_PYTHON=os.sys.executable)
    r = subprocess.run([exe, "sweep", str(sweep_file), "--out", str(tmp_path / "cli"), "--backend", "ray",
                        "--quiet"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli" / "summary.csv").read_text().count("\n") == 13
    env["SCHEDLAB_PYTHON"] = "/nonexistent/python3"
    r = subprocess.run([exe, "sweep", str(sweep_file), "--out", str(tmp_path / "c2"), "--backend", "ray"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "--backend ray needs the Python package" in r.stderr
