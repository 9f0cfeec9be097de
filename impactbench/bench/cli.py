"""The ``impactbench`` command: list, run studies, rebuild reports, simulate one run, compile
ahead, tell which studies are stale.

Exit codes: 0 success; 1 a run failed (the tables and reports are still written),
``--verify-cache`` found cached runs that differ from their recomputation, there was nothing to
report, or a file or the Dask scheduler could not be reached (a file that cannot be written,
e.g. on a full disk, is named with its study and how to resume); 2 a usage error (unknown name,
bad value, malformed scheduler address, a size beyond its limit, a study file that patches
impactbench's code or takes a built-in study's name without ``--replace``), reported as a
message without a traceback; 130 interrupted (the message says what is kept: the runs finished
and stored in the run cache, with their count, or nothing; run the same command again to
resume). Cache warnings (an ignored entry, a cache that cannot be written) are printed
as ``impactbench: warning: ...`` and do not change the exit code.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import joblib
from tqdm.auto import tqdm

from ..analysis.reference import default_reference_dir, reference_dir_set
from ..core import compile_clock, names
from ..core._files import CacheWarning
from ..core.names import did_you_mean
from .arguments import Parser, integer_in, jobs_count, positive_int, positive_number
from .cache_integrity import check_fraction, no_patching
from .compare import add_parser as add_compare_parser
from .compile_command import add_parser as add_compile_parser
from .files import StudyWriteError, check_ours, naming_write_failures
from .list_command import add_parser as add_list_parser
from .pipeline import DEFAULT_OUTPUT, MissingReferenceWarning, palette_figures, run_study
from .plugins import STUDIES, load_study_file
from .report import (
    INDEX_HEADER,
    PROVENANCE_FILE,
    README_FILE,
    TABLE_FILE,
    write_index,
    write_study_report,
)
from .report_files import file_studies
from .results import compress_artefacts, compress_table, read_provenance, table_path
from .runner import BACKENDS, MAX_RETRIES, check_options, default_cache_dir
from .simulate_command import add_parser as add_simulate_parser
from .status_command import add_parser as add_status_parser
from .status_command import stale_studies
from .study import Study, StudyReport
from .validate_command import add_parser as add_validate_parser


class UsageError(ValueError):
    """A bad command line (exit code 2)."""


def parse_spec(text: str, table: dict[str, Any], kind: str) -> tuple[Any, dict[str, Any]]:
    """:func:`impactbench.core.names.parse_spec`, raising :class:`UsageError` (exit code 2)."""
    try:
        return names.parse_spec(text, table, kind)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _fraction(text: str) -> float:
    try:
        return check_fraction(float(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from error


# --------------------------------------------------------------------------------------------
# run and report


def _studies(names: Sequence[str], replace: bool = False) -> dict[str, Study]:
    """The studies named on the command line (names, or paths of files defining ``STUDY``).

    A study file may not patch impactbench's own code (:func:`no_patching`), nor take the name
    of a built-in study unless ``replace``."""
    chosen: dict[str, Study] = {}
    for name in names:
        if name.endswith(".py"):
            try:
                with no_patching(f"study file {name!r}"):
                    study = load_study_file(name)
            except ValueError as error:
                raise UsageError(str(error)) from None
            if study.name in STUDIES and STUDIES[study.name] is not study and not replace:
                raise UsageError(
                    f"study file {name!r} defines the study {study.name!r}, the name of a "
                    "built-in study: rename it, or pass --replace to write it in the built-in "
                    "study's place"
                )
        elif name in STUDIES:
            study = STUDIES[name]
        else:
            raise UsageError(
                f"unknown study {name!r}{did_you_mean(name, STUDIES)}; known: "
                f"{', '.join(STUDIES)}, or the path of a .py file defining STUDY"
            )
        chosen.setdefault(study.name, study)
    return chosen or dict(STUDIES)


def _report_of(name: str, folder: Path, references: str) -> StudyReport | str:
    """Write the report of the built-in study ``name`` into ``folder`` (in a worker process),
    reading the reference cache ``references`` of the launching process (a reused worker keeps
    the environment it was started with)."""
    with reference_dir_set(references):
        return _rebuilt(STUDIES[name], folder)


def _write_report(study: Study, folder: Path) -> StudyReport:
    """:func:`write_study_report`, its PNG figures stored with a palette
    (:func:`impactbench.bench.pipeline.palette_figures`), after the table and the artefact
    tables written uncompressed before are stored compressed
    (:func:`impactbench.bench.results.compress_table`,
    :func:`impactbench.bench.results.compress_artefacts`); a file it cannot write (a full disk)
    is a StudyWriteError naming the file and the study."""
    resume = (
        f"Its table {folder / TABLE_FILE} is kept, and each report file is the previous one or "
        f"none: free some space and run `impactbench report --output {folder.parent}`"
    )
    with naming_write_failures(study.name, resume):
        compress_table(folder)
        compress_artefacts(folder)
        with palette_figures(folder):
            return write_study_report(study, folder)


def _write_reports(
    output: Path, extra: Mapping[str, Study] | None = None, jobs: int = 1
) -> tuple[int, list[str]]:
    """Rebuild the report of every study with a table in ``output`` (the built-in and plug-in
    studies, and ``extra``), and the index.

    With ``jobs`` other than 1 the built-in studies' reports are written by that many worker
    processes (joblib's loky backend; -1: all cores), the others here. Each report reads only
    its study's folder, so the files do not depend on ``jobs``. Shows a progress bar on a
    terminal. A study whose stored table the current code cannot report (:func:`_rebuilt`: one
    written by an older version) does not stop the others: its files are left as they were,
    the reason is printed on stderr and the index says it was not rebuilt. Returns the number
    of studies found and the names of those not rebuilt.
    """
    extra = dict(extra or {})  # a study file given --replace in its built-in's place
    names = [name for name in dict.fromkeys([*STUDIES.names(), *extra])]
    found = [extra.get(name) or STUDIES.get(name) for name in names if _has_table(output, name)]
    present = [  # a plug-in imported if it has a table
        study for study in found if study is not None and _written_by(study, output / study.name)
    ]
    in_workers = [study for study in present if STUDIES.get(study.name) is study]
    if jobs == 1 or len(in_workers) < 2:
        in_workers = []
    written: dict[str, StudyReport] = {}
    with tqdm(total=len(present), desc="reports", unit="study", disable=None) as bar:
        if in_workers:
            parallel = joblib.Parallel(n_jobs=jobs, backend="loky", return_as="generator")
            references = str(default_reference_dir())
            tasks = (
                joblib.delayed(_report_of)(s.name, output / s.name, references) for s in in_workers
            )
            for study, report in zip(in_workers, parallel(tasks), strict=True):
                written[study.name] = report
                bar.update()
        for study in present:
            if study.name not in written:
                written[study.name] = _rebuilt(study, output / study.name)
                bar.update()
    not_rebuilt = [name for name, report in written.items() if isinstance(report, str)]
    for name in not_rebuilt:
        print(f"impactbench: error: study {name}: {written[name]}", file=sys.stderr)
    reports = [(study, _indexed(study, written[study.name])) for study in present]
    if reports:
        write_index(output, reports)
    return len(reports), not_rebuilt


def _rebuilt(study: Study, folder: Path) -> StudyReport | str:
    """:func:`_write_report`, or, when the current code cannot report the stored table (one an
    older version wrote: a reference it no longer finds, a column since added), the reason,
    naming the command that redoes the study; the study's files are then left as they were. A
    file that cannot be written (a full disk, a README of the user's) is raised as it is."""
    try:
        return _write_report(study, folder)
    except StudyWriteError:
        raise
    except Exception as error:
        return (
            f"its report was not rebuilt from {table_path(folder)} ({type(error).__name__}: "
            f"{error}); rerun `impactbench run {study.name}` to redo its table and report"
        )


def _indexed(study: Study, report: StudyReport | str) -> StudyReport:
    """The report the index shows for ``study``: its own, or for one not rebuilt (a reason,
    :func:`_rebuilt`) that reason as its only finding."""
    if isinstance(report, StudyReport):
        return report
    return StudyReport(findings=[f"Not rebuilt: {report}."])


def _written_by(study: Study, folder: Path) -> bool:
    """Whether the table in ``folder`` was written by ``study``'s module (its provenance says
    so, or says nothing); if not (a study file run with --replace), say so on stderr."""
    module = read_provenance(folder / PROVENANCE_FILE).get("study_module")
    ours = getattr(study.runs, "__module__", None)
    if module is None or module == ours:
        return True
    print(
        f"impactbench: warning: {folder} was written by the study of {module}, not {ours}: "
        "its report is left as it is (run that study again to rewrite it)",
        file=sys.stderr,
    )
    return False


@contextmanager
def _references_of_this_command(bypass: bool) -> Iterator[None]:
    """With ``bypass`` (``--no-cache``), the references this command computes live in a temporary
    folder (its runs and reports share them; deleted at the end): the reference cache is neither
    read nor written."""
    if not bypass:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="impactbench-references-") as folder:
        with reference_dir_set(folder):
            yield


def _run(args: argparse.Namespace) -> int:
    with _references_of_this_command(args.no_cache):
        return _run_studies(args)


def _run_studies(args: argparse.Namespace) -> int:
    studies = _studies(args.studies, args.replace)
    if args.backend != "dask" and args.scheduler:
        raise UsageError("--scheduler is only used with --backend dask")
    try:  # every option before any study runs
        check_options(
            jobs=args.jobs,
            backend=args.backend,
            scheduler=args.scheduler,
            retries=args.retry_failed,
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    output = args.output or DEFAULT_OUTPUT["quick" if args.quick else "full"]
    check_ours(output / README_FILE, INDEX_HEADER)  # the index: refused before any run
    if args.stale:
        studies = stale_studies(studies, output)
        if not studies:
            print(f"every study with a table in {output} is current: nothing to rerun")
            return 0
        print(f"stale studies in {output}: {', '.join(studies)}")
    any_failed = False
    args.finished_studies = []  # named by an interruption
    for name, study in studies.items():
        try:
            result = run_study(
                study,
                quick=args.quick,
                jobs=args.jobs,
                backend=args.backend,
                scheduler=args.scheduler,
                cache_dir=args.cache_dir,
                use_cache=not args.no_cache,
                retries=args.retry_failed,
                output=output,
                report=False,
                with_plugins=args.with_plugins,
                run_timeout=args.run_timeout,
                verify_cache=args.verify_cache,
                progress=True,
            )
        except ValueError as error:  # the Dask client refused the address, sys.exit in runs()
            raise UsageError(str(error)) from None
        failed = result.failed
        print(
            f"{name}: {len(result.runs)} runs ({result.cached} from the cache, {len(failed)} "
            f"failed) in {result.elapsed:.1f} s -> {result.folder / TABLE_FILE}"
        )
        for outcome in failed[:5]:
            print(f"  failed: {outcome.error}", file=sys.stderr)
        args.finished_studies.append(name)
        any_failed = any_failed or (bool(failed) and not study.failures_are_findings)
        if args.verify_cache:
            _print_verification(name, result)
            any_failed = any_failed or bool(result.cache_differences)
    extra = {name: s for name, s in studies.items() if STUDIES.get(name) is not s}
    # the reports are written here (loky) whatever the runs' backend; -1 with Dask's jobs
    _, not_rebuilt = _write_reports(output, extra, jobs=args.jobs if args.backend == "loky" else -1)
    print(f"reports: {output / 'README.md'}")
    return 1 if any_failed or not_rebuilt else 0


def _has_table(folder: Path, name: str) -> bool:
    return table_path(folder / name).exists()


def _print_verification(name: str, result: Any) -> None:
    """Report ``--verify-cache``: how many cached runs were recomputed, and those that differ."""
    differences = result.cache_differences
    print(
        f"{name}: {result.cache_verified} cached runs recomputed, {len(differences)} differ "
        "from the cache"
    )
    for line in differences:
        print(f"  differs from the cache: {line}", file=sys.stderr)


def _has_tables(folder: Path) -> bool:
    return any(_has_table(folder, name) for name in STUDIES.names())


def _report(args: argparse.Namespace) -> int:
    output = args.output
    if output is None:  # the full reports, else those of `run --quick`
        output = DEFAULT_OUTPUT["full"]
        if not _has_tables(output) and _has_tables(DEFAULT_OUTPUT["quick"]):
            output = DEFAULT_OUTPUT["quick"]
            print(f"no stored tables in {DEFAULT_OUTPUT['full']}: reporting {output} (--quick)")
    named = _studies(args.studies) if args.studies else {}  # no study imported otherwise
    recorded, notes = file_studies(output, UsageError)
    for note in notes:
        if not any(note.startswith(f"no report for {output / name}:") for name in named):
            print(f"impactbench: warning: {note}", file=sys.stderr)
    extra = {**recorded, **named}
    found, not_rebuilt = _write_reports(output, extra, jobs=args.jobs)
    if not found:
        hint = "`impactbench run` (or `run --quick`, then `report --output reports-quick`)"
        print(f"no stored study tables in {output}; run {hint} first", file=sys.stderr)
        return 1
    print(f"reports: {output / 'README.md'}")
    return 1 if not_rebuilt else 0


# --------------------------------------------------------------------------------------------
# parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``impactbench`` command."""
    parser = Parser(
        prog="impactbench",
        description="Comparative studies of numerical methods for mechanical systems with "
        "unilateral constraints and impacts.",
        epilog="Exit codes: 0 success, 1 a run failed, 2 usage error, 130 interrupted.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_list_parser(commands, UsageError)

    run = commands.add_parser(
        "run",
        help="run studies (all when none is named) and write their tables and reports",
        description="Run studies: expand their grids into runs, execute them in parallel "
        "(finished runs are cached; an interrupted study resumes), write one table per study "
        "and the reports.",
    )
    run.add_argument(
        "studies",
        nargs="*",
        metavar="STUDY",
        help="study names, or paths of .py files defining STUDY (default: every study)",
    )
    run.add_argument("--quick", action="store_true", help="the small grids (seconds)")
    run.add_argument(
        "--jobs", type=jobs_count, default=-1, help="parallel jobs (default -1: all cores)"
    )
    run.add_argument("--backend", choices=BACKENDS, default="loky", help="joblib backend")
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler (dask backend; without it, a local cluster of --jobs processes)",
    )
    run.add_argument(
        "--no-cache",
        action="store_true",
        help="ignore and do not fill the run cache and the reference cache",
    )
    run.add_argument(
        "--with-plugins",
        action="store_true",
        help="the built-in studies compare the installed plug-in methods too",
    )
    run.add_argument(
        "--verify-cache",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="recompute this fraction (0 < FRACTION <= 1, at least one run) of the runs read "
        "from the cache, drawn at random, and report those that differ (exit code 1); their "
        "entries are replaced",
    )
    run.add_argument(
        "--stale",
        action="store_true",
        help="run only the named studies (default: every study) whose table in the output "
        "folder was made by other code than the current (see `impactbench status`)",
    )
    run.add_argument(
        "--replace",
        action="store_true",
        help="let a study file take the name of a built-in study (its table and report then "
        "replace the built-in study's in the output folder)",
    )
    run.add_argument(
        "--retry-failed",
        type=integer_in(0, MAX_RETRIES),
        default=0,
        metavar="N",
        help="rerun the failed runs (errors, crashed workers) up to N more times in this "
        f"invocation (0..{MAX_RETRIES}, default 0)",
    )
    run.add_argument(
        "--run-timeout",
        type=positive_number,
        default=None,
        metavar="SECONDS",
        help="stop a run after this many seconds and record it as failed (default: the "
        "study's run_timeout, else no limit)",
    )
    run.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help=f"run cache folder (default: {default_cache_dir()})",
    )
    run.add_argument(
        "--output",
        type=Path,
        default=None,
        help="output folder (default: reports, or reports-quick with --quick)",
    )
    run.set_defaults(handler=_run, parser=run)

    report = commands.add_parser(
        "report",
        help="rebuild the reports from the stored tables",
        description="Rebuild <output>/<study>/README.md and the figures of every study with a "
        "stored table in the output folder, and the index <output>/README.md (no run is "
        "executed).",
    )
    report.add_argument(
        "--output",
        type=Path,
        default=None,
        help="reports folder (default: reports, else reports-quick when only it has tables)",
    )
    report.add_argument(
        "studies",
        nargs="*",
        metavar="STUDY_FILE",
        help="files defining STUDY whose tables are in the folder (default: the files recorded "
        "in their provenance.json, when they still exist)",
    )
    report.add_argument(
        "--jobs",
        type=jobs_count,
        default=-1,
        help="studies whose reports are written in parallel (default -1: all cores)",
    )
    report.set_defaults(handler=_report, parser=report)

    add_status_parser(commands, _studies)
    add_compile_parser(commands, UsageError)
    add_simulate_parser(commands, UsageError, positive_int)
    add_compare_parser(commands, UsageError)
    add_validate_parser(commands, UsageError)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Cache warnings as one line on stderr, other warnings in Python's format."""
    if issubclass(category, (CacheWarning, MissingReferenceWarning)):
        print(f"impactbench: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    started = time.time()
    try:
        with warnings.catch_warnings(), compile_clock.notices():
            warnings.showwarning = _show_warning
            return args.handler(args)
    except UsageError as error:  # the subcommand's usage line, not the top-level one
        getattr(args, "parser", parser).error(str(error))
    except OSError as error:  # unwritable output, unreachable scheduler
        print(f"impactbench: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted: {_what_is_kept(args, started)}", file=sys.stderr)
        return 130


def _what_is_kept(args: argparse.Namespace, started: float) -> str:
    """What an interrupted command keeps: the runs it finished and stored in the run cache
    (entries written since ``started``, a ``time.time()``), with their count, or nothing."""
    if args.command not in ("run", "compare"):
        kept = {
            "simulate": "nothing is kept (simulate caches no run, and writes its files after "
            "the last run)",
            "compile": "the code compiled so far is kept in numba's disk cache",
            "report": "the reports written before are kept; run the command again to "
            "rebuild the others",
        }
        return kept.get(args.command, "nothing is kept")
    studies = ", ".join(getattr(args, "finished_studies", []))
    tables = f"; the tables of {studies} are written" if studies else ""
    if getattr(args, "no_cache", False):
        return f"no run is kept (--no-cache){tables}"
    cache = Path(args.cache_dir or default_cache_dir())
    try:
        stored = sum(entry.stat().st_mtime >= started for entry in cache.glob("*.json"))
    except OSError:
        stored = 0
    if not stored:
        return f"no run finished in this command was cached{tables}"
    return (
        f"{stored} runs finished in this command are kept in the run cache {cache}{tables}; "
        "run the same command again to resume from them"
    )
