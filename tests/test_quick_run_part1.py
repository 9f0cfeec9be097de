"""The quick main job, part 1 (tests/quick_run.py): every study of it end to end, then
convergence, thesis_comparison and energy_decay read from its output, and caches that hold data
only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from impactbench import Method
from impactbench.analysis.reference import REFERENCE_DIR_VARIABLE
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.bench.cli import main
from impactbench.bench.results import ARTEFACT_SUFFIX, MissingArtefactError
from impactbench.bench.trajectory_figure import ARTEFACT_SAMPLES
from impactbench.methods import METHODS
from impactbench.studies import (
    STUDIES,
    _adaptive,
    convergence,
    energy_decay,
    thesis_comparison,
    work_precision,
)

from conftest import assert_study_table, plant_pickle
from quick_run import (
    check_every_study_succeeds,
    check_report_rewrites_what_the_workers_wrote,
    check_reports_of_failed_runs,
    refuse,
    run_part,
)

#: Every test reads the quick main job of part 1 (minutes): the file starts first (conftest.py).
pytestmark = pytest.mark.slow

#: The time-stepping methods of the convergence and thesis_comparison studies (table names).
TIME_STEPPERS = ("PaoliSchatzman", "MoreauJean[theta=0.5]", "CatchingUp")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick main job of the studies of part 1 (tests/quick_run.py)."""
    return run_part(tmp_path_factory.mktemp("quick"), 0)


def test_quick_run_of_every_study_succeeds(quick):
    check_every_study_succeeds(quick)


@pytest.mark.parametrize("every", [1, 2])
def test_reports_of_failed_runs(quick, tmp_path, every):
    check_reports_of_failed_runs(quick, tmp_path, every)


def test_report_executes_no_run_and_rewrites_what_the_workers_wrote(quick, tmp_path, monkeypatch):
    check_report_rewrites_what_the_workers_wrote(quick, tmp_path, monkeypatch)


def test_quick_convergence_table_and_orders(quick):
    """Phase families of >= 10 nominal steps over >= 1.5 decades; the orders fitted on their
    medians, with intervals, are first order for the time-steppers, in orders.csv and in the
    report's table as value [low, high]; the event-driven sweep of 3 tolerances is not
    resolved and gets no order."""
    output = quick.output
    table = pd.read_csv(output / "convergence" / "results.csv.gz")
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
    output, cache = quick.output, quick.cache
    code = main(
        ["run", "convergence", "--quick", "--output", str(tmp_path), "--cache-dir", str(cache)]
    )
    assert code == 0
    first = (output / "convergence" / "results.csv.gz").read_bytes()
    assert (tmp_path / "convergence" / "results.csv.gz").read_bytes() == first
    provenance = (tmp_path / "convergence" / "provenance.json").read_text()
    assert '"computed": 0' in provenance


def test_report_rebuilds_from_the_stored_tables(quick, tmp_path):
    output = quick.output
    folder = tmp_path / "convergence"
    folder.mkdir()
    shutil.copy(output / "convergence" / "results.csv.gz", folder)
    assert main(["report", "--output", str(tmp_path)]) == 0
    assert (folder / "README.md").exists()
    assert (folder / "convergence_BouncingBall.png").exists()
    assert "convergence/README.md" in (tmp_path / "README.md").read_text()


# --------------------------------------------------------------------------------------------
# thesis_comparison end to end (from the quick run of part 1; its report is rebuilt byte for byte
# by test_report_executes_no_run_and_rewrites_what_the_workers_wrote)

THESIS = "thesis_comparison"
#: The event-driven method on its two engines (names as the table shortens them).
COMPILED, SCIPY = "EventDriven[compiled=True]", "EventDriven[compiled=False]"


def test_thesis_quick_run_has_every_run_ok_and_its_references_in_the_reference_cache(quick):
    output = quick.output
    table = pd.read_csv(output / THESIS / "results.csv.gz")
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
    output = quick.output
    table = pd.read_csv(output / THESIS / "results.csv.gz")
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
    output = quick.output
    table = pd.read_csv(output / THESIS / "results.csv.gz")
    fixed = table[(table["family"] == "time-stepping") & table["h_nominal"].notna()]
    for (problem, method), group in fixed.groupby(["problem", "method"]):
        assert (group.groupby("h_nominal").size() == thesis_comparison.PHASES["quick"]).all()
        medians = group.groupby("h_nominal")["max_position_error"].median()
        errors = medians.sort_index(ascending=False).to_numpy()
        assert len(errors) >= 3
        assert np.all(np.diff(errors) < 0), (problem, method, errors)
        assert (group["missed_impacts"] == 0).all() and (group["spurious_impacts"] == 0).all()


def test_thesis_reference_tables_figure_and_report(quick):
    output = quick.output
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
        "| configuration | method | h [s] | rtol [-] |",
    ):
        assert text in readme, text


def test_thesis_finest_run_of_each_method_is_drawn_from_its_stored_trajectory(quick):
    """The trajectory artefacts hold the finest run of each fixed-step and event-driven method
    on each configuration (and only those; the adaptive schemes store their steps instead);
    each is drawn against the reference and linked from the report."""
    output = quick.output
    folder = output / THESIS
    readme = (folder / "README.md").read_text()
    table = pd.read_csv(folder / "results.csv.gz")
    stored = pd.read_csv(folder / f"trajectory{ARTEFACT_SUFFIX}")
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
# work_precision's crossovers (from the quick run of part 1)


def check_work_precision_crossovers(folder: Path) -> None:
    """Every problem of the run has its crossover sentence in the report, one per pair of the
    families that take part in verdicts, each stored in crossovers.csv. The quick grid sweeps
    too few rtol for the adaptive family's error control to be judged (studies/_adaptive.py), so
    the family is marked "error not controlled" on every problem and left out: one pair, the
    time-steppers against the event-driven method. On the ball the event-driven error stays at
    the rounding level whatever rtol, so its pair states that the error ranges do not overlap
    and gives no crossover error."""
    readme = (folder / "README.md").read_text()
    assert "## Crossover accuracy" in readme
    table = pd.read_csv(folder / "results.csv.gz")
    stored = pd.read_csv(folder / work_precision.CROSSOVERS_FILE)
    assert set(stored["problem"]) == set(table["problem"])
    assert len(work_precision.ADAPTIVE_TOLERANCES["quick"]) < _adaptive.CONTROL_MIN_POINTS
    for problem, rows in stored.groupby("problem"):
        assert any(
            line.startswith(f"- {problem}, ") and _adaptive.NOT_CONTROLLED in line
            for line in readme.splitlines()
        )
        assert not rows["families"].str.contains(ADAPTIVE_STEPPING).any()
        assert len(rows) == 1  # time-stepping against event-driven
        head = f"- {problem}: crossover accuracy"
        line = next(line for line in readme.splitlines() if line.startswith(head))
        for statement in rows["statement"]:
            assert statement in line
    ball = stored[(stored["problem"] == "BouncingBall") & stored["families"].str.contains("event")]
    assert ball["statement"].str.contains("the error ranges share no interval").all()
    assert ball["crossover error [m]"].isna().all()


def test_work_precision_states_the_crossover_per_problem(quick):
    check_work_precision_crossovers(quick.output / "work_precision")


# --------------------------------------------------------------------------------------------
# energy_decay end to end (from the quick run of part 1)

ENERGY_CURVES, ENERGY_RATES = energy_decay.CURVES_FILE, energy_decay.RATES_FILE


def test_energy_decay_quick_study_rates_curves_and_stored_analysis(quick, tmp_path):
    output = quick.output
    folder = tmp_path / "energy_decay"
    shutil.copytree(output / "energy_decay", folder)  # the test deletes an artefact
    table = pd.read_csv(folder / "results.csv.gz")
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

    # the runs' curves are read from their artefact, the cases' from the report's file
    curves = pd.concat(
        [pd.read_csv(folder / energy_decay.RUN_CURVES_FILE), pd.read_csv(folder / ENERGY_CURVES)]
    )
    assert {"problem", "method", "h", "tolerance", "key", "curve", "t", "energy"} <= set(
        curves.columns
    )
    assert set(pd.read_csv(folder / ENERGY_CURVES)["curve"]) == {"exact", "law", "reference"}
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
        patch.setattr(Method, "solve", refuse)
        curves_again, rates_again, unknown = energy_decay.stored_analysis(table, folder)
    assert unknown == 0
    assert {name: (folder / name).read_bytes() for name in (ENERGY_CURVES, ENERGY_RATES)} == stored
    assert len(curves_again) == len(curves)
    assert set(curves_again["key"].dropna()) == set(curves["key"].dropna())
    pd.testing.assert_frame_equal(rates_again, rates.reindex(columns=rates_again.columns))
    # a missing artefact is an error naming a run and the study to rerun
    (folder / f"energy_curve{ARTEFACT_SUFFIX}").unlink()
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
    output, cache = quick.output, quick.cache
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


def test_report_finds_the_quick_output(quick, tmp_path, monkeypatch, capsys):
    output = quick.output
    folder = tmp_path / "reports-quick" / "convergence"
    folder.mkdir(parents=True)
    shutil.copy(output / "convergence" / "results.csv.gz", folder)
    monkeypatch.chdir(tmp_path)
    assert main(["report"]) == 0
    assert "reporting reports-quick" in capsys.readouterr().out
    assert (folder / "README.md").exists()
    (tmp_path / "reports-quick" / "convergence" / "results.csv.gz").unlink()
    assert main(["report"]) == 1
    assert "report --output reports-quick" in capsys.readouterr().err
