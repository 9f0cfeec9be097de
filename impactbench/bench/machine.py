"""The machine a timing was measured on: CPU, cores, and the threading of numba and BLAS.

Per-step costs and wall times mean little without it: the same loop runs at different speeds on
another CPU, and a BLAS or numba thread pool competing with joblib's workers for the cores
changes every timing. :func:`machine_info` is recorded with every timed table.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import numba
import threadpoolctl

#: Environment variables that set thread counts of the numerical libraries.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def cpu_model(cpuinfo: Path | str = "/proc/cpuinfo") -> str:
    """The CPU's model name (from ``cpuinfo`` on Linux, else :func:`platform.processor`)."""
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Processor", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def machine_info() -> dict[str, Any]:
    """CPU model, core counts, platform, numba's and BLAS's threading, thread variables.

    Returns
    -------
    dict
        ``cpu``, ``logical_cores``, ``usable_cores``, ``platform``, ``numba_threading_layer``,
        ``numba_threads``, ``blas`` (one ``"<library> <version> (<api>): threads=<n>"`` entry per
        loaded BLAS/OpenMP pool, ``;``-separated) and ``threads_env`` (the variables of
        :data:`THREAD_VARIABLES` that are set, ``NAME=value``, ``;``-separated).
    """
    pools = threadpoolctl.threadpool_info()
    blas = "; ".join(
        f"{pool.get('internal_api', '?')} {pool.get('version') or ''} ({pool.get('user_api', '?')})"
        f": threads={pool.get('num_threads', '?')}"
        for pool in pools
    )
    env = "; ".join(f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ)
    return {
        "cpu": cpu_model(),
        "logical_cores": os.cpu_count() or 1,
        "usable_cores": usable_cores(),
        "platform": platform.platform(),
        "numba_threading_layer": str(numba.config.THREADING_LAYER),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS),
        "blas": blas or "none loaded",
        "threads_env": env or "none set",
    }
