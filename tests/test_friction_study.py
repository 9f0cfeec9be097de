"""The friction study (studies/friction.py): its artefacts measure what their columns say on
runs the suite already compiles, and its report's tables and findings are computed from the
table (a table made by hand, with known errors and artefacts)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import impactbench as ib
from impactbench import ImpactLog, Status, Trajectory
from impactbench.bench.results import ARTEFACT_SUFFIX, write_table
from impactbench.bench.runner import FAILED
from impactbench.core.adaptive import Adaptive
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import PainleveRod, RockingBlock, Woodpecker
from impactbench.studies import STUDIES, friction
from studies import _adaptive

SICONOS = Path(__file__).parent / "data" / "siconos" / "Woodpecker10.ref"


def test_the_study_is_registered_and_its_quick_grid_has_no_expected_failure():
    """Registered under its name; the quick grid runs no event-driven method on the Painleve
    rod (a failure by design: the quick run of every study must have none) and no
    step-size-controlled run (one compiled loop less); the full grid has them, the adaptive
    family at >= 10 tolerances over >= 1.5 decades on each order case."""
    assert STUDIES["friction"] is friction.STUDY
    quick = friction.runs(True)
    assert not any(run.problem is PainleveRod and not run.method.requires_step for run in quick)
    assert not any(run.method is Adaptive for run in quick)
    full = friction.runs(False)
    problems = {run.problem_name for run in full}
    assert {"SlidingBlock", "FrictionOscillator", "Woodpecker"} <= problems
    assert sum(run.method is Adaptive for run in full) >= 3
    for case in ("SlidingBlock", "FrictionOscillator"):
        rtols = [
            r.method_kwargs["rtol"] for r in full if r.method is Adaptive and r.problem_name == case
        ]
        assert len(rtols) >= 10 and np.log10(max(rtols) / min(rtols)) >= 1.5


def _trajectory(t, q, v, problem):
    log = ImpactLog(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 0)
    return Trajectory(t, q, v, log, Status.OK, "", {"steps": t.size - 1, "impacts": 0},
                      "Siconos", problem.name, float(t[1] - t[0]))  # fmt: skip


def test_siconos_woodpecker_constants_are_those_of_its_output():
    """The study's Siconos figures (period, phi_S's extremes, drop) are what its own cycle
    artefact measures on Siconos' stored output (tests/data/siconos/Woodpecker10.ref)."""
    data = np.loadtxt(SICONOS, skiprows=1)
    problem = Woodpecker()
    run = _trajectory(data[:, 0], data[:, [1, 3, 5]], data[:, [2, 4, 6]], problem)
    cycle = friction.cycle_artefact(None, problem, run)["cycle"].iloc[0]
    assert cycle["jams"] == 2
    for name, value in friction.SICONOS_WOODPECKER.items():
        assert cycle[name] == pytest.approx(value, rel=5e-5), name
    assert cycle["period"] == pytest.approx(0.146, abs=friction.SICONOS_SAMPLING)


def test_the_cycle_of_moreau_jean_is_close_to_siconos():
    """MoreauJean at the example's h = 2e-5: the period within 0.5 % of Siconos' (measured
    0.1457 against 0.1460, whose sampling is 2e-4), phi_S's extremes within 0.01 rad."""
    problem = Woodpecker()
    run = ib.simulate(problem, MoreauJean(), friction.WOODPECKER_T, h=2e-5)
    cycle = friction.cycle_artefact(None, problem, run)["cycle"].iloc[0]
    reference = friction.SICONOS_WOODPECKER
    assert abs(cycle["period"] - reference["period"]) <= 5e-3 * reference["period"]
    assert abs(cycle["phi_s_max"] - reference["phi_s_max"]) <= 0.01
    assert abs(cycle["phi_s_min"] - reference["phi_s_min"]) <= 0.01


@pytest.mark.parametrize("h", [1e-4])
def test_housner_ratio_is_reproduced_when_the_corners_stick(h):
    """e_N = 0, mu = 1 (no sliding): the artefact's omega+ / omega- at each of the first three
    impacts is Housner's r within 10 h (tests/test_rocking_block.py), and its closed form at
    mu = 1 is r itself; at mu = 0.25 the ratio is the sliding impact's, away from r."""
    block = RockingBlock(angle=0.1, mu=1.0)
    run = ib.simulate(block, MoreauJean(), 1.2, h=h)
    ratios = friction.housner_artefact(None, block, run)["housner"]
    assert len(ratios) == friction.ROCKING_IMPACTS
    assert (ratios["housner"] == 1 - 1.5 * math.sin(block.slenderness) ** 2).all()
    assert (ratios["closed_form"] == ratios["housner"]).all()
    assert (ratios["ratio"] - ratios["housner"]).abs().max() <= 10 * h
    sliding = RockingBlock(angle=0.1, mu=0.25)
    run = ib.simulate(sliding, MoreauJean(), 0.3, h=h)
    (row,) = friction.housner_artefact(None, sliding, run)["housner"].to_dict("records")
    assert abs(row["ratio"] - row["closed_form"]) <= 10 * h
    assert abs(row["ratio"] - row["housner"]) > 0.05


def test_housner_ratio_of_the_event_driven_output_is_read_at_the_impact():
    """The event-driven output stores the states before and after an impact at the impact's
    time, its samples far apart: the artefact reads the ratio from that pair (not from the
    largest change of omega between distant samples), Housner's r to 1e-6 at rtol 1e-8 over the
    first two impacts."""
    block = RockingBlock(angle=0.1, mu=1.0)
    run = ib.simulate(block, EventDriven(rtol=1e-8, compiled=False), 0.6)
    ratios = friction.housner_artefact(None, block, run)["housner"]
    assert len(ratios) == 2
    assert (ratios["ratio"] - block.housner_ratio).abs().max() <= 1e-6
    assert abs(abs(ratios["omega_before"].iloc[0]) - block.impact_speed()) <= 1e-6


def test_painleve_artefact_on_moreau_jean():
    """The sliding rod (mu = 1.5): the largest jump of U_T falls within 2e-3 s of the sliding
    phase's singular time, and the end leaves the floor after it (tests/test_painleve_rod.py)."""
    rod = PainleveRod()
    run = ib.simulate(rod, MoreauJean(compiled=False), 0.15, h=1e-4)
    (row,) = friction.painleve_artefact(None, rod, run)["painleve"].to_dict("records")
    assert 0.10 < row["singular_time"] < 0.11
    assert abs(row["jump_time"] - row["singular_time"]) <= 2e-3
    assert row["lift_off"] > row["singular_time"]
    assert row["t_end"] == pytest.approx(0.15)


# --------------------------------------------------------------------------------------------
# The report on a table made by hand

STEPS = np.geomspace(1e-4, 1e-2, 7)
PAINLEVE_ERROR = "SimulationError: Painleve situation (singular) at t=0.108, q=[0.1], v=[-1.0]"


def _row(key, problem, method, family, h=np.nan, tolerance=np.nan, error=np.nan, **extra):
    return {
        "key": key, "study": "friction", "problem": problem, "method": method,
        "family": family, "h": h, "h_nominal": h, "tolerance": tolerance, "status": "ok",
        "error": "", "t_end": extra.pop("t_end", 30.0), "max_position_error": error,
        "hausdorff_velocity_distance": error, "wall_time": 1e-3 / h if h == h else 0.5,
        "wall_time_max": 1.1e-3 / h if h == h else 0.55, "integration_time": 0.1,
        "integration_time_max": 0.1, "repeats": 3, "force_evaluations": 1.0 / h if h == h
        else 100.0, **extra,
    }  # fmt: skip


def _table_and_artefacts(folder: Path) -> pd.DataFrame:
    rows = [
        _row(
            f"mj{k}",
            "FrictionOscillator",
            "MoreauJean[theta=0.5]",
            "time-stepping",
            h=h,
            error=3.0 * h,
        )  # fmt: skip
        for k, h in enumerate(STEPS)
    ]
    rows += [
        _row(
            f"ed{k}",
            "FrictionOscillator",
            "EventDriven",
            "event-driven",
            tolerance=rtol,
            error=50.0 * rtol,
        )  # fmt: skip
        for k, rtol in enumerate([1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8])
    ]
    rows += [
        _row("wood", "Woodpecker", "MoreauJean[theta=0.5]", "time-stepping", h=2e-5, t_end=0.3),
        _row(
            "rock",
            "RockingBlock (mu=1)",
            "MoreauJean[theta=0.5]",
            "time-stepping",
            h=1e-4,
            t_end=1.2,
        ),  # fmt: skip
        _row(
            "rod", "PainleveRod", "MoreauJean[theta=0.5]", "time-stepping", h=1e-4, t_end=0.15
        ),  # fmt: skip
        _row(
            "rod-ed", "PainleveRod", "EventDriven", "event-driven", tolerance=1e-8, t_end=0.15
        ),  # fmt: skip
    ]
    table = pd.DataFrame(rows)
    failed = table["key"] == "rod-ed"
    table.loc[failed, "status"] = FAILED
    table.loc[failed, "error"] = PAINLEVE_ERROR
    cycle = {"key": ["wood"], "jams": [2], "beak_impacts": [2], "period": [0.1457],
             "phi_s_max": [0.1201], "phi_s_min": [-0.5301], "drop": [0.0190],
             "first_jam": [0.022]}  # fmt: skip
    housner = {"key": ["rock"] * 3, "impact": [1, 2, 3], "t": [0.3, 0.6, 0.9],
               "omega_before": [-1.0, 0.8, -0.6], "ratio": [0.7932, 0.7933, 0.7934],
               "housner": [0.7931] * 3, "closed_form": [0.7931] * 3,
               "impact_speed": [1.0] * 3}  # fmt: skip
    painleve = {"key": ["rod"], "t_end": [0.15], "largest_jump": [0.3], "jump_time": [0.1085],
                "u_t_after_first": [-10.0], "u_n_after_first": [0.0], "lift_off": [0.112],
                "singular_time": [0.1083]}  # fmt: skip
    for name, frame in (("cycle", cycle), ("housner", housner), ("painleve", painleve)):
        write_table(pd.DataFrame(frame), folder / f"{name}{ARTEFACT_SUFFIX}")
    return table


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The report on the table made by hand; figures not drawn (tens of seconds of matplotlib
    on a loaded machine; the quick run of every study, tests/quick_run.py, draws them)."""
    folder = tmp_path_factory.mktemp("friction")
    table = _table_and_artefacts(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(friction, "_figures", lambda *args: [])
        return table, folder, friction.report(table, folder)


def test_orders_are_fitted_on_the_table_with_their_intervals(made):
    """error = 3 h exactly: the fitted order is 1 to round-off, inside its interval; the
    event-driven errors 50 rtol: order 1 in rtol; both in orders.csv and in the findings."""
    _, folder, result = made
    orders = pd.read_csv(folder / "orders.csv")
    stepper = orders[orders["method"] == "MoreauJean[theta=0.5]"]
    assert len(stepper) == 2 and (stepper["axis"] == "h").all()
    assert np.allclose(stepper["order"], 1.0, atol=1e-9)
    assert (stepper["status"] == "order").all()
    assert (stepper["low"] <= stepper["order"]).all() and (
        stepper["order"] <= stepper["high"]
    ).all()
    event = orders[orders["method"] == "EventDriven"]
    assert (event["axis"] == "tolerance").all() and np.allclose(event["order"], 1.0, atol=1e-9)
    text = " ".join(result.findings)
    assert "FrictionOscillator, time-stepping, order in h" in text
    assert "FrictionOscillator, event-driven, order in rtol" in text


def test_woodpecker_housner_and_painleve_findings_come_from_the_artefacts(made):
    _, _, result = made
    findings = result.findings
    (wood,) = [f for f in findings if f.startswith("Woodpecker")]
    deviation = (0.1457 - friction.SICONOS_WOODPECKER["period"]) / 0.146
    assert "period 0.1457 s" in wood and f"{deviation:+.2%}" in wood
    assert "[-0.530, 0.120]" in wood and "drop 19.00 mm" in wood
    (rock,) = [f for f in findings if f.startswith("RockingBlock")]
    assert "0.7932, 0.7933, 0.7934" in rock and "Housner's r = 0.7931" in rock
    assert "largest |ratio - r| 0.0003" in rock
    rods = [f for f in findings if f.startswith("PainleveRod")]
    assert any("stops: " + PAINLEVE_ERROR in f for f in rods)
    assert any(
        "U_T after its first step -10, largest jump of U_T 0.3 at t = 0.1085" in f for f in rods
    )
    assert any("leaves the floor at t = 0.112" in f for f in rods)


def test_the_report_tables_list_every_run_of_each_part(made):
    table, folder, result = made
    cycles = friction.woodpecker(table, folder)
    assert len(cycles) == 1 and cycles["period vs Siconos"].iloc[0] == pytest.approx(
        (0.1457 - 0.1460) / 0.1460
    )
    ratios = friction.housner(table, folder)
    assert ratios["ratio - r"].tolist() == pytest.approx([1e-4, 2e-4, 3e-4])
    rods = friction.painleve(table, folder)
    assert rods.set_index("method").loc["EventDriven", "status"] == FAILED
    titles = [section.title for section in result.sections]
    assert "Housner's law on the rocking block" in titles and "The Painleve rod" in titles


def test_an_adaptive_family_whose_error_is_not_controlled_is_left_out_of_the_verdicts(
    tmp_path,
):
    """Two adaptive families on the oscillator, both the fastest to every target: one flat in
    rtol (marked 'error not controlled', absent from the fastest-run table and the crossover
    finding), one converging as rtol (controlled, in them)."""
    table = _table_and_artefacts(tmp_path)
    tolerances = [10.0 ** (-k / 2) for k in range(4, 15)]
    flat = "Adaptive[scheme=MoreauJean]"
    converging = "Adaptive[scheme=CatchingUp]"
    rows = [
        _row(
            f"{name}{k}",
            "FrictionOscillator",
            method,
            "time-stepping",
            tolerance=rtol,
            error=value,
            wall_time=1e-6,
            wall_time_max=1.1e-6,
        )  # fmt: skip
        for k, rtol in enumerate(tolerances)
        for name, method, value in (("flat", flat, 1.2e-2), ("conv", converging, rtol))
    ]
    table = pd.concat([table, pd.DataFrame(rows)], ignore_index=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(friction, "_figures", lambda *args: [])
        result = friction.report(table, tmp_path)
    errors = pd.read_csv(tmp_path / "errors.csv", keep_default_na=False)
    marks = errors.groupby("method")[_adaptive.CONTROL_COLUMN].unique()
    assert list(marks[flat]) == [_adaptive.NOT_CONTROLLED]
    assert list(marks[converging]) == [_adaptive.CONTROLLED]
    assert list(marks["MoreauJean[theta=0.5]"]) == [""]
    sections = {section.title: section.body for section in result.sections}
    fastest = sections["Fastest run per error target"]
    assert converging in fastest and flat not in fastest
    assert _adaptive.NOT_CONTROLLED in sections["Error control of the adaptive family"]
    text = " ".join(result.findings)
    assert f"FrictionOscillator, {flat}: {_adaptive.NOT_CONTROLLED}" in text
    (crossing,) = [f for f in result.findings if "faster family" in f]
    assert "adaptive time-stepping" in crossing  # the controlled family takes part
