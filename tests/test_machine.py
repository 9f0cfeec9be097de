"""The machine description recorded with timed tables."""

from __future__ import annotations

import os

import numpy as np
import threadpoolctl

from impactbench.bench.machine import cpu_model, machine_info


def test_cpu_model_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000 @ 3 GHz\n")
    assert cpu_model(cpuinfo) == "Test CPU 9000 @ 3 GHz"


def test_cpu_model_without_cpuinfo(tmp_path):
    assert cpu_model(tmp_path / "missing")  # platform's answer, never empty


def test_thread_variables_are_recorded(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    info = machine_info()
    assert "OMP_NUM_THREADS=3" in info["threads_env"]
    assert "MKL_NUM_THREADS" not in info["threads_env"]


def test_blas_threads_follow_the_pool():
    np.dot(np.ones((4, 4)), np.ones((4, 4)))  # BLAS loaded
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        limited = machine_info()["blas"]
    if limited != "none loaded":
        assert "threads=1" in limited and "threads=2" not in limited


def test_cores():
    info = machine_info()
    assert info["logical_cores"] == os.cpu_count()
    assert 1 <= info["usable_cores"] <= info["logical_cores"]
