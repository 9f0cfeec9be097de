"""Third-party methods, problems and studies: entry points (a package installed into a temporary
folder on the path of a child process) and study files (``impactbench run path/to/study.py``)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import plain_floor
import pytest

from impactbench.bench import pipeline, plugins
from impactbench.bench.cli import main
from impactbench.bench.plugins import Registry
from impactbench.bench.validate_command import load_method
from impactbench.core.names import parse_spec

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(__file__).parent / "data" / "third_party_package"


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory) -> Path:
    """A folder holding the third party's package, installed into it (``pip install --target``)
    by this interpreter's pip with this environment's setuptools and wheel (no dependencies, no
    build isolation: nothing is downloaded, and whatever the base interpreter holds is not
    used); :func:`_impactbench` runs this interpreter with the folder on its path."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    source = build / "third_party_package"  # a copy: the build writes next to the sources
    shutil.copytree(PACKAGE, source)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(source)],
        check=True,
        cwd=build,
    )  # fmt: skip
    return target


def _impactbench(site: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m impactbench`` in this environment, with ``site`` first on its path (and on
    its workers' path: they inherit the environment variable)."""
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "impactbench", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env={**os.environ, "PYTHONPATH": path},
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
    table = pd.read_csv(tmp_path / "out" / "plugin_study" / "results.csv.gz")
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


STUDY_FILE = (
    plain_floor.SOURCE
    + """
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport


def runs(quick):
    return [Run(Floor, method, 1.0, h=0.01) for method in (MoreauJean, PaoliSchatzman)]


def report(table, folder):
    return StudyReport([Section("Rows", f"{len(table)} rows")], ["my study ran"])


STUDY = Study("my_file_study", "My study", "A study in a file.", runs, report)
"""
)


def test_a_study_file_runs_in_parallel_workers_that_cannot_import_it(tmp_path, capsys):
    path = tmp_path / "studies_of_mine" / "floor_study.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(STUDY_FILE))
    argv = ["run", str(path), "--jobs", "2", "--output", str(tmp_path / "out")]
    assert main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    folder = tmp_path / "out" / "my_file_study"
    table = pd.read_csv(folder / "results.csv.gz")
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
    [
        (None, "must be an existing .py file"),
        ("X = 1\n", "must define STUDY"),
        ("def runs(:\n", "could not be loaded: SyntaxError"),
        ("import no_such_module_of_impactbench\n", "could not be loaded: ModuleNotFoundError"),
        ("raise RuntimeError('the study is broken')\n", "RuntimeError: the study is broken"),
        ("import sys\nsys.exit(0)\n", "could not be loaded: it called sys.exit(0)"),
    ],
)
def test_a_bad_study_file_is_a_usage_error(tmp_path, capsys, content, message):
    """Exit code 2 with the message and no traceback, whatever the file does at import."""
    path = tmp_path / f"not_a_study_{tmp_path.name}.py"  # a module name of its own
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(path), "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_sys_exit_in_a_study_files_runs_is_reported_not_obeyed(tmp_path, capsys):
    path = tmp_path / "exiting_study.py"
    path.write_text(
        textwrap.dedent(STUDY_FILE).replace(
            "def runs(quick):\n", "def runs(quick):\n    import sys\n\n    sys.exit(0)\n"
        )
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(path), "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert "'my_file_study': runs() called sys.exit(0)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# Plug-ins contained: entry points faked (modules written to a temporary folder)


def _fake_plugins(monkeypatch, tmp_path, modules: dict[str, str], entries: dict[str, list]):
    """Entry points ``entries`` (group -> [(name, "module:attribute")]) whose ``modules`` (name
    -> source) are in ``tmp_path``; an imported module leaves ``<name>.imported`` there."""
    for name, source in modules.items():
        marker = f"open({str(tmp_path / (name + '.imported'))!r}, 'w').close()\n"
        (tmp_path / f"{name}.py").write_text(marker + textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    points = {
        group: [importlib.metadata.EntryPoint(name, value, group) for name, value in listed]
        for group, listed in entries.items()
    }
    monkeypatch.setattr(plugins, "_entry_points", lambda group: points.get(group, []))


def _imported(tmp_path) -> set[str]:
    return {path.stem for path in tmp_path.glob("*.imported")}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('no licence')\n", "RuntimeError: no licence"),
        ("import sys\nsys.exit(3)\n", "it called sys.exit(3)"),
        ("raise SystemExit\n", "it called sys.exit(None)"),
        ("raise GeneratorExit\n", "GeneratorExit"),
        ("import no_such_module_of_impactbench\n", "ModuleNotFoundError"),
    ],
)
def test_a_plugin_failing_at_import_is_left_out_by_name(
    monkeypatch, tmp_path, capsys, source, message
):
    name = f"failing_{abs(hash(source))}"
    _fake_plugins(
        monkeypatch,
        tmp_path,
        {name: source},
        {"impactbench.methods": [("Failing", f"{name}:Scheme")]},
    )
    assert main(["list", "methods"]) == 0
    out, err = capsys.readouterr()
    assert "MoreauJean" in out and "Failing" not in out
    assert f"Failing = '{name}:Scheme' (entry point of group impactbench.methods)" in err
    assert f"could not be loaded: {message}" in err


def test_a_keyboard_interrupt_in_a_plugin_stops_the_command(monkeypatch, tmp_path, capsys):
    _fake_plugins(
        monkeypatch,
        tmp_path,
        {"interrupting": "raise KeyboardInterrupt\n"},
        {"impactbench.problems": [("Interrupting", "interrupting:Model")]},
    )
    assert main(["list", "problems"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_help_and_unrelated_commands_run_no_plugin_code(monkeypatch, tmp_path, capsys):
    """--help lists the plug-ins' names from their metadata; listing problems, looking up
    built-in names or reporting a folder without the plug-in study's table imports no plug-in;
    asking for the plug-in by name does."""
    _fake_plugins(
        monkeypatch,
        tmp_path,
        {
            "lazy_scheme": "from impactbench.methods import MoreauJean as LazyScheme\n",
            "lazy_study": "raise RuntimeError('imported')\n",
        },
        {
            "impactbench.methods": [("LazyScheme", "lazy_scheme:LazyScheme")],
            "impactbench.studies": [("lazy_study", "lazy_study:STUDY")],
        },
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--help"])
    assert exit_info.value.code == 0
    assert "LazyScheme" in capsys.readouterr().out
    assert main(["list", "problems"]) == 0
    assert "MoreauJean" in plugins.METHODS
    assert parse_spec("MoreauJean[theta=0.5]", plugins.METHODS, "method")[1] == {"theta": 0.5}
    assert "NoSuchScheme" not in plugins.METHODS
    assert main(["report", "--output", str(tmp_path / "no_tables")]) == 1  # nothing to report
    assert _imported(tmp_path) == set()
    assert plugins.METHODS["LazyScheme"].__name__ == "MoreauJean"
    assert _imported(tmp_path) == {"lazy_scheme"}


class _Captured(Exception):
    """Raised by the fake executor with the runs it was given."""


def test_plugin_methods_join_the_builtin_studies_only_when_asked(monkeypatch, tmp_path):
    _fake_plugins(
        monkeypatch,
        tmp_path,
        {"extra_scheme": "from impactbench.methods import MoreauJean\n\n"
         "class ExtraScheme(MoreauJean):\n    pass\n"},
        {"impactbench.methods": [("ExtraScheme", "extra_scheme:ExtraScheme")]},
    )  # fmt: skip

    def execute(runs, **options):
        raise _Captured(runs)

    monkeypatch.setattr(pipeline, "execute", execute)
    methods = {}
    for flag in ([], ["--with-plugins"]):
        with pytest.raises(_Captured) as captured:
            main(["run", "work_precision", "--quick", "--output", str(tmp_path / "out"), *flag])
        methods[bool(flag)] = [run.method.__name__ for run in captured.value.args[0]]
        if not flag:
            assert _imported(tmp_path) == set()
    assert "ExtraScheme" not in methods[False]
    extra = methods[True].count("ExtraScheme")
    assert extra > 0
    assert len(methods[True]) == len(methods[False]) + extra


def test_validate_finds_a_plugin_method_by_name(monkeypatch, tmp_path):
    _fake_plugins(
        monkeypatch,
        tmp_path,
        {"validated_scheme": "from impactbench.methods import CatchingUp as ValidatedScheme\n"},
        {"impactbench.methods": [("ValidatedScheme", "validated_scheme:ValidatedScheme")]},
    )
    method = load_method("ValidatedScheme[activation=approaching]")
    assert type(method).__name__ == "CatchingUp" and method.activation == "approaching"
    with pytest.raises(ValueError, match="unknown method 'NoSuchScheme'.*ValidatedScheme"):
        load_method("NoSuchScheme")


def test_the_built_in_studies_are_this_distributions_entry_points():
    """Every module of studies/ that defines STUDY is declared in pyproject.toml under its
    study's name, and every declared one is such a module: bench finds the built-in studies
    through the registry, as it finds a plug-in's (it imports no study itself:
    tests/test_layout.py)."""
    import importlib
    import pkgutil

    import tomllib

    import impactbench.studies as package
    from impactbench.bench.study import Study

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "impactbench.studies"
    ]
    defined = {}
    for info in pkgutil.iter_modules(package.__path__):
        study = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "STUDY", None)
        if isinstance(study, Study):
            defined[study.name] = f"{package.__name__}.{info.name}:STUDY"
    assert declared == defined
    assert plugins.STUDIES.names() == sorted(defined)
    assert {name: study.name for name, study in plugins.STUDIES.items()} == {
        name: name for name in defined
    }


def test_a_built_in_entry_that_fails_to_load_is_raised_not_left_out(monkeypatch, tmp_path):
    """A built-in study that does not import is a defect of impactbench: the registry raises
    its error where a plug-in's would be a warning."""
    (tmp_path / "broken_builtin.py").write_text("raise RuntimeError('a defect')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = importlib.metadata.EntryPoint("broken", "broken_builtin:STUDY", "impactbench.studies")
    monkeypatch.setattr(plugins, "_own_entry_points", lambda group: {"broken": entry})
    registry = Registry("impactbench.studies", {}, lambda name, value: True, "a study")
    assert registry.names() == ["broken"]
    with pytest.raises(RuntimeError, match="a defect"):
        registry["broken"]
