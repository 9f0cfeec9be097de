"""`impactbench validate`: built-in and MODULE:CLASS methods, exit codes, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impactbench.bench.cli import main
from impactbench.bench.testing import Check, ValidationReport, check_method
from impactbench.methods import MoreauJean

THIRD_PARTY = Path(__file__).parent / "data" / "third_party"


def test_validate_a_built_in_method(capsys):
    assert main(["validate", "MoreauJean[theta=0.5]"]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "kinetic metric" in out and "verdict" in out


def test_validate_a_third_party_class_as_json(monkeypatch, capsys):
    monkeypatch.chdir(THIRD_PARTY)  # MODULE is looked up in the current directory first
    assert main(["validate", "my_schemes:MyMoreauJean", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert report["method"].startswith("MyMoreauJean")
    assert {check["verdict"] for check in report["checks"]} == {"pass"}


def test_a_failing_method_exits_1(capsys):
    assert main(["validate", "MoreauJean[activation='approaching']"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "FAILED" in out and "resting contact" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    # which check failed and why: its measured value against its threshold
    failed = out.split("Failed checks (2):")[1]
    assert "- resting contact (no drift) on BouncingBall" in failed
    assert "threshold depth <= 4 alpha h^2" in failed and "> bound" in failed
    # and its likely causes, in the words of the mistake
    assert "likely causes: constraints activated only when approaching" in " ".join(failed.split())
    # progress on stderr while it runs: each group of checks announced, then its result
    progress = [line for line in captured.err.splitlines() if line.startswith("validate: [")]
    assert progress[0] == "validate: [1/8] orders through impacts ..."
    assert any(line.startswith("validate: [7/8] determinism: 1 of 1 passed") for line in progress)


def test_the_report_table_fits_100_columns_and_explains_failures():
    long = "a measured value with many words " * 4
    report = ValidationReport(
        "SomeMethod[with=parameters]",
        "quick",
        [
            Check("order of hausdorff_velocity_distance", "SlantedWall (non-diagonal M, x)",
                  long, "order >= 0.8", True),
            Check("resting contact (no drift)", "BouncingBall (resting ball, t = 100)",
                  "depth 0.0601 on [10, 55], 0.118 on [55, 100]",
                  "depth <= 4 alpha h^2 = 0.000981, no growth", False, "depth 0.118 > bound"),
        ],
    )  # fmt: skip
    text = str(report)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "FAILED (1 of 2 checks)" in text
    assert text.split().count("many") == 4  # the long cell is wrapped, nothing cut
    assert (
        "- resting contact (no drift) on BouncingBall (resting ball, t = 100): measured depth "
        "0.0601 on [10, 55], 0.118 on [55, 100], threshold depth <= 4 alpha h^2 = 0.000981, no "
        "growth (depth 0.118 > bound)"
    ) in " ".join(text.split())


def test_check_method_reports_progress():
    lines = []
    report = check_method(MoreauJean(), properties=("bad_inputs",), progress=lines.append)
    assert report.passed
    assert lines[0] == "[1/1] bad inputs ..."
    assert lines[1].startswith("[1/1] bad inputs: 1 of 1 passed or n/a (")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("my_schemes:NotAMethod", "subclass of impactbench.Method"),
        ("no_such_module_xyz:Thing", "cannot be imported"),
        ("MoreauJean[theta=7]", "theta"),
        ("Unknown", "unknown method"),
        ("my_schemes:WrongName", "has no attribute 'WrongName'"),
    ],
)
def test_usage_errors_exit_2(spec, message, monkeypatch, capsys):
    monkeypatch.chdir(THIRD_PARTY)
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", spec])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: impactbench validate" in err and message in err


def test_validate_an_adaptive_method_by_its_spec(capsys):
    """Step-size control named on the command line: MoreauJean under gap control passes the
    contact battery (orders in rtol through impacts, no drift and no step-size collapse at rest)
    and the frictional checks (it integrates friction with its scheme's law), the friction
    oscillator's orders in rtol included: the controller keeps the velocities in its error test
    on a persistent contact (the same constraints take an impulse on every step), so a sliding
    or sticking contact's error falls with rtol."""
    spec = "Adaptive[scheme=MoreauJean,rtol=1e-4,atol=1e-6,gap_tolerance=1e-4,h_max=0.05]"
    assert main(["validate", spec, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert report["method"] == (
        "Adaptive[scheme=MoreauJean[theta=0.5,activation=position],rtol=0.0001,atol=1e-06,"
        "h_max=0.05,gap_tolerance=0.0001]"
    )
    assert all(check["passed"] for check in report["checks"])
    assert {
        "friction oscillator: order of max_position_error",
        "friction oscillator: order of hausdorff_velocity_distance",
    } <= {check["property"] for check in report["checks"] if check["verdict"] == "pass"}
    properties = {check["property"] for check in report["checks"]}
    assert "no step-size collapse at rest" in properties
    assert {
        "friction work <= 0 on every step",
        "no creep when sticking on an incline",
    } <= properties
    assert {c["threshold"] for c in report["checks"] if c["property"].startswith("order")} == {
        "order in rtol >= 0.4"
    }
