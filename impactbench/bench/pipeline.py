"""The main job as a Python function: run a study, store its table, provenance and report.

:func:`run_study` is what ``impactbench run`` does for each study, callable from a notebook, a
script or CI without going through the command line::

    from impactbench import run_study
    result = run_study("convergence", quick=True, jobs=2, output="reports-quick")
    result.table          # the flat table, one row per run (as stored in results.csv.gz)
    result.failed         # the failed outcomes (their rows are in the table, with the error)
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from ..analysis.metrics import METRICS
from ..core._files import write_atomic
from .cache_integrity import check_fraction, no_patching, verify_sample
from .files import check_ours, check_study_folder, naming_write_failures
from .machine import machine_info
from .plugins import plugins_in_studies, study_runs
from .report import (
    PROVENANCE_FILE,
    README_FILE,
    TABLE_FILE,
    report_header,
    write_study_report,
)
from .results import (
    build_table,
    compress_table,
    write_artefacts,
    write_provenance,
    write_table,
)
from .runner import (
    FAILED,
    Outcome,
    Run,
    RunCache,
    check_options,
    code_version,
    default_cache_dir,
    execute,
    run_key,
)
from .study import Study

#: Output folders of the full and the quick grids (the quick grid never overwrites the full one).
DEFAULT_OUTPUT = {"full": Path("reports"), "quick": Path("reports-quick")}


@dataclass(frozen=True)
class StudyResult:
    """What :func:`run_study` produced.

    Attributes
    ----------
    study : Study
    runs : list of Run
        The runs of the grid, in the order of the table's rows.
    outcomes : list of Outcome
        One per run (failed ones included).
    table : pandas.DataFrame
        The stored table (``folder/results.csv.gz``), one row per run.
    folder : Path
        Where the table, its provenance, the runs' artefacts
        (:func:`impactbench.bench.results.write_artefacts`) and the report were written.
    elapsed : float
        Wall time of the runs, in seconds.
    cache_verified : int
        With ``verify_cache``: the number of cached runs recomputed (0 otherwise).
    cache_differences : list of str
        With ``verify_cache``: the recomputed runs whose results differ from the cache, one
        line each (empty otherwise).
    """

    study: Study
    runs: list[Run]
    outcomes: list[Outcome]
    table: pd.DataFrame
    folder: Path
    elapsed: float
    cache_verified: int = 0
    cache_differences: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        """The failed outcomes."""
        return [outcome for outcome in self.outcomes if outcome.status == FAILED]

    @property
    def cached(self) -> int:
        """Number of runs read from the run cache."""
        return sum(outcome.cached for outcome in self.outcomes)


def study_provenance(study: Study) -> dict[str, str]:
    """The module defining ``study`` (a user's or ours): its name, the digest of its source and
    the git revision of the repository holding it ("-dirty" if modified, "unknown" outside git)."""
    module = sys.modules.get(getattr(study.runs, "__module__", ""), None)
    path = Path(getattr(module, "__file__", "") or "")
    if not path.is_file():
        return {"study_module": str(getattr(module, "__name__", "unknown"))}

    def git(*command: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path.parent), *command],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    try:
        revision = git("rev-parse", "--short=12", "HEAD")
        if git("status", "--porcelain", "--untracked-files=no", "--", str(path)):
            revision += "-dirty"
    except (OSError, subprocess.SubprocessError):
        revision = "unknown"
    return {
        "study_module": module.__name__,
        "study_digest": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
        "study_git_revision": revision,
        "study_file": str(path.resolve()),
    }


def code_digest(runs: Sequence[Run]) -> str:
    """The digest of a study's runs at the code's current version: of their sorted cache keys,
    which hash each run's parameters and its code version (the source it depends on,
    :func:`impactbench.core.versioning.source_digest`). Stored in the study's provenance as
    ``code_digest``; a study whose stored digest differs from the current one is stale
    (``impactbench status``, ``impactbench run --stale``)."""
    keys = sorted({run_key(run, code_version(run)) for run in runs})
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def _store_references(runs: Sequence[Run], outcomes: Sequence[Outcome]) -> None:
    """Make sure the reference of every finished run is in the reference cache (a run read
    from the run cache did not need it): the report reads references and never computes one."""
    done = set()
    for run, outcome in zip(runs, outcomes, strict=True):
        if run.reference is None or outcome.status == FAILED:
            continue
        key = (run.reference, run.problem, repr(run.problem_kwargs), run.t_end)
        if key not in done:
            done.add(key)
            run.reference(run.problem(**run.problem_kwargs), run.t_end)


class MissingReferenceWarning(UserWarning):
    """Runs measured errors without a reference: those metrics are NaN (the message says which
    runs)."""


def warn_unmeasured(name: str, runs: Sequence[Run], outcomes: Sequence[Outcome]) -> None:
    """Warn (:class:`MissingReferenceWarning`) about the finished runs of study ``name`` that
    ask for metrics needing a reference, have no ``reference=`` and got NaN for all of them:
    their problem has no exact solution."""
    unmeasured = []
    for run, outcome in zip(runs, outcomes, strict=True):
        wanted = [metric for metric in run.metrics if METRICS[metric].needs_reference]
        if run.reference is None and outcome.status != FAILED and wanted:
            if all(math.isnan(outcome.metrics[metric]) for metric in wanted):
                unmeasured.append((run, wanted))
    if unmeasured:
        run, wanted = unmeasured[0]
        h = "" if run.h is None else f", h = {run.h!r}"
        warnings.warn(
            f"study {name}: {len(unmeasured)} of {len(runs)} runs have no reference and their "
            f"problem no exact solution, so {', '.join(wanted)} are NaN, e.g. "
            f"{run.problem_name} with {run.method_name}{h}; give their Run a reference= "
            "function (e.g. one returning impactbench.reference(problem, t_end, "
            "impactbench.methods.reference_method()))",
            MissingReferenceWarning,
            stacklevel=3,
        )


def _study(study: Study | str) -> Study:
    from .plugins import STUDIES

    if isinstance(study, Study):
        return study
    if isinstance(study, str) and study in STUDIES:
        return STUDIES[study]
    raise ValueError(f"study must be a Study or one of {list(STUDIES)}, got {study!r}")


def run_study(
    study: Study | str,
    *,
    quick: bool = False,
    jobs: int = -1,
    backend: str = "loky",
    scheduler: str | None = None,
    cache_dir: Path | str | None = None,
    use_cache: bool = True,
    retries: int = 0,
    output: Path | str | None = None,
    report: bool = True,
    with_plugins: bool = False,
    run_timeout: float | None = None,
    verify_cache: float = 0.0,
    progress: bool | None = None,
) -> StudyResult:
    """Run a study's grid, store its table with provenance, and (by default) its report.

    Parameters
    ----------
    study : Study or str
        A :class:`impactbench.bench.study.Study` (a user's, or one of
        ``impactbench.studies.STUDIES``) or the name of a built-in study.
    quick : bool
        The quick grid (seconds; the tests' grid) instead of the full one.
    jobs, backend, scheduler, cache_dir, use_cache, retries
        As :func:`impactbench.bench.runner.execute`; ``jobs`` is capped by the study's
        ``max_jobs``, and a study capped to one job compiles its code on ``jobs`` workers first
        (``compile_jobs`` of :func:`~impactbench.bench.runner.execute`) and times its runs
        interleaved (``interleave``).
    run_timeout : float, optional
        Time limit in seconds of each run (as :func:`~impactbench.bench.runner.execute`);
        default: the study's ``run_timeout``.
    output : path, optional
        Parent folder of the study's folder; default ``reports`` (``reports-quick`` when
        ``quick``).
    report : bool
        Also write the study's report (``README.md`` and figures, drawn from the stored table).
        The index of all studies (``output/README.md``) is written by ``impactbench run`` and
        ``impactbench report``.
    with_plugins : bool
        The built-in studies' runs compare the installed plug-in methods too
        (:func:`impactbench.bench.plugins.plugins_in_studies`); default: the built-in methods.
    verify_cache : float
        In [0, 1]: recompute this fraction of the runs read from the run cache, drawn at random
        (at least one when any was read and the fraction is not 0), and compare
        (:func:`impactbench.bench.cache_integrity.verify_sample`): the table holds the
        recomputed results and :attr:`StudyResult.cache_differences` lists the runs whose
        stored results differed (their cache entries are replaced). Default 0: none.
    progress : bool, optional
        As :func:`~impactbench.bench.runner.execute` (True: a bar on a terminal, lines with the
        time left in a log).

    Returns
    -------
    StudyResult

    Raises
    ------
    ValueError
        For an unknown study name or a bad execution option (before any run starts), a study
        whose ``runs`` called ``sys.exit``, or when the study's ``runs()`` patches impactbench's
        own code (:func:`impactbench.bench.cache_integrity.no_patching`).
    impactbench.bench.files.StudyWriteError
        Before any run, when the study's folder is a symbolic link or (``report``) holds a
        README.md of the user's (:func:`impactbench.bench.files.check_ours`); after the runs,
        when a file cannot be written (a full disk): the message names the file and the study,
        and says how many finished runs are in the run cache (run again to resume from them).
    """
    study = _study(study)
    if not isinstance(quick, bool):
        raise ValueError(f"quick must be True or False, got {quick!r}")
    check_options(jobs=jobs, backend=backend, scheduler=scheduler, retries=retries)
    if verify_cache != 0.0:
        check_fraction(verify_cache)
    grid = "quick" if quick else "full"
    folder = Path(output if output is not None else DEFAULT_OUTPUT[grid]) / study.name
    check_study_folder(folder)
    if report:  # a README.md of the user's refused before any run, not after them
        check_ours(folder / README_FILE, report_header(study))
    with plugins_in_studies(with_plugins), no_patching(f"the runs() of study {study.name}"):
        runs = study_runs(study, quick)
    compile_jobs = jobs  # a study timed serially still compiles on every worker asked for
    if study.max_jobs is not None and (jobs == -1 or jobs > study.max_jobs):
        jobs = study.max_jobs
    start = time.perf_counter()
    outcomes = execute(
        runs,
        jobs=jobs,
        backend=backend,
        scheduler=scheduler,
        cache_dir=cache_dir,
        use_cache=use_cache,
        retries=retries,
        description=study.name,
        compile_jobs=compile_jobs,
        run_timeout=run_timeout if run_timeout is not None else study.run_timeout,
        progress=progress,
        interleave=study.max_jobs == 1,
    )
    verified, differences = 0, []
    if verify_cache:
        verified, differences = verify_sample(
            runs,
            outcomes,
            verify_cache,
            jobs=jobs,
            backend=backend,
            scheduler=scheduler,
            cache_dir=cache_dir,
            description=f"{study.name} (verifying the cache)",
        )
    _store_references(runs, outcomes)
    warn_unmeasured(study.name, runs, outcomes)
    elapsed = time.perf_counter() - start
    table = build_table(study.name, runs, outcomes)
    cached = sum(outcome.cached for outcome in outcomes)
    provenance = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "grid": grid,
        "jobs": jobs,
        "backend": backend,
        "runs": len(runs),
        "computed": len(runs) - cached,
        "cached": cached,
        "failed": sum(outcome.status == FAILED for outcome in outcomes),
        "retry_failed": retries,
        "elapsed": f"{elapsed:.1f} s",
        "machine": machine_info(),
        "code_digest": code_digest(runs),
        **study_provenance(study),
    }
    with naming_write_failures(study.name, _resume(outcomes, cache_dir, use_cache)):
        _write_outputs(study, folder, table, outcomes, report, provenance)
    return StudyResult(study, runs, outcomes, table, folder, elapsed, verified, differences)


def _write_outputs(
    study: Study,
    folder: Path,
    table: pd.DataFrame,
    outcomes: Sequence[Outcome],
    report: bool,
    provenance: dict[str, Any],
) -> None:
    """Write the table, its provenance, the artefacts and the report."""
    write_table(table, folder / TABLE_FILE)
    compress_table(folder)  # an older version's uncompressed table, now replaced
    write_provenance(folder / PROVENANCE_FILE, **provenance)
    write_artefacts(outcomes, folder)
    if report:
        with palette_figures(folder):
            write_study_report(study, folder)


#: Colours of the palette a report's PNG figures are stored with
#: (:func:`palette_png`).
PNG_COLOURS = 256


def palette_png(path: Path | str) -> bool:
    """Store the PNG ``path`` with a palette of at most :data:`PNG_COLOURS` colours.

    A figure of the reports draws a few line colours on white; the other colours of its pixels
    are the antialiased blends of those with the paper. The palette is chosen by median cut
    (each colour of the figure replaced by its nearest palette colour, no dithering), so that
    the lines' colours and the paper are kept and a blend moves to a near one, and the file is
    a fraction of the 8-bit RGB one. The size in pixels, the resolution and the text chunks
    (matplotlib's ``Software``) are kept; the bytes are reproducible. A PNG that already has a
    palette, or has transparent pixels (whose alpha a palette of opaque colours would lose), is
    left as it is.

    Returns
    -------
    bool
        Whether the file was rewritten.
    """
    path = Path(path)
    with Image.open(path) as image:
        image.load()
    if image.mode in ("P", "1", "L"):
        return False
    rgba = image.convert("RGBA")
    if rgba.getextrema()[3][0] < 255:
        return False
    palette = rgba.convert("RGB").quantize(
        PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
    )
    info = PngInfo()
    for key, value in getattr(image, "text", {}).items():
        info.add_text(key, value)
    options: dict[str, Any] = {"optimize": True, "pnginfo": info}
    if "dpi" in image.info:
        options["dpi"] = image.info["dpi"]
    buffer = io.BytesIO()
    palette.save(buffer, format="png", **options)
    write_atomic(path, buffer.getvalue())
    return True


def _png_stamps(folder: Path) -> dict[Path, tuple[int, int, int]]:
    """(inode, modification time, size) of every ``*.png`` directly in ``folder``."""
    stamps = {}
    for path in folder.glob("*.png"):
        try:
            stat = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        stamps[path] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return stamps


@contextmanager
def palette_figures(folder: Path | str) -> Iterator[None]:
    """Within the block a study's report is written into ``folder``; after it, each PNG figure
    it wrote (new, or replaced: every figure is written atomically, as a new file) is stored
    with a palette (:func:`palette_png`). The PNGs of the folder the block did not write (the
    user's) are not touched; nothing is done when the block raises."""
    folder = Path(folder)
    before = _png_stamps(folder)
    yield
    for path, stamp in sorted(_png_stamps(folder).items()):
        if before.get(path) != stamp and not path.is_symlink():
            palette_png(path)


def _resume(outcomes: Sequence[Outcome], cache_dir: Path | str | None, use_cache: bool) -> str:
    """What a study that stopped writing its files keeps, and how to go on."""
    finished = [outcome for outcome in outcomes if outcome.status != FAILED]
    if not use_cache:
        return (
            f"Its {len(finished)} finished runs were not cached (no cache): running it again "
            "computes them again"
        )
    cache = RunCache(cache_dir or default_cache_dir())
    stored = sum(cache.path(outcome.key).is_file() for outcome in finished)
    return (
        f"{stored} of its {len(finished)} finished runs are in the run cache {cache.directory}: "
        "free some space and run the same command again to resume (cached runs are not "
        "recomputed); the files written before are complete, the previous version of the "
        "others is kept"
    )
