"""Files the project writes and deletes (issue 37): study names, the manifest of each study
folder, symbolic links, a full disk, study files that shadow a built-in study or patch its code,
and ``run --verify-cache``.

The studies are tiny: plain-Python ProbeBall runs (tests/test_runner.py), run serially.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from impactbench import CacheWarning
from impactbench.bench import cli, runner
from impactbench.bench.cli import main
from impactbench.bench.files import MANIFEST, StudyWriteError, check_study_name
from impactbench.bench.pipeline import run_study
from impactbench.bench.report import markdown_table, write_index, write_study_report
from impactbench.bench.results import (
    ARTEFACT_SUFFIX,
    PLAIN_ARTEFACT_SUFFIX,
    PLAIN_TABLE_FILE,
    TABLE_FILE,
    compress_artefacts,
    compress_table,
    read_artefact,
    read_table,
    table_csv,
    table_path,
    write_artefacts,
    write_table,
)
from impactbench.bench.runner import Outcome, entry_checksum
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.studies import STUDIES

from test_runner import probe_runs

#: Number of Markdown tables the probe studies' report writes (the tests change it).
TABLE_COUNT = {"tables": 2}


def _report_tables(table: pd.DataFrame, folder: Path) -> StudyReport:
    sections = [
        Section(f"Table {k}", markdown_table(table[["method", "status"]]))
        for k in range(TABLE_COUNT["tables"])
    ]
    return StudyReport(sections, [f"{len(table)} runs"])


def _probe_study(name: str, log: Path) -> Study:
    return Study(
        name, "Probe", "Test study.", lambda quick: probe_runs(log, (1.0, 0.9)), _report_tables
    )


# --------------------------------------------------------------------------------------------
# Study names


@pytest.mark.parametrize("name", ["../escaped", "/tmp/absolute", "", "a/b", "..", "a\\b", ".x"])
def test_a_study_name_must_be_a_plain_identifier(name):
    with pytest.raises(ValueError, match="study name must be a plain identifier") as error:
        Study(name, "T", "D", lambda quick: [], lambda table, folder: StudyReport())
    assert str(error.value).endswith(f"got {name!r}")


def test_built_in_study_names_are_plain_identifiers():
    assert [check_study_name(name) for name in STUDIES] == list(STUDIES)


def _study_file(folder: Path, stem: str, name: str, extra: str = "") -> Path:
    """A study file ``<stem>.py`` defining a probe study called ``name``."""
    path = folder / f"{stem}.py"
    path.write_text(
        textwrap.dedent(
            f"""
            from impactbench.bench.study import Section, Study, StudyReport
            from test_runner import probe_runs
            {extra}

            def runs(quick):
                return probe_runs({str(folder / "log")!r}, (1.0,))

            def report(table, folder):
                return StudyReport([Section("Rows", f"{{len(table)}} rows of {stem}")], [])

            STUDY = Study({name!r}, "File study", "From a file.", runs, report)
            """
        )
    )
    return path


@pytest.mark.parametrize(("stem", "name"), [("escaping", "../escaped"), ("absolute", "/abs")])
def test_a_study_file_with_a_path_as_name_is_a_usage_error(tmp_path, capsys, stem, name):
    """`../escaped` or an absolute path wrote outside --output (and cleaned up there); the
    absolute name is one inside tmp_path, so that the old behaviour wrote nowhere else."""
    if name.startswith("/"):
        name = str(tmp_path / "out" / "absolute")
    path = _study_file(tmp_path, stem, name)
    output = tmp_path / "out" / "inner"
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(path), "--jobs", "1", "--output", str(output)])
    assert exit_.value.code == 2
    assert repr(name) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_study_file_may_shadow_a_built_in_study_only_with_replace(tmp_path, capsys):
    """A file study named `convergence` overwrote the built-in table, then the built-in report
    crashed on it (KeyError: 'l1_velocity_error') and left the old README."""
    path = _study_file(tmp_path, "shadowing", "convergence")
    output = tmp_path / "out"
    argv = ["run", str(path), "--jobs", "1", "--output", str(output)]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "--replace" in capsys.readouterr().err and not output.exists()
    assert main([*argv, "--replace"]) == 0
    readme = (output / "convergence" / "README.md").read_text()
    assert "1 rows of shadowing" in readme
    assert len(pd.read_csv(output / "convergence" / "results.csv.gz")) == 1
    capsys.readouterr()
    # `impactbench report` knows only the built-in convergence: it leaves that report alone
    assert main(["report", "--output", str(output), "--jobs", "1"]) == 1
    assert "written by the study of shadowing" in capsys.readouterr().err
    assert (output / "convergence" / "README.md").read_text() == readme


# --------------------------------------------------------------------------------------------
# Clean-up: only the files the project wrote, never through a link


def test_report_deletes_only_the_latex_tables_it_wrote(tmp_path, monkeypatch):
    """`impactbench report` deleted any tables/table*.tex (table_summary.tex, tables.tex)."""
    study = _probe_study("latex_probe", tmp_path / "log")
    run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    folder = tmp_path / "latex_probe"
    mine = [folder / "tables" / name for name in ("table_summary.tex", "tables.tex", "table9.tex")]
    for path in mine:
        path.write_text("the user's")
    assert (folder / "tables" / "table2.tex").exists()
    monkeypatch.setitem(TABLE_COUNT, "tables", 1)
    write_study_report(study, folder)
    assert not (folder / "tables" / "table2.tex").exists()  # ours, no longer produced
    assert (folder / "tables" / "table1.tex").exists()
    assert all(path.read_text() == "the user's" for path in mine)
    assert json.loads((folder / MANIFEST).read_text())["groups"]["latex"] == ["tables/table1.tex"]


def _outcome(key: str, *names: str) -> Outcome:
    return Outcome("ok", key=key, artefacts={name: {"t": [0.0, 1.0]} for name in names})


def test_run_deletes_only_the_artefact_tables_it_wrote(tmp_path):
    """`impactbench run` deleted any *.artefact.csv of the study folder."""
    (tmp_path / "notes.artefact.csv").write_text("the user's")
    assert write_artefacts([_outcome("a", "energy", "fit")], tmp_path) == ["energy", "fit"]
    assert write_artefacts([_outcome("a", "energy")], tmp_path) == ["energy"]
    assert not (tmp_path / "fit.artefact.csv.gz").exists()
    assert (tmp_path / "energy.artefact.csv.gz").exists()
    assert (tmp_path / "notes.artefact.csv").read_text() == "the user's"


def test_artefacts_are_stored_gzip_compressed_and_read_back_exactly(tmp_path):
    """An artefact table is gzip-compressed CSV: pandas reads it as it is, its text is the
    table's CSV, the same table gives the same bytes, and it is a fraction of the text."""
    t = np.linspace(0.0, 1.0, 2000)
    outcome = Outcome("ok", key="a", artefacts={"curve": {"t": t, "energy": np.exp(-t)}})
    write_artefacts([outcome], tmp_path)
    path = tmp_path / f"curve{ARTEFACT_SUFFIX}"
    assert path.name == "curve.artefact.csv.gz"
    data = path.read_bytes()
    frame = read_table(path)
    assert frame["t"].tolist() == t.tolist() and frame["energy"].tolist() == np.exp(-t).tolist()
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    text = gzip.decompress(data).decode("utf-8")
    assert text == table_csv(frame)
    assert len(data) < len(text) / 2
    write_artefacts([outcome], tmp_path)
    assert path.read_bytes() == data
    path.write_bytes(data[: len(data) // 2])  # a truncated file
    with pytest.raises(ValueError, match="curve.artefact.csv.gz: not a gzip-compressed table"):
        read_table(path)


def test_report_compresses_the_artefacts_written_uncompressed_before(tmp_path):
    """A folder whose artefact a former version wrote as plain CSV: the report (the step of
    `impactbench report` for one study) reads it and stores it compressed (the same text), the
    plain one deleted; a plain file of the user's is kept; nothing is done the second time."""
    study = _probe_study("plain_probe", tmp_path / "log")
    run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    folder = tmp_path / "plain_probe"
    table = read_table(folder / "results.csv.gz")
    frame = pd.DataFrame({"key": table["key"], "energy": np.linspace(1.0, 2.0, len(table))})
    plain = folder / f"energy{PLAIN_ARTEFACT_SUFFIX}"
    write_table(frame, plain)
    text = plain.read_bytes()
    users = folder / f"notes{PLAIN_ARTEFACT_SUFFIX}"
    users.write_text("the user's")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["groups"]["artefacts"] = [plain.name]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    pd.testing.assert_frame_equal(read_artefact(table, folder, "energy"), frame)
    cli._write_report(study, folder)
    assert not plain.exists()
    assert gzip.decompress((folder / f"energy{ARTEFACT_SUFFIX}").read_bytes()) == text
    assert users.read_text() == "the user's"
    groups = json.loads((folder / MANIFEST).read_text())["groups"]
    assert groups["artefacts"] == [f"energy{ARTEFACT_SUFFIX}"]
    pd.testing.assert_frame_equal(read_artefact(table, folder, "energy"), frame)
    assert compress_artefacts(folder) == []


def test_the_table_an_older_version_wrote_uncompressed_is_read_and_stored_compressed(tmp_path):
    """A folder whose table a former version wrote as plain ``results.csv``: the report reads
    it and stores it as ``results.csv.gz`` (the same text), the plain one deleted, so that the
    folder holds one table; a run that writes the compressed table deletes a plain one left."""
    study = _probe_study("plain_table", tmp_path / "log")
    run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    folder = tmp_path / "plain_table"
    data = (folder / TABLE_FILE).read_bytes()
    (folder / TABLE_FILE).unlink()
    (folder / PLAIN_TABLE_FILE).write_bytes(gzip.decompress(data))
    assert table_path(folder) == folder / PLAIN_TABLE_FILE
    cli._write_report(study, folder)
    assert not (folder / PLAIN_TABLE_FILE).exists()
    assert (folder / TABLE_FILE).read_bytes() == data
    assert compress_table(folder) is False
    (folder / PLAIN_TABLE_FILE).write_text("key,status\n")  # stale, beside the compressed one
    run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    assert not (folder / PLAIN_TABLE_FILE).exists()
    assert (folder / TABLE_FILE).read_bytes() == data


def test_a_manifest_naming_files_outside_the_folder_deletes_nothing(tmp_path):
    victim = tmp_path / "victim.artefact.csv"
    victim.write_text("keep")
    folder = tmp_path / "study"
    folder.mkdir()
    manifest = {"format": 1, "groups": {"artefacts": ["../victim.artefact.csv", "/etc/x"]}}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.warns(CacheWarning, match="no file of this folder is deleted"):
        write_artefacts([_outcome("a", "energy")], folder)
    assert victim.read_text() == "keep"


def test_nothing_is_written_or_deleted_through_a_symlinked_study_folder(tmp_path, capsys):
    """Through a symlinked study folder the target's *.artefact.csv went."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "data.artefact.csv").write_text("keep")
    output = tmp_path / "out"
    output.mkdir()
    (output / "linked").symlink_to(target, target_is_directory=True)
    study = _probe_study("linked", tmp_path / "log")
    with pytest.raises(StudyWriteError, match="is a symbolic link"):
        run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=output)
    with pytest.raises(StudyWriteError, match="is a symbolic link"):
        write_artefacts([_outcome("a", "energy")], output / "linked")
    assert sorted(p.name for p in target.iterdir()) == ["data.artefact.csv"]
    assert not (tmp_path / "log").exists()  # refused before any run


def test_a_readme_of_the_user_in_the_output_folder_is_never_overwritten(tmp_path, capsys):
    """`impactbench run` replaced a user's own <output>/README.md by its index without a word."""
    output = tmp_path / "out"
    output.mkdir()
    readme = output / "README.md"
    readme.write_text("# My notes\n")
    assert main(["run", "--quick", "--output", str(output), next(iter(STUDIES.names()))]) == 1
    assert "README.md exists and was not written by impactbench" in capsys.readouterr().err
    with pytest.raises(StudyWriteError, match="not written by impactbench"):
        write_index(output, [])
    assert readme.read_text() == "# My notes\n"
    assert sorted(path.name for path in output.iterdir()) == ["README.md"]  # nothing ran
    readme.unlink()  # the index the project writes is its own: written again and again
    write_index(output, [])
    write_index(output, [])
    assert readme.read_text().startswith("# impactbench reports\n")


def test_a_readme_of_the_user_in_a_study_folder_is_never_overwritten(tmp_path):
    study = _probe_study("readme_probe", tmp_path / "log")
    folder = tmp_path / "readme_probe"
    folder.mkdir()
    (folder / "README.md").write_text("the user's")
    with pytest.raises(StudyWriteError, match="not written by impactbench"):
        run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    assert not (tmp_path / "log").exists()  # refused before any run
    run_study(
        study, quick=True, jobs=1, report=False, cache_dir=tmp_path / "cache", output=tmp_path
    )
    with pytest.raises(StudyWriteError, match="not written by impactbench"):
        write_study_report(study, folder)
    assert (folder / "README.md").read_text() == "the user's"
    (folder / "README.md").unlink()
    write_study_report(study, folder)
    write_study_report(study, folder)  # its own report, rewritten
    assert (folder / "README.md").read_text().startswith("# Probe\n")


# --------------------------------------------------------------------------------------------
# A full disk


def _full_disk(monkeypatch, *names: str) -> None:
    """Writes of the files ``names`` fail with ENOSPC after half their bytes are written."""
    import impactbench.core._files as files

    real = files.os.fdopen

    def fdopen(handle, mode="r", *args, **kwargs):
        stream = real(handle, mode, *args, **kwargs)
        target = os.readlink(f"/proc/self/fd/{handle}")
        if not any(Path(target).name.startswith(f".{name}.") for name in names):
            return stream

        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                stream.close()

            def write(self, data):
                stream.write(data[: len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return Full()

    monkeypatch.setattr(files.os, "fdopen", fdopen)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
@pytest.mark.parametrize("file", ["README.md", "results.csv.gz"])
def test_a_full_disk_names_the_file_and_the_study_and_keeps_the_previous_files(
    tmp_path, monkeypatch, capsys, file
):
    """ENOSPC printed `[Errno 28] No space left on device`, naming no file or study."""
    study = _probe_study("disk_probe", tmp_path / "log")
    monkeypatch.setitem(STUDIES, "disk_probe", study)
    argv = ["run", "disk_probe", "--jobs", "1", "--output", str(tmp_path / "out")]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    folder = tmp_path / "out" / "disk_probe"
    before = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    _full_disk(monkeypatch, file)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"could not write {folder / file}: No space left on device" in err
    assert "study disk_probe" in err
    if file != "README.md":  # the runs' step: their cache, and how to resume
        assert f"2 of its 2 finished runs are in the run cache {tmp_path / 'cache'}" in err
        assert "run the same command again to resume" in err
    else:  # the reports' step, after the tables
        assert f"impactbench report --output {tmp_path / 'out'}" in err
    assert (folder / file).read_bytes() == before[file]  # the previous one, whole
    assert not [path for path in folder.rglob("*") if path.name.endswith(".tmp")]


def test_a_full_disk_without_a_cache_says_the_runs_are_not_cached(tmp_path, monkeypatch):
    study = _probe_study("disk_probe2", tmp_path / "log")
    _full_disk(monkeypatch, "results.csv.gz")
    with pytest.raises(StudyWriteError, match="not cached") as error:
        run_study(study, quick=True, jobs=1, use_cache=False, output=tmp_path)
    assert error.value.errno == errno.ENOSPC
    assert str(tmp_path / "disk_probe2" / "results.csv.gz") in str(error.value)
    assert not (tmp_path / "disk_probe2" / "results.csv.gz").exists()


# --------------------------------------------------------------------------------------------
# Study files that patch built-in code; --verify-cache


def test_a_study_file_patching_a_built_in_class_is_refused(tmp_path, capsys):
    """A study file rebinding a built-in class's method stored its altered results under the
    built-in runs' keys with --jobs 1 (with --jobs 2 the patch had no effect)."""
    patch = textwrap.dedent(
        """
        from impactbench.methods import MoreauJean
        MoreauJean.describe_patch = lambda self: "patched"
        """
    )
    from impactbench.methods import MoreauJean

    path = _study_file(
        tmp_path, "patching", "patching", extra=patch.replace("\n", "\n            ")
    )
    cache = tmp_path / "cache"
    try:
        with pytest.raises(SystemExit) as exit_:
            main(
                [
                    "run",
                    str(path),
                    "--jobs",
                    "1",
                    "--cache-dir",
                    str(cache),
                    "--output",
                    str(tmp_path / "out"),
                ]
            )
    finally:
        if "describe_patch" in vars(MoreauJean):
            del MoreauJean.describe_patch
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "impactbench.methods" in err and "MoreauJean.describe_patch" in err
    assert not cache.exists()


def _patching_runs(quick: bool) -> list:
    from impactbench.problems import bouncing_ball

    bouncing_ball.MAX_IMPACT_COUNT = 3
    return []


def test_a_study_whose_runs_patch_impactbench_is_refused(tmp_path):
    from impactbench.problems import bouncing_ball

    study = Study("runs_patch", "T", "D", _patching_runs, _report_tables)
    before = bouncing_ball.MAX_IMPACT_COUNT
    try:
        with pytest.raises(ValueError, match="bouncing_ball.MAX_IMPACT_COUNT"):
            run_study(study, quick=True, jobs=1, use_cache=False, output=tmp_path)
    finally:
        bouncing_ball.MAX_IMPACT_COUNT = before
    assert not (tmp_path / "runs_patch").exists()


def _sign(path: Path, change) -> None:
    """Edit a cache entry and recompute its checksum (a writer who knows the format)."""
    entry = json.loads(path.read_text())
    change(entry)
    entry["checksum"] = entry_checksum(entry)
    path.write_text(json.dumps(entry))


def test_verify_cache_recomputes_a_sample_and_reports_entries_that_differ(
    tmp_path, monkeypatch, capsys
):
    study = _probe_study("verify_probe", tmp_path / "log")
    monkeypatch.setitem(STUDIES, "verify_probe", study)
    cache = tmp_path / "cache"
    argv = ["run", "verify_probe", "--jobs", "1", "--output", str(tmp_path / "out")]
    argv += ["--cache-dir", str(cache)]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "out" / "verify_probe" / "results.csv.gz")
    assert main([*argv, "--verify-cache", "1"]) == 0
    assert "2 cached runs recomputed, 0 differ" in capsys.readouterr().out
    key = table.loc[1, "key"]
    true_error = table.loc[1, "max_position_error"]

    def scale(entry):
        entry["outcome"]["metrics"]["max_position_error"] *= 2.0

    _sign(runner.RunCache(cache).path(key), scale)
    assert main(argv) == 0  # a re-signed entry passes the checksum: only recomputing finds it
    assert pd.read_csv(tmp_path / "out" / "verify_probe" / "results.csv.gz").loc[
        1, "max_position_error"
    ] == pytest.approx(2 * true_error)
    capsys.readouterr()
    assert main([*argv, "--verify-cache", "1"]) == 1
    captured = capsys.readouterr()
    assert "2 cached runs recomputed, 1 differ" in captured.out
    assert "differs from the cache: ProbeBall" in captured.err and key in captured.err
    assert "max_position_error" in captured.err
    stored = pd.read_csv(tmp_path / "out" / "verify_probe" / "results.csv.gz")
    assert stored.loc[1, "max_position_error"] == true_error  # the table holds the recomputation
    assert main([*argv, "--verify-cache", "0.5"]) == 0  # the entry was replaced
    assert "1 cached runs recomputed, 0 differ" in capsys.readouterr().out


@pytest.mark.parametrize("fraction", ["0", "1.5", "-0.1", "nan", "x"])
def test_verify_cache_takes_a_fraction(fraction, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--verify-cache", fraction])
    assert exit_.value.code == 2
    assert "--verify-cache: must be a number in (0, 1]" in capsys.readouterr().err


def test_only_write_failures_are_reported_as_such():
    """A file missing when read (a reference not in the cache) is not a full disk."""
    from impactbench.analysis.reference import MissingReferenceError
    from impactbench.bench.files import naming_write_failures

    with pytest.raises(MissingReferenceError, match="not in the reference cache"):
        with naming_write_failures("s", "resume"):
            raise MissingReferenceError("the reference is not in the reference cache")
