"""The command line: every quick study end to end, reports, simulate, errors and exit codes,
caches that hold data only, and studies that survive what their runs do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image as mpl_image

from impactbench import Method
from impactbench.analysis.reference import REFERENCE_DIR_VARIABLE
from impactbench.bench.cli import main
from impactbench.bench.results import MissingArtefactError
from impactbench.bench.study import Study, StudyReport
from impactbench.bench.trajectory_figure import ARTEFACT_SAMPLES
from impactbench.methods import METHODS
from impactbench.studies import STUDIES, convergence, energy_decay, thesis_comparison

from conftest import assert_study_table, plant_pickle
from test_runner import probe_runs

#: The time-stepping methods of the convergence and thesis_comparison studies (table names).
TIME_STEPPERS = ("PaoliSchatzman", "MoreauJean[theta=0.5]", "CatchingUp")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """``impactbench run --quick`` (every study) into a fresh folder and cache; two jobs, so the
    reports are written by two worker processes."""
    root = tmp_path_factory.mktemp("quick")
    output, cache = root / "reports", root / "cache"
    argv = ["run", "--quick", "--jobs", "2", "--output", str(output), "--cache-dir", str(cache)]
    code = main(argv)
    return code, output, cache


def test_quick_run_of_every_study_succeeds(quick):
    code, output, _ = quick
    assert code == 0
    index = (output / "README.md").read_text()
    for name, study in STUDIES.items():
        folder = output / name
        assert f"({name}/README.md)" in index
        readme = (folder / "README.md").read_text()
        assert readme.startswith(f"# {study.title}")
        for figure in folder.glob("*.png"):
            assert f"]({figure.name})" in readme
            assert figure.read_bytes().startswith(b"\x89PNG")
            pixels = mpl_image.imread(figure)  # as a reader sees it: sized, and not blank
            assert min(pixels.shape[:2]) >= 300 and pixels[..., :3].std() > 0.01, figure.name
            assert figure.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
            assert b"<svg" in figure.with_suffix(".svg").read_bytes()
        assert list(folder.glob("*.png")), name
        assert (folder / "results.parquet").exists(), name
        for tex in (folder / "tables").glob("*.tex"):
            assert "\\toprule" in tex.read_text() and f"](tables/{tex.name})" in readme
        table = pd.read_csv(folder / "results.csv")
        assert (table["status"] != "failed").all(), table["error"].dropna().tolist()
        assert_study_table(table)
        assert set(table["study"]) == {name}


def test_quick_convergence_table_and_orders(quick):
    """Phase families of >= 10 nominal steps over >= 1.5 decades; the orders fitted on their
    medians, with intervals, are first order for the time-steppers, in orders.csv and in the
    report's table as value [low, high]; the event-driven sweep of 3 tolerances is not
    resolved and gets no order."""
    _, output, _ = quick
    table = pd.read_csv(output / "convergence" / "results.csv")
    assert_study_table(
        table,
        "max_position_error",
        "l1_velocity_error",
        "hausdorff_velocity_distance",
        "position_error_at_end",
        "impact_time_error",
        "max_penetration",
    )
    orders = pd.read_csv(output / "convergence" / "orders.csv")
    medians = orders[orders["errors"] == "median"]
    readme = (output / "convergence" / "README.md").read_text()
    for method in TIME_STEPPERS:
        runs = table[table["method"] == method]
        steps = runs["h_nominal"].unique()
        assert len(steps) >= 10
        assert np.log10(steps.max() / steps.min()) >= 1.5
        ratios = steps.max() / steps
        assert not np.allclose(np.log2(ratios), np.round(np.log2(ratios)))
        assert (runs.groupby("h_nominal").size() == convergence.PHASES["quick"]).all()
        assert (runs.groupby("h_nominal")["h"].nunique() == convergence.PHASES["quick"]).all()
        for metric in ("max_position_error", "hausdorff_velocity_distance"):
            fit = medians[(medians["method"] == method) & (medians["metric"] == metric)]
            assert len(fit) == 1 and fit["points"].iloc[0] >= 10
            fit = fit.iloc[0]
            assert fit["status"] == "order" and fit["order"] >= 0.8, fit
            assert fit["low"] < fit["order"] < fit["high"]
            assert fit["text"] == f"{fit['order']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}]"
            assert fit["text"] in readme
    adaptive = medians[medians["method"].str.startswith("EventDriven")]
    assert len(adaptive) and adaptive["order"].isna().all()
    assert set(adaptive["status"]) <= {"not resolved", "floor", "flat"}
    assert "## Observed orders" in readme and "t-interval" in readme
    errors = pd.read_csv(output / "convergence" / "errors.csv")
    families = table.groupby(["method", "h_nominal", "tolerance"], dropna=False)
    steppers = sum(cls.requires_step for cls in METHODS.values())
    assert len(errors) == families.ngroups == steppers * 10 + 3  # 10 steps, 3 tolerances


def test_rerun_reads_the_cache_and_gives_identical_tables(quick, tmp_path):
    _, output, cache = quick
    code = main(
        ["run", "convergence", "--quick", "--output", str(tmp_path), "--cache-dir", str(cache)]
    )
    assert code == 0
    first = (output / "convergence" / "results.csv").read_bytes()
    assert (tmp_path / "convergence" / "results.csv").read_bytes() == first
    provenance = (tmp_path / "convergence" / "provenance.json").read_text()
    assert '"computed": 0' in provenance


def test_report_rebuilds_from_the_stored_tables(quick, tmp_path):
    _, output, _ = quick
    folder = tmp_path / "convergence"
    folder.mkdir()
    (folder / "results.csv").write_bytes((output / "convergence" / "results.csv").read_bytes())
    assert main(["report", "--output", str(tmp_path)]) == 0
    assert (folder / "README.md").exists()
    assert (folder / "convergence_BouncingBall.png").exists()
    assert "convergence/README.md" in (tmp_path / "README.md").read_text()


@pytest.mark.parametrize("every", [1, 2])
def test_reports_of_failed_runs(quick, tmp_path, every):
    _, output, _ = quick
    for name in STUDIES:
        table = pd.read_csv(output / name / "results.csv")
        table["error"] = table["error"].astype(object)
        table.loc[::every, ["status", "error"]] = ["failed", "RuntimeError: lost"]
        (tmp_path / name).mkdir()
        table.to_csv(tmp_path / name / "results.csv", index=False)
        for artefact in (output / name).glob("*.artefact.csv"):
            shutil.copy(artefact, tmp_path / name)
    assert main(["report", "--output", str(tmp_path)]) == 0
    index = (tmp_path / "README.md").read_text()
    for name in STUDIES:
        total = len(pd.read_csv(output / name / "results.csv"))
        failed = len(range(0, total, every))
        assert f"{failed} of {total} runs failed" in index
        assert "RuntimeError: lost" in (tmp_path / name / "README.md").read_text()


def _refuse(*args, **kwargs):
    raise AssertionError("impactbench report simulated")


def test_report_executes_no_run_and_rewrites_what_the_workers_wrote(quick, tmp_path, monkeypatch):
    """``impactbench report`` reads the stored tables, artefacts and references: with every
    simulation refused and every report, figure and LaTeX table deleted, it writes them again
    here in one process, every file (text, tables, figures) byte for byte the one the quick run
    wrote in its two worker processes."""
    _, output, _ = quick
    copy = tmp_path / "reports"
    shutil.copytree(output, copy)
    products = [
        path
        for path in copy.rglob("*")
        if path.is_file()
        and (path.suffix in (".png", ".pdf", ".svg", ".tex") or path.name == "README.md")
    ]
    assert len([path for path in products if path.suffix == ".png"]) >= len(STUDIES)
    for path in products:
        path.unlink()
    monkeypatch.setattr(Method, "solve", _refuse)
    assert main(["report", "--output", str(copy), "--jobs", "1"]) == 0  # here, where it is refused
    files = sorted(path.relative_to(output) for path in output.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(copy) for path in copy.rglob("*") if path.is_file())
    for name in files:
        assert (copy / name).read_bytes() == (output / name).read_bytes(), name


def test_a_report_worker_reads_the_reference_cache_of_the_launching_process(tmp_path, monkeypatch):
    """A reused worker keeps the environment it started with: the report task is given the
    launcher's reference folder, sets it while it writes, and restores the worker's own."""
    from impactbench.bench import cli

    seen = []
    monkeypatch.setattr(
        cli,
        "write_study_report",
        lambda study, folder: seen.append(
            (study.name, folder, os.environ.get(REFERENCE_DIR_VARIABLE))
        ),
    )
    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, "worker's own")
    cli._report_of("convergence", tmp_path, str(tmp_path / "launcher"))
    assert seen == [("convergence", tmp_path, str(tmp_path / "launcher"))]
    assert os.environ[REFERENCE_DIR_VARIABLE] == "worker's own"
    monkeypatch.delenv(REFERENCE_DIR_VARIABLE)
    cli._report_of("convergence", tmp_path, "elsewhere")
    assert seen[-1][2] == "elsewhere" and REFERENCE_DIR_VARIABLE not in os.environ


def test_report_without_tables_fails(tmp_path, capsys):
    assert main(["report", "--output", str(tmp_path)]) == 1
    assert "no stored study tables" in capsys.readouterr().err


def test_simulate_prints_errors_and_writes_csv_and_plot(tmp_path, capsys):
    csv, plot = tmp_path / "run.csv", tmp_path / "run.png"
    code = main(
        [
            "simulate",
            "BouncingBall[restitution=0.5]",
            "MoreauJean[theta=0.5]",
            "--t-end",
            "1.5",
            "--h",
            "1e-3",
            "--csv",
            str(csv),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "max position error (exact solution)" in out
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["t", "q0", "v0", "energy"]
    assert len(frame) == 1501 and frame["t"].iloc[-1] == 1.5
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_list_names_problems_methods_and_studies(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("BouncingBall", "SlantedWall", "MoreauJean", "PaoliSchatzman", *STUDIES):
        assert name in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["run", "no_such_study"],
        ["run", "--jobs", "0"],
        ["run", "--jobs", "two"],
        ["run", "--backend", "ray"],
        ["run", "--scheduler", "tcp://127.0.0.1:8786"],
        ["simulate", "NoSuchProblem", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "NoSuchMethod", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "-0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1"],
        ["simulate", "BouncingBall", "MoreauJean[theta=7]", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall[restitution=2]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall[colour=1]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "x"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--output-every", "0"],
        # sizes beyond their limits, malformed addresses, booleans, repeated names
        ["run", "--backend", "dask", "--scheduler", "foo://bar"],
        ["run", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:notaport"],
        ["run", "--jobs", "100000"],
        ["run", "--retry-failed", "-1"],
        ["run", "--retry-failed", "11"],
        ["run", "--retry-failed", "x"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-19"],
        [
            *("simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-19"),
            *("--output-every", "1000000000000000000"),
        ],
        [
            *("simulate", "BouncingBall", "MoreauJean[log_capacity=1000000000000]"),
            *("--t-end", "1", "--h", "0.1"),
        ],
        ["simulate", "BouncingBall", "MoreauJean[theta=True]", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean[theta=1,theta=0.5]", "--t-end", "1", "--h", "0.1"],
        ["simulate", f"BouncingBall[q0=1{'0' * 400}]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
    ],
)
def test_usage_errors_exit_with_code_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[], ["list"], ["run"], ["report"], ["simulate"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: impactbench" in capsys.readouterr().out


def test_module_entry_point_and_exit_code():
    listing = subprocess.run(
        [sys.executable, "-m", "impactbench", "list"], capture_output=True, text=True
    )
    assert listing.returncode == 0 and "convergence" in listing.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "impactbench", "run", "nothing"], capture_output=True, text=True
    )
    assert unknown.returncode == 2 and "unknown study 'nothing'" in unknown.stderr


# --------------------------------------------------------------------------------------------
# thesis_comparison end to end (from the quick run of every study; its report is rebuilt byte
# for byte by test_report_executes_no_run_and_rewrites_what_the_workers_wrote)

THESIS = "thesis_comparison"
#: The event-driven method on its two engines (names as the table shortens them).
COMPILED, SCIPY = "EventDriven[compiled=True]", "EventDriven[compiled=False]"


def test_thesis_quick_run_has_every_run_ok_and_its_references_in_the_reference_cache(quick):
    _, output, _ = quick
    table = pd.read_csv(output / THESIS / "results.csv")
    assert (table["status"] == "ok").all(), table["error"].dropna().tolist()
    assert set(table["problem"]) == set(thesis_comparison.CONFIGURATIONS)
    adaptive = table["method"].str.startswith("Adaptive[")
    assert set(table.loc[~adaptive, "method"]) == {*TIME_STEPPERS, COMPILED, SCIPY}
    schemes = table.loc[adaptive, "method"].str.extract(r"scheme=(\w+)")[0]
    assert set(schemes) == {"MoreauJean", "CatchingUp"}  # the third family, by rtol
    assert table.loc[adaptive, "h"].isna().all() and table.loc[adaptive, "tolerance"].notna().all()
    assert_study_table(table, *thesis_comparison.METRICS)
    horizons = table.groupby("problem")["t_end"].unique()
    for name, factory in thesis_comparison.CONFIGURATIONS.items():
        assert list(horizons[name]) == [factory().t_end]
    assert (table["wall_time"] > 0).all()
    # the references went to the cache named by the environment (conftest's), not elsewhere
    keys = pd.read_csv(output / THESIS / thesis_comparison.REFERENCES_FILE)["key"]
    stored = {path.stem for path in Path(os.environ[REFERENCE_DIR_VARIABLE]).glob("*.npz")}
    assert len(keys) == len(thesis_comparison.CONFIGURATIONS) and set(keys) <= stored


def test_thesis_tightest_event_driven_run_finds_exactly_the_reference_impacts(quick):
    _, output, _ = quick
    table = pd.read_csv(output / THESIS / "results.csv")
    references = pd.read_csv(output / THESIS / thesis_comparison.REFERENCES_FILE)
    references = references.set_index("problem")
    adaptive = table[table["method"].isin([COMPILED, SCIPY])]
    for (problem, _), group in adaptive.groupby(["problem", "method"]):
        tightest = group.loc[group["tolerance"].idxmin()]
        assert tightest["missed_impacts"] == 0
        assert tightest["spurious_impacts"] == 0
        assert tightest["impacts"] == references.loc[problem, "impacts"] > 0
        assert tightest["max_position_error"] < 1e-6, problem
        assert tightest["max_penetration"] < 1e-9


def test_thesis_time_stepping_errors_decrease_with_h(quick):
    """The median over the phase copies of each nominal step decreases with the step (the
    quick steps are 4.6x apart); every copy finds every impact."""
    _, output, _ = quick
    table = pd.read_csv(output / THESIS / "results.csv")
    fixed = table[(table["family"] == "time-stepping") & table["h_nominal"].notna()]
    for (problem, method), group in fixed.groupby(["problem", "method"]):
        assert (group.groupby("h_nominal").size() == thesis_comparison.PHASES["quick"]).all()
        medians = group.groupby("h_nominal")["max_position_error"].median()
        errors = medians.sort_index(ascending=False).to_numpy()
        assert len(errors) >= 3
        assert np.all(np.diff(errors) < 0), (problem, method, errors)
        assert (group["missed_impacts"] == 0).all() and (group["spurious_impacts"] == 0).all()


def test_thesis_reference_tables_figure_and_report(quick):
    _, output, _ = quick
    folder = output / THESIS
    readme = (folder / "README.md").read_text()
    references = pd.read_csv(folder / thesis_comparison.REFERENCES_FILE)
    curves = pd.read_csv(folder / thesis_comparison.CURVES_FILE)
    configurations = set(thesis_comparison.CONFIGURATIONS)
    assert set(references["problem"]) == configurations == set(curves["problem"])
    for row in references.itertuples():
        curve = curves[curves["problem"] == row.problem]
        times = json.loads(row.impact_times)
        assert len(times) == row.impacts > 0 and row.status == "ok"
        assert curve["t"].is_monotonic_increasing
        assert curve["t"].iloc[0] == row.t0 and curve["t"].iloc[-1] == row.t_end
        assert curve["x2"].min() >= row.x_wall - 1e-9  # the tip never passes the wall
        assert curve["x2"].min() < row.x_wall + 1e-6  # and touches it
    assert (folder / thesis_comparison.FIGURE_FILE).read_bytes().startswith(b"\x89PNG")
    assert readme.startswith(f"# {STUDIES[THESIS].title}")
    for text in (
        "## Key findings",
        "## Reference solutions",
        "## Summary",
        f"]({thesis_comparison.FIGURE_FILE})",
        "fastest run to a max position error",
        "| configuration | method | h or rtol |",
    ):
        assert text in readme, text


def test_thesis_finest_run_of_each_method_is_drawn_from_its_stored_trajectory(quick):
    """The trajectory artefacts hold the finest run of each fixed-step and event-driven method
    on each configuration (and only those; the adaptive schemes store their steps instead);
    each is drawn against the reference and linked from the report."""
    _, output, _ = quick
    folder = output / THESIS
    readme = (folder / "README.md").read_text()
    table = pd.read_csv(folder / "results.csv")
    stored = pd.read_csv(folder / "trajectory.artefact.csv")
    drawn = table[table["key"].isin(set(stored["key"]))]
    assert len(drawn) == len(thesis_comparison.CONFIGURATIONS) * (len(TIME_STEPPERS) + 1)
    kept = (table["method"] != SCIPY) & ~table["method"].str.startswith("Adaptive[")
    for (problem, method), group in table[kept].groupby(["problem", "method"]):
        axis = "tolerance" if method == COMPILED else "h_nominal"
        finest = group[group[axis] == group[axis].min()]
        mine = drawn[(drawn["problem"] == problem) & (drawn["method"] == method)]
        assert len(mine) == 1 and mine["key"].iloc[0] in set(finest["key"])
        if method != COMPILED:
            assert mine["h"].iloc[0] == mine["h_nominal"].iloc[0]  # the nominal copy
    samples = stored.groupby("key").size()
    stepping = set(drawn.loc[drawn["family"] == "time-stepping", "key"])
    # thinned from more: evenly spaced samples and the deepest penetration of each of the
    # configuration's (at most two) constraints
    assert all(ARTEFACT_SAMPLES - 2 <= samples[key] <= ARTEFACT_SAMPLES for key in stepping)
    assert (samples >= 2).all() and (samples <= ARTEFACT_SAMPLES).all()
    figures = sorted(folder.glob("trajectory_*.png"))
    assert len(figures) == len(drawn)
    for figure in figures:
        assert f"]({figure.name})" in readme
        assert figure.with_suffix(".pdf").read_bytes().startswith(b"%PDF")


# --------------------------------------------------------------------------------------------
# energy_decay end to end (from the quick run of every study)

ENERGY_CURVES, ENERGY_RATES = energy_decay.CURVES_FILE, energy_decay.RATES_FILE


def test_energy_decay_quick_study_rates_curves_and_stored_analysis(quick, tmp_path):
    _, output, _ = quick
    folder = tmp_path / "energy_decay"
    shutil.copytree(output / "energy_decay", folder)  # the test deletes an artefact
    table = pd.read_csv(folder / "results.csv")
    assert table["status"].isin(["ok", "zeno-handled"]).all(), table["error"].dropna().tolist()
    assert set(table["method"].str.partition("[")[0]) == set(energy_decay.METHOD_ORDER)
    assert_study_table(table, "energy_error_at_end")
    assert table["problem"].nunique() == 4

    rates = pd.read_csv(folder / ENERGY_RATES)
    for column in ("problem", "method", "h", "tolerance", "law", "fitted", "exact", "error"):
        assert column in rates.columns
    assert len(rates) == len(table)
    assert set(rates["key"]) == set(table["key"])
    spring = rates[rates["law"] == "excess energy log-contraction per impact"]
    assert len(spring) and np.allclose(spring["exact"], 2 * np.log(spring["restitution"]))

    curves = pd.read_csv(folder / ENERGY_CURVES)
    assert {"problem", "method", "h", "tolerance", "key", "curve", "t", "energy"} <= set(
        curves.columns
    )
    # every run has its fitted laws; the energy curve is kept for the nominal run of each
    # step (delta = 0) and for the event-driven runs, not for the perturbed copies
    nominal = table["h_nominal"].isna() | (table["h"] == table["h_nominal"])
    assert set(table.loc[nominal, "key"]) <= set(curves["key"].dropna())
    assert not set(table.loc[~nominal, "key"]) & set(curves["key"].dropna())
    assert (~nominal).sum() == 2 * nominal[table["h_nominal"].notna()].sum()
    assert {"exact", "law", "reference"} <= set(curves["curve"])

    readme = (folder / "README.md").read_text()
    figures = sorted(folder.glob("*.png"))
    assert len([figure for figure in figures if figure.name.startswith("energy_")]) == 4
    steps = [figure for figure in figures if figure.name.startswith("step_sizes_")]
    assert len(steps) == len(energy_decay.ADAPTIVE_CASES["quick"])  # h(t) of the adaptive runs
    assert len(figures) == 4 + len(steps)
    for figure in figures:
        assert f"]({figure.name})" in readme
        assert figure.read_bytes().startswith(b"\x89PNG")

    # a second report (`impactbench report`) reads the stored artefacts and references:
    # nothing is simulated and the files come out identical
    stored = {name: (folder / name).read_bytes() for name in (ENERGY_CURVES, ENERGY_RATES)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Method, "solve", _refuse)
        curves_again, rates_again, unknown = energy_decay.stored_analysis(table, folder)
    assert unknown == 0
    assert {name: (folder / name).read_bytes() for name in (ENERGY_CURVES, ENERGY_RATES)} == stored
    pd.testing.assert_frame_equal(curves_again, curves)
    # a missing artefact is an error naming a run and the study to rerun
    (folder / "energy_curve.artefact.csv").unlink()
    with pytest.raises(MissingArtefactError, match=r"rerun `impactbench run energy_decay`"):
        energy_decay.stored_analysis(table, folder)


# --------------------------------------------------------------------------------------------
# Caches hold data only; studies survive what their runs do


def test_a_planted_pickle_never_runs_from_a_cached_study_or_a_report(
    quick, tmp_path, monkeypatch, capsys
):
    """Malicious pickles under the names the reference cache used to read (``<key>.pkl``, keys
    from the study's references.csv): a fully cached ``run --quick thesis_comparison`` warns,
    recomputes the references and never runs the payload; ``impactbench report``, which never
    computes, reads the copies of the references kept beside the report, and without them warns
    and fails naming the missing reference."""
    _, output, cache = quick
    keys = pd.read_csv(output / "thesis_comparison" / "references.csv")["key"].tolist()
    assert len(keys) == 2
    references, marker = tmp_path / "references", tmp_path / "marker"
    references.mkdir()
    monkeypatch.setenv("IMPACTBENCH_REFERENCE_DIR", str(references))

    def plant():
        for entry in references.iterdir():
            entry.unlink()
        for key in keys:
            plant_pickle(references / f"{key}.pkl", marker)

    plant()
    out = tmp_path / "out"
    argv = ["run", "thesis_comparison", "--quick", "--output", str(out), "--cache-dir", str(cache)]
    assert main(argv) == 0
    assert not marker.exists()
    assert json.loads((out / "thesis_comparison" / "provenance.json").read_text())["computed"] == 0
    assert capsys.readouterr().err.count("pickle is never opened") == 2
    assert sorted(path.stem for path in references.glob("*.npz")) == sorted(keys)
    plant()
    # a report never computes a reference: it reads the copies kept beside it ...
    assert main(["report", "--output", str(out)]) == 0
    assert not marker.exists()
    assert "pickle is never opened" in capsys.readouterr().err
    kept = sorted(path.stem for path in (out / "thesis_comparison" / "references").glob("*.npz"))
    assert kept == sorted(keys)
    # ... and without them it says which one is missing
    shutil.rmtree(out / "thesis_comparison" / "references")
    plant()
    assert main(["report", "--output", str(out)]) == 1
    assert not marker.exists()
    err = capsys.readouterr().err
    assert "pickle is never opened" in err and "not in the reference cache" in err


@pytest.fixture
def probe_study(monkeypatch, tmp_path):
    """Register a study named "probe" of cheap plain-Python runs; returns a setter of its runs."""

    def register(**options):
        runs = probe_runs(tmp_path / "log", heights=(1.0, 0.9, 0.8), **options.pop("first", {}))
        runs += probe_runs(tmp_path / "log", heights=(0.7,), **options)
        study = Study(
            "probe", "Probe", "Test study.", lambda quick: runs, lambda t, f: StudyReport()
        )
        monkeypatch.setitem(STUDIES, "probe", study)
        return ["run", "probe", "--output", str(tmp_path / "out")]

    return register


def test_an_unwritable_cache_warns_and_the_table_is_written(probe_study, tmp_path, capsys):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    argv = probe_study()
    assert main([*argv, "--cache-dir", str(blocked), "--jobs", "1"]) == 0
    assert "impactbench: warning: run cache not written" in capsys.readouterr().err
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv")
    assert list(table["status"]) == ["ok"] * 4


def test_a_corrupt_cache_entry_is_recomputed_on_rerun(probe_study, tmp_path, capsys):
    argv = [*probe_study(), "--cache-dir", str(tmp_path / "cache"), "--jobs", "1"]
    assert main(argv) == 0
    entries = sorted((tmp_path / "cache").glob("*.json"))[:2]
    for how, entry in zip(("null", "[1, 2]"), entries, strict=True):
        entry.write_text(how)
    assert main(argv) == 0
    assert capsys.readouterr().err.count("impactbench: warning: ignoring the run cache entry") == 2
    provenance = json.loads((tmp_path / "out" / "probe" / "provenance.json").read_text())
    assert provenance["computed"] == 2 and provenance["cached"] == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sys_exit_in_a_run_is_a_failed_row_and_the_study_goes_on(probe_study, tmp_path, jobs):
    argv = [*probe_study(exit_code=3), "--no-cache", "--jobs", jobs]
    assert main(argv) == 1  # a run failed
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv")
    assert list(table["status"]) == ["ok", "ok", "ok", "failed"]
    assert table.loc[3, "error"] == "SystemExit: 3"


def test_retry_failed_reruns_the_runs_of_a_crashed_worker(probe_study, tmp_path, capsys):
    argv = probe_study(crash_once=str(tmp_path / "crashed"))
    cache = tmp_path / "cache"
    assert main([*argv, "--cache-dir", str(cache), "--jobs", "2", "--retry-failed", "1"]) == 0
    assert (tmp_path / "crashed").exists()
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv")
    assert list(table["status"]) == ["ok"] * 4


def test_report_finds_the_quick_output(quick, tmp_path, monkeypatch, capsys):
    _, output, _ = quick
    folder = tmp_path / "reports-quick" / "convergence"
    folder.mkdir(parents=True)
    (folder / "results.csv").write_bytes((output / "convergence" / "results.csv").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert main(["report"]) == 0
    assert "reporting reports-quick" in capsys.readouterr().out
    assert (folder / "README.md").exists()
    (tmp_path / "reports-quick" / "convergence" / "results.csv").unlink()
    assert main(["report"]) == 1
    assert "report --output reports-quick" in capsys.readouterr().err
