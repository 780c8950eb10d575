import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from ._ftrace import Trace as Trace
from ._native import InputError as InputError

__version__: str
Scalar = Union[str, int, float, bool]
PathLike = Union[str, os.PathLike]

class Result:
    json: Dict[str, Any]
    totals: Dict[str, Any]
    benchmark: Dict[str, Any]
    tasks: pd.DataFrame
    cpus: pd.DataFrame
    def trace(self) -> pd.DataFrame: ...
    def ftrace(self) -> Trace: ...

class Comparison:
    json: Dict[str, Any]
    runs: pd.DataFrame
    stats: pd.DataFrame

def run(
    *,
    scenario: Optional[PathLike] = ...,
    machine: Optional[str] = ...,
    workloads: Optional[Sequence[str]] = ...,
    cgroups: Optional[Sequence[str]] = ...,
    set: Optional[Mapping[str, Scalar]] = ...,
    seed: Optional[int] = ...,
    duration: Union[str, float, None] = ...,
    trace: bool = ...,
    trace_decisions: bool = ...,
) -> Result: ...
def trace(path: PathLike) -> Trace: ...
def compare(
    a: Optional[Mapping[str, Any]] = ...,
    b: Optional[Mapping[str, Any]] = ...,
    *,
    runs: int = ...,
    variants: Optional[Mapping[str, Mapping[str, Any]]] = ...,
    **common: Any,
) -> Comparison: ...
def sweep(
    *,
    file: Optional[PathLike] = ...,
    scenario: Optional[PathLike] = ...,
    machine: Optional[str] = ...,
    workloads: Optional[Sequence[str]] = ...,
    cgroups: Optional[Sequence[str]] = ...,
    set: Optional[Mapping[str, Scalar]] = ...,
    seeds: Union[int, Iterable[int], None] = ...,
    grid: Optional[Mapping[str, Sequence[Scalar]]] = ...,
    variants: Optional[Mapping[str, Mapping[str, Scalar]]] = ...,
    metrics: Optional[Sequence[str]] = ...,
    out: Optional[PathLike] = ...,
    jobs: Optional[int] = ...,
    resume: bool = ...,
    force: bool = ...,
    backend: str = ...,
    address: Optional[str] = ...,
    html: Optional[PathLike] = ...,
) -> pd.DataFrame: ...
def read_summary(out: PathLike) -> pd.DataFrame: ...
def sweep_report(out: PathLike, html: Optional[PathLike] = ...) -> str: ...
def machines() -> pd.DataFrame: ...
def workloads() -> pd.DataFrame: ...
def features() -> pd.DataFrame: ...
