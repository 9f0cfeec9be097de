"""Output files of ``simulate`` are checked before the run: a figure suffix that cannot be
written, a folder that does not exist (it is not created silently)."""

from __future__ import annotations

import pytest

import impactbench.bench.simulate_command as simulate_command
from impactbench.bench.cli import main


@pytest.mark.parametrize(
    ("option", "name", "message"),
    [
        ("--plot", "out.jpg", "must end in .png, .pdf"),
        ("--plot", "no_such_folder/out.png", "does not exist"),
        ("--csv", "no_such_folder/x.csv", "does not exist"),
    ],
)
def test_a_bad_output_file_is_refused_before_the_run(
    option, name, message, tmp_path, monkeypatch, capsys
):
    def no_run(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(simulate_command, "simulate", no_run)
    argv = ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "0.1"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, option, str(tmp_path / name)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and message in err
    assert not (tmp_path / "no_such_folder").exists()
