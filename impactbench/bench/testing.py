"""Conformance suite for a method: :func:`check_method` runs the battery that the built-in
methods pass and returns a :class:`ValidationReport` (in the spirit of scikit-learn's
``check_estimator``).

Properties checked (each a row of the report: measured value, threshold, verdict)
----------------------------------------------------------------------------------
order through impacts
    Phase-averaged observed orders (:mod:`impactbench.analysis.fitting`: each nominal step h run at
    h (1 + delta_j), the median error of each family fitted with its 95 % interval, errors at
    the round-off floor excluded) of the position error (max norm) and of the Hausdorff distance
    between the velocity graphs, against the closed forms of the bouncing ball through its
    accumulation point into rest, the slanted wall (non-diagonal M) through its accumulation
    point into sliding, and the impacting oscillator over several impacts. A time-stepping
    method passes when the fit is an order >= :data:`MIN_ORDER` (first order is what the
    field's event-capturing schemes achieve through impacts). An event-driven method
    (``requires_step`` False) is swept over its relative tolerance instead; it passes when
    every error is <= :data:`TOLERANCE_FACTOR` rtol times the solution's scale (its error is
    controlled by rtol, including the impact times), whatever the fitted slope, because on
    piecewise-polynomial solutions its error sits at round-off. A time-stepping method with
    step-size control (family time-stepping, ``requires_step`` False, as
    :class:`impactbench.Adaptive`) is swept over its tolerance in phase families rtol (1 +
    delta_j), its ``atol`` and ``gap_tolerance`` (when it has them) scaled with rtol; it passes
    when the fit is an order in rtol >= :data:`MIN_ADAPTIVE_ORDER`: through an impact the local
    error test sets the step by the positions' O(h^2) error, h ~ rtol^(1/2), and the velocity
    after it is O(h) wrong, so rtol^(1/2) is what a first-order scheme under control achieves
    there. Its position error is measured at its accepted steps: the controller bounds the error
    there, while between steps its polyline is off by up to h^2 a / 8, which ``h_max``, not
    rtol, bounds where the scheme integrates a flight exactly (the ball's parabolas under the
    midpoint rule: flat in rtol at h_max^2 g / 8).
    Bounds a step-size-controlled method leaves at None are derived before the battery (and
    shown in the report's method name): ``h_max`` the level's coarsest fixed step, the step
    the fixed-step methods are checked at, and ``gap_tolerance`` its tolerance (rtol): the
    setting under which the error converges in rtol through impacts.
kinetic metric
    On the slanted wall, l(v) = w^T v with w orthogonal to M^-1 n is not changed by an impulse
    along M^-1 n, so l(v(t)) = l(v0) + l(M^-1 F) (t - t0) exactly; a method applying the
    impulse along the Euclidean normal n changes it at every impact. Threshold: relative
    deviation <= :data:`METRIC_TOLERANCE`.
resting contact, several contacts
    A ball resting on the floor after its accumulation point, and (several simultaneous
    contacts) a column of four beads resting on the floor (four active constraints). The
    depth below the constraints after the contact has settled must stay <= DEPTH_CONSTANT
    alpha h^2 (alpha the acceleration towards the constraint) and must not grow with time
    (depth over the second half <= depth over the first part plus round-off). Event-driven
    and step-size-controlled: depth <= TOLERANCE_FACTOR rtol.
no step-size collapse (step-size-controlled methods only)
    On the same resting contacts: the median accepted step over the second half of the horizon
    >= :data:`COLLAPSE_FRACTION` times the largest accepted step of the run (a controller that
    refines at every change of the active set, which a resting contact makes at every step,
    fails it); the fraction of rejected attempts over the whole run (the accumulation before
    the rest included) is reported beside it. The run keeps every accepted step up to
    :data:`COLLAPSE_STEPS` t_end / h_max of them; one that takes more fails.
energy over impacts
    The mechanical energy must not increase across an impact: at each impact event of the
    bouncing ball (before its accumulation point; consecutive log entries of a time-stepper are
    one event), E after its last entry minus E before its first <= h^2 F^T M^-1 F (the
    free-flight drift a first-order step may have) plus round-off. Not applicable (not a
    failure) to methods whose output velocity is not part of their state.
restitution at isolated impacts
    Newton's law itself: at each of the bouncing ball's first impacts (the run's own impact
    events; flights long against the step), the ratio r = -u_+/u_- of the normal speeds at the
    floor after and before it, each read from the free-flight invariant u^2 = v^2 + 2 g q at an
    output sample inside the flight (so the error in the impact time does not enter), must
    equal e to first order: |r - e| <= :data:`RESTITUTION_CONSTANT` g h / u_- at the level's
    coarsest, middle and finest steps (g h / u_-: the velocity gained over one step relative
    to the impact speed, the size of a first-order scheme's terms at an impact), ``h_max``
    under step-size control, TOLERANCE_FACTOR rtol for an event-driven method. A failure whose
    ratios sit at e^2, 1, 0 or sqrt(e) names that mistake (e.g. "r = e^2: the restitution
    applied twice"). The order checks see such a scheme only as an error that stops
    decreasing.
bad inputs
    ``simulate`` with t_end NaN, infinite or <= t0, output_every 0, a NaN initial velocity,
    and h <= 0, NaN, infinite or missing (time-stepping), given (event-driven) or <= 0, NaN or
    infinite (step-size-controlled: h is the first step tried) must raise a ValueError whose
    message names the argument.
determinism
    Two runs of the same method on the same problem give identical arrays.
Coulomb friction (only for a method declaring a friction law, ``friction_law`` True; for any
other the three rows are "not applicable (no friction law)", never failures)
    *friction work <= 0 on every step*: a block sliding to rest on a floor and one sliding down
    a steep incline (e_N = e_T = 0, gravity the only other force): the mechanical energy must
    not increase between consecutive samples by more than h^2 F^T M^-1 F plus round-off
    (event-driven: TOLERANCE_FACTOR rtol E). *No creep*: a block at rest on an incline flatter
    than its friction angle moves by at most :data:`CREEP_TOLERANCE` to the resting horizon.
    *Friction oscillator*: the order checks above against its stick-slip closed form (through
    its arcs into the final stick, T = 30), with the same thresholds.

Each failed check comes with its likely causes in one line (:data:`LIKELY_CAUSES`: the
report's text, ``Check.likely_causes``, and the JSON).

Levels: ``"quick"`` fits over :data:`LEVELS` ["quick"] (7 nominal steps over 1.2 decades, 2
phases each; resting contact to t = 100), ``"full"`` over 12 steps spanning 1.7 decades with 3
phases and resting contact to t = 1000.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import fitting, metrics
from ..analysis.impact_events import impact_events
from ..analysis.reference import Reference
from ..core.method import TIME_STEPPING, Method
from ..core.problem import Problem, timed_gradient
from ..core.simulate import simulate
from ..core.trajectory import SimulationError, Trajectory

#: Smallest fitted order through impacts accepted for a time-stepping method.
MIN_ORDER = 0.8
#: An event-driven error must be <= TOLERANCE_FACTOR rtol times the solution's scale.
TOLERANCE_FACTOR = 1e3
#: Relative deviation of the tangential functional allowed by the kinetic-metric check.
METRIC_TOLERANCE = 1e-9
#: Depth of a resting contact allowed, in units of alpha h^2: a bound with margin over what the
#: built-in schemes reach (tests/test_persistent_contact.py asserts the same bound on MoreauJean,
#: CatchingUp and PaoliSchatzman to t = 1000, the other schemes' tests tighter ones), where
#: Paoli-Schatzman's iterate, not itself kept in K (its invariant is (q^{k+1} + e q^{k-1}) /
#: (1 + e) in K), may settle into a cycle of amplitude O(alpha h^2) around the constraint.
DEPTH_CONSTANT = 4.0
#: Smallest fitted order in rtol through impacts accepted for a step-size-controlled method.
MIN_ADAPTIVE_ORDER = 0.4
#: No collapse: median accepted step at rest >= COLLAPSE_FRACTION times the run's largest.
COLLAPSE_FRACTION = 0.5
#: A resting run of more than COLLAPSE_STEPS t_end / h_max accepted steps has collapsed.
COLLAPSE_STEPS = 4.0
#: Relative round-off allowed on energies and gaps.
ROUND_OFF = 1e-12

#: Width of the text report (:meth:`ValidationReport.table`), and the narrowest a column gets.
TABLE_WIDTH = 100
MIN_COLUMN = 8

#: Error metrics whose order is fitted (impactbench.analysis.metrics).
ORDER_METRICS = ("max_position_error", "hausdorff_velocity_distance")


@dataclass(frozen=True)
class Level:
    """How much a level runs: nominal steps (time-stepping), phases per step, tolerances
    (event-driven), the resting horizon, the step of the contact checks, and the tolerances
    of step-size-controlled time-stepping and the phases of each (more than a fixed step's:
    the expected order 1/2 leaves half the room between it and zero)."""

    steps: tuple[float, ...]
    phases: int
    tolerances: tuple[float, ...]
    rest_horizon: float
    stack_horizon: float
    contact_step: float
    adaptive_tolerances: tuple[float, ...] = ()
    adaptive_phases: int = 5


LEVELS = {
    "quick": Level(
        tuple(np.geomspace(5e-3, 2e-4, 9)),
        3,
        tuple(10.0 ** -np.arange(4, 10)),
        100.0,
        30.0,
        5e-3,
        tuple(np.geomspace(1e-3, 1e-7, 9)),
    ),
    "full": Level(
        tuple(np.geomspace(5e-3, 1e-4, 12)),
        3,
        tuple(10.0 ** -np.arange(3, 12)),
        1000.0,
        200.0,
        5e-3,
        tuple(np.geomspace(1e-3, 1e-8, 11)),
        7,
    ),
}


#: The likely causes of a failed check, one line each, by the start of its property's name
#: (the first match; the frictional oscillator's order checks start with "friction oscillator").
LIKELY_CAUSES = (
    (
        "restitution",
        "the restitution applied twice (r = e^2) or not at all (r = 1); a coefficient other "
        "than the problem's e passed to the impact law; a second impulse on the step after "
        "the impact, while the contact is still closed",
    ),
    (
        "friction oscillator",
        "stick-slip transitions missed (the tangential impulse not solved with the normal "
        "one); the restitution or the smooth step wrong as for the other order checks",
    ),
    (
        "order",
        "the restitution applied twice or not at all (see the restitution row); the impulse "
        "along the Euclidean normal instead of M^-1 G^T (see the kinetic-metric row); an impact "
        "at t0 or a contact closed at the start missed; the candidate state not committed or "
        "the forces taken at the wrong time (the smooth step not consistent)",
    ),
    (
        "kinetic metric",
        "the impulse along the Euclidean normal G^T instead of M^-1 G^T (the Delassus operator "
        "G M^-1 G^T replaced by G G^T); M evaluated at another point than the gap gradient",
    ),
    (
        "resting contact",
        "constraints activated only when approaching (every free step at rest sinks by "
        "O(h^2)); the position never corrected; the impulse not applied on a contact that "
        "closes without velocity",
    ),
    (
        "several simultaneous",
        "the active constraints solved one at a time instead of by one LCP; the active set "
        "taken from a stale position; the LCP solver stopping before convergence",
    ),
    (
        "no step-size collapse",
        "the controller refines at every change of the active set, or measures the jump of "
        "an impact as a local error",
    ),
    (
        "energy not increased",
        "an impulse larger than Newton's law gives (e replaced by a value above e, the "
        "impulse applied twice, or with the wrong sign); an output velocity that is not the "
        "post-impact one",
    ),
    (
        "bad inputs",
        "solve overridden instead of _solve_impl (simulate's checks bypassed); the method's "
        "own check of the argument missing or naming another one",
    ),
    (
        "deterministic",
        "state kept between runs (class attributes or caches mutated by a run); random "
        "numbers; work arrays read before they are written",
    ),
    (
        "friction work",
        "the tangential impulse with the wrong sign or outside Coulomb's cone (|P_T| > mu "
        "P_N); friction applied with the pre-impact normal impulse",
    ),
    (
        "no creep",
        "stick not reachable (regularised friction, a tangential impulse capped below what "
        "sticking needs); the tangential velocity of the previous step used",
    ),
)


def likely_causes(prop: str) -> str:
    """The likely causes of a failure of the property named ``prop`` (:data:`LIKELY_CAUSES`),
    or '' for a property without a known list."""
    for start, causes in LIKELY_CAUSES:
        if prop.startswith(start):
            return causes
    return ""


@dataclass(frozen=True)
class Check:
    """One row of a report: a property on a problem, its measured value and verdict.

    ``passed`` is None when the property does not apply to the method (not a failure).
    """

    property: str
    problem: str
    measured: str
    threshold: str
    passed: bool | None
    detail: str = ""

    def __post_init__(self) -> None:  # numpy booleans from comparisons become Python ones
        if self.passed is not None:
            object.__setattr__(self, "passed", bool(self.passed))

    @property
    def verdict(self) -> str:
        return {True: "pass", False: "FAIL", None: "n/a"}[self.passed]

    @property
    def likely_causes(self) -> str:
        """The likely causes of the failure in one line (:func:`likely_causes`); '' when the
        check did not fail."""
        return likely_causes(self.property) if self.passed is False else ""


@dataclass
class ValidationReport:
    """The result of :func:`check_method`: one :class:`Check` per property and problem."""

    method: str
    level: str
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """True when no check failed (checks that do not apply do not fail)."""
        return all(check.passed is not False for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.passed is False]

    def to_frame(self) -> pd.DataFrame:
        """One row per check: property, problem, measured, threshold, verdict, detail."""
        rows = [{**asdict(check), "verdict": check.verdict} for check in self.checks]
        columns = ["property", "problem", "measured", "threshold", "verdict", "detail"]
        return pd.DataFrame(rows, columns=[*columns, "passed"])[columns]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "level": self.level,
            "passed": self.passed,
            "seconds": self.seconds,
            "checks": [
                {**asdict(check), "verdict": check.verdict, "likely_causes": check.likely_causes}
                for check in self.checks
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def table(self, rows: list[Check] | None = None, width: int = TABLE_WIDTH) -> str:
        """The checks as a text table at most ``width`` columns wide (long cells wrapped),
        followed by each failed check: its property and problem, measured value against
        threshold, the detail saying why, and its likely causes."""
        rows = self.checks if rows is None else rows
        header = ("verdict", "property", "problem", "measured", "threshold")
        cells = [(c.verdict, c.property, c.problem, c.measured, c.threshold) for c in rows]
        lines = text_table(header, cells, width)
        failures = [check for check in rows if check.passed is False]
        if failures:
            lines.append("")
            lines.append(f"Failed checks ({len(failures)}):")
        for check in failures:
            why = f"measured {check.measured}, threshold {check.threshold}"
            if check.detail:
                why += f" ({check.detail})"
            lines += textwrap.wrap(
                f"- {check.property} on {check.problem}: {why}",
                width,
                subsequent_indent="  ",
                break_on_hyphens=False,
            )
            if check.likely_causes:
                lines += textwrap.wrap(
                    f"likely causes: {check.likely_causes}",
                    width,
                    initial_indent="  ",
                    subsequent_indent="    ",
                    break_on_hyphens=False,
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        verdict = (
            f"PASSED ({len(self.checks)} checks)"
            if self.passed
            else f"FAILED ({len(self.failures)} of {len(self.checks)} checks)"
        )
        return (
            f"{self.method} at level {self.level!r}: {verdict} in {self.seconds:.1f} s\n"
            + self.table()
        )

    def assert_passed(self) -> None:
        """Raise AssertionError listing the failing checks (for a pytest test)."""
        if not self.passed:
            raise AssertionError(f"{self.method} fails validation:\n{self.table(self.failures)}")


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]], width: int) -> list[str]:
    """Lines of a fixed-width table at most ``width`` columns wide: the widest columns are
    narrowed and their cells wrapped at words (no narrower than the longest word of a column,
    unless the width cannot hold that: then to :data:`MIN_COLUMN` characters, breaking words).

    Raises
    ------
    ValueError
        If ``width`` cannot hold the columns at their narrowest.
    """
    cells = [header, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    gap = 2
    spare = width - gap * (len(header) - 1)
    words = [max(len(word) for row in cells for word in row[i].split() or [""]) for i in
             range(len(header))]  # fmt: skip
    floor = [min(w, max(len(name), longest)) for w, name, longest in
             zip(widths, header, words, strict=True)]  # fmt: skip
    if sum(floor) > spare:  # words broken inside: the narrowest columns allowed
        floor = [min(w, max(MIN_COLUMN, len(name))) for w, name in zip(widths, header, strict=True)]
    if sum(floor) > spare:
        raise ValueError(f"width must hold {len(header)} columns, got {width!r}")
    while sum(widths) + gap * (len(header) - 1) > width:
        widest = max(range(len(widths)), key=lambda i: widths[i] if widths[i] > floor[i] else -1)
        widths[widest] -= 1
    lines = []
    for index, row in enumerate(cells):
        wrapped = [
            textwrap.wrap(text, w, break_on_hyphens=False) or [""]
            for text, w in zip(row, widths, strict=True)
        ]
        for k in range(max(len(part) for part in wrapped)):
            parts = [part[k] if k < len(part) else "" for part in wrapped]
            line = (" " * gap).join(p.ljust(w) for p, w in zip(parts, widths, strict=True))
            lines.append(line.rstrip())
        if index == 0:
            lines.append((" " * gap).join("-" * w for w in widths))
    return lines


# --------------------------------------------------------------------------------------------
# Running


class _RunFailed(Exception):
    """A run of the battery raised or stopped; the message says where."""


def _run(
    problem: Problem, method: Method, t_end: float, h: float | None, output_every: int = 1
) -> Trajectory:
    where = f"{problem.name}, t_end={t_end:g}" + ("" if h is None else f", h={h:.4g}")
    try:
        trajectory = simulate(problem, method, t_end, h=h, output_every=output_every)
    except (SimulationError, ValueError, ArithmeticError) as error:
        raise _RunFailed(f"{where}: {type(error).__name__}: {error}") from None
    if not trajectory.success:
        raise _RunFailed(f"{where}: {trajectory.message}")
    return trajectory


def _variants(method: Method, level: Level, tolerance: str) -> list[tuple[float, Method]]:
    """An event-driven method rebuilt at each tolerance of the level (parameter ``tolerance``)."""
    parameters = method.parameters()
    if tolerance not in parameters:
        raise ValueError(
            f"tolerance must name a parameter of {type(method).__name__} "
            f"({sorted(parameters)}), got {tolerance!r}"
        )
    return [(rtol, type(method)(**{**parameters, tolerance: rtol})) for rtol in level.tolerances]


def _adaptive(method: Method) -> bool:
    """Time-stepping with step-size control: the time-stepping family without a given step."""
    return method.family == TIME_STEPPING and not method.requires_step


def _error_at_the_steps(problem: Problem, run: Trajectory, reference: Reference) -> float:
    """Max position error (max norm) at the run's own samples, not along its polyline."""
    return float(np.max(np.abs(run.q - reference.state(run.t)[0])))


#: The metrics measured otherwise for a step-size-controlled method (module docstring).
_ADAPTIVE_METRICS = {"max_position_error": _error_at_the_steps}

#: Parameters of a step-size-controlled method scaled with its tolerance in the order sweep.
SCALED_WITH_TOLERANCE = ("atol", "gap_tolerance")


def _rescaled(method: Method, tolerance: str, value: float) -> Method:
    """``method`` rebuilt with ``tolerance`` = value, its :data:`SCALED_WITH_TOLERANCE`
    parameters (those it has, not None) scaled by the same factor."""
    parameters = method.parameters()
    factor = value / parameters[tolerance]
    scaled = {
        name: parameters[name] * factor
        for name in SCALED_WITH_TOLERANCE
        if parameters.get(name) is not None
    }
    return type(method)(**{**parameters, **scaled, tolerance: value})


def _with_derived_bounds(method: Method, level: Level, tolerance: str) -> Method:
    """A step-size-controlled ``method`` with the bounds it leaves at None derived (module
    docstring): ``h_max`` the level's coarsest step, ``gap_tolerance`` its ``tolerance``."""
    parameters = method.parameters()
    derived = {}
    if "h_max" in parameters and parameters["h_max"] is None:
        derived["h_max"] = float(max(level.steps))
    if "gap_tolerance" in parameters and parameters["gap_tolerance"] is None:
        derived["gap_tolerance"] = float(parameters[tolerance])
    return type(method)(**{**parameters, **derived}) if derived else method


def _fmt(value: float) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.3g}"


# --------------------------------------------------------------------------------------------
# The properties


def _closed_forms() -> list[tuple[str, Callable[[], Problem], Callable[[Problem], float]]]:
    from ..problems import BouncingBall, ImpactingOscillator, SlantedWall

    return [
        (
            "through accumulation",
            lambda: BouncingBall(q0=1.0, v0=0.0, restitution=0.8),
            lambda p: p.accumulation_time + 1.5,
        ),
        (
            "non-diagonal M, through accumulation",
            lambda: SlantedWall(restitution=0.7),
            lambda p: p.accumulation_time + 1.0,
        ),
        (
            "impacting oscillator",
            lambda: ImpactingOscillator(restitution=0.8, x0=1.0, v0=0.0),
            lambda p: 10.0,
        ),
    ]


def _order_checks(
    method: Method,
    level: Level,
    tolerance: str,
    cases: list[tuple[str, Callable[[], Problem], Callable[[Problem], float]]] | None = None,
    prop_prefix: str = "order",
) -> list[Check]:
    checks = []
    for label, factory, horizon in _closed_forms() if cases is None else cases:
        problem = factory()
        t_end = horizon(problem)
        reference = Reference.exact(problem, t_end)
        name = f"{problem.name} ({label})"
        errors = {metric: [] for metric in ORDER_METRICS}
        try:
            if _adaptive(method):
                parameter = np.array(level.adaptive_tolerances)
                for family in fitting.perturbed_steps(parameter, level.adaptive_phases):
                    variants = [_rescaled(method, tolerance, rtol) for rtol in family]
                    runs = [_run(problem, variant, t_end, None) for variant in variants]
                    for metric in ORDER_METRICS:
                        function = _ADAPTIVE_METRICS.get(metric, metrics.METRICS[metric].function)
                        values = [function(problem, run, reference) for run in runs]
                        errors[metric].append(float(np.median(values)))
            elif method.requires_step:
                parameter = np.array(level.steps)
                for family in fitting.perturbed_steps(parameter, level.phases):
                    runs = [_run(problem, method, t_end, h) for h in family]
                    for metric in ORDER_METRICS:
                        function = metrics.METRICS[metric].function
                        values = [function(problem, run, reference) for run in runs]
                        errors[metric].append(float(np.median(values)))
            else:
                variants = _variants(method, level, tolerance)
                parameter = np.array([rtol for rtol, _ in variants])
                for _, variant in variants:  # measured through its own run's dense output
                    run = _run(problem, metrics.keeping_dense_output(variant), t_end, None)
                    for metric in ORDER_METRICS:
                        function = metrics.METRICS[metric].function
                        errors[metric].append(function(problem, run, reference))
        except _RunFailed as failure:
            checks.append(
                Check(
                    f"{prop_prefix} through impacts", name, "run failed", "", False, str(failure)
                )  # fmt: skip
            )
            continue
        for metric in ORDER_METRICS:
            error = np.array(errors[metric])
            floor = metrics.error_floor(metric, problem, reference, t_end)
            fit = fitting.fit_order(parameter, error, floor=floor)
            prop = f"{prop_prefix} of {metric}"
            if _adaptive(method):
                passed = fit.status == fitting.ORDER and fit.order >= MIN_ADAPTIVE_ORDER
                detail = (
                    f"errors {_fmt(error.max())} .. {_fmt(error.min())} ({fit.text('rtol')}; "
                    f"{', '.join(SCALED_WITH_TOLERANCE)} scaled with rtol)"
                )
                checks.append(
                    Check(
                        prop,
                        name,
                        fit.text("rtol"),
                        f"order in rtol >= {MIN_ADAPTIVE_ORDER}",
                        passed,
                        detail,
                    )  # fmt: skip
                )
            elif method.requires_step:
                passed = fit.status == fitting.ORDER and fit.order >= MIN_ORDER
                detail = f"errors {_fmt(error.max())} .. {_fmt(error.min())} ({fit.text('h')})"
                checks.append(
                    Check(prop, name, fit.text("h"), f"order >= {MIN_ORDER}", passed, detail)
                )
            else:
                scale = _scale(metric, problem, reference, t_end)
                ratio = float(np.max(error / (parameter * scale)))
                passed = bool(ratio <= TOLERANCE_FACTOR)
                checks.append(
                    Check(
                        prop,
                        name,
                        f"max error / (rtol S) = {_fmt(ratio)}; {fit.text('rtol')}",
                        f"<= {TOLERANCE_FACTOR:g}",
                        passed,
                        f"S = {_fmt(scale)}",
                    )
                )
    return checks


def _scale(metric: str, problem: Problem, reference: Reference, t_end: float) -> float:
    """The metric's scale S: its round-off floor divided by 100 eps (see error_floor)."""
    floor = metrics.error_floor(metric, problem, reference, t_end)
    return floor / (fitting.ROUND_OFF_FACTOR * float(np.finfo(float).eps))


def _kinetic_metric_check(method: Method, level: Level, tolerance: str) -> Check:
    from ..problems import SlantedWall

    wall = SlantedWall(restitution=0.7)
    name = f"{wall.name} (non-diagonal M)"
    threshold = f"<= {METRIC_TOLERANCE:g}"
    h = level.steps[len(level.steps) // 2] if method.requires_step else None
    try:
        run = _run(wall, method, wall.accumulation_time + 0.5, h)
    except _RunFailed as failure:
        return Check("kinetic metric (jumps along M^-1 n)", name, "run failed", threshold, False,
                     str(failure))  # fmt: skip
    mass = wall.mass_matrix(wall.q0)
    m_inv_n = np.linalg.solve(mass, wall.gap_gradient(wall.q0)[0])
    w = np.array([-m_inv_n[1], m_inv_n[0]])  # w . (M^-1 n) = 0
    accel = np.linalg.solve(mass, wall.forces(wall.t0, wall.q0, wall.v0))
    expected = w @ wall.v0 + (w @ accel) * (run.t - wall.t0)
    scale = float(np.abs(run.v).max() * np.linalg.norm(w))
    deviation = float(np.max(np.abs(run.v @ w - expected)) / scale)
    return Check(
        "kinetic metric (jumps along M^-1 n)",
        name,
        f"relative deviation {_fmt(deviation)}",
        threshold,
        deviation <= METRIC_TOLERANCE,
        f"{run.impacts.total} impacts logged",
    )


def _depth(problem: Problem, run: Trajectory, start: float, end: float) -> float:
    from ..analysis.metrics import penetration_depths

    window = (run.t >= start) & (run.t <= end)
    depths = penetration_depths(problem, run.q[window], run.t[window])
    return float(np.max(depths, initial=0.0))


def _contact_checks(method: Method, level: Level, selected: set[str]) -> list[Check]:
    from ..problems.persistent_contacts import CASES

    checks = []
    cases = [
        ("resting contact (no drift)", "resting ball", level.rest_horizon),
        ("several simultaneous contacts", "resting stack", level.stack_horizon),
    ]
    keys = {"resting ball": "resting_contact", "resting stack": "several_contacts"}
    for prop, label, t_end in cases:
        if keys[label] not in selected:
            continue
        case = CASES[label]
        problem = case.factory()
        name = f"{problem.name} ({label}, t = {t_end:g})"
        h = level.contact_step if method.requires_step else None
        every = max(1, round(t_end / level.contact_step / 20_000)) if h else 1
        if h is not None:
            bound = DEPTH_CONSTANT * case.alpha * h**2
            threshold = f"depth <= {DEPTH_CONSTANT:g} alpha h^2 = {bound:.3g}, no growth"
        else:
            bound = TOLERANCE_FACTOR * _tolerance_of(method) * max(1.0, case.alpha)
            threshold = f"depth <= {bound:.3g}, no growth"
        try:
            run = _run(problem, _every_step_kept(method, t_end), t_end, h, output_every=every)
        except _RunFailed as failure:
            checks.append(Check(prop, name, "run failed", threshold, False, str(failure)))
            continue
        middle = 0.5 * (case.settled_after + t_end)
        early = _depth(problem, run, case.settled_after, middle)
        late = _depth(problem, run, middle, t_end)
        gradient = float(np.abs(timed_gradient(problem, problem.t0, problem.q0)).max())
        round_off = 1e-14 + 100 * np.finfo(float).eps * gradient * float(np.abs(run.q).max())
        passed = max(early, late) <= bound and late <= early + round_off
        why = [f"alpha = {case.alpha:.4g}"]
        if max(early, late) > bound:
            why.append(f"depth {_fmt(max(early, late))} > bound {_fmt(bound)}")
        if late > early + round_off:
            why.append(f"depth grew from {_fmt(early)} to {_fmt(late)}")
        checks.append(
            Check(
                prop,
                name,
                f"depth {_fmt(early)} on [{case.settled_after:g}, {middle:g}], "
                f"{_fmt(late)} on [{middle:g}, {t_end:g}]",
                threshold,
                passed,
                "; ".join(why),
            )
        )
        if _adaptive(method):
            checks.append(_collapse_check(run, name, middle, t_end))
    return checks


def _every_step_kept(method: Method, t_end: float) -> Method:
    """A step-size-controlled ``method`` whose output keeps every accepted step of a run to
    ``t_end`` that takes fewer than :data:`COLLAPSE_STEPS` times t_end / h_max of them (its
    largest step h_max; (t_end - t0) / 10 when None): the collapse check reads the steps."""
    parameters = method.parameters()
    if not _adaptive(method) or "max_samples" not in parameters:
        return method
    h_max = parameters.get("h_max") or t_end / 10.0
    samples = max(parameters["max_samples"], math.ceil(COLLAPSE_STEPS * t_end / h_max) + 2)
    return type(method)(**{**parameters, "max_samples": samples})


def _collapse_check(run: Trajectory, name: str, middle: float, t_end: float) -> Check:
    """No step-size collapse on a resting contact: the median accepted step over [middle, t_end]
    against the run's largest; the fraction of rejected attempts reported (module docstring).
    A run whose output could not keep every accepted step (:func:`_every_step_kept`) took more
    than :data:`COLLAPSE_STEPS` t_end / h_max steps, a mean step below h_max / COLLAPSE_STEPS:
    it fails."""
    prop = "no step-size collapse at rest"
    threshold = f"median step >= {COLLAPSE_FRACTION:g} largest step"
    accepted = int(run.stats.get("steps", -1))
    if run.t.size != accepted + 1:  # the output is not every accepted step
        mean = (run.t[-1] - run.t[0]) / accepted
        return Check(prop, name, f"{accepted} accepted steps, mean step {_fmt(mean)}",
                     threshold, False,
                     f"more than {COLLAPSE_STEPS:g} t_end / h_max accepted steps")  # fmt: skip
    steps = np.diff(run.t)
    late = steps[run.t[1:] > middle]
    median, largest = float(np.median(late)), float(steps.max())
    rejected = int(run.stats.get("rejected_steps", 0))
    fraction = rejected / (accepted + rejected)
    why = []
    if median < COLLAPSE_FRACTION * largest:
        why.append(f"median step {_fmt(median)} < {COLLAPSE_FRACTION:g} x {_fmt(largest)}")
    return Check(
        prop,
        name,
        f"median step {_fmt(median)} on [{middle:g}, {t_end:g}] (largest {_fmt(largest)}), "
        f"rejected {fraction:.1%}",
        threshold,
        not why,
        "; ".join(why) or f"{accepted} accepted steps",
    )


def _tolerance_of(method: Method) -> float:
    """An event-driven method's rtol (1e-10 when it has none)."""
    return float(method.parameters().get("rtol", 1e-10))


def _energy_check(method: Method, level: Level) -> Check:
    from ..problems import BouncingBall

    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
    t_end = 0.9 * ball.accumulation_time
    name = f"{ball.name} (impacts before accumulation)"
    h = level.steps[len(level.steps) // 2] if method.requires_step else None
    try:
        run = _run(ball, method, t_end, h)
    except _RunFailed as failure:
        return Check("energy not increased by an impact", name, "run failed", "", False,
                     str(failure))  # fmt: skip
    if run.stats.get("velocity_output", "state") != "state":
        return Check("energy not increased by an impact", name, "not applicable", "", None,
                     f"output velocity: {run.stats['velocity_output']}")  # fmt: skip
    mass = ball.mass_matrix(ball.q0)
    force = ball.forces(ball.t0, ball.q0, ball.v0)
    energies = np.array([ball.energy(q, v) for q, v in zip(run.q, run.v, strict=True)])
    scale = float(np.abs(energies).max())
    if h is not None:
        allowed = h**2 * float(force @ np.linalg.solve(mass, force)) + ROUND_OFF * scale
        threshold = f"<= h^2 F^T M^-1 F + round-off = {allowed:.3g}"
    else:
        allowed = TOLERANCE_FACTOR * _tolerance_of(method) * scale
        threshold = f"<= {TOLERANCE_FACTOR:g} rtol E = {allowed:.3g}"
    if run.impacts.t.size == 0:
        return Check("energy not increased by an impact", name, "no impact logged", threshold,
                     False, "the ball hits the floor: the run's impact log is empty")  # fmt: skip
    # Over each impact event (consecutive log entries of a time-stepper are one impact, e.g. a
    # projection step followed by the impulse): E after its last entry minus E before its first.
    events = impact_events(run)
    first = run.impacts.t[events.first_entries]
    before = np.searchsorted(run.t, first, side="left") - 1
    after = np.searchsorted(run.t, events.ends, side="right") - 1
    kept = before >= 0
    if not kept.any():
        detail = (f"{run.impacts.t.size} log entries, none approaching (u^- < 0 at a cluster's "
                  "first entry): the log's normal_velocity_before is wrong")  # fmt: skip
        return Check("energy not increased by an impact", name, "no impact event", threshold,
                     False, detail)  # fmt: skip
    increase = float(np.max(energies[after[kept]] - energies[before[kept]]))
    return Check(
        "energy not increased by an impact",
        name,
        f"largest increase {_fmt(increase)} over {int(kept.sum())} impacts",
        threshold,
        increase <= allowed,
        f"E up to {scale:.3g}",
    )


#: Restitution at isolated impacts: |r - e| <= RESTITUTION_CONSTANT g h / u_- at a fixed step h.
RESTITUTION_CONSTANT = 4.0
#: The impacts of the bouncing ball the restitution check measures (its first ones: flights of
#: 0.37 s or more, long against every step of the levels).
RESTITUTION_IMPACTS = 4
#: Restitution ratios that name a mistake: (ratio as a function of e, what it means).
_RESTITUTION_SIGNATURES = (
    (lambda e: e * e, "r = e^2: the restitution applied twice"),
    (lambda e: 1.0, "r = 1: no restitution (an elastic impact, or no impulse: the ball passes"
     " through the floor)"),
    (lambda e: 0.0, "r = 0: a plastic impact (e ignored)"),
    (lambda e: math.sqrt(e), "r = sqrt(e): e applied to the energy instead of the velocity"),
)  # fmt: skip


def _floor_speeds(ball: Problem, run: Trajectory, count: int) -> np.ndarray:
    """Normal speeds at the floor before and after each of the first ``count`` impact events
    of ``run`` (:func:`impactbench.analysis.impact_events.impact_events`), shape (K, 2), K <=
    ``count`` the events logged: from the free-flight invariant u^2 = v^2 + 2 g q at the output
    sample inside the flight before the event nearest the middle of its last half (inside the
    flight after it, nearest the middle of its first half). In free flight u is the speed with
    which the ball reaches (left) the floor, whatever the time of the impact. NaN where a
    flight has no sample."""
    events = impact_events(run)
    starts, ends = events.times[:count], events.ends[:count]
    following = np.append(events.times, run.t[-1])[1 : len(starts) + 1]
    previous = np.append(ball.t0, events.ends)[: len(starts)]
    speeds = np.full((len(starts), 2), np.nan)
    for k, flight in enumerate(zip(previous, starts, ends, following, strict=True)):
        for side, (start, end) in enumerate((flight[:2], flight[2:])):
            quarter = 0.25 * (end - start)
            target = end - 1.5 * quarter if side == 0 else start + 1.5 * quarter
            inside = np.flatnonzero((run.t > start) & (run.t < end))
            if inside.size:
                i = inside[np.argmin(np.abs(run.t[inside] - target))]
                square = run.v[i, 0] ** 2 + 2.0 * ball.gravity * run.q[i, 0]
                speeds[k, side] = math.sqrt(max(square, 0.0))
    return speeds


def _restitution_signature(ratios: np.ndarray, e: float) -> str:
    """The mistake the measured ratios point to (:data:`_RESTITUTION_SIGNATURES`), or ''."""
    for expected, meaning in _RESTITUTION_SIGNATURES:
        if np.all(np.abs(ratios - expected(e)) <= 0.25 * abs(e - expected(e))):
            return meaning
    return ""


def _restitution_check(method: Method, level: Level) -> Check:
    """Newton's law at isolated impacts: the ratio r = -u_+/u_- of the normal velocities after
    and before each of the bouncing ball's first :data:`RESTITUTION_IMPACTS` impacts (the
    run's own impact events, so that a wrong scheme is measured at its own impacts;
    :func:`_floor_speeds`) equals e to first order: |r - e| <= RESTITUTION_CONSTANT g h / u_-
    at the level's coarsest, middle and finest steps (so that |r - e| shrinks at least as h).
    The O(g h / u_-) terms are what a first-order scheme commits: the velocity gained over the
    step in which the impact is detected, the depth h u_- at which it may act, and the O(h g u)
    oscillation of a first-order integrator's energy in flight. Under step-size control h is
    ``h_max``; an event-driven method (or one without ``h_max``): |r - e| <= TOLERANCE_FACTOR
    rtol."""
    from ..problems import BouncingBall

    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
    e, g = ball.restitution, ball.gravity
    impacts = ball.impact_times(100.0)[: RESTITUTION_IMPACTS + 1]
    name = f"{ball.name} (e = {e:g}, first {RESTITUTION_IMPACTS} impacts)"
    prop = "restitution at isolated impacts"
    if method.requires_step:
        steps = [level.steps[0], level.steps[len(level.steps) // 2], level.steps[-1]]
    else:
        steps = [method.parameters().get("h_max") if _adaptive(method) else None]
    worst = (-math.inf, math.nan, 0, None)  # (|r - e| / bound, |r - e|, impact, h)
    threshold, ratios = "", np.zeros(0)
    for h in steps:
        try:
            run = _run(ball, method, float(impacts[-1]), h if method.requires_step else None)
        except _RunFailed as failure:
            return Check(prop, name, "run failed", "", False, str(failure))
        speeds = _floor_speeds(ball, run, RESTITUTION_IMPACTS)
        if not len(speeds):
            return Check(prop, name, "no impact logged", "", False, "the run's impact log is empty")
        ratios = speeds[:, 1] / speeds[:, 0]
        if h is None:
            bound = np.full(len(ratios), TOLERANCE_FACTOR * _tolerance_of(method))
            threshold = f"|r - e| <= {TOLERANCE_FACTOR:g} rtol"
        else:
            bound = RESTITUTION_CONSTANT * g * h / speeds[:, 0]
            threshold = f"|r - e| <= {RESTITUTION_CONSTANT:g} g h / u_-"
        deviation = np.abs(ratios - e)
        excess = np.where(np.isnan(deviation), np.inf, deviation / bound)  # NaN: no sample
        k = int(np.argmax(excess))
        if excess[k] > worst[0]:
            worst = (float(excess[k]), float(deviation[k]), k, h)
    excess, deviation, k, h = worst
    at = "" if h is None else f", h = {h:.3g}"
    last = "" if steps[-1] is None else f" at h = {steps[-1]:.3g}"
    detail = f"r = -u_+/u_- per impact{last}: {', '.join(f'{r:.4g}' for r in ratios)}"
    signature = _restitution_signature(ratios, e)
    if excess > 1.0 and signature:
        detail += f"; {signature}"
    return Check(
        prop,
        name,
        f"|r - e| = {_fmt(deviation)}, {_fmt(excess)} x the bound (impact {k + 1}{at})",
        threshold,
        excess <= 1.0,
        detail,
    )


def _bad_input_check(method: Method) -> Check:
    from ..problems import BouncingBall

    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
    h = 1e-2 if method.requires_step else None
    cases: list[tuple[str, str, Callable[[], Any]]] = [
        ("t_end", "t_end=nan", lambda: simulate(ball, method, math.nan, h=h)),
        ("t_end", "t_end=inf", lambda: simulate(ball, method, math.inf, h=h)),
        ("t_end", "t_end < t0", lambda: simulate(ball, method, ball.t0 - 1.0, h=h)),
        ("output_every", "output_every=0", lambda: simulate(ball, method, 1.0, h=h,
                                                             output_every=0)),
    ]  # fmt: skip
    broken = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
    broken.v0 = np.array([math.nan])
    cases.append(("v0", "v0=[nan]", lambda: simulate(broken, method, 1.0, h=h)))
    if method.requires_step or _adaptive(method):
        values = [("h=0", 0.0), ("h=-0.01", -0.01), ("h=nan", math.nan), ("h=inf", math.inf)]
        if method.requires_step:
            values.append(("h=None", None))
        for text, value in values:
            cases.append(("h", text, lambda value=value: simulate(ball, method, 1.0, h=value)))
    else:
        cases.append(("h", "h=0.01 (adaptive method)", lambda: simulate(ball, method, 1.0, h=0.01)))
    wrong = []
    for argument, text, call in cases:
        try:
            call()
        except ValueError as error:
            if not re.search(rf"\b{re.escape(argument)}\b", str(error)):
                wrong.append(f"{text}: ValueError not naming {argument!r}: {error}")
        except Exception as error:  # noqa: BLE001 - any other outcome is the finding
            wrong.append(f"{text}: {type(error).__name__} instead of ValueError: {error}")
        else:
            wrong.append(f"{text}: accepted")
    return Check(
        "bad inputs rejected",
        ball.name,
        f"{len(cases) - len(wrong)}/{len(cases)} rejected by name",
        f"{len(cases)}/{len(cases)}",
        not wrong,
        "; ".join(wrong),
    )


def _determinism_check(method: Method, level: Level) -> Check:
    from ..problems import SlantedWall

    wall = SlantedWall(restitution=0.7)
    h = level.steps[0] if method.requires_step else None
    t_end = wall.accumulation_time + 0.5
    try:
        first, second = (_run(wall, method, t_end, h) for _ in range(2))
    except _RunFailed as failure:
        return Check("deterministic", wall.name, "run failed", "identical", False, str(failure))
    same = first.t.shape == second.t.shape and all(
        np.array_equal(a, b)
        for a, b in (
            (first.t, second.t),
            (first.q, second.q),
            (first.v, second.v),
            (first.impacts.t, second.impacts.t),
        )
    )
    return Check(
        "deterministic",
        wall.name,
        "two runs identical" if same else "two runs differ",
        "identical",
        same,
    )


# --------------------------------------------------------------------------------------------
# Coulomb friction (methods that declare a friction law: ``friction_law`` True)

#: The frictional properties (keys of :data:`PROPERTIES`) and the name of each in the report;
#: applied only to a method with ``friction_law`` True.
FRICTION_PROPERTIES = {
    "friction_work": "friction work <= 0 on every step",
    "no_creep": "no creep when sticking on an incline",
    "friction_oscillator": "friction oscillator closed form",
}


def _not_applicable(method: Method, selected: set[str]) -> list[Check]:
    why = f"{method.name} declares no friction law (friction_law False): frictional checks skipped"
    return [
        Check(prop, "frictional problems", "not applicable (no friction law)", "", None, why)
        for key, prop in FRICTION_PROPERTIES.items()
        if key in selected
    ]


def _friction_work_check(method: Method, level: Level) -> list[Check]:
    """Mechanical energy (kinetic + gravity) never increases between consecutive samples of a
    block sliding to rest on a floor and of one sliding down a steep incline (e_T = 0, e_N =
    0): with gravity the only other force, the energy's change over a step is the work of
    friction, which Coulomb's law makes <= 0. Allowance: h^2 F^T M^-1 F (the drift a
    first-order step may have in a smooth phase; h_max under step-size control), or for an
    event-driven method TOLERANCE_FACTOR rtol E, plus round-off."""
    from ..problems import SlidingBlock

    checks = []
    cases = [
        ("floor, slides to rest", SlidingBlock(angle=0.0, mu=0.5, u0=2.0), 1.0),
        ("steep incline, slides", SlidingBlock(angle=0.5, mu=0.3, u0=0.5), 1.0),
    ]
    h = level.steps[len(level.steps) // 2] if method.requires_step else None
    if h is None and method.parameters().get("h_max") is not None:
        # step-size control: its steps are at most h_max, and its drift per step the same
        h = float(method.parameters()["h_max"])
    prop = FRICTION_PROPERTIES["friction_work"]
    for label, block, t_end in cases:
        name = f"{block.name} ({label}, e_T = 0)"
        try:
            run = _run(block, method, t_end, h)
        except _RunFailed as failure:
            checks.append(Check(prop, name, "run failed", "", False, str(failure)))
            continue
        energies = np.array([block.energy(q, v) for q, v in zip(run.q, run.v, strict=True)])
        scale = float(np.abs(energies).max())
        force = block.forces(block.t0, block.q0, block.v0)
        if h is not None:
            drift = h**2 * float(force @ np.linalg.solve(block.mass_matrix(block.q0), force))
            allowed = drift + ROUND_OFF * scale
            threshold = f"<= h^2 F^T M^-1 F + round-off = {allowed:.3g}"
        else:
            allowed = TOLERANCE_FACTOR * _tolerance_of(method) * scale
            threshold = f"<= {TOLERANCE_FACTOR:g} rtol E = {allowed:.3g}"
        increases = np.diff(energies)
        k = int(np.argmax(increases))
        largest = float(increases[k])
        checks.append(
            Check(
                prop,
                name,
                f"largest energy increase over a step {_fmt(largest)} (t = {run.t[k + 1]:.4g})",
                threshold,
                largest <= allowed,
                f"E up to {scale:.3g}, {run.t.size - 1} steps",
            )
        )
    return checks


#: Largest displacement allowed of a block sticking on an incline over the resting horizon.
CREEP_TOLERANCE = 1e-9


def _creep_check(method: Method, level: Level) -> Check:
    """A block at rest on an incline flatter than the friction angle (tan 0.2 < mu = 0.5)
    must stay where it is to the level's resting horizon: its largest displacement, and the
    creep per unit time it implies, against :data:`CREEP_TOLERANCE` (the built-in schemes stay
    within round-off: docs/friction.md)."""
    from ..problems import SlidingBlock

    block = SlidingBlock(angle=0.2, mu=0.5, u0=0.0)
    t_end = level.rest_horizon
    name = f"{block.name} (at rest, tan(alpha) < mu, t = {t_end:g})"
    prop = FRICTION_PROPERTIES["no_creep"]
    threshold = f"displacement <= {CREEP_TOLERANCE:g}"
    h = level.contact_step if method.requires_step else None
    try:
        run = _run(block, method, t_end, h)
    except _RunFailed as failure:
        return Check(prop, name, "run failed", threshold, False, str(failure))
    moved = float(np.max(np.abs(run.q - block.q0)))
    speed = float(np.max(np.abs(run.v)))
    return Check(
        prop,
        name,
        f"displacement {_fmt(moved)} ({_fmt(moved / (t_end - block.t0))} per unit time), "
        f"largest |v| {_fmt(speed)}",
        threshold,
        moved <= CREEP_TOLERANCE,
        f"{run.t.size - 1} samples",
    )


def _oscillator_checks(method: Method, level: Level, tolerance: str) -> list[Check]:
    """The order checks (:func:`_order_checks`, same thresholds) against the friction
    oscillator's stick-slip closed form, through its arcs into its final stick (T = 30)."""
    from ..problems import FrictionOscillator

    case = ("stick-slip closed form", FrictionOscillator, lambda p: 30.0)
    return _order_checks(method, level, tolerance, [case], "friction oscillator: order")


def _friction_checks(
    method: Method, level: Level, tolerance: str, selected: set[str]
) -> list[Check]:
    if not method.friction_law:
        return _not_applicable(method, selected)
    checks = []
    if "friction_work" in selected:
        checks += _friction_work_check(method, level)
    if "no_creep" in selected:
        checks.append(_creep_check(method, level))
    if "friction_oscillator" in selected:
        checks += _oscillator_checks(method, level, tolerance)
    return checks


#: The properties :func:`check_method` can run, by key (all by default).
PROPERTIES = (
    "orders",
    "kinetic_metric",
    "resting_contact",
    "several_contacts",
    "energy",
    "restitution",
    "bad_inputs",
    "determinism",
    *FRICTION_PROPERTIES,
)


def check_method(
    method: Method,
    *,
    level: str = "quick",
    tolerance: str = "rtol",
    properties: tuple[str, ...] = PROPERTIES,
    progress: Callable[[str], None] | None = None,
) -> ValidationReport:
    """Run ``method`` through the conformance battery (module docstring) and report.

    Parameters
    ----------
    method : Method
        An instance. A time-stepping method (``requires_step`` True) is run over the level's
        steps h; an event-driven one is rebuilt with each of the level's tolerances.
    level : {"quick", "full"}
        How much to run (:data:`LEVELS`).
    tolerance : str
        Name of the event-driven method's tolerance parameter (ignored for time-stepping).
    properties : tuple of str
        The properties to check, among :data:`PROPERTIES` (default: all).
    progress : callable, optional
        Called with one line of text after each group of properties (its position, name,
        checks passed and seconds), e.g. ``print`` to stderr as ``impactbench validate`` does.

    Returns
    -------
    ValidationReport
        Every check with its measured value, threshold and verdict; ``report.passed``,
        ``report.assert_passed()``.

    Raises
    ------
    ValueError
        If ``method`` is not a :class:`Method` instance, ``level`` or a property is unknown,
        or an event-driven method has no parameter named ``tolerance``.
    """
    if not isinstance(method, Method):
        raise ValueError(f"method must be an impactbench.Method instance, got {method!r}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)}, got {level!r}")
    selected = set(properties)
    if not selected or not selected <= set(PROPERTIES):
        raise ValueError(f"properties must be among {PROPERTIES}, got {properties!r}")
    if not method.requires_step:
        _variants(method, LEVELS[level], tolerance)  # the tolerance parameter exists
    start = time.perf_counter()
    settings = LEVELS[level]
    if _adaptive(method):
        method = _with_derived_bounds(method, settings, tolerance)
    report = ValidationReport(method.name, level)
    steps = [
        ("orders through impacts", "orders" in selected, _order_checks, (tolerance,)),
        ("kinetic metric", "kinetic_metric" in selected, _kinetic_metric_check, (tolerance,)),
        (
            "resting and several contacts",
            bool(selected & {"resting_contact", "several_contacts"}),
            _contact_checks,
            (selected,),
        ),
        ("energy over impacts", "energy" in selected, _energy_check, ()),
        ("restitution", "restitution" in selected, _restitution_check, ()),
        ("bad inputs", "bad_inputs" in selected, lambda m, _level: _bad_input_check(m), ()),
        ("determinism", "determinism" in selected, _determinism_check, ()),
        (
            "Coulomb friction",
            bool(selected & set(FRICTION_PROPERTIES)),
            _friction_checks,
            (tolerance, selected),
        ),
    ]
    steps = [step for step in steps if step[1]]
    for index, (label, _, function, extra) in enumerate(steps, start=1):
        began = time.perf_counter()
        if progress is not None:
            progress(f"[{index}/{len(steps)}] {label} ...")
        found = function(method, settings, *extra)
        found = found if isinstance(found, list) else [found]
        report.checks += found
        if progress is not None:
            failed = sum(check.passed is False for check in found)
            progress(
                f"[{index}/{len(steps)}] {label}: {len(found) - failed} of {len(found)} "
                f"passed or n/a ({time.perf_counter() - began:.1f} s)"
            )
    report.seconds = time.perf_counter() - start
    return report


__all__ = [
    "FRICTION_PROPERTIES",
    "LEVELS",
    "PROPERTIES",
    "Check",
    "ValidationReport",
    "check_method",
]
