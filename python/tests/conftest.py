import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

SWEEP = """
seeds = 3
[machine]
preset = "smp:cpus=4"
[[workload]]
kind = "hackbench"
groups = 1
loops = 40
[grid]
"kernel.wakelist" = ["on_cpu_nr_le1", "idle"]
"kernel.hz" = [250, 1000]
"""


@pytest.fixture
def sweep_file(tmp_path):
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p
