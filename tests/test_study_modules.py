"""A study file that imports the user's modules sitting beside it (the problem in ``wavy.py``,
the method in ``symeuler.py``) runs in parallel workers that never imported the study: loky
processes and a local Dask cluster (``--backend dask`` without ``--scheduler``); a module that a
worker cannot import makes the run fail with a message naming that module."""

from __future__ import annotations

import sys
import textwrap
import types

import pandas as pd
import plain_floor
import pytest

from impactbench.bench import runner
from impactbench.bench.cli import main
from impactbench.bench.pipeline import MissingReferenceWarning, run_study
from impactbench.bench.runner import Run, execute
from impactbench.bench.study import Study, StudyReport
from impactbench.methods import MoreauJean

#: The user's problem module: the ball above the floor (tests/plain_floor.py).
WAVY = plain_floor.SOURCE

SYMEULER = '''
"""The user's method, in its own module."""

from impactbench.methods import MoreauJean


class SymEuler(MoreauJean):
    def __init__(self, theta=1.0, **options):
        super().__init__(theta=theta, **options)
'''

STUDY = """
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport

from symeuler import SymEuler
from wavy import Floor


def runs(quick):
    return [Run(Floor, SymEuler, 0.5, h=h) for h in (0.01, 0.02)]


def report(table, folder):
    return StudyReport([Section("Rows", f"{len(table)} rows")], ["wavy study ran"])


STUDY = Study("wavy_study", "Wavy", "A study importing modules beside it.", runs, report)
"""


@pytest.fixture
def study_file(tmp_path, monkeypatch):
    """The study and its two modules in a folder that is not on the path (the modules are
    taken out of sys.modules again after the test)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for name, text in (("wavy", WAVY), ("symeuler", SYMEULER), ("wavy_study", STUDY)):
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    for name in ("wavy", "symeuler", "wavy_study"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield folder / "wavy_study.py"
    for name in ("wavy", "symeuler", "wavy_study"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_a_study_file_importing_its_neighbours_runs_in_parallel(study_file, tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("distributed")
    argv = ["run", str(study_file), "--jobs", "2", "--backend", backend]
    argv += ["--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "out" / "wavy_study" / "results.csv.gz")
    assert list(table["status"]) == ["ok", "ok"]
    assert set(table["method"]) == {"SymEuler"}


def test_a_module_the_workers_cannot_import_is_named(monkeypatch):
    """The problem's module exists only in this process (no file): no worker can import it."""
    module = types.ModuleType("vanishing_model")
    exec(textwrap.dedent(WAVY), module.__dict__)
    monkeypatch.setitem(sys.modules, "vanishing_model", module)
    runs = [Run(module.Floor, MoreauJean, 0.2, h=h) for h in (0.1, 0.05)]
    outcomes = execute(runs, jobs=2, use_cache=False)
    for outcome in outcomes:
        assert outcome.status == runner.FAILED
        assert "cannot import module 'vanishing_model'" in outcome.error


def test_report_rebuilds_the_report_of_a_study_run_from_a_file(study_file, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["run", str(study_file), "--jobs", "1", "--output", str(out)]
    assert main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    readme = out / "wavy_study" / "README.md"
    readme.unlink()
    assert main(["report", "--output", str(out)]) == 0  # the file its provenance records
    assert "2 rows" in readme.read_text()
    moved = tmp_path / "elsewhere" / "wavy_study.py"
    moved.parent.mkdir()
    study_file.rename(moved)
    capsys.readouterr()
    assert main(["report", "--output", str(out)]) == 1
    assert "pass the file defining it" in capsys.readouterr().err
    sys.modules.pop("wavy_study")  # as in a new process: the moved file is imported anew
    assert main(["report", "--output", str(out), str(moved)]) == 0


class Floor(plain_floor.Floor):
    """The ball above the floor: no closed form (``exact_solution`` not written)."""


def _floor_runs(quick):
    metrics = ("max_position_error", "max_penetration")
    return [Run(Floor, MoreauJean, 0.3, h=h, metrics=metrics) for h in (0.1, 0.05)]


def test_errors_without_a_reference_are_not_nan_without_a_word(tmp_path):
    study = Study("unmeasured", "U", "No reference.", _floor_runs, lambda t, f: StudyReport())
    with pytest.warns(MissingReferenceWarning, match=r"2 of 2 runs .* max_position_error") as w:
        result = run_study(study, jobs=1, output=tmp_path, cache_dir=tmp_path / "c", report=False)
    assert "Floor with MoreauJean, h = 0.1" in str(w[0].message)
    assert result.table["max_position_error"].isna().all()
    assert result.table["max_penetration"].notna().all()  # needs no reference: no warning for it
    assert "max_penetration" not in str(w[0].message)
