"""`impactbench validate`: built-in and MODULE:CLASS methods, exit codes, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impactbench.bench.cli import main

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
    out = capsys.readouterr().out
    assert "FAILED" in out and "resting contact" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("my_schemes:NotAMethod", "subclass of impactbench.Method"),
        ("no_such_module_xyz:Thing", "cannot be imported"),
        ("MoreauJean[theta=7]", "theta"),
        ("Unknown", "unknown method"),
    ],
)
def test_usage_errors_exit_2(spec, message, monkeypatch, capsys):
    monkeypatch.chdir(THIRD_PARTY)
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", spec])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: impactbench validate" in err and message in err
