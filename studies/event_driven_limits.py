"""Where event-driven integration loses: accumulations of impacts, timed against time-stepping.

An event-driven method pays for every impact it resolves (a root search, the impact law, a
restart); a time-stepping scheme pays T/h steps whatever happens. This study times both families,
one run at a time, on accumulations: infinitely many impacts in finite time, which the
event-driven method resolves until its Zeno test switches to persistent contact: a rebound
slower than ``rest_velocity`` (dimensionless, relative to sqrt(2 |g''| |grad g| L):
:class:`impactbench.methods.EventDriven`) closes the contact.

* **BouncingBall through its accumulation point** (e = 0.8, to t_inf + 1): impacts at times
  converging geometrically to t_inf. Error: max position error against the closed form.
* **RockingBlock through its accumulation point** (the default block: tilt 0.1, Housner's law,
  e_N = 0, mu = 1 above the sticking friction; to t_inf + 1): each impact multiplies the angular
  speed by Housner's r and the half cycle shrinks with it, so the impacts accumulate at
  t_inf (:func:`housner_accumulation_time`). Error: the largest distance of a point of the block
  from its exact rest position at T (flat, its corners where they stuck; :func:`rest_state`).
* **A falling column of beads** (``ColumnOfBeads``, default start): cascades of
  near-simultaneous impacts accumulating into a resting stack. Error: the largest distance of a
  bead from the exact resting stack q_i = (2 i - 1) r at T.
* **ForcedImpactOscillator chattering on its stop** (:data:`CHATTER_PARAMETERS`: omega = 2.5,
  sigma = -0.8, r = 0.7, zeta = 0.1; to :data:`HORIZON`): x'' + 2 zeta x' + x = cos(omega t),
  x <= sigma. At rest on the stop (x = sigma, v = 0) the net force cos(omega t) - sigma is the
  contact force, pushing into the stop while cos(omega t) > sigma: the stop sits below the
  spring's rest position 0 by less than the forcing's amplitude 1, so the mass is held there
  but for the fraction arccos(-sigma) / pi = 0.20 of each period where cos(omega t) < sigma. It
  leaves when the force reverses, at omega t = arccos(sigma) + 2 pi k
  (:func:`chatter_release_times`), hops a few hundredths of a metre away and returns at a
  small speed while the force pushes it into the stop again: a rebound at r u under the nearly
  constant push a = cos(omega t) - sigma flies 2 r u / a and returns at r u, so the impacts
  form a geometric series that accumulates at t + 2 r u / ((1 - r) a)
  (:func:`chatter_accumulation_time`), and the mass sticks until the next release: complete
  chatter, once a period, after a transient of about one impact a period from the problem's
  start (on its undamped periodic orbit, which the damped dynamics leaves). No closed form
  for the motion: error, max position error against the cached DOP853 reference at
  rtol 1e-12.
* **DoublePendulum settling on the wall** (full grid only; ``wall_distance = 0``), a control
  that is *not* an accumulation: an impact every half period with a geometrically decaying
  speed, their spacing tending to a half period of the small oscillations. Error: max position
  error against the cached DOP853 reference at rtol 1e-12.

An error at most :data:`ROUND_OFF` is the exact answer to round-off: the report lists the runs
that reach the rest state so, and counts every such run as accurate as any other.

The event-driven method (compiled DOP853 at rtol ``EVENT_RTOL``) is swept over its Zeno threshold
``rest_velocity``, the time-steppers over h, and the third family, time-stepping with step-size
control (:mod:`._adaptive`: MoreauJean and CatchingUp under :class:`impactbench.Adaptive`, h_max
the coarsest fixed step), over rtol, on the same error and the same clock. Each row gives the
wall time (the fastest and the slowest of its repeats of at least 10 ms after a warm-up,
:data:`impactbench.analysis.timing.PROTOCOL_TEXT`), the impact events resolved and the error;
the report sets each event-driven run against the cheapest fixed-step run of at least its
accuracy (equal error), each adaptive run against the cheapest fixed-step and the cheapest
event-driven run of at least its accuracy, and calls one faster by the ratio of median times
where its 95 % bootstrap interval excludes 1 (:func:`impactbench.analysis.timing.compare`).
The adaptive runs store their accepted steps at :data:`STEP_SIZE_TOLERANCES` (h(t) figures) and
their rejected steps at every rtol.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    EVENT_DRIVEN,
    FASTER,
    MIN_REPEATS,
    PROTOCOL_TEXT,
    SLOWER,
    STUDY_REPEATS,
    TIE,
    TIME_STEPPING,
    compare,
    comparison_families,
    row_timing,
)
from impactbench.bench.report import (
    capped_flags,
    count_text,
    format_number,
    markdown_table,
    new_figure,
    save_figure,
    shared_legend,
    with_capped_counts,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import FAILED, Case, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.study_reference import event_driven_reference
from impactbench.bench.style import coordinate_unit, method_style
from impactbench.core.trajectory import Trajectory
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import (
    BouncingBall,
    ColumnOfBeads,
    DoublePendulum,
    ForcedImpactOscillator,
    RockingBlock,
)

from . import _adaptive

NAME = "event_driven_limits"
EVENT_RTOL = 1e-10
REST_VELOCITIES = {
    "full": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10],
    "quick": [1e-2, 1e-6],
}
STEPS = {"full": [1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5], "quick": [1e-2, 1e-3]}
TIME_STEPPERS = {"full": (MoreauJean, PaoliSchatzman, CatchingUp), "quick": (MoreauJean,)}
REPEATS = STUDY_REPEATS
BALL = "BouncingBall[e=0.8] through t_inf"
ROCKING = "RockingBlock through t_inf"
PENDULUM = "DoublePendulum settling on the wall (control: no accumulation)"
COLUMN = "ColumnOfBeads falling"
CHATTER = "ForcedImpactOscillator chattering on its stop"
#: The cases of each grid: the accumulations, and in the full grid the pendulum as a control.
CASES = {
    "full": (BALL, ROCKING, COLUMN, CHATTER, PENDULUM),
    "quick": (BALL, ROCKING, COLUMN, CHATTER),
}
#: The chattering impact oscillator (module docstring): after a transient from the problem's
#: start, one chatter sequence a forcing period 2 pi / omega; the horizons hold several.
CHATTER_PARAMETERS = {"omega": 2.5, "sigma": -0.8, "restitution": 0.7, "zeta": 0.1}
HORIZON = {
    PENDULUM: {"full": 30.0, "quick": 5.0},
    COLUMN: {"full": 3.0, "quick": 3.0},
    CHATTER: {"full": 40.0, "quick": 32.0},
}
#: The cases whose error is the distance from their exact rest state at T (:func:`rest_error`).
AT_REST = (ROCKING, COLUMN)
#: A distance from the exact rest state (:data:`AT_REST`) at or below this (m) counts as the
#: exact rest state: about a thousand times the spacing of doubles at the rest configurations'
#: positions (at most 2 m: eps 2 m = 4.4e-16 m), i.e. round-off accumulated over a run, far
#: below a discretisation error; every run at or below it counts as equally accurate. It is
#: not used for the other cases (their errors are max errors over the run, in their own units).
ROUND_OFF = 1e-12
BEADS = {"full": 10, "quick": 4}
#: rtol of the step-size-controlled schemes (quick: MoreauJean alone), h_max the coarsest step.
ADAPTIVE_TOLERANCES = {"full": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6], "quick": [1e-3]}
ADAPTIVE_SCHEMES = {"full": _adaptive.SCHEMES, "quick": ("MoreauJean",)}
#: The cases the adaptive schemes run in (quick: the ball and the column).
ADAPTIVE_CASES = {"full": (BALL, ROCKING, PENDULUM, COLUMN, CHATTER), "quick": (BALL, COLUMN)}
#: The adaptive runs whose accepted steps are stored for the h(t) figures.
STEP_SIZE_TOLERANCES = (1e-3, 1e-5)
REST_ARTEFACT = "rest"
ERROR = "error"
#: The verdict of a run that no run of the other family (``name``) is as accurate as.
NOT_REACHED = "no {name} as accurate"


def _ball() -> BouncingBall:
    return BouncingBall(restitution=0.8)


def _rocking() -> RockingBlock:
    return RockingBlock()


def _settling_pendulum() -> DoublePendulum:
    return DoublePendulum(wall_distance=0.0)


def _chatter() -> ForcedImpactOscillator:
    return ForcedImpactOscillator(**CHATTER_PARAMETERS)


def chatter_release_times(problem: ForcedImpactOscillator, t_end: float) -> np.ndarray:
    """The times in [t0, t_end] at which the force on a mass at rest on the stop reverses.

    At rest on the stop (x = sigma, v = 0) the contact force is the applied force
    cos(omega t) - sigma (the damping 2 zeta v vanishes): the contact holds while it is > 0 and
    releases where cos(omega t) falls through sigma, at omega t = arccos(sigma) + 2 pi k. Needs
    |sigma| < 1 (else the force never changes sign)."""
    if not isinstance(problem, ForcedImpactOscillator):
        raise TypeError(f"problem must be a ForcedImpactOscillator, got {problem!r}")
    if not abs(problem.sigma) < 1.0:
        raise ValueError(f"problem.sigma must be in (-1, 1) for a release, got {problem.sigma!r}")
    phase = math.acos(problem.sigma)
    first = math.ceil((problem.omega * problem.t0 - phase) / (2.0 * math.pi))
    last = math.floor((problem.omega * t_end - phase) / (2.0 * math.pi))
    return (phase + 2.0 * math.pi * np.arange(first, last + 1)) / problem.omega


def chatter_accumulation_time(problem: ForcedImpactOscillator, t: float, speed: float) -> float:
    """The accumulation time of a chatter sequence, from its impact at ``t`` with speed
    ``speed`` under the push a = cos(omega t) - sigma > 0 held constant.

    The rebound leaves at r u and, under the constant acceleration a towards the stop, flies
    2 r u / a and arrives at r u: the flights are a geometric series of ratio r, summing to
    2 r u / ((1 - r) a). The push varies by at most omega dt over dt, the spring and the
    damping by |x - sigma| <= (r u)^2 / (2 a) and 2 zeta r u: the relative error is of the
    order of omega (t_inf - t) / a for small u."""
    if not isinstance(problem, ForcedImpactOscillator):
        raise TypeError(f"problem must be a ForcedImpactOscillator, got {problem!r}")
    push = math.cos(problem.omega * t) - problem.sigma
    if not push > 0.0:
        raise ValueError(f"the force at t = {t!r} does not push into the stop ({push:.3g})")
    if not speed >= 0.0:
        raise ValueError(f"speed must be >= 0, got {speed!r}")
    r = problem.restitution
    return t + 2.0 * r * speed / ((1.0 - r) * push)


def _rocking_quarter(p2: float, alpha: float, omega: float) -> float:
    """The time the rocking angle takes from 0 at speed ``omega`` > 0 to its maximum, under
    phi'' = -p2 sin(alpha - phi) (DOP853, rtol 1e-12)."""

    def turn(_t: float, y: np.ndarray) -> float:
        return y[1]

    turn.terminal, turn.direction = True, -1
    horizon = 10.0 * (1.0 + omega) / (p2 * math.sin(alpha))
    solution = solve_ivp(
        lambda _t, y: (y[1], -p2 * math.sin(alpha - y[0])),
        (0.0, horizon), (0.0, omega), method="DOP853", rtol=1e-12, atol=1e-14 * omega,
        events=turn,
    )  # fmt: skip
    return float(solution.t_events[0][0])


def housner_accumulation_time(block: RockingBlock) -> float:
    r"""The time t_inf at which Housner's rocking block comes to rest, released at rest.

    About a corner the tilt phi obeys phi'' = -p^2 sin(alpha - abs(phi)) sign(phi),
    p^2 = 3 g / (4 R) (:class:`impactbench.problems.RockingBlock`); a half cycle from phi = 0 at
    speed omega back to phi = 0 lasts twice the time tau(omega) to the turning point, and each
    impact multiplies the speed by r (:meth:`~impactbench.problems.RockingBlock.impact_ratio`).
    So t_inf = t0 + tau(omega_1) + sum_k 2 tau(r^k omega_1), omega_1 the first impact's speed;
    tau(omega) is linear in omega as omega -> 0, so the sum converges geometrically: it is summed
    until a term is below 1e-16 t_inf and the rest bounded by the geometric tail."""
    if block.omega0 != 0.0:
        raise ValueError("housner_accumulation_time is for a release at rest (omega0 = 0)")
    if block.restitution != 0.0:
        raise ValueError("housner_accumulation_time is for Housner's law (restitution = 0)")
    alpha, radius = block.slenderness, math.hypot(block.half_width, block.half_height)
    p2 = 0.75 * block.gravity / radius
    omega, ratio = block.impact_speed(), block.impact_ratio()
    # the fall from the tilt: the time the reversed motion takes from 0 at omega_1 to its top
    total = _rocking_quarter(p2, alpha, omega)
    term = math.inf
    while term > 1e-16 * total:
        omega *= ratio
        term = 2.0 * _rocking_quarter(p2, alpha, omega)
        total += term
    return block.t0 + total + term * ratio / (1.0 - ratio)


def rest_state(problem: ColumnOfBeads | RockingBlock) -> np.ndarray:
    """The exact rest state of a case of :data:`AT_REST`: the column's stack
    q_i = (2 i - 1) r; the rocking block flat on the floor where its corners stuck, its first
    pivot (the corner on the side of the tilt) unmoved."""
    if isinstance(problem, ColumnOfBeads):
        return (2.0 * np.arange(1, problem.n_dof + 1) - 1.0) * problem.radius
    if not isinstance(problem, RockingBlock):
        raise TypeError(f"problem must be a ColumnOfBeads or a RockingBlock, got {problem!r}")
    b, c, phi = problem.half_width, problem.half_height, problem.angle
    side = -1.0 if phi >= 0.0 else 1.0
    pivot = problem.q0[0] + side * b * math.cos(phi) + c * math.sin(phi)
    return np.array([pivot - side * b, c, 0.0])


def _displacement(problem: ColumnOfBeads | RockingBlock, q: np.ndarray) -> float:
    """The largest distance (m) of a point of the system at ``q`` from its rest position: the
    beads' distances; for the block, a rigid motion moves its points affinely, so the largest is
    at a corner."""
    rest = rest_state(problem)
    if isinstance(problem, ColumnOfBeads):
        return float(np.max(np.abs(q - rest)))
    b, c = problem.half_width, problem.half_height
    corners = np.array([[-b, -c], [b, -c], [b, c], [-b, c]])

    def points(state: np.ndarray) -> np.ndarray:
        s, co = math.sin(state[2]), math.cos(state[2])
        return state[:2] + corners @ np.array([[co, s], [-s, co]])

    return float(np.max(np.hypot(*(points(q) - points(rest)).T)))


def adaptive_rest(run: Run, problem: ColumnOfBeads | RockingBlock, trajectory: Trajectory) -> dict:
    """:func:`rest_error` and the controller's record (:func:`adaptive_record`)."""
    return {**rest_error(run, problem, trajectory), **adaptive_record(run, problem, trajectory)}


def adaptive_record(run: Run, problem: object, trajectory: Trajectory) -> dict:
    """The accepted steps of an adaptive run at :data:`STEP_SIZE_TOLERANCES`, its step counts
    at the others (:mod:`._adaptive`)."""
    if run.tolerance_value in STEP_SIZE_TOLERANCES:
        return _adaptive.step_size_artefact(run, problem, trajectory)
    return _adaptive.control_artefact(run, problem, trajectory)


def rest_error(run: Run, problem: ColumnOfBeads | RockingBlock, trajectory: Trajectory) -> dict:
    """The largest distance of a point from its exact rest position at T (:func:`rest_state`,
    :func:`_displacement`), and the largest speed there."""
    frame = pd.DataFrame(
        [
            {
                ERROR: _displacement(problem, trajectory.q[-1]),
                "speed at T": float(np.max(np.abs(trajectory.v[-1]))),
            }
        ]
    )
    return {REST_ARTEFACT: frame}


def _cases(grid: str) -> list[tuple[str, object, float, dict]]:
    """(label, problem factory, horizon, run options) of each case of :data:`CASES`: the ball
    and the rocking block one second past their accumulation time; the pendulum and the
    chattering oscillator against the event-driven reference."""
    metric = {"metrics": ("max_position_error",)}
    every = {
        BALL: (_ball, _ball().accumulation_time + 1.0, metric),
        ROCKING: (_rocking, housner_accumulation_time(_rocking()) + 1.0, {"artefact": rest_error}),
        PENDULUM: (
            _settling_pendulum,
            HORIZON[PENDULUM][grid],
            {**metric, "reference": event_driven_reference},
        ),
        COLUMN: (ColumnOfBeads, HORIZON[COLUMN][grid], {"artefact": rest_error}),
        CHATTER: (
            _chatter,
            HORIZON[CHATTER][grid],
            {**metric, "reference": event_driven_reference},
        ),
    }
    return [(label, *every[label]) for label in CASES[grid]]


def runs(quick: bool) -> list[Run]:
    """Each case: the time-steppers by h, the event-driven method by its Zeno threshold, the
    step-size-controlled schemes by rtol."""
    grid = "quick" if quick else "full"
    result = []
    for label, factory, t_end, options in _cases(grid):
        kwargs = {"n_beads": BEADS[grid]} if factory is ColumnOfBeads else {}
        common = {
            "problem_kwargs": kwargs,
            "problem_name": label,
            **REPEATS[grid],
            **options,
        }
        frictional = factory().has_friction
        for method in TIME_STEPPERS[grid]:
            if frictional and not method.friction_law:
                continue  # PaoliSchatzman has no friction law: not run on the rocking block
            for h in STEPS[grid]:
                every = max(1, int(t_end / h / 20_000))
                result.append(Run(factory, method, t_end, h, output_every=every, **common))
        for rest in REST_VELOCITIES[grid]:
            method_kwargs = {"rtol": EVENT_RTOL, "rest_velocity": rest}
            result.append(
                Run(
                    factory,
                    EventDriven,
                    t_end,
                    method_kwargs=method_kwargs,
                    tolerance="rest_velocity",
                    **common,
                )
            )
        if label not in ADAPTIVE_CASES[grid]:
            continue
        grids = _adaptive.grids(ADAPTIVE_TOLERANCES[grid], max(STEPS[grid]), ADAPTIVE_SCHEMES[grid])
        record = adaptive_rest if label in AT_REST else adaptive_record
        adaptive = expand(
            [Case(factory, t_end, kwargs, label)],
            grids,
            metrics=options.get("metrics", ()),
            **REPEATS[grid],
            reference=options.get("reference"),
            artefact=record,
        )
        result += adaptive
    return result


# --------------------------------------------------------------------------------------------
# Report


def _with_errors(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    ok = table[table["status"] != FAILED].copy()
    ok[ERROR] = ok.get("max_position_error", np.nan)
    at_rest = ok["problem"].isin(AT_REST)
    if at_rest.any():
        stored = read_artefact(table[table["problem"].isin(AT_REST)], folder, REST_ARTEFACT)
        errors = stored.set_index("key")[ERROR]
        ok.loc[at_rest, ERROR] = ok.loc[at_rest, "key"].map(errors).to_numpy(float)
    return comparison_families(_adaptive.labelled(ok))


def _cheapest(run: pd.Series, others: pd.DataFrame, name: str) -> dict:
    """The cheapest run (least minimum time) of ``others`` at least as accurate as ``run``, with
    the verdict of ``run`` against it by the project's rule
    (:func:`impactbench.analysis.timing.compare`): the ratio of median times with its 95 %
    bootstrap interval (column ``ratio``: how many times ``run`` is faster or slower), "faster"
    where the interval excludes 1, "tie" where it holds 1. At least as accurate: an error at
    most ``run``'s or at most :data:`ROUND_OFF` (every error at round-off is the exact answer).
    Where no run of ``others`` is that accurate the verdict says so (:data:`NOT_REACHED`); "-"
    where ``run`` has no error, or where a run has too few repeats for a verdict (the
    :data:`ROUND_OFF` rule for the cases of :data:`AT_REST` only). Columns named
    after ``name``."""
    missing = {f"{name} time [ms]": np.nan, f"{name} slowest [ms]": np.nan, "ratio": "-"}
    if not run[ERROR] == run[ERROR]:
        return {name: "-", **missing, "verdict": "- (no error)"}
    floor = ROUND_OFF if run["problem"] in AT_REST else 0.0
    accurate = others[others[ERROR] <= max(float(run[ERROR]), floor)]
    if accurate.empty:
        return {name: "none reaches it", **missing, "verdict": NOT_REACHED.format(name=name)}
    best = accurate.loc[accurate["wall_time"].idxmin()]
    result = compare(row_timing(run), row_timing(best))
    if not math.isfinite(result.low):
        verdict = f"- (fewer than {MIN_REPEATS} repeats)"
    else:
        verdict = {FASTER: f"{run['family']} faster", SLOWER: f"{name} faster"}.get(
            result.verdict, TIE
        )
    setting = f"h = {best['h']:.3g}" if best["h"] == best["h"] else f"{best['tolerance']:g}"
    return {
        name: f"{best['method']} ({setting})",
        f"{name} time [ms]": 1e3 * best["wall_time"],
        f"{name} slowest [ms]": 1e3 * best["wall_time_max"],
        "verdict": verdict,
        "ratio": result.text,
    }


def verdict_counts(verdicts: pd.Series, runs: str) -> str:
    """How many of ``verdicts`` (of :func:`_cheapest`) say what, most frequent first:
    "tie in 2, event-driven faster in 1 of 3 event-driven settings" (``runs`` names them)."""
    if verdicts.empty:
        raise ValueError("verdicts must not be empty")
    counts = verdicts.value_counts()
    return (
        ", ".join(f"{verdict} in {count}" for verdict, count in counts.items())
        + f" of {len(verdicts)} {runs}"
    )


def exact_runs(frame: pd.DataFrame) -> str:
    """The runs of ``frame`` whose error is at most :data:`ROUND_OFF` (the exact answer to
    round-off), by method: "EventDriven (all 8 settings), PaoliSchatzman (h = 0.01, 0.001)";
    "no run" where there is none."""
    exact = frame[frame[ERROR] <= ROUND_OFF]
    if exact.empty:
        return "no run"
    parts = []
    for method, group in exact.groupby("method", sort=True):
        every = frame[frame["method"] == method]
        if len(group) == len(every):
            parts.append(f"{method} (all {len(every)} settings)")
        elif group["h"].notna().all():
            parts.append(f"{method} (h = {', '.join(f'{h:.3g}' for h in group['h'])})")
        else:
            parts.append(f"{method} ({', '.join(f'{t:g}' for t in group['tolerance'])})")
    return ", ".join(parts)


def _is_capped(run: pd.Series) -> bool:
    """Whether the run's impact count hit the impact log's capacity (a lower bound)."""
    flag = run.get("impacts_capped", False)
    return bool(flag) if pd.notna(flag) else False


def _timed(run: pd.Series, family: str, setting: str) -> dict:
    return {
        setting: run["tolerance"],
        "impacts": run["impacts"],
        "impacts_capped": _is_capped(run),
        f"{family} error": run[ERROR],
        f"{family} time [ms]": 1e3 * run["wall_time"],
        f"{family} slowest [ms]": 1e3 * run["wall_time_max"],
    }


def equal_error(frame: pd.DataFrame) -> pd.DataFrame:
    """Each event-driven run beside the cheapest fixed-step time-stepping run at least as
    accurate, with the verdict of :func:`_cheapest`."""
    steppers = frame[frame["family"] == TIME_STEPPING]
    rows = [
        {**_timed(run, "event-driven", "rest velocity"), **_cheapest(run, steppers, "time-stepper")}
        for _, run in frame[frame["family"] == EVENT_DRIVEN].iterrows()
    ]
    return _counted(pd.DataFrame(rows))


def _counted(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with their impact counts printed ">= N" where capped
    (:func:`impactbench.bench.report.with_capped_counts`)."""
    if rows.empty:
        return rows
    return with_capped_counts(rows).drop(columns="impacts_capped")


def adaptive_equal_error(frame: pd.DataFrame) -> pd.DataFrame:
    """Each step-size-controlled run beside the cheapest fixed-step run and the cheapest
    event-driven run at least as accurate, each with the verdict of :func:`_cheapest`."""
    rows = []
    for _, run in frame[frame["family"] == ADAPTIVE_STEPPING].iterrows():
        row = {"method": run["method"], **_timed(run, "adaptive", "rtol")}
        for family, name in ((TIME_STEPPING, "fixed step"), (EVENT_DRIVEN, "event-driven")):
            against = _cheapest(run, frame[frame["family"] == family], name)
            row.update({f"{key} (vs {name})" if key in ("verdict", "ratio") else key: value
                        for key, value in against.items()})  # fmt: skip
        rows.append(row)
    return _counted(pd.DataFrame(rows))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.split()[0])


def _marks(label: str) -> list[tuple[str, float]]:
    """The accumulation time of the ball and of the rocking block, the chattering oscillator's
    releases from the stop, drawn on their h(t) figures."""
    if label == CHATTER:
        return [("release", t) for t in chatter_release_times(_chatter(), HORIZON[CHATTER]["full"])]
    if label == BALL:
        return [("t_inf", _ball().accumulation_time)]
    if label == ROCKING:
        return [("t_inf", housner_accumulation_time(_rocking()))]
    return []


def error_unit(label: str) -> str:
    """The unit of a case's error: m for a distance from the rest state (:data:`AT_REST`), else
    the unit of the coordinates."""
    return "m" if label in AT_REST else coordinate_unit(label.split()[0])


def _figure(frame: pd.DataFrame, label: str, folder: Path) -> str:
    """Left: wall time against error, every family (errors at round-off drawn at
    :data:`ROUND_OFF`, the dashed line); right: the event-driven method's wall time against its
    Zeno threshold."""
    figure, (ax, zeno) = new_figure(2)
    for method, group in frame.groupby("method", sort=True):
        group = group[(group[ERROR] >= 0) & (group["wall_time"] > 0)]
        group = group.sort_values("h" if group["h"].notna().all() else "tolerance")
        style = method_style(str(method))
        ax.plot(
            1e3 * group["wall_time"],
            group[ERROR].clip(lower=ROUND_OFF),
            label=str(method),
            **style,
        )
        if group["family"].eq(EVENT_DRIVEN).all():
            zeno.plot(group["tolerance"], 1e3 * group["wall_time"], label=str(method), **style)
    ax.axhline(ROUND_OFF, color="0.5", linestyle="--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time per run [ms]")
    ax.set_ylabel(f"error [{error_unit(label)}]")
    zeno.set_xscale("log")
    zeno.set_yscale("log")
    zeno.set_xlabel("Zeno threshold rest_velocity [-]")
    zeno.set_ylabel("wall time per run [ms]")
    for axes in (ax, zeno):
        axes.grid(True, which="major", alpha=0.3)
    shared_legend(figure, [ax, zeno], columns=2)
    name = "limits_" + _slug(label) + ".png"
    save_figure(figure, folder / name)
    return name


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Per case: the runs, the equal-error comparisons, the work-precision figure and h(t) of
    the adaptive runs."""
    frame = _with_errors(_adaptive.with_rejections(table, folder), folder)
    sections, findings = [], []
    failed = table[(table["status"] == FAILED) & table["h"].isna()]
    adaptive = _adaptive.is_adaptive(failed)
    for (label, controlled), group in failed.groupby(["problem", adaptive], sort=False):
        first = str(group["error"].iloc[0]).split(": ")
        who = "step-size control fails at" if controlled else "the event-driven method fails at"
        what = "rtol" if controlled else "Zeno thresholds"
        findings.append(
            f"{label}: {who} {len(group)} of its {what} "
            f"({', '.join(f'{v:g}' for v in sorted(group['tolerance']))}); first error: "
            f"{first[0]}: {': '.join(first[1:])[:160]}"
        )
    for label, group in frame.groupby("problem", sort=False):
        controlled_rows = _adaptive.is_adaptive(group)
        control = _adaptive.error_control(group, ERROR)
        marks = _adaptive.marked(group, control)[_adaptive.CONTROL_COLUMN]
        counted = with_capped_counts(group)
        runs_shown = pd.DataFrame(
            {
                "method": group["method"],
                "h [s]": group["h"],
                "rest velocity [-]": group["tolerance"].where(~controlled_rows),
                "rtol [-]": group["tolerance"].where(controlled_rows),
                "impacts": counted["impacts"],
                "status": group["status"],
                ERROR: group[ERROR],
                "rejected steps": group["rejected_fraction"],
                _adaptive.CONTROL_COLUMN: marks,
                "wall time [ms]": 1e3 * group["wall_time"],
                "slowest repeat [ms]": 1e3 * group["wall_time_max"],
            }
        )
        compared = equal_error(group)
        # the verdicts on step-size control use only the rtol sweeps that control their error
        controlled = adaptive_equal_error(_adaptive.controlled_only(group, control))
        steps = _adaptive.step_size_figure(
            table, folder, str(label), f"Accepted steps h(t): {label}",
            "steps_" + _slug(str(label)) + ".png", _marks(str(label)),
        )  # fmt: skip
        q = error_unit(str(label))
        units = {ERROR: q, "event-driven error": q, "adaptive error": q, "rest velocity": "-"}
        body = (
            f"Every run ({ERROR}: see the module docstring; impacts are impact events; "
            "rejected steps: the fraction of the adaptive runs' attempts).\n\n"
            + markdown_table(runs_shown, units=units)
            + "\nEach event-driven run against the cheapest fixed-step run at least as "
            f"accurate (an error at most {ROUND_OFF:g} m counts as exact; times in ms, the "
            "fastest and the slowest repeat; ratio: of the median "
            "times, with its 95 % bootstrap interval; a tie where it holds 1).\n\n"
            + markdown_table(compared, units=units)
            + "\nEach step-size-controlled run against the cheapest fixed-step and the cheapest "
            "event-driven run at least as accurate.\n\n"
            + markdown_table(controlled, units=units)
            + "\n"
            + _adaptive.control_section(control)
            + f"\n![work-precision]({_figure(group, str(label), folder)})\n"
            + (steps or "")
        )
        sections.append(Section(str(label), body))
        events = group[group["family"] == "event-driven"].sort_values("tolerance")
        if not events.empty:
            fewest, most = events["impacts"].idxmin(), events["impacts"].idxmax()
            capped = capped_flags(events)
            findings.append(
                f"{label}: the event-driven method resolves "
                f"{count_text(events.loc[fewest, 'impacts'], capped[fewest])} to "
                f"{count_text(events.loc[most, 'impacts'], capped[most])} impact events as its "
                "Zeno threshold goes from "
                f"{events['tolerance'].max():g} to {events['tolerance'].min():g}, for "
                f"{format_number(1e3 * events['wall_time'].min())} to "
                f"{format_number(1e3 * events['wall_time'].max())} ms per run."
            )
        if not compared.empty:
            findings.append(
                f"{label}, at equal error: "
                + verdict_counts(compared["verdict"], "event-driven settings")
                + "."
            )
        if str(label) in AT_REST:
            findings.append(
                f"{label}: the runs at the exact rest state at T (error <= {ROUND_OFF:g} m, "
                f"round-off): {exact_runs(group)}."
            )
        findings += _adaptive.control_findings(control)
        for name in ("fixed step", "event-driven"):
            if controlled.empty:
                break
            findings.append(
                f"{label}, step-size control against {name} at equal error: "
                + verdict_counts(controlled[f"verdict (vs {name})"], "adaptive runs")
                + "."
            )
    return StudyReport(sections, findings)


STUDY = Study(
    name=NAME,
    title="Where event-driven integration loses: accumulations of impacts, timed",
    description=(
        "Both families timed one run at a time on accumulations of impacts (the ball and "
        "Housner's rocking block through their accumulation times, a falling column of beads "
        "into its resting stack, a forced impact oscillator chattering on its stop once a "
        "period; the double pendulum settling on the wall as a control that "
        "is no accumulation): the event-driven method's cost and error against "
        "its Zeno threshold and the impacts it resolves, beside the time-steppers' cost at "
        "equal error (module `studies/event_driven_limits.py`). " + PROTOCOL_TEXT
    ),
    runs=runs,
    report=report,
    max_jobs=1,
    failures_are_findings=True,  # the event-driven method's failures are what it measures
)
