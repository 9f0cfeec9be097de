"""Third-party methods, problems and studies: entry points (a package installed in a temporary
virtual environment) and study files (``impactbench run path/to/study.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from impactbench.bench.cli import main
from impactbench.bench.plugins import Registry

PACKAGE = Path(__file__).parent / "data" / "third_party_package"


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory) -> Path:
    """A virtual environment seeing this interpreter's packages, with the third party's package
    installed by this interpreter's pip (no dependencies, no build isolation: nothing is
    downloaded)."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)],
        check=True,
    )
    python = root / "bin" / "python"
    build = tmp_path_factory.mktemp("build")
    source = build / "third_party_package"  # a copy: the build writes next to the sources
    shutil.copytree(PACKAGE, source)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", str(source)],
        check=True,
        cwd=build,
    )  # fmt: skip
    return python


def _impactbench(python: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "impactbench", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_entry_points_are_listed_and_bad_ones_left_out_by_name(plugin_python, tmp_path):
    listing = _impactbench(plugin_python, "list", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    for name in ("PluginMoreauJean", "PluginFloor", "plugin_study"):
        assert name in listing.stdout
    assert "NotAMethod = 'impact_plugin:NOT_A_METHOD'" in listing.stderr
    assert "is not an impactbench.Method subclass" in listing.stderr
    assert "broken = 'impact_plugin.missing:STUDY'" in listing.stderr
    assert "could not be loaded: ModuleNotFoundError" in listing.stderr


def test_a_plugin_study_runs_by_name_with_the_plugin_method_and_problem(plugin_python, tmp_path):
    run = _impactbench(
        plugin_python,
        "run", "plugin_study", "--jobs", "2", "--output", "out", "--cache-dir", "cache",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "out" / "plugin_study" / "results.csv")
    assert list(table["method"]) == ["PluginMoreauJean"]
    assert list(table["problem"]) == ["PluginFloor"]
    assert list(table["status"]) == ["ok"]
    assert "the plug-in study ran" in (tmp_path / "out" / "README.md").read_text()
    simulate = _impactbench(
        plugin_python, "simulate", "PluginFloor", "PluginMoreauJean", "--t-end", "1", "--h",
        "0.01", cwd=tmp_path,
    )  # fmt: skip
    assert simulate.returncode == 0, simulate.stderr


def test_a_registry_rejects_an_unknown_group():
    with pytest.raises(ValueError, match="group"):
        Registry("impactbench.things", {}, lambda name, value: True, "anything")


STUDY_FILE = '''
"""A user's study in a plain file, with its own problem class."""

import numpy as np

from impactbench import Problem
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport


class Floor(Problem):
    def __init__(self, restitution=0.5):
        self.name = "Floor"
        self.restitution = restitution
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([-9.81])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return 9.81 * float(q[0])


def runs(quick):
    return [Run(Floor, method, 1.0, h=0.01) for method in (MoreauJean, PaoliSchatzman)]


def report(table, folder):
    return StudyReport([Section("Rows", f"{len(table)} rows")], ["my study ran"])


STUDY = Study("my_file_study", "My study", "A study in a file.", runs, report)
'''


def test_a_study_file_runs_in_parallel_workers_that_cannot_import_it(tmp_path, capsys):
    path = tmp_path / "studies_of_mine" / "floor_study.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(STUDY_FILE))
    argv = ["run", str(path), "--jobs", "2", "--output", str(tmp_path / "out")]
    assert main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    folder = tmp_path / "out" / "my_file_study"
    table = pd.read_csv(folder / "results.csv")
    assert list(table["status"]) == ["ok", "ok"]
    assert "2 rows" in (folder / "README.md").read_text()
    assert "my study ran" in (tmp_path / "out" / "README.md").read_text()
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["study_module"] == "floor_study"
    # a second run reads the cache: the module name (part of the keys) is stable
    assert main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert json.loads((folder / "provenance.json").read_text())["cached"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "must be an existing .py file"), ("X = 1\n", "must define STUDY")],
)
def test_a_bad_study_file_is_a_usage_error(tmp_path, capsys, content, message):
    path = tmp_path / "not_a_study.py"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(path), "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
