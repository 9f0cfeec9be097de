"""Mistyped names and parameters get "did you mean ...?" and the valid choices; ``impactbench
list`` shows the parameters each problem and method takes."""

from __future__ import annotations

import pytest

from impactbench.bench.cli import main
from impactbench.core.names import parameters, parse_spec
from impactbench.methods import METHODS
from impactbench.problems import PROBLEMS


@pytest.mark.parametrize(
    ("spec", "table", "kind", "named"),
    [
        ("MoreauJean[tehta=0.5]", METHODS, "method", ("'tehta'", "'theta'", "theta, activation")),
        ("EventDriven[rtl=1e-3]", METHODS, "method", ("'rtl'", "'rtol'", "atol")),
        ("BouncingBall[restitusion=0.5]", PROBLEMS, "problem", ("'restitusion'", "'restitution'")),
        ("MoreuJean", METHODS, "method", ("unknown method 'MoreuJean'", "'MoreauJean'")),
        ("BouncingBal", PROBLEMS, "problem", ("unknown problem 'BouncingBal'", "'BouncingBall'")),
    ],
)
def test_a_mistyped_name_or_parameter_is_named_with_a_suggestion(spec, table, kind, named):
    with pytest.raises(ValueError, match="did you mean") as error:
        parse_spec(spec, table, kind)
    for text in named:
        assert text in str(error.value)


def test_the_parameters_of_a_method_include_those_it_passes_on():
    """MoreauJean's own parameters, then those of TimeStepping it passes **options to."""
    names = [p.name for p in parameters(METHODS["MoreauJean"])]
    assert names == ["theta", "activation", "implicit", "compiled", "log_capacity", "specialised"]

    def anything(**kwargs):
        return kwargs

    assert parameters(anything) is None
    assert parse_spec("X[free=1]", {"X": anything}, "problem")[1] == {"free": 1}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "convergnce"], "did you mean 'convergence'?"),
        (["validate", "impactbench.methods:MoreuJean"], "has no attribute 'MoreuJean' (did you"),
        (["list", "MoreuJean"], "did you mean 'MoreauJean'?"),
    ],
)
def test_mistyped_names_on_the_command_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_list_shows_parameters(capsys):
    assert main(["list", "MoreauJean", "BouncingBall"]) == 0
    out = capsys.readouterr().out
    assert "theta=0.5" in out and "restitution=0.8" in out and "PaoliSchatzman" not in out
    assert main(["list", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "rtol=1e-10" in out and "n_beads=10" in out and "convergence" in out
