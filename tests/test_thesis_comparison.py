"""The thesis_comparison study end to end through the command line (quick grid)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from impactbench.bench.cli import main
from impactbench.bench.trajectory_figure import ARTEFACT_SAMPLES
from impactbench.studies import STUDIES
from impactbench.studies.thesis_comparison import (
    CONFIGURATIONS,
    CURVES_FILE,
    FIGURE_FILE,
    METRICS,
    PHASES,
    REFERENCES_FILE,
    isolated_impacts,
)

from conftest import assert_study_table

STUDY = "thesis_comparison"
TIME_STEPPERS = ("CatchingUp", "MoreauJean[theta=0.5]", "PaoliSchatzman")
#: The event-driven method on its two engines (names as the table shortens them).
COMPILED, SCIPY = "EventDriven[compiled=True]", "EventDriven[compiled=False]"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """``impactbench run thesis_comparison --quick`` with fresh run and reference caches."""
    root = tmp_path_factory.mktemp("thesis")
    output = root / "reports"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IMPACTBENCH_REFERENCE_DIR", str(root / "references"))
        code = main(
            ["run", STUDY, "--quick", "--output", str(output), "--cache-dir", str(root / "cache")]
        )
        readme = (output / STUDY / "README.md").read_text()
        rebuilt = main(["report", "--output", str(output)])
    assert list((root / "references").glob("*.npz")), "the references went to another cache"
    return code, rebuilt, output, readme


def test_quick_run_succeeds_with_every_run_ok(quick):
    code, _, output, _ = quick
    assert code == 0
    table = pd.read_csv(output / STUDY / "results.csv")
    assert (table["status"] == "ok").all(), table["error"].dropna().tolist()
    assert set(table["problem"]) == set(CONFIGURATIONS)
    assert set(table["method"]) == {*TIME_STEPPERS, COMPILED, SCIPY}
    assert_study_table(table, *METRICS)
    horizons = table.groupby("problem")["t_end"].unique()
    for name, factory in CONFIGURATIONS.items():
        assert list(horizons[name]) == [factory().t_end]
    assert (table["wall_time"] > 0).all()


def test_tightest_event_driven_run_finds_exactly_the_reference_impacts(quick):
    _, _, output, _ = quick
    table = pd.read_csv(output / STUDY / "results.csv")
    references = pd.read_csv(output / STUDY / REFERENCES_FILE).set_index("problem")
    adaptive = table[table["method"].isin([COMPILED, SCIPY])]
    for (problem, _), group in adaptive.groupby(["problem", "method"]):
        tightest = group.loc[group["tolerance"].idxmin()]
        assert tightest["missed_impacts"] == 0
        assert tightest["spurious_impacts"] == 0
        assert tightest["impacts"] == references.loc[problem, "impacts"] > 0
        assert tightest["max_position_error"] < 1e-6, problem
        assert tightest["max_penetration"] < 1e-9


def test_time_stepping_errors_decrease_with_h(quick):
    """The median over the phase copies of each nominal step decreases with the step (the
    quick steps are 4.6x apart); every copy finds every impact."""
    _, _, output, _ = quick
    table = pd.read_csv(output / STUDY / "results.csv")
    for (problem, method), group in table[table["family"] == "time-stepping"].groupby(
        ["problem", "method"]
    ):
        assert (group.groupby("h_nominal").size() == PHASES["quick"]).all()
        medians = group.groupby("h_nominal")["max_position_error"].median()
        errors = medians.sort_index(ascending=False).to_numpy()
        assert len(errors) >= 3
        assert np.all(np.diff(errors) < 0), (problem, method, errors)
        assert (group["missed_impacts"] == 0).all() and (group["spurious_impacts"] == 0).all()


def test_reference_tables_figure_and_report(quick):
    _, rebuilt, output, readme = quick
    folder = output / STUDY
    references = pd.read_csv(folder / REFERENCES_FILE)
    curves = pd.read_csv(folder / CURVES_FILE)
    assert set(references["problem"]) == set(CONFIGURATIONS) == set(curves["problem"])
    for row in references.itertuples():
        curve = curves[curves["problem"] == row.problem]
        times = json.loads(row.impact_times)
        assert len(times) == row.impacts > 0 and row.status == "ok"
        assert curve["t"].is_monotonic_increasing
        assert curve["t"].iloc[0] == row.t0 and curve["t"].iloc[-1] == row.t_end
        assert curve["x2"].min() >= row.x_wall - 1e-9  # the tip never passes the wall
        assert curve["x2"].min() < row.x_wall + 1e-6  # and touches it
    assert (folder / FIGURE_FILE).read_bytes().startswith(b"\x89PNG")
    assert readme.startswith(f"# {STUDIES[STUDY].title}")
    for text in (
        "## Key findings",
        "## Reference solutions",
        "## Summary",
        f"]({FIGURE_FILE})",
        "fastest run to a max position error",
        "| configuration | method | h or rtol |",
    ):
        assert text in readme, text
    assert f"({STUDY}/README.md)" in (output / "README.md").read_text()
    # The report is rebuilt from the stored tables alone, identically.
    assert rebuilt == 0
    assert (folder / "README.md").read_text() == readme


def test_isolated_impacts_ignores_close_pairs():
    times = np.array([0.5, 0.7, 1.3, 2.10, 2.13])
    assert isolated_impacts(times, 0.05) == 3
    assert isolated_impacts(times, 0.01) == 5
    assert isolated_impacts(np.array([]), 0.05) == 0


def test_the_finest_run_of_each_method_is_drawn_from_its_stored_trajectory(quick):
    """The trajectory artefacts hold the finest run of each method on each configuration (and
    only those); each is drawn against the reference and linked from the report."""
    _, _, output, readme = quick
    folder = output / STUDY
    table = pd.read_csv(folder / "results.csv")
    stored = pd.read_csv(folder / "trajectory.artefact.csv")
    drawn = table[table["key"].isin(set(stored["key"]))]
    assert len(drawn) == len(CONFIGURATIONS) * (len(TIME_STEPPERS) + 1)
    for (problem, method), group in table[table["method"] != SCIPY].groupby(["problem", "method"]):
        axis = "tolerance" if method == COMPILED else "h_nominal"
        finest = group[group[axis] == group[axis].min()]
        mine = drawn[(drawn["problem"] == problem) & (drawn["method"] == method)]
        assert len(mine) == 1 and mine["key"].iloc[0] in set(finest["key"])
        if method != COMPILED:
            assert mine["h"].iloc[0] == mine["h_nominal"].iloc[0]  # the nominal copy
    samples = stored.groupby("key").size()
    stepping = set(drawn.loc[drawn["family"] == "time-stepping", "key"])
    assert all(samples[key] == ARTEFACT_SAMPLES for key in stepping)  # thinned from more
    assert (samples >= 2).all() and (samples <= ARTEFACT_SAMPLES).all()
    figures = sorted(folder.glob("trajectory_*.png"))
    assert len(figures) == len(drawn)
    for figure in figures:
        assert f"]({figure.name})" in readme
        assert figure.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
