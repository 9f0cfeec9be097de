"""Energy decay: long-time energy curves of every method against the exact law or a reference.

Four cases, every method, several step sizes (event-driven: relative tolerances):

* ``TightJoint[k=1]``: the 1-DOF tight joint with a spring (k = m = 1, delta = 0.1, v0 = 1,
  e = 0.995), to the middle of the flight after impact 1000 (quick: e = 0.95, 20 impacts). The
  excess energy E - k delta^2 / 2 is multiplied by exactly e^2 at each impact: the fitted
  log-contraction per impact is compared with 2 log e.
* ``TightJoint[k=0]``: the same joint without spring (t up to 6e3 for 1000 impacts). Just before
  each impact E = 2 m delta^2 / ((1 - e)^2 (t - t_*)^2) exactly: the coefficient of the t^-2
  law fitted at the run's pre-impact instants (impact log: m u^2 / 2 at the logged time) is
  compared with 2 m delta^2 / (1 - e)^2.
* ``TightJoint2D[unforced]``: the pin in a circular hole with a spring and a constant load,
  without forcing (e = 0.95, t = 300): the energy above its minimum E_min = -|L|^2 / (2k) decays
  towards a grazing orbit; no closed form.
* ``DoublePendulum``: the default thesis configuration (tip against the wall, e = 0.8) to
  t = 300 (quick: 5.5): the energy above the hanging rest state decays impact by impact, over
  many impacts (their number depends on the run), to a motion whose swings barely reach the
  wall; no closed form.

For the last two the reference is the cached DOP853 event-driven run at rtol 1e-12 (shared with
the other studies, :mod:`impactbench.bench.study_reference`). Neither has a closed-form decay
law: the exponential law E - E_min ~ exp(-lambda t) is fitted once on the reference curve
(:func:`reference_laws`) and shown with its residual, and where the residual exceeds
:data:`LAW_RESIDUAL` the law does not hold and no decay rate is reported for any run (the
per-run least-squares slopes stored in ``decay_law.artefact.csv.gz``, over each run's samples
away from impacts, are summaries of the curve, not laws). The report compares these cases by the
level of E - E_min at T, the deviation from the reference curve and the impact counts. The double
pendulum is chaotic: two event-driven runs at different tolerances separate exponentially in time
(the shadowing horizons of the ``pendulum_ensemble`` study), so beyond some time no run, the
reference included, is accurate state by state; what is comparable there is the shape of the
curve and the level it settles to: its exponential fit is taken over an early window only,
t - t0 <= 30 (:data:`FIT_WINDOW`), its level at T over the whole run, and its methods are
compared as ensembles of initial conditions in the ``pendulum_ensemble`` study.

Phase averaging. Each nominal step h runs at ``PHASES`` perturbed copies h (1 + delta_j)
(:func:`impactbench.analysis.fitting.perturbed_steps`); the fitted laws of every copy are stored,
the report's tables show the median over the copies of each step with the smallest and largest
relative error, and the order of the relative error in h is fitted on those medians with its
95 % interval (:func:`impactbench.analysis.fitting.fit_order`). Only the nominal run of each step
(delta = 0) keeps its energy curve.

How the curves are stored. The runner keeps one row of scalar metrics per run; the energy
curves and the fitted laws need the trajectory, so each run's artefact function
(:func:`energy_artefacts`, :class:`impactbench.bench.runner.Run`) computes them right after the run
and the runner stores them with the row: ``energy_curve.artefact.csv.gz`` (the energy at at most
:data:`CURVE_POINTS` output samples of each nominal run) and ``decay_law.artefact.csv.gz`` (one row
of fitted laws per run), keyed by the run's cache key. The report reads them back, adds the
exact, law and reference curves of each case (the references read from the reference cache,
never computed) in ``case_curves.csv``, and draws every figure from these files as read back
from disk (the artefacts are read where the runner stored them, never copied); it simulates
nothing, and a missing artefact or reference is an error that says which study to rerun.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import error_floor, fit_order, perturbed_steps, phase_medians
from impactbench.analysis.impact_events import impact_events, nearest_impacts
from impactbench.analysis.long_time import (
    fit_log_linear,
    flight_medians,
    impact_sample_pairs,
    joint_excess_energy,
    power_law_coefficient,
    pre_impact_kinetic_energies,
    thinning_indices,
)
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.bench.latex import thin
from impactbench.bench.report import (
    format_number,
    markdown_table,
    method_style,
    new_figure,
    save_figure,
)
from impactbench.bench.results import ARTEFACT_SUFFIX, read_artefact, read_table, write_table
from impactbench.bench.runner import FAILED, Case, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.study_reference import event_driven_reference, stored_event_driven_reference
from impactbench.core.energy import kinetic_energy, potential_energy
from impactbench.core.method import TIME_STEPPING
from impactbench.core.problem import Problem
from impactbench.core.trajectory import Trajectory
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import DoublePendulum, TightJoint, TightJoint2D

from . import _adaptive

METRICS = ("energy_error_at_end", "max_energy_increase", "max_penetration")

#: The runs' energy curves and fitted laws: the artefacts the runner stores
#: (:func:`energy_artefacts`), read and linked as they are, never copied.
RUN_CURVES_FILE = "energy_curve" + ARTEFACT_SUFFIX
RATES_FILE = "decay_law" + ARTEFACT_SUFFIX
#: The exact, law and reference curves of each case, written by the report.
CURVES_FILE = "case_curves.csv"
#: Largest number of samples of one run kept in the curves file (values to 7 digits).
CURVE_POINTS = 160
#: Points of the exact, law and reference curves (half uniform, half geometric in time).
REFERENCE_POINTS = 400
#: Samples closer than this fraction of the horizon (or IMPACT_MARGIN_STEPS steps) to an impact
#: of the run or of the reference are left out of the decay-rate fit of the cases without
#: closed form.
IMPACT_MARGIN = 1e-6

SPRING = "TightJoint[k=1]"
FREE = "TightJoint[k=0]"
JOINT_2D = "TightJoint2D[unforced]"
PENDULUM = "DoublePendulum"

LAW_SPRING = "excess energy log-contraction per impact"
LAW_FREE = "t^-2 law coefficient"
LAW_RATE = "energy decay rate lambda (E - E_min ~ exp(-lambda t))"

#: The decay rate of the double pendulum is fitted over t - t0 <= 30 only: beyond, no run (the
#: reference included) is accurate state by state (see the module docstring).
FIT_WINDOW = {PENDULUM: 30.0}
#: An exponential fit of E - E_min whose root-mean-square residual exceeds this (natural-log
#: units: 0.1 is a scatter of about 10 % around the fitted law) is not a decay law: no rate is
#: reported for its case.
LAW_RESIDUAL = 0.1

#: Number of impacts (to the middle of the next flight) and restitution of the 1-DOF cases.
JOINT_IMPACTS = {"full": 1000, "quick": 20}
JOINT_RESTITUTION = {"full": 0.995, "quick": 0.95}
HORIZON = {"full": {JOINT_2D: 300.0, PENDULUM: 300.0}, "quick": {JOINT_2D: 10.0, PENDULUM: 5.5}}
RESTITUTION_2D = 0.95


def _steps(h_max: float, h_min: float, count: int) -> list[float]:
    """``count`` geometric steps from h_max to h_min, to 3 significant digits."""
    return [float(f"{h:.3g}") for h in np.geomspace(h_max, h_min, count)]


#: Step sizes per case: 7 geometric values over 1.5 decades (ratio 1.78, never a power of 2);
#: the free joint's flights are straight lines, so it takes larger steps. Quick: three.
STEPS = {
    "full": {
        SPRING: _steps(10**-2.5, 1e-4, 7),
        FREE: _steps(1e-2, 10**-3.5, 7),
        JOINT_2D: _steps(10**-2.5, 1e-4, 7),
        PENDULUM: _steps(10**-2.5, 1e-4, 7),
    },
    "quick": {name: [3e-3, 1e-3, 3e-4] for name in (SPRING, FREE, JOINT_2D, PENDULUM)},
}
#: Runs per nominal step: the step itself and perturbed copies (phase averaging).
PHASES = {"full": 5, "quick": 3}
TOLERANCES = {"full": [1e-6, 1e-8], "quick": [1e-8]}
#: rtol of the step-size-controlled schemes (:mod:`._adaptive`) and their schemes, with
#: Adaptive's default largest step (a tenth of the horizon): capped at the case's coarsest fixed
#: step, the steps' error (local and between the steps) stays within every swept rtol there, so
#: that h_max, not rtol, set the steps. Every accepted step is kept (``ADAPTIVE_SAMPLES``): the
#: decay laws are fitted on them, and h(t) is stored binned.
ADAPTIVE_TOLERANCES = {"full": [1e-2, 1e-3, 1e-4, 1e-5], "quick": [1e-3]}
ADAPTIVE_SCHEMES = {"full": _adaptive.SCHEMES, "quick": ("MoreauJean",)}
ADAPTIVE_SAMPLES = 2_000_000
#: The cases the adaptive schemes run in (quick: the 1-DOF joint, one compiled loop).
ADAPTIVE_CASES = {"full": (SPRING, FREE, JOINT_2D, PENDULUM), "quick": (SPRING, FREE)}
#: Without a spring the flights are straight lines, integrated exactly at any tolerance.
FREE_TOLERANCES = {"full": [1e-8], "quick": [1e-8]}

#: Output spacing (time units) of the time-stepping runs: with a spring at least 4 samples in the
#: shortest flight of the 1-DOF joint (2 delta / U_1 = 0.2), so each flight has samples away
#: from its impacts; ``SAMPLES`` samples for the others (the free joint's law is fitted on the
#: impact log).
SAMPLE_SPACING = {SPRING: 0.04}
SAMPLES = {"full": 10_000, "quick": 1_000}

#: Samples closer than this many steps to an impact of the run or of the reference are left out
#: of the decay-rate fit of the cases without closed form (with IMPACT_MARGIN).
IMPACT_MARGIN_STEPS = 10.0
#: Samples closer than this many steps to an impact are left out of the per-flight energy.
MARGIN_STEPS = 3.0

TIME_STEPPERS: list[tuple[type, dict[str, Any]]] = [
    (PaoliSchatzman, {}),
    (MoreauJean, {"theta": 0.5}),
    (CatchingUp, {}),
    (NonsmoothGeneralizedAlpha, {}),
    (D1MinusLinear, {}),
    (MoreauJeanProjection, {}),
]
METHOD_ORDER = (
    "PaoliSchatzman",
    "MoreauJean",
    "CatchingUp",
    "NonsmoothGeneralizedAlpha",
    "D1MinusLinear",
    "MoreauJeanProjection",
    "Adaptive",
    "EventDriven",
)

CURVE_COLUMNS = ["problem", "method", "h", "tolerance", "key", "curve", "t", "energy", "excess"]
RATE_COLUMNS = [
    "problem",
    "method",
    "family",
    "h",
    "tolerance",
    "key",
    "restitution",
    "law",
    "fitted",
    "exact",
    "error",
    "residual",
    "impacts",
    "impacts_exact",
    "max_deviation",
    "final_excess",
    "final_excess_exact",
    "final_error",
]


# --------------------------------------------------------------------------------------------
# Grid


def _joint_kwargs(stiffness: float, restitution: float) -> dict[str, Any]:
    return {"stiffness": stiffness, "restitution": restitution, "clearance": 0.1, "v0": 1.0}


def _mid_flight(problem: TightJoint, impacts: int) -> float:
    times = problem.impact_times(1e12, max_count=impacts + 1)
    return float(0.5 * (times[impacts - 1] + times[impacts]))


def cases(quick: bool) -> list[Case]:
    """The four cases of the quick or the full grid."""
    grid = "quick" if quick else "full"
    e, count = JOINT_RESTITUTION[grid], JOINT_IMPACTS[grid]
    result = []
    for label, stiffness in ((SPRING, 1.0), (FREE, 0.0)):
        kwargs = _joint_kwargs(stiffness, e)
        result.append(Case(TightJoint, _mid_flight(TightJoint(**kwargs), count), kwargs, label))
    joint2d = {"forcing_amplitude": [0.0, 0.0], "restitution": RESTITUTION_2D}
    result.append(Case(TightJoint2D, HORIZON[grid][JOINT_2D], joint2d, JOINT_2D))
    result.append(Case(DoublePendulum, HORIZON[grid][PENDULUM], {}, PENDULUM))
    return result


def _output_every(case: Case, h: float, grid: str) -> int:
    spacing = SAMPLE_SPACING.get(case.problem_name, case.t_end / SAMPLES[grid])
    return max(1, round(spacing / h))


def runs(quick: bool) -> list[Run]:
    """Every time-stepper at every step of its case (phase families), EventDriven at every
    tolerance, the step-size-controlled schemes at every rtol (:mod:`._adaptive`, h_max
    Adaptive's default; their accepted steps stored binned, :func:`adaptive_artefacts`)."""
    grid = "quick" if quick else "full"
    result = []
    for case in cases(quick):
        reference = None if case.problem is TightJoint else event_driven_reference
        common = {
            "problem": case.problem,
            "t_end": case.t_end,
            "problem_kwargs": case.problem_kwargs,
            "metrics": METRICS,
            "reference": reference,
            "problem_name": case.problem_name,
        }
        # the event-driven runs first: they take longest, and the workers balance better
        tolerances = FREE_TOLERANCES if case.problem_name == FREE else TOLERANCES
        for rtol in tolerances[grid]:
            result.append(
                Run(
                    method=EventDriven,
                    method_kwargs={"rtol": rtol},
                    tolerance="rtol",
                    artefact=energy_artefacts,
                    **common,
                )
            )
        nominal = STEPS[grid][case.problem_name]
        family = perturbed_steps(nominal, PHASES[grid])
        for method, kwargs in TIME_STEPPERS:
            for step, copies in zip(nominal, family, strict=True):
                for h in copies.tolist():
                    result.append(
                        Run(
                            method=method,
                            h=h,
                            nominal_h=step,
                            method_kwargs=kwargs,
                            output_every=_output_every(case, h, grid),
                            artefact=energy_artefacts,
                            **common,
                        )
                    )
        if case.problem_name not in ADAPTIVE_CASES[grid]:
            continue
        grids = _adaptive.grids(
            ADAPTIVE_TOLERANCES[grid], None, ADAPTIVE_SCHEMES[grid], ADAPTIVE_SAMPLES
        )
        case_runs = expand([case], grids, metrics=METRICS, reference=reference)
        result += [replace(run, artefact=adaptive_artefacts) for run in case_runs]
    return result


# --------------------------------------------------------------------------------------------
# Analysis of one run (its artefacts, computed by the runner)


def baseline_energy(problem: Problem) -> float:
    """The energy level the decaying part is measured from (the ``excess`` of the curves).

    1-DOF joint: k delta^2 / 2 (the grazing level of the spring case; 0 without spring);
    2-DOF joint: its minimum -|L|^2 / (2k) (spring) or -|L| delta (no spring); double pendulum:
    the hanging rest state -(m1 + m2) g l1 - m2 g l2.
    """
    if isinstance(problem, TightJoint):
        return 0.5 * problem.stiffness * problem.clearance**2
    if isinstance(problem, TightJoint2D):
        load = float(np.hypot(*problem.load))
        if problem.stiffness > 0:
            return -(load**2) / (2.0 * problem.stiffness)
        return -load * problem.clearance
    if isinstance(problem, DoublePendulum):
        return -(problem.m1 + problem.m2) * problem.gravity * problem.l1 - (
            problem.m2 * problem.gravity * problem.l2
        )
    raise ValueError(f"no baseline energy for problem {problem.name!r}")


def _energies(problem: Problem, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E, E - baseline) at samples; the 1-DOF joint's excess without cancellation."""
    if isinstance(problem, TightJoint):
        x, u = q[:, 0], v[:, 0]
        total = 0.5 * problem.mass * u * u + 0.5 * problem.stiffness * x * x
        return total, joint_excess_energy(problem, q, v)
    total = kinetic_energy(problem, q, v) + potential_energy(problem, q)
    return total, total - baseline_energy(problem)


def _reference_times(t0: float, t_end: float) -> np.ndarray:
    span = t_end - t0
    half = REFERENCE_POINTS // 2
    times = np.concatenate(
        [np.linspace(t0, t_end, half), t0 + np.geomspace(span * 1e-4, span, half)]
    )
    return np.unique(times)


def _law_kind(problem: Problem, label: str) -> str:
    if isinstance(problem, TightJoint):
        return LAW_SPRING if problem.stiffness > 0 else LAW_FREE
    window = FIT_WINDOW.get(label)
    return LAW_RATE if window is None else f"{LAW_RATE}, fitted over t - t0 <= {window:g}"


def _law_row(
    fitted: float,
    exact: float,
    residual: float,
    impacts: int,
    impacts_exact: int,
    deviation: np.ndarray,
) -> dict[str, Any]:
    """One row of the decay-law table; ``deviation`` the pointwise relative deviations from the
    exact law (NaN where undefined; max_deviation is NaN when none is defined)."""
    finite = np.abs(deviation[np.isfinite(deviation)])
    return {
        "fitted": fitted,
        "exact": exact,
        "error": fitted / exact - 1.0,
        "residual": residual,
        "impacts": impacts,
        "impacts_exact": impacts_exact,
        "max_deviation": float(finite.max()) if finite.size else math.nan,
    }


def _decay_rate(t: np.ndarray, excess: np.ndarray) -> tuple[float, float]:
    fit = fit_log_linear(t, excess)
    return -fit.slope, fit.residual


def _reference_state(run: Run, problem: Problem) -> Callable:
    if isinstance(problem, TightJoint):
        return problem.exact_solution
    return event_driven_reference(problem, run.t_end).state


def energy_artefacts(run: Run, problem: Problem, trajectory: Trajectory) -> dict[str, pd.DataFrame]:
    """The artefacts of a run (see the module docstring): its thinned energy curve (nominal runs
    only) and its row of fitted laws.

    See the module docstring for what is fitted per case; ``error`` is fitted / exact - 1,
    ``max_deviation`` the largest relative deviation from the exact law over the impacts (1-DOF)
    or from the reference energy over the samples (others), ``final_error`` the relative error
    of the excess energy at T.
    """
    total, excess = _energies(problem, trajectory.q, trajectory.v)
    keep = thinning_indices(trajectory.t, CURVE_POINTS)
    labels = {
        "problem": run.problem_name,
        "method": _adaptive.short_name(run.method_name),
        "h": math.nan if run.h is None else run.h,
        "tolerance": math.nan if run.tolerance_value is None else run.tolerance_value,
    }
    law = _law_kind(problem, run.problem_name)
    row: dict[str, Any] = {
        **labels,
        "family": _family(run),
        "restitution": problem.restitution,
        "law": law,
    }
    row.update(_fit_law(run, problem, trajectory, excess, law))
    state = _reference_state(run, problem)
    q_end, v_end = state(np.array([run.t_end]))
    _, excess_end = _energies(problem, q_end, v_end)
    row["final_excess"] = float(excess[-1])
    row["final_excess_exact"] = float(excess_end[0])
    row["final_error"] = float(excess[-1] / excess_end[0] - 1.0)
    artefacts = {"decay_law": pd.DataFrame([row])}
    if run.h == run.nominal_h:  # a nominal step, or an adaptive run (both None)
        artefacts["energy_curve"] = pd.DataFrame(
            {
                **labels,
                "curve": "run",
                "t": _rounded(trajectory.t[keep]),
                "energy": _rounded(total[keep]),
                "excess": _rounded(excess[keep]),
            }
        )
    return artefacts


def adaptive_artefacts(
    run: Run, problem: Problem, trajectory: Trajectory
) -> dict[str, pd.DataFrame]:
    """:func:`energy_artefacts` and the controller's record of an adaptive run: its step counts
    and h(t) binned (:func:`studies._adaptive.binned_step_artefact`)."""
    return {
        **energy_artefacts(run, problem, trajectory),
        **_adaptive.binned_step_artefact(run, problem, trajectory),
    }


def _family(run: Run) -> str:
    """The run's method family, :data:`ADAPTIVE_STEPPING` for step-size control."""
    if run.method.family == TIME_STEPPING and run.h is None:
        return ADAPTIVE_STEPPING
    return run.method.family


def _step_scale(run: Run, trajectory: Trajectory) -> float | None:
    """The step the impact margins are counted in: h (fixed step), the largest accepted step
    (step-size control, whose output keeps every accepted step: the steps near an impact are
    shorter), None (event-driven)."""
    if _family(run) == ADAPTIVE_STEPPING:
        return float(np.diff(trajectory.t).max())
    return trajectory.h


def _fit_law(
    run: Run, problem: Problem, trajectory: Trajectory, excess: np.ndarray, law: str
) -> dict[str, float]:
    h = _step_scale(run, trajectory)
    impacts = impact_events(trajectory).times
    e = problem.restitution
    if law == LAW_SPRING:
        if h is None:
            _, after = impact_sample_pairs(trajectory.t)
            values = excess[after]
        else:
            values = flight_medians(trajectory.t, excess, impacts, MARGIN_STEPS * h)
        fit = fit_log_linear(np.arange(1, len(values) + 1), values)
        exact = 2.0 * math.log(e)
        # the exact excess after impact n: at the exact post-impact states
        q_after, v_after = problem.exact_solution(problem.impact_times(run.t_end))
        exact_values = joint_excess_energy(problem, q_after, v_after)
        count = min(len(values), len(exact_values))
        deviation = values[:count] / exact_values[:count] - 1.0
        return _law_row(
            fit.slope,
            exact,
            fit.residual,
            len(impacts),
            len(problem.impact_times(run.t_end)),
            deviation,
        )
    if law == LAW_FREE:
        times, pre_impact = pre_impact_kinetic_energies(trajectory, problem.mass)
        origin = problem.decay_time_origin
        coefficient, spread = power_law_coefficient(times, pre_impact, origin)
        exact = 2.0 * problem.mass * problem.clearance**2 / (1.0 - e) ** 2
        deviation = pre_impact * (times - origin) ** 2 / exact - 1.0
        return _law_row(
            coefficient,
            exact,
            spread,
            len(times),
            len(problem.impact_times(run.t_end)),
            deviation,
        )
    reference = event_driven_reference(problem, run.t_end)
    # the run's samples away from its impacts and the reference's (at an impact step a scheme's
    # velocity is mid-reflection, and a pre-impact sample of one is post-impact in the other)
    margin = max(IMPACT_MARGIN_STEPS * (h or 0.0), IMPACT_MARGIN * (run.t_end - problem.t0))
    reference_impacts = np.asarray(reference.impact_times)
    away = ~(_near(trajectory.t, reference_impacts, margin) | _near(trajectory.t, impacts, margin))
    window = FIT_WINDOW.get(run.problem_name)
    if window is not None:
        away &= trajectory.t <= problem.t0 + window
    times = trajectory.t[away]
    q_ref, v_ref = reference.state(times)
    _, excess_ref = _energies(problem, q_ref, v_ref)
    fitted, residual = _decay_rate(times, excess[away])
    exact, _ = _decay_rate(times, excess_ref)
    deviation = excess[away] / excess_ref - 1.0
    return _law_row(fitted, exact, residual, len(impacts), len(reference_impacts), deviation)


def _near(times: np.ndarray, events: np.ndarray, margin: float) -> np.ndarray:
    """Mask of the ``times`` within ``margin`` of one of the sorted ``events``."""
    if events.size == 0:
        return np.zeros(times.shape, dtype=bool)
    return np.abs(nearest_impacts(events, times) - times) <= margin


def reference_curves(case: Case) -> pd.DataFrame:
    """The exact (1-DOF) or reference (others) energy curve of a case, and the t^-2 law."""
    problem = case.problem(**case.problem_kwargs)
    times = _reference_times(problem.t0, case.t_end)
    labels = {"problem": case.problem_name, "method": "", "h": math.nan, "tolerance": math.nan}
    frames = []
    if isinstance(problem, TightJoint):
        q, v = problem.exact_solution(times)
        kind = "exact"
    else:
        q, v = stored_event_driven_reference(problem, case.t_end).state(times)
        kind = "reference"
    total, excess = _energies(problem, q, v)
    frames.append(
        pd.DataFrame(
            {**labels, "key": "", "curve": kind, "t": times, "energy": total, "excess": excess}
        )
    )
    if isinstance(problem, TightJoint) and problem.stiffness == 0.0:
        origin = problem.decay_time_origin
        law_times = times[times > max(problem.t0, origin)]
        law = problem.energy_decay_law(law_times, origin=origin)
        frames.append(
            pd.DataFrame(
                {
                    **labels,
                    "key": "",
                    "curve": "law",
                    "t": law_times,
                    "energy": law,
                    "excess": law,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------------
# Stored curves and rates (the runs' artefacts)


def _known_cases() -> dict[str, Case]:
    """The cases of the quick and the full grid, by :func:`_curve_key`."""
    return {
        _curve_key(case.problem_name, case.t_end): case
        for quick in (True, False)
        for case in cases(quick)
    }


def _curve_key(problem: str, t_end: float) -> str:
    """Key of the exact/law/reference curves of a case in the curves file."""
    return f"{problem}@{float(t_end)!r}"


def stored_analysis(table: pd.DataFrame, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The curves and fitted laws of every finished run of ``table``, from its artefacts.

    Writes :data:`CURVES_FILE` (the exact, law and reference curves of each case, the
    references read from the reference cache) and returns, as read back from disk, every curve
    (the runs' from their artefact :data:`RUN_CURVES_FILE`, then those of :data:`CURVES_FILE`)
    and the fitted laws (the artefact :data:`RATES_FILE`, in the order of ``table``).

    Returns
    -------
    curves, rates : DataFrame
        The curves of the runs and of the cases; the runs' fitted laws.
    unknown : int
        Cases of the table that are in neither the quick nor the full grid (their exact or
        reference curve is not drawn).

    Raises
    ------
    impactbench.bench.results.MissingArtefactError,
    impactbench.analysis.reference.MissingReferenceError
        When a run's artefact or a case's reference is not stored (rerun the study).
    """
    done = table[table["status"] != FAILED]
    nominal = done["h_nominal"].isna() | (done["h"] == done["h_nominal"])
    required = list(done.loc[nominal, "key"])
    run_curves = read_artefact(table, folder, "energy_curve", required=required)
    rates = read_artefact(table, folder, "decay_law")
    known = _known_cases()
    keys = sorted({_curve_key(p, t) for p, t in zip(done["problem"], done["t_end"], strict=True)})
    case_curves = [reference_curves(known[key]).assign(key=key) for key in keys if key in known]
    cases = pd.concat(case_curves, ignore_index=True) if case_curves else pd.DataFrame()
    write_table(_sorted_curves(cases.reindex(columns=CURVE_COLUMNS), table), folder / CURVES_FILE)
    curves = pd.concat(
        [run_curves.reindex(columns=CURVE_COLUMNS), read_table(folder / CURVES_FILE)],
        ignore_index=True,
    )
    rates = rates.reindex(columns=RATE_COLUMNS)
    order = {key: i for i, key in enumerate(table["key"])}
    rates = rates.sort_values("key", key=lambda k: k.map(order), kind="stable")
    unknown = sum(key not in known for key in keys)
    return curves, rates.reset_index(drop=True), unknown


def _rounded(values: np.ndarray) -> np.ndarray:
    """``values`` to 7 significant digits (plenty for a figure; a third of the file size)."""
    return np.array([float(f"{x:.7g}") for x in np.asarray(values, dtype=float)])


def _sorted_curves(curves: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    curves = curves.assign(**{c: _rounded(curves[c]) for c in ("t", "energy", "excess")})
    order = {key: i for i, key in enumerate(table["key"])}
    rank = curves["key"].map(order).fillna(-1)
    frame = curves.assign(_rank=rank, _curve=curves["curve"] != "run")
    frame = frame.sort_values(["problem", "_rank", "curve", "t"], kind="stable")
    return frame.drop(columns=["_rank", "_curve"]).reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Report


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _base(method: str) -> str:
    return method.partition("[")[0]


def _figure(problem: str, curves: pd.DataFrame, folder: Path) -> str:
    data = curves[curves["problem"] == problem]
    runs = data[data["curve"] == "run"]
    exact = data[data["curve"].isin(["exact", "reference"])]
    law = data[data["curve"] == "law"]
    methods = sorted(runs["method"].unique(), key=lambda m: METHOD_ORDER.index(_base(m)))
    figure, axes = new_figure(max(len(methods), 1), width=4.2, height=3.6)
    free = problem == FREE
    ylabel = (
        "$E$ [J]"
        if free
        else (r"$E - k\delta^2/2$ [J]" if problem == SPRING else r"$E - E_{\min}$ [J]")
    )
    for ax, method in zip(axes, methods, strict=False):
        group = runs[runs["method"] == method]
        axis = "h" if group["tolerance"].isna().all() else "tolerance"
        values = sorted(group[axis].unique(), reverse=True)
        style = method_style(method)
        for i, value in enumerate(values):
            line = group[group[axis] == value]
            line = line[line["excess"] > 0]
            shade = 0.35 + 0.65 * (i + 1) / len(values)
            ax.plot(
                line["t"],
                line["excess"],
                color=style["color"],
                alpha=shade,
                linewidth=0.9,
                label=f"{axis} = {value:.2g}" + (" s" if axis == "h" else ""),
            )
        for frame, kind, dash in ((exact, "", "--"), (law, "t^-2 law", ":")):
            frame = frame[frame["excess"] > 0]
            if len(frame):
                name = kind or str(frame["curve"].iloc[0])
                ax.plot(frame["t"], frame["excess"], "k" + dash, linewidth=1.0, label=name)
        ax.set_yscale("log")
        if free:
            ax.set_xscale("log")
        ax.minorticks_off()  # (minor log ticks double the drawing time)
        ax.set_title(method, fontsize=9)
        ax.set_xlabel("$t$ [s]")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6)
    figure.suptitle(f"Energy decay: {problem}")
    name = f"energy_{_slug(problem)}.png"
    save_figure(figure, folder / name)
    return f"![Energy decay of {problem}]({name})\n"


#: Columns of the fitted-law table aggregated over the phase copies of a step.
_AGGREGATED = (
    "fitted",
    "exact",
    "error",
    "abs_error",
    "residual",
    "impacts",
    "impacts_exact",
    "max_deviation",
    "final_energy_error",
    "final_excess",
    "final_excess_exact",
    "final_error",
)


def law_families(rates: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The fitted laws aggregated per phase family: median, smallest and largest of each of
    :data:`_AGGREGATED` (``abs_error`` = |relative error|, ``final_energy_error`` from the run
    table) per problem, method and nominal step or tolerance, with ``law``."""
    runs = table.set_index("key")
    frame = rates.assign(
        h_nominal=rates["key"].map(runs["h_nominal"]),
        abs_error=rates["error"].abs(),
        final_energy_error=rates["key"].map(runs["energy_error_at_end"]),
    )
    medians = phase_medians(frame, _AGGREGATED, keys=("family", "law"))
    return _by_method(medians)


def _relative_floor(problem: str, t_end: float) -> float:
    """Floor of a relative error of a fitted law: round-off, or ten times the reference's
    claimed accuracy taken as relative (the energies are of order 1 or their excess is
    measured relative to itself)."""
    known = {case.problem_name: case for quick in (True, False) for case in cases(quick)}
    case = known.get(problem)
    if case is None or case.problem is TightJoint:
        return error_floor(1.0)
    reference = stored_event_driven_reference(case.problem(**case.problem_kwargs), t_end)
    return error_floor(1.0, reference.accuracy)


def _spread(value: float, low: float, high: float) -> str:
    text = format_number(value)
    return text if low == high else f"{text} [{format_number(low)}, {format_number(high)}]"


def reference_laws(curves: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """The exponential law E - E_min ~ exp(-lambda t) fitted once on each case's reference
    curve (within :data:`FIT_WINDOW` of t0 where one is set): {problem: (lambda, residual)},
    the residual the root-mean-square of log(E - E_min) about the fitted line."""
    laws = {}
    for problem, group in curves[curves["curve"] == "reference"].groupby("problem", sort=False):
        t = group["t"].to_numpy(float)
        excess = group["excess"].to_numpy(float)
        keep = np.ones(t.shape, dtype=bool)
        window = FIT_WINDOW.get(str(problem))
        if window is not None:
            keep &= t <= t.min() + window
        fit = fit_log_linear(t[keep], excess[keep])
        laws[str(problem)] = (-fit.slope, fit.residual)
    return laws


def _law_sentence(problem: str, law: tuple[float, float]) -> str:
    rate, residual = law
    window = FIT_WINDOW.get(problem)
    where = f" over t - t0 <= {window:g}" if window is not None else ""
    text = (
        f"{problem}: no closed-form decay law; the exponential law E - E_min ~ exp(-lambda t) "
        f"fitted once on the reference{where} gives lambda = {format_number(rate, 4)} with an "
        f"RMS residual of {format_number(residual, 2)} (natural log)"
    )
    if residual > LAW_RESIDUAL:
        return text + (
            f", above {LAW_RESIDUAL:g}: the law does not hold, so no decay rate is reported for "
            "any run."
        )
    return text + "."


#: Units of the adaptive runs' step counts (their fixed-step counterparts: T / h steps).
COUNT_UNITS = {"fixed steps (coarsest h)": "-", "fixed steps (finest h)": "-"}
#: The column of the rates tables naming a run's setting: its nominal step h or its rtol.
SETTING = "h or rtol"
#: Units of the rates tables' columns (relative errors, deviations and the fits' residuals, in
#: natural log, dimensionless; the final energy error in J; the fitted values: :func:`_law_unit`).
RATE_UNITS = {
    SETTING: "s or -",
    "relative error": "-",
    "fit residual": "-",
    "max deviation": "-",
    "final energy error": "J",
    "final excess rel. error": "-",
}


def _count(value: float) -> str:
    """A count (a median over phase copies may be a half) in full, "-" when missing."""
    return "-" if pd.isna(value) else f"{value:g}" if value != int(value) else f"{value:.0f}"


def _law_unit(law: str) -> str:
    """The unit of a fitted decay law's value: a log-contraction per impact is dimensionless,
    the coefficient C of E = C t^-2 is in J s^2, a rate lambda of exp(-lambda t) in 1/s."""
    if "per impact" in law:
        return "-"
    return "J s^2" if "t^-2" in law else "1/s"


def _rates_table(frame: pd.DataFrame, law: str) -> str:
    """A rates table in Markdown (``law``: the law fitted, which gives the unit of its values);
    its LaTeX copy keeps at most :data:`impactbench.bench.latex.MAX_ROWS` of its rows (settings
    evenly spread per method)."""
    unit = _law_unit(law)
    units = {**RATE_UNITS, "fitted": unit, "exact": unit, "reference": unit}
    return markdown_table(frame, units=units, latex=thin(frame, ["method"], SETTING))


def _rates_section(families: pd.DataFrame, laws: dict[str, tuple[float, float]]) -> str:
    parts = []
    for problem, group in families.groupby("problem", sort=False):
        exact = "exact" if problem in (SPRING, FREE) else "reference"
        law = laws.get(str(problem))
        impacts = [
            f"{_count(a)} ({_count(b)})"
            for a, b in zip(group["impacts"], group["impacts_exact"], strict=True)
        ]
        frame = pd.DataFrame(
            {
                "method": group["method"],
                SETTING: group["h"].fillna(group["tolerance"]),
                "runs": group["runs"],
                "fitted": group["fitted"],
                exact: group["exact"],
                "relative error": [
                    _spread(*values)
                    for values in zip(
                        group["error"], group["error_min"], group["error_max"], strict=True
                    )
                ],
                "fit residual": group["residual"],
                f"impacts ({exact})": impacts,
                "max deviation": group["max_deviation"],
                "final energy error": group["final_energy_error"],
                "final excess rel. error": group["final_error"],
            }
        )
        if problem in (SPRING, FREE):
            law_name = str(group["law"].iloc[0])
            parts.append(f"### {problem}: {law_name}\n\n" + _rates_table(frame, law_name))
            continue
        rate_columns = ["fitted", exact, "relative error", "fit residual"]
        if law is None or law[1] > LAW_RESIDUAL:
            frame = frame.drop(columns=rate_columns)
        else:  # a law that holds: every run's rate against the one fitted on the reference
            frame[exact] = law[0]
            frame["relative error"] = group["fitted"].to_numpy() / law[0] - 1.0
        intro = _law_sentence(str(problem), law) if law is not None else "No reference curve."
        parts.append(
            f"### {problem}\n\n{intro}\n\n" + _rates_table(frame, str(group["law"].iloc[0]))
        )
    return "\n".join(parts) if parts else "None (no run finished).\n"


def _by_method(group: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order of :data:`METHOD_ORDER`, then by decreasing h or tolerance."""
    rank = group["method"].map(lambda m: METHOD_ORDER.index(_base(m)))
    size = -group["h"].fillna(group["tolerance"])
    frame = group.assign(_rank=rank, _size=size)
    return frame.sort_values(["_rank", "_size"], kind="stable").drop(columns=["_rank", "_size"])


#: A run whose excess energy at T is below this fraction of the exact (reference) one has
#: dissipated all of it: its motion stopped where the exact one goes on.
DISSIPATED = 1e-2


def _outlier_findings(rates: pd.DataFrame) -> list[str]:
    """Runs that dissipate the whole excess energy, and 1-DOF runs with fewer impacts than the
    exact solution, each with the configuration that shows it (every run, not the medians)."""
    findings = []
    rates = rates.assign(resolution=rates["h"].fillna(rates["tolerance"]))
    dissipated = rates[rates["final_excess"] <= DISSIPATED * rates["final_excess_exact"]]
    for problem, rows in dissipated.groupby("problem", sort=False):
        listed = "; ".join(
            f"{row.method} (h or rtol {format_number(row.resolution, 3)}: excess "
            f"{format_number(row.final_excess, 2)} against "
            f"{format_number(row.final_excess_exact, 2)}, {row.impacts:.0f} of "
            f"{row.impacts_exact:.0f} impacts)"
            for row in rows.head(5).itertuples()
        )
        more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
        findings.append(
            f"{problem}: {len(rows)} runs dissipate all the excess energy (E - E_min at T below "
            f"{DISSIPATED:g} of the {'exact' if problem in (SPRING, FREE) else 'reference'} "
            f"value): {listed}{more}."
        )
    exact = rates[rates["problem"].isin((SPRING, FREE))]
    short = exact[exact["impacts"] < exact["impacts_exact"]]
    short = short[~short.index.isin(dissipated.index)]
    for problem, rows in short.groupby("problem", sort=False):
        worst = rows.loc[(rows["impacts"] / rows["impacts_exact"]).idxmin()]
        findings.append(
            f"{problem}: {len(rows)} runs impact fewer times than the exact solution; fewest: "
            f"{worst['method']} (h or rtol {format_number(worst['resolution'], 3)}), "
            f"{worst['impacts']:.0f} of {worst['impacts_exact']:.0f}."
        )
    return findings


def _findings(
    families: pd.DataFrame,
    table: pd.DataFrame,
    unknown: int,
    laws: dict[str, tuple[float, float]],
) -> list[str]:
    findings = []
    horizons = dict(zip(table["problem"], table["t_end"], strict=False))
    for problem, group in families.groupby("problem", sort=False):
        if problem not in (SPRING, FREE):
            steppers = group[group["family"] == TIME_STEPPING]
            level = format_number(group["final_excess_exact"].iloc[0], 3)
            low = format_number(steppers["final_excess_min"].min(), 3)
            high = format_number(steppers["final_excess_max"].max(), 3)
            law = laws.get(str(problem))
            text = _law_sentence(str(problem), law) if law is not None else f"{problem}:"
            text += f" Level at T (E - E_min): reference {level}, time-steppers {low} to {high}."
            if problem == PENDULUM:
                text += (
                    " Its trajectories separate (chaos): methods are compared as ensembles in "
                    "the pendulum_ensemble study."
                )
            findings.append(text)
            continue
        exact_name = "exact" if problem in (SPRING, FREE) else "reference"
        floor = _relative_floor(problem, float(horizons[problem]))
        finest, orders = [], []
        for method, rows in group.groupby("method", sort=False):
            stepper = rows["family"].iloc[0] == TIME_STEPPING
            axis = "h" if stepper else "tolerance"
            best = rows.loc[rows[axis].idxmin()]
            finest.append(
                f"{method} {format_number(best['abs_error'], 2)} ({axis} = "
                f"{format_number(best[axis], 2)})"
            )
            if stepper:
                fit = fit_order(rows["h"].to_numpy(), rows["abs_error"].to_numpy(), floor=floor)
                orders.append(f"{method} {fit.text()}")
        value = format_number(group["exact"].iloc[0], 4)
        text = (
            f"{problem}, {group['law'].iloc[0]} ({exact_name} {value}): relative error at the "
            f"finest resolution (median over the phase copies): {'; '.join(finest)}."
        )
        if orders:
            text += (
                " Order of that error in h [95 % interval], medians over the phase copies: "
                f"{'; '.join(orders)}."
            )
        findings.append(text)
    if unknown:
        findings.append(
            f"{unknown} cases of the table are not in the current grids: their exact or "
            "reference curves are not drawn."
        )
    return findings


def step_counts(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """Per adaptive run (stored ``control`` artefacts): problem, method, rtol, accepted,
    rejected and contact-change steps, the mean accepted step T / accepted, and the steps a
    fixed-step run at the case's finest and coarsest nominal step takes over the same
    horizon."""
    adaptive = table[_adaptive.is_adaptive(table) & (table["status"] != FAILED)]
    control = read_artefact(adaptive, folder, "control")
    if control.empty:
        return pd.DataFrame()
    rows = adaptive.merge(control, on="key")
    fixed = table[table["h"].notna()].groupby("problem")["h_nominal"]
    span = rows["t_end"] - rows["problem"].map(_t0_of_case)
    return pd.DataFrame(
        {
            "problem": rows["problem"],
            "method": rows["method"].map(_adaptive.short_name),
            "rtol": rows["tolerance"],
            "accepted": rows["accepted_steps"],
            "rejected": rows["rejected_steps"],
            "contact steps": rows["contact_steps"],
            "mean step [s]": span / rows["accepted_steps"],
            "fixed steps (coarsest h)": span / rows["problem"].map(fixed.max()),
            "fixed steps (finest h)": span / rows["problem"].map(fixed.min()),
        }
    )


def _t0_of_case(problem: str) -> float:
    known = {case.problem_name: case for quick in (True, False) for case in cases(quick)}
    case = known[problem]
    return float(case.problem(**case.problem_kwargs).t0)


def error_control(table: pd.DataFrame) -> pd.DataFrame:
    """Whether the adaptive family controls the energy error at T (``energy_error_at_end``)
    on each case (:func:`studies._adaptive.error_control` on its finished runs, one per rtol)."""
    done = table[_adaptive.is_adaptive(table) & (table["status"] != FAILED)]
    done = done.assign(method=done["method"].map(_adaptive.short_name))
    return _adaptive.error_control(done, "energy_error_at_end")


def _control_section(table: pd.DataFrame, folder: Path) -> tuple[str, list[str]]:
    """The step counts of the adaptive runs (marked by :func:`error_control`), their h(t)
    figures, and a finding per case."""
    counts = step_counts(table, folder)
    if counts.empty:
        return "None (no adaptive run finished).\n", []
    control = error_control(table)
    counts = _adaptive.marked(counts, control)
    figures, findings = [], []
    for problem, group in counts.groupby("problem", sort=False):
        link = _adaptive.step_size_figure(
            table, folder, str(problem), f"Accepted steps h(t): {problem}",
            f"step_sizes_{_slug(str(problem))}.png",
        )  # fmt: skip
        figures.append(link or "")
        fraction = group["rejected"] / (group["accepted"] + group["rejected"])
        findings.append(
            f"{problem}, step-size control: {format_number(group['accepted'].min())} to "
            f"{format_number(group['accepted'].max())} accepted steps over rtol "
            f"{group['rtol'].max():g} to {group['rtol'].min():g} ({fraction.min():.0%} to "
            f"{fraction.max():.0%} of the attempts rejected), against "
            f"{format_number(group['fixed steps (coarsest h)'].iloc[0])} to "
            f"{format_number(group['fixed steps (finest h)'].iloc[0])} steps of the fixed-step "
            "sweep."
        )
    body = (
        _adaptive.settings_text("Adaptive's default, a tenth of the horizon")
        + "; every accepted step kept. Per run: its "
        "accepted, rejected and contact-change steps, the mean accepted step T / accepted and "
        "the steps of a fixed-step run over the same horizon at the case's coarsest and "
        "finest nominal step. The figures draw h(t) in "
        f"{_adaptive.STEP_BINS} bins of time (line: the bin's smallest accepted step; band: up "
        "to its largest), impacts as ticks.\n\n"
        + markdown_table(counts, units=COUNT_UNITS)
        + "\nError control (error: the energy error at T, |E(T) - E_ref(T)|): "
        + _adaptive.control_section(control)
        + "\n"
        + "\n".join(figures)
    )
    return body, findings + _adaptive.control_findings(control)


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Decay-rate tables (``decay_law.artefact.csv.gz``), E(t) figures (from the runs' and the
    cases' curves) and
    the step counts and h(t) of the adaptive runs."""
    folder = Path(folder)
    curves, rates, unknown = stored_analysis(table, folder)
    control, control_findings = _control_section(table, folder)
    families = law_families(rates, table)
    laws = reference_laws(curves)
    figures = [_figure(problem, curves, folder) for problem in curves["problem"].unique()]
    sections = [
        Section(
            "Fitted decay laws",
            "Per case and step (time-steppers: the median over the phase copies h (1 + "
            "delta_j) of the nominal step h, with the smallest and largest relative error; "
            "every run in the CSV file): the fitted value of its decay law next to the exact "
            "value "
            "(1-DOF joint) or the value fitted identically on the reference (others); relative "
            "error = fitted / exact - 1; max deviation: largest relative deviation, over the "
            "impacts, of the excess energy after each impact from the exact one (spring) or of "
            "the energy before each impact from the t^-2 law (no spring), or over the samples "
            "away from impacts, of E - E_min from the reference (others); "
            "final energy error: |E(T) - E_ref(T)| (results.csv.gz); final excess rel. error: of "
            "the decaying part at T. Also in "
            f"[{RATES_FILE}]({RATES_FILE}), where the rates of the cases without a closed-form "
            "law are per-run summary fits, not laws.\n\n" + _rates_section(families, laws),
        ),
        Section(
            "Energy curves",
            "The decaying part of the energy (1-DOF with spring: E - k delta^2 / 2; without "
            "spring: E, log-log, with the t^-2 law; others: E - E_min) on a log scale, one panel "
            "per method (lighter: larger h or rtol; the nominal steps), drawn from "
            f"[{RUN_CURVES_FILE}]({RUN_CURVES_FILE}) (at most {CURVE_POINTS} output samples "
            f"per run) and [{CURVES_FILE}]({CURVES_FILE}) (the exact, law and reference curves). "
            "The isolated dips of Paoli-Schatzman are samples that fall on a reflection, where "
            "its velocity (q^{k+1} - q^{k-1}) / (2h) straddles the impact.\n\n"
            + "\n".join(figures or ["None (no run finished).\n"]),
        ),
    ]
    sections.append(Section("Step-size control: steps and h(t)", control))
    findings = _findings(families, table, unknown, laws) + _outlier_findings(rates)
    return StudyReport(sections, findings + control_findings)


STUDY = Study(
    name="energy_decay",
    title="Energy decay over long horizons",
    description=(
        "Energy curves E(t) over up to a thousand impacts, every method: the 1-DOF tight joint "
        "with a spring (the excess energy E - k delta^2/2 contracts by e^2 per impact: fitted "
        "log-contraction per impact against 2 log e, 1000 impacts, e = 0.995) and without "
        "(the energy before each impact follows 2 m delta^2 / ((1 - e)^2 (t - t_*)^2) exactly: "
        "fitted coefficient against 2 m delta^2 / (1 - e)^2, 1000 impacts up to t = 6e3), the "
        "unforced 2-DOF joint (pin in a circular hole, t = 300) and the double pendulum against "
        "the wall (t = 300) against the DOP853 event-driven reference at rtol 1e-12 (no "
        "closed-form law: an exponential law fitted once on the reference, with its residual, "
        "and no rate reported where it does not hold; the level of E - E_min at T; the "
        "pendulum, chaotic, is compared as an ensemble in pendulum_ensemble). "
        "Time-steppers over 7 nominal step sizes spanning 1.5 decades, each with perturbed "
        "copies h (1 + delta_j), |delta_j| <= 0.1 (medians reported, the order of the relative "
        "error in h fitted on them with its 95 % interval), the event-driven method at two "
        "tolerances (one without spring: straight flights are exact at any tolerance). Curves "
        "and fits are computed from each run's trajectory by the runner and stored next to the "
        "results table."
    ),
    runs=runs,
    report=report,
)
