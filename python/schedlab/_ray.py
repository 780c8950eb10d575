"""The Ray backend of :func:`schedlab.sweep`: each point is a Ray task.

The driver prepares the results directory, submits the points that must
run, and records each result as soon as its task ends, so a killed sweep
resumes like the local one. Workers import ``schedlab`` themselves: on a
cluster, install the package on every node (or ship it with a
``runtime_env``).
"""

from __future__ import annotations

import socket
from typing import List, Optional
from urllib.parse import urlparse

from . import _native
from ._native import InputError


def _check_reachable(address: str) -> None:
    """Fail fast, with a clear message, on an address nobody listens on."""
    if address == "auto" or address.startswith("local"):
        return
    url = urlparse(address if "://" in address else f"tcp://{address}")
    if not url.hostname or not url.port:
        raise InputError(f"Ray address `{address}`: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((url.hostname, url.port), timeout=5).close()
    except OSError as e:
        raise InputError(f"Ray address `{address}`: unreachable ({e})") from None


def _check_same_cluster(ray, address: Optional[str]) -> None:
    """An address given while this process is already connected must be that
    connection's: Ray cannot join a second cluster, and ignoring the address
    would run the sweep somewhere the caller did not ask for."""
    if address is None or address == "auto":
        return
    current = ray.get_runtime_context().gcs_address
    wanted = address.split("://", 1)[-1]
    if wanted != current:
        raise InputError(
            f"Ray address `{address}`: this process is already connected to Ray at {current}; "
            "leave the address out to use that one, or call ray.shutdown() first")


def _init(address: Optional[str]):
    try:
        import ray
    except ImportError:
        raise InputError("backend=\"ray\" needs Ray: pip install ray") from None
    if ray.is_initialized():
        _check_same_cluster(ray, address)
    else:
        if address is not None:
            _check_reachable(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise InputError(f"Ray address `{address}`: cannot connect: {e}") from None
    return ray


def sweep_ray(plan: str, out: str, resume: bool, force: bool, address: Optional[str]) -> List[str]:
    """Run ``plan`` on Ray into ``out``; the failures."""
    import json

    ray = _init(address)
    started, todo = _native.open(plan, out, resume, force)
    points = json.loads(plan)["points"]

    @ray.remote(num_cpus=1)
    def run_point(scenario: str):
        from schedlab import _native as native

        return native.run_point(scenario)

    pending = {run_point.remote(points[i]["scenario"]): i for i in todo}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            try:
                ok, text = ray.get(ref)
            except Exception as e:  # a worker died: record it, go on
                ok, text = False, f"Ray task failed: {e}"
            _native.record(plan, out, i, ok, text)
    return _native.finish(plan, out, started)
