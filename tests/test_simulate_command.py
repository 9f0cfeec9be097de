"""`impactbench simulate` with a problem of the user's module (MODULE:NAME, class or function),
several methods in one figure, impact events as the tables count them, errors against the exact
solution or the reference run; impactbench.plot from Python."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import impactbench as ib
from impactbench.analysis.metrics import max_position_error
from impactbench.bench.cli import main
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall

USER_MODULE = textwrap.dedent(
    """
    from impactbench.problems import BouncingBall


    class DropBall(BouncingBall):
        '''The bouncing ball dropped from a height.'''

        def __init__(self, height=1.0, restitution=0.8):
            super().__init__(q0=height, v0=0.0, restitution=restitution)


    class HiddenBall(BouncingBall):
        '''The bouncing ball, its closed form hidden (errors against the reference run).'''

        @property
        def has_exact_solution(self):
            return False


    def ball(restitution=0.8):
        return BouncingBall(restitution=restitution)


    def not_a_problem():
        return 42
    """
)
ARGS = ["--t-end", "1.5", "--h", "1e-3", "--no-warmup"]


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """wavy.py in the current directory, as a user's problem module."""
    (tmp_path / "wavy.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("wavy", None)


def _impact_line(out: str, method: str) -> str:
    block = out.split(f"with {method}")[1]
    return next(line for line in block.splitlines() if "impacts" in line)


def test_module_problem_several_methods_one_figure(user_module, capsys):
    plot, csv = user_module / "both.pdf", user_module / "both.csv"
    argv = ["simulate", "wavy:DropBall[height=1.0,restitution=0.8]", "MoreauJean"]
    argv += ["PaoliSchatzman", *ARGS, "--plot", str(plot), "--csv", str(csv)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # Paoli-Schatzman logs two entries per impact: the events are the tables' count
    exact = ib.Reference.exact(BouncingBall(restitution=0.8), 1.5).impact_times
    events = len(exact)
    assert events == 2
    assert f"impacts {events} (impact events; {events} log entries" in _impact_line(
        out, "MoreauJean"
    )
    assert f"impacts {events} (impact events; {2 * events} log entries" in _impact_line(
        out, "PaoliSchatzman"
    )
    assert out.count("max position error (exact solution)") == 2
    assert plot.read_bytes().startswith(b"%PDF")
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["method", "t", "q0", "v0", "energy"]
    assert frame["method"].nunique() == 2 and len(frame) == 2 * 1501


def test_a_function_returning_a_problem(user_module, capsys):
    assert main(["simulate", "wavy:ball[restitution=0.5]", "MoreauJean", *ARGS]) == 0
    assert "BouncingBall with MoreauJean" in capsys.readouterr().out


def test_errors_against_the_reference_run(user_module, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("IMPACTBENCH_REFERENCE_DIR", str(tmp_path / "references"))
    argv = ["simulate", "wavy:HiddenBall[restitution=0.8]", "MoreauJean", *ARGS]
    assert main(argv) == 0  # nothing cached yet: said so, nothing computed
    assert "no cached reference run" in capsys.readouterr().out
    assert main([*argv, "--reference"]) == 0
    out = capsys.readouterr().out
    assert "errors against the reference run EventDriven[integrator=DOP853,rtol=1e-12" in out
    value = float(out.split("max position error (reference run): ")[1].split()[0])
    ball = BouncingBall(restitution=0.8)
    run = ib.simulate(ball, MoreauJean(), 1.5, h=1e-3)
    exact = ib.Reference.exact(ball, 1.5)
    # the reference run (DOP853, rtol 1e-12) gives the closed form's error
    assert value == pytest.approx(max_position_error(ball, run, exact), rel=1e-5)
    assert main(argv) == 0  # now read from the cache without --reference
    assert "max position error (reference run)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        ("wavy:not_a_problem", "must give an impactbench.Problem"),
        ("wavy:NoSuchName", "has no attribute 'NoSuchName'"),
        ("wavy:DropBall[colour=1]", "colour"),
        ("nowhere_module:Ball", "cannot be imported"),
    ],
)
def test_bad_module_problems_are_usage_errors(problem, message, user_module, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", problem, "MoreauJean", *ARGS])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_plot_suffix_is_refused_before_any_run(capsys, monkeypatch):
    import impactbench.bench.simulate_command as command

    monkeypatch.setattr(command, "simulate", lambda *a, **k: pytest.fail("simulated"))
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "BouncingBall", "MoreauJean", *ARGS, "--plot", "x.jpg"])
    assert exit_info.value.code == 2


def test_plot_from_python(tmp_path):
    ball = BouncingBall(restitution=0.8)
    runs = [ib.simulate(ball, method, 1.5, h=1e-3) for method in (MoreauJean(), PaoliSchatzman())]
    figure = ib.plot(ball, runs, output=tmp_path / "ball.pdf")
    assert (tmp_path / "ball.pdf").read_bytes().startswith(b"%PDF")
    position = figure.axes[0]
    labels = [line.get_label() for line in position.get_lines()]
    assert labels[:3] == ["exact solution", "MoreauJean", "PaoliSchatzman"]
    assert all(label.startswith("_") for label in labels[3:])  # the impact ticks
    np.testing.assert_array_equal(position.get_lines()[1].get_ydata(), runs[0].q[:, 0])
    assert len(ib.plot(ball, runs[0], reference=None).axes) == 6
    with pytest.raises(ValueError, match="output"):
        ib.plot(ball, runs, output=tmp_path / "ball.jpg")
    with pytest.raises(ValueError, match="trajectories"):
        ib.plot(ball, [])
    with pytest.raises(ValueError, match="coordinate"):
        ib.plot(ball, runs, coordinate=1)
