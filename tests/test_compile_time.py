"""Compilation is never silent and never in a wall time: ``stats["compile_time"]`` apart from
``stats["wall_time"]``, the runner's ``compile_time`` column, a one-line notice while numba
compiles, ``impactbench compile`` and the progress lines of ``run`` with the time left."""

from __future__ import annotations

import io
import json
import math
import time

import numba
import pytest

from impactbench.bench import progress
from impactbench.bench.cli import main
from impactbench.bench.results import TIMING_COLUMNS
from impactbench.bench.runner import Run, RunCache, entry_checksum, execute
from impactbench.core import compile_clock
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall


class CompilingMoreauJean(MoreauJean):
    """MoreauJean that first compiles a new numba function (a compilation inside the run,
    timed from inside as ``compiled_in``)."""

    def _solve_impl(self, problem, t_end, h, output_every):
        start = time.perf_counter()
        numba.njit(lambda x: x + 1.0)(1.0)  # a new function: compiled at this call
        self.compiled_in = time.perf_counter() - start
        return super()._solve_impl(problem, t_end, h, output_every)


def test_compilation_is_in_compile_time_not_in_wall_time(python_ball):
    method = CompilingMoreauJean()
    start = time.perf_counter()
    trajectory = method.solve(python_ball, 0.05, h=1e-2)
    elapsed = time.perf_counter() - start
    stats = trajectory.stats
    # the new function's compilation (numba's lock is most of its first call), and the helpers
    # the plain-Python path compiles when first reached, if any
    assert stats["compile_time"] > 0.5 * method.compiled_in
    assert stats["wall_time"] + stats["compile_time"] <= elapsed
    assert stats["wall_time"] < elapsed - 0.5 * method.compiled_in
    again = MoreauJean().solve(python_ball, 0.05, h=1e-2)
    assert again.stats["compile_time"] == 0.0  # nothing compiled or loaded


def test_a_notice_says_what_compiles_when_notices_are_on(python_ball, capsys):
    CompilingMoreauJean().solve(python_ball, 0.05, h=1e-2)
    assert "compiling" not in capsys.readouterr().err  # a library call prints nothing
    with compile_clock.notices():
        CompilingMoreauJean(theta=0.6).solve(python_ball, 0.05, h=1e-2)
    lines = [line for line in capsys.readouterr().err.splitlines() if "compiling" in line]
    assert lines == [
        "compiling CompilingMoreauJean[theta=0.6,activation=position] for PythonBall (numba; "
        "once per machine, then loaded from its disk cache)"
    ]


def test_the_runner_reports_compile_time_apart(tmp_path):
    """A cached entry stored before compile_time was measured reads it as NaN."""
    assert "compile_time" in TIMING_COLUMNS
    run = Run(problem=BouncingBall, method=MoreauJean, t_end=0.1, h=1e-2)
    outcome = execute([run], cache_dir=tmp_path, jobs=1)[0]
    assert outcome.timing["compile_time"] >= 0.0
    cache = RunCache(tmp_path)
    entry = json.loads(cache.path(outcome.key).read_text())
    del entry["outcome"]["timing"]["compile_time"]
    entry["checksum"] = entry_checksum(entry)
    cache.path(outcome.key).write_text(json.dumps(entry))
    old = cache.load(outcome.key, run)
    assert old is not None and math.isnan(old.timing["compile_time"])
    assert old.timing["wall_time"] == outcome.timing["wall_time"]


def test_progress_lines_give_the_time_left(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(
        progress.time, "monotonic", iter([0.0, 0.0, 10.0, 10.0, 20.0, 20.0]).__next__
    )
    with progress.LineProgress(total=5, initial=1, desc="study", interval=0.0, file=out) as bar:
        bar.update()  # at 10 s: 1 run computed in 10 s, 3 left
        bar.update(3)  # at 20 s: done
    lines = out.getvalue().splitlines()
    assert lines[0] == "study: 1/5 runs, 0 s spent, time left unknown until a run finishes"
    assert lines[1] == "study: 2/5 runs, 10 s spent, about 30 s left"
    assert lines[2] == "study: 5/5 runs, 20 s spent, about 0 s left"
    assert len(lines) == 3


def test_progress_in_a_log_is_lines(monkeypatch):
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: False, raising=False)
    assert isinstance(progress.progress_bar(3, 0, "x", True), progress.LineProgress)
    assert not isinstance(progress.progress_bar(3, 0, "x", None), progress.LineProgress)


def test_the_compile_command(capsys):
    argv = ["compile", "MoreauJean", "--problem", "BouncingBall", "--problem", "PythonBallNone"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)  # an unknown problem: a usage error before anything compiles
    assert exit_info.value.code == 2
    assert main(["compile", "MoreauJean", "--problem", "BouncingBall"]) == 0
    out = capsys.readouterr().out
    assert "MoreauJean[theta=0.5,activation=position] for BouncingBall: " in out
    assert "compiled or loaded 1 of 1 pairs" in out
