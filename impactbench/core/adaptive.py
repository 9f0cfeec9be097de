"""Step-size control for time-stepping: any scheme on the scheme API, run adaptively.

:class:`Adaptive` wraps a scheme written on :mod:`impactbench.core.scheme` (``Adaptive(
MoreauJean(), rtol=1e-4)``) and runs its unchanged functions in the adaptive loop of this
module, bound and compiled like the fixed-step loop (:func:`impactbench.core.driver.make_loop`
with ``time_loop``) or run as plain Python. The controller is that of Studer, Leine & Glocker
(IJNME 76, 2008) and MBSim's ``TimeSteppingSSCIntegrator``:

* every attempt from (t, q, v) takes two steps of h/2 and, from the same state (the scheme's
  work buffer saved before and restored after them), one step of h;
* on a step without a contact change, the local error of the two half steps is estimated by
  Richardson's difference ``(y_{h/2} - y_h) / (2^p - 1)`` (p: ``order``) over q and v, in the
  RMS norm weighted by ``atol + rtol max(|y|, |y_{h/2}|)``, as EventDriven's tolerances;
* a step with a contact change *excludes the velocities* from the test: their jump makes the
  difference O(1) whatever h. A contact change is a change of the set of constraints that take
  an impulse: the sets of the three steps (the two half steps and the full one) and of the
  previous accepted step's last half step are not all equal (an impact closes a contact, a
  lift-off opens one), or the set of constraints with g <= 0 at the end of the step differs
  from that at the start. A persistent contact (resting, sliding or sticking: the same
  constraints take an impulse on every step) is no change: its velocities stay in the test,
  where their error is that of a smooth phase (the normal velocity is 0 in both estimates, the
  tangential one evolves with the forces and friction), so the controller keeps the error of
  a sliding or sticking contact within the tolerances. A stick-slip transition is no change
  either: the velocity is continuous there (only the acceleration jumps), its difference O(h^2)
  locally. The positions stay in the test on every step (their error through an impact is
  O(h^2) locally), so the step still shrinks around impacts, by the positions' error, not down
  to a minimal step. Studer's "exclude" variant is the one implemented, not "refine to a
  minimal step": refining localises a switch that Moreau's schemes do not need located (the
  impact law acts on whatever step contains it), and where a scheme's contact flickers (Moreau's
  scheme with e > 0 on a resting contact takes an impulse on every other step) refining would
  collapse the step; excluding keeps it near ``h_max`` there;
* the continuous extension (``extension_control``, on by default): the run between two
  accepted steps is the chord of (t, q, v) (the polyline its samples define, on which the
  studies measure its error), which misses the solution in mid-step by y'' h^2 / 8. Richardson's
  estimate does not see this: where the scheme integrates a phase exactly (a constant force,
  as the ball's parabola or a block sliding at constant friction, under MoreauJean's midpoint
  rule) it is zero and the step grows to ``h_max``, so the extension's error is y'' h_max^2 / 8
  whatever rtol. The first half step's state at t + h/2 against the chord's midpoint,
  (y_{h/2}(t + h/2) - (y(t) + y_{h/2}(t + h)) / 2), in the same weighted RMS norm and over the
  same components (the velocities excluded on a contact-change step), is a second error,
  and the larger of the two is tested. It is O(h^2), above Richardson's O(h^3) estimate of a
  second-order scheme: with it, the step of MoreauJean in a smooth phase follows tol^(1/2)
  rather than tol^(1/3), and the error of the output at the steps goes as tol rather than
  tol^(2/3);
* gap control: a step over which the penetration of a constraint, max(0, -g), grows by
  more than ``gap_tolerance`` is rejected, and h scaled by 0.9 gap_tolerance / growth (within
  [0.1, 0.9]: the penetration of a closing contact grows as h |G v|). The growth, not the depth,
  is bounded: a resting contact keeps the depth it settled at whatever h (Moreau's schemes do
  not correct positions), so bounding the depth could drive h to ``h_min`` there. Without it a
  free-flight step that ends inside K shows no error (both estimates penetrate alike, the
  velocities are excluded) and is accepted whatever its length: the impact is then handled a
  whole step late, up to h |U| inside K for a closing normal velocity U; where the scheme
  integrates the flight exactly (the ball's parabola under MoreauJean's midpoint rule or
  D1MinusLinear's Verlet step) the estimate is zero, the step grows to ``h_max`` and the
  penetration is h_max |U|, whatever rtol. The control is therefore on by default, its
  tolerance derived from the error test's: the error test accepts a position error of atol +
  rtol |q| per step, and a gap's error through an impact is its penetration, so the default
  tolerance is atol + rtol L with L = max_i |g_i(q0)| the largest initial gap (the length the
  motion spans before its first contact: the drop height of the ball). The penetration, hence
  the position error it causes, then scales with rtol as the error test's positional error
  does; a problem that starts in contact (L = 0) gets atol. ``gap_tolerance=math.inf`` turns
  the control off (for smooth problems, or to measure the uncontrolled behaviour);
* accepted: the state becomes that of the two half steps (the scheme's own order), or with
  ``extrapolate`` their Richardson extrapolation on a step where no constraint takes an impulse
  (order p + 1, MBSim's "order by extrapolation"; never across an impulse, where the estimate has no
  asymptotic meaning and the combined velocity would not satisfy the contact law: extrapolated on a
  persistent contact with e > 0, the normal velocities leave the contact and the steps collapse into
  chatter; and only if the extrapolated positions keep the half steps' set {g <= 0} and the gap
  control: an extrapolation that leaves K carries a penetrating state past the gap control, from
  which the controller stopped at ``h_min``); the next step is h min(2, max(0.2, 0.9
  err^(-1/(p+1)))) (at most h right after a rejection, which keeps the controller from cycling
  between growth and rejection), bounded by ``h_max``; rejected: the same factor, at most 0.9,
  bounded below by ``h_min``, except on a contact-change step, where the positions' difference is
  O(h) (the impulse acts at different instants in the two estimates), so h is scaled by 0.9 / err
  (within [0.1, 0.9]) rather than err^(-1/(p+1)), which would take several rejections per
  impact; a rejection at ``h_min`` stops the run with :data:`STATUS_STEP_TOO_SMALL` (t, q, v of
  the last accepted state).

Output: at the requested times ``t_eval`` (the steps land on them exactly), or at every
accepted step in at most ``max_samples`` samples (when full, every other sample is dropped and
the stride of the samples kept doubles: memory bounded whatever the number of steps). Statistics
add ``rejected_steps`` and ``contact_steps`` (accepted steps with a contact change) to those of
a fixed-step run; ``force_evaluations`` counts all three steps of every attempt, rejected ones
included.

The contact solvers' warm start (the LCP's last basis) is not restored with the buffer: it only
changes the solver's first guess, not its solution.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import _checks
from .compilation import compiled_code
from .driver import IMPULSE, NEXT_Q, NEXT_V, NORMAL_AFTER, NORMAL_BEFORE
from .method import TIME_STEPPING, Method
from .names import parse_spec
from .problem import CheckedCalls, Problem, checked_state, python_kernels, timed_gap
from .scheme import Scheme, scheme_loop
from .status_codes import (
    COUNTER_FORCE_EVALUATIONS,
    COUNTER_IMPACTS,
    COUNTER_LOGGED,
    COUNTER_SAMPLES,
    COUNTER_SOLVER_ITERATIONS,
    COUNTER_STATUS,
    COUNTER_STEPS,
    FAILURE_REASONS,
    STATUS_NOT_FINITE,
    STATUS_OK,
    log_impacts,
    store_counters,
)
from .trajectory import ImpactLog, SimulationError, Status, Trajectory

#: Status of a run stopped by a rejection at the smallest step.
STATUS_STEP_TOO_SMALL = 101

#: Entries of the ``control`` vector of the adaptive loop.
RTOL, ATOL, H_MIN, H_MAX, GAP_TOLERANCE, ORDER, EXTRAPOLATE, EXTENSION = range(8)

#: Largest ``order`` accepted: the schemes on the scheme API are of order at most 2 in smooth
#: phases (the midpoint and central-difference schemes; 1 through impacts), and Richardson's
#: estimate (y_{h/2} - y_h) / (2^p - 1) with p above the scheme's order underestimates its
#: error by the factor (2^p - 1) / (2^order - 1).
MAX_ORDER = 2

#: Largest growth of the step after an accepted step (none after a rejected one).
GROWTH = 2.0

#: Entries of the ``extra`` counters of the adaptive loop.
REJECTED, CONTACT_STEPS = range(2)

N_COUNTERS = 7

# Names bound per problem and scheme by make_loop (see impactbench.core.driver).
scheme_start = scheme_step = scheme_commit = scheme_sample = scheme_gaps = shape_view = None
scratch = None
N_DOF = N_CONSTRAINTS = HEIGHT = WIDTH = 0
GENERIC = False


def _adaptive_loop(
    t0, t_end, h_first, q0, v0, p, e, mp, control, targets,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, extra, state, keep, buffer, rows, ws,
):  # fmt: skip
    size = HEIGHT * WIDTH
    if GENERIC:  # compile-time constant (impactbench.core.driver)
        X = buffer[:size].reshape((HEIGHT, WIDTH))  # noqa: N806
        Z = buffer[size:].reshape((2, N_DOF))  # noqa: N806
    else:
        X = shape_view(buffer, HEIGHT, WIDTH)  # noqa: N806
        Z = scratch(2, N_DOF)  # noqa: N806
    n = N_DOF
    m = N_CONSTRAINTS
    # keep: the saved buffer, the buffer after the half steps, their candidates (q, v),
    # the full step's, the accepted state, the first half step's (q, v) at the midpoint, the
    # gaps at its start and end, the first half step's impulses and normal velocities, the
    # second half step's impulses, the impulses of the last accepted step's second half step,
    # the gaps of the extrapolated candidate
    saved = keep[:size]
    halved = keep[size : 2 * size]
    zh = keep[2 * size : 2 * size + 2 * n]
    zf = keep[2 * size + 2 * n : 2 * size + 4 * n]
    qc = keep[2 * size + 4 * n : 2 * size + 5 * n]
    vc = keep[2 * size + 5 * n : 2 * size + 6 * n]
    zm = keep[2 * size + 6 * n : 2 * size + 8 * n]
    base = 2 * size + 8 * n
    g0 = keep[base : base + WIDTH]
    g1 = keep[base + WIDTH : base + 2 * WIDTH]
    i1 = keep[base + 2 * WIDTH : base + 3 * WIDTH]
    b1 = keep[base + 3 * WIDTH : base + 4 * WIDTH]
    a1 = keep[base + 4 * WIDTH : base + 5 * WIDTH]
    i2 = keep[base + 5 * WIDTH : base + 6 * WIDTH]
    held = keep[base + 6 * WIDTH : base + 7 * WIDTH]
    ge = keep[base + 7 * WIDTH : base + 8 * WIDTH]
    rtol = control[RTOL]
    atol = control[ATOL]
    h_min = control[H_MIN]
    h_max = control[H_MAX]
    gap_tolerance = control[GAP_TOLERANCE]
    order = control[ORDER]
    extrapolate = control[EXTRAPOLATE] > 0.0
    extension = control[EXTENSION] > 0.0
    richardson = 2.0**order - 1.0
    exponent = -1.0 / (order + 1.0)
    out_capacity = out_t.shape[0]
    n_targets = targets.shape[0]
    status, iterations, evaluations = scheme_start(t0, h_first, q0, v0, p, e, mp, X, rows, ws)
    out_t[0] = t0
    for j in range(n):
        out_q[0, j] = q0[j]
        out_v[0, j] = v0[j]
        qc[j] = q0[j]
        vc[j] = v0[j]
    samples = 1
    impacts = 0
    logged = 0
    accepted = 0
    rejected = 0
    contact_steps = 0
    target = 0
    stride = 1
    countdown = 1
    calls = 0
    fresh = True
    rejected_last = False
    t = t0
    h = h_first
    if status == STATUS_OK and m > 0:
        scheme_gaps(t, qc, p, g0)
    while status == STATUS_OK and t < t_end:
        t_stop = targets[target] if n_targets > 0 else t_end
        step = h
        landing = step >= (t_stop - t) * (1.0 - 1e-9)
        t_next = t + step
        if landing:
            step = t_stop - t
            t_next = t_stop
        t_half = t + 0.5 * step
        if fresh:
            for i in range(size):
                saved[i] = buffer[i]
        status, c1, used, evaluated = scheme_step(
            calls, t, t_half, 0.5 * step, p, e, mp, X, Z, rows, ws
        )
        evaluations += evaluated
        if status != STATUS_OK:
            break
        for j in range(n):
            zm[j] = Z[NEXT_Q, j]
            zm[n + j] = Z[NEXT_V, j]
        for i in range(m):
            i1[i] = X[IMPULSE, i] if c1 else 0.0
        if c1:
            iterations += used
            for i in range(m):
                b1[i] = X[NORMAL_BEFORE, i]
                a1[i] = X[NORMAL_AFTER, i]
        scheme_commit(X, Z)
        status, c2, used2, evaluated = scheme_step(
            calls + 1, t_half, t_next, 0.5 * step, p, e, mp, X, Z, rows, ws
        )
        evaluations += evaluated
        if status != STATUS_OK:
            break
        for j in range(n):
            zh[j] = Z[NEXT_Q, j]
            zh[n + j] = Z[NEXT_V, j]
        for i in range(m):
            i2[i] = X[IMPULSE, i] if c2 else 0.0
        for i in range(size):
            halved[i] = buffer[i]
            buffer[i] = saved[i]
        status, cf, used_full, evaluated = scheme_step(
            calls, t, t_next, step, p, e, mp, X, Z, rows, ws
        )
        evaluations += evaluated
        if status != STATUS_OK:
            break
        check = 0.0
        for j in range(n):
            zf[j] = Z[NEXT_Q, j]
            zf[n + j] = Z[NEXT_V, j]
            check += zh[j] + zh[n + j]
        if not np.isfinite(check):
            status = STATUS_NOT_FINITE
            break
        changed = False  # the sets taking an impulse differ (a contact closes or opens)
        for i in range(m):
            pressed = held[i] > 0.0
            full = cf and X[IMPULSE, i] > 0.0
            if (i1[i] > 0.0) != pressed or (i2[i] > 0.0) != pressed or full != pressed:
                changed = True
        growth = 0.0
        if m > 0:
            scheme_gaps(t_next, zh[:n], p, g1)
            for i in range(m):
                if (g0[i] <= 0.0) != (g1[i] <= 0.0):
                    changed = True
                growth = max(growth, max(0.0, -g1[i]) - max(0.0, -g0[i]))
        total = 0.0
        terms = n if changed else 2 * n
        for j in range(terms):
            previous = qc[j] if j < n else vc[j - n]
            scale = atol + rtol * max(abs(zh[j]), abs(previous))
            ratio = (zh[j] - zf[j]) / scale
            total += ratio * ratio
        error = math.sqrt(total / terms) / richardson
        if extension:  # the continuous extension's error: the midpoint against the chord
            total = 0.0
            for j in range(terms):
                previous = qc[j] if j < n else vc[j - n]
                scale = atol + rtol * max(abs(zh[j]), abs(previous))
                ratio = (zm[j] - 0.5 * (previous + zh[j])) / scale
                total += ratio * ratio
            error = max(error, math.sqrt(total / terms))
        too_deep = growth > gap_tolerance
        if error <= 1.0 and not too_deep:
            for i in range(size):
                buffer[i] = halved[i]
            if extrapolate and not (c1 or c2 or cf):
                for j in range(2 * n):  # zf: the extrapolated candidate
                    zf[j] = zh[j] + (zh[j] - zf[j]) / richardson
                # the extrapolation keeps the set {g <= 0} of the half steps and the gap control
                inside = True
                if m > 0:
                    scheme_gaps(t_next, zf[:n], p, ge)
                    for i in range(m):
                        if (ge[i] <= 0.0) != (g1[i] <= 0.0):
                            inside = False
                        if max(0.0, -ge[i]) - max(0.0, -g0[i]) > gap_tolerance:
                            inside = False
                if inside:
                    for j in range(2 * n):
                        zh[j] = zf[j]
                    for i in range(m):
                        g1[i] = ge[i]
            for j in range(n):
                Z[NEXT_Q, j] = zh[j]
                Z[NEXT_V, j] = zh[n + j]
            if c1:
                impacts, logged = log_impacts(
                    log_t, log_i, log_u, logged, impacts, t_half, i1, b1, a1, m
                )
            if c2:
                iterations += used2
                impacts, logged = log_impacts(
                    log_t, log_i, log_u, logged, impacts, t_next,
                    X[IMPULSE], X[NORMAL_BEFORE], X[NORMAL_AFTER], m,
                )  # fmt: skip
            scheme_commit(X, Z)
            t = t_next
            calls += 2
            accepted += 1
            fresh = True
            if changed:
                contact_steps += 1
            for j in range(n):
                qc[j] = zh[j]
                vc[j] = zh[n + j]
            for i in range(m):
                g0[i] = g1[i]
                held[i] = i2[i]
            write = False
            if n_targets > 0:
                if landing:
                    write = True
                    target += 1
            else:
                countdown -= 1
                write = countdown == 0 or t >= t_end
                if write and samples == out_capacity:  # drop every other sample
                    kept = 1
                    for k in range(2, samples, 2):
                        out_t[kept] = out_t[k]
                        for j in range(n):
                            out_q[kept, j] = out_q[k, j]
                            out_v[kept, j] = out_v[k, j]
                        kept += 1
                    samples = kept
                    stride *= 2
                if countdown == 0:
                    countdown = stride
            if write:
                out_t[samples] = t
                scheme_sample(X, Z, out_q[samples], out_v[samples])
                samples += 1
            largest = 1.0 if rejected_last else GROWTH
            factor = largest if error == 0.0 else min(largest, max(0.2, 0.9 * error**exponent))
            rejected_last = False
            proposed = min(step * factor, h_max)
            h = max(h, proposed) if landing else proposed
            h = min(h, h_max)
        else:
            rejected += 1
            rejected_last = True
            fresh = False
            for i in range(size):
                buffer[i] = saved[i]
            if step <= h_min:
                status = STATUS_STEP_TOO_SMALL
                break
            if too_deep:
                factor = min(0.9, max(0.1, 0.9 * gap_tolerance / growth))
            elif changed:  # the positions' difference through a contact change is O(h)
                factor = min(0.9, max(0.1, 0.9 / error))
            else:
                factor = min(0.9, max(0.2, 0.9 * error**exponent))
            h = max(step * factor, h_min)
    store_counters(counters, status, accepted, evaluations, impacts, logged, samples, iterations)
    extra[REJECTED] = rejected
    extra[CONTACT_STEPS] = contact_steps
    state[0] = t
    for j in range(n):
        state[1 + j] = qc[j]
        state[1 + n + j] = vc[j]


class Adaptive(Method):
    """Step-size control over a time-stepping scheme (Studer; see the module docstring).

    Parameters
    ----------
    scheme : Scheme or str
        A one-step scheme written on :mod:`impactbench.core.scheme` (MoreauJean, CatchingUp...;
        a two-step scheme, ``lead`` > 0 as PaoliSchatzman, is refused), or its
        spec (``"MoreauJean"``, ``"MoreauJean[theta=1.0]"``: the class name of a scheme defined
        by then, a plug-in's included); its ``compiled`` and ``log_capacity`` apply. The
        instance is :attr:`stepper` and its name :attr:`scheme`, whichever was given: a spec
        and the equivalent instance make the same :attr:`name`; on the command line:
        ``Adaptive[scheme=CatchingUp,rtol=1e-4]``. Default: ``MoreauJean()``, written as its
        name.
    rtol, atol : float
        Relative and absolute tolerances of the local error (100 eps <= rtol < 1, atol > 0).
    h_min : float
        Smallest step: a rejection there stops the run (a :class:`SimulationError` with t, q,
        v of the last accepted state).
    h_max : float or None
        Largest step; None: (t_end - t0) / 10.
    gap_tolerance : float or None
        Largest growth of a constraint's penetration over one step (module docstring). None
        (default): atol + rtol L, L = max_i |g_i(q0)| the largest initial gap, derived per
        problem when it is solved (:meth:`gap_bound`); ``math.inf``: no gap control, which
        leaves the penetration through an impact bounded by h |U| only.
    order : int
        Order p of the scheme in Richardson's estimate and the controller (1: the order of
        every velocity scheme through impacts; 2 for MoreauJean's midpoint scheme in smooth
        phases), in 1 .. :data:`MAX_ORDER`.
    extrapolate : bool
        On steps where no constraint takes an impulse, continue from Richardson's extrapolation
        y_{h/2} + (y_{h/2} - y_h) / (2^p - 1) (order p + 1 there) rather than y_{h/2}. Only
        for a scheme whose state between steps is (q, v) and what its step recomputes
        (MoreauJean, CatchingUp): the extrapolated (q, v) replace the candidate before the
        commit, the rest of its state stays that of the half steps.
    extension_control : bool
        Also bound the error of the run's continuous extension, the chord between two accepted
        steps (module docstring); False: Richardson's estimate alone, which is zero in a phase
        the scheme integrates exactly.
    t_eval : array-like or None
        Output times in (t0, t_end] (t_end is added); None: every accepted step, at most
        ``max_samples`` samples.
    max_samples : int
        Bound on the samples kept when ``t_eval`` is None (at least 3).

    Notes
    -----
    ``solve(problem, t_end, h=...)``: h is the first step tried (default: h_max / 100).
    """

    family: ClassVar[str] = TIME_STEPPING
    requires_step: ClassVar[bool] = False

    def __init__(
        self,
        scheme: Scheme | str = "MoreauJean[theta=0.5,activation=position]",
        *,
        rtol: float = 1e-3,
        atol: float = 1e-6,
        h_min: float = 1e-12,
        h_max: float | None = None,
        gap_tolerance: float | None = None,
        order: int = 1,
        extrapolate: bool = False,
        extension_control: bool = True,
        t_eval: Any = None,
        max_samples: int = 100_000,
    ) -> None:
        self.stepper = _scheme(scheme)
        if self.stepper.lead:
            raise ValueError(
                f"scheme {self.stepper.name}: a two-step scheme (its current position runs "
                f"lead = {self.stepper.lead} step ahead of its samples) carries the last step "
                "size in its recurrence, q^{k+1} = 2 q^k - q^{k-1} + h^2 M^-1 F; Richardson's "
                "estimate takes steps of h and h/2 from one state, which it cannot restart from"
            )
        self.scheme = self.stepper.name
        self.rtol, self.atol, self.h_min, self.h_max = rtol, atol, h_min, h_max
        self.gap_tolerance, self.order, self.extrapolate = gap_tolerance, order, extrapolate
        self.extension_control = extension_control
        self.t_eval, self.max_samples = t_eval, max_samples
        self._check_options()

    def _check_options(self) -> None:
        """Validate the options (class docstring) and store them converted; called on
        construction and by every run (an option set on the instance since is checked too).

        Raises
        ------
        ValueError
            Naming the option and its value.
        """
        rtol = _checks.positive_scalar(self.rtol, "rtol")
        if not 100 * np.finfo(float).eps <= rtol < 1.0:
            raise ValueError(
                f"rtol must lie in [100 eps, 1) (a relative error of 1 or more accepts any "
                f"step), got {self.rtol!r}"
            )
        self.rtol = rtol
        self.atol = _checks.positive_scalar(self.atol, "atol")
        self.h_min = _checks.positive_scalar(self.h_min, "h_min")
        if self.h_max is not None:
            self.h_max = _checks.positive_scalar(self.h_max, "h_max")
            if self.h_max < self.h_min:
                raise ValueError(f"h_max must be >= h_min = {self.h_min!r}, got {self.h_max!r}")
        self.gap_tolerance = _gap_tolerance(self.gap_tolerance)
        order = _checks.positive_int(self.order, "order")
        if order > MAX_ORDER:
            raise ValueError(
                f"order must be <= {MAX_ORDER} (the highest order of a scheme on the scheme API "
                f"in smooth phases; a larger p divides the error estimate by 2^p - 1 and "
                f"accepts steps whose error it no longer bounds), got {self.order!r}"
            )
        self.order = order
        if not isinstance(self.extrapolate, bool):
            raise ValueError(f"extrapolate must be True or False, got {self.extrapolate!r}")
        if not isinstance(self.extension_control, bool):
            raise ValueError(
                f"extension_control must be True or False, got {self.extension_control!r}"
            )
        if self.t_eval is not None:
            t_eval = np.asarray(self.t_eval, dtype=float)
            if t_eval.ndim != 1 or t_eval.size == 0 or not np.all(np.isfinite(t_eval)):
                raise ValueError(
                    f"t_eval must be a non-empty 1-D array of finite times, got {self.t_eval!r}"
                )
            if np.any(np.diff(t_eval) <= 0.0):
                raise ValueError("t_eval must be strictly increasing")
            self.t_eval = t_eval
        max_samples = _checks.positive_int(self.max_samples, "max_samples")
        if max_samples < 3:
            raise ValueError(f"max_samples must be >= 3, got {self.max_samples!r}")
        self.max_samples = max_samples

    @property
    def friction_law(self) -> bool:
        """The scheme's: on a frictional problem the controller steps the scheme's frictional
        loop (:meth:`impactbench.core.scheme.Scheme.loop_scheme`), so it integrates friction
        exactly when the scheme does."""
        return self.stepper.friction_law

    @property
    def moving_obstacles(self) -> bool:
        """The scheme's: the controller steps the scheme's loop, so it integrates moving
        obstacles (a rheonomic problem) exactly when the scheme does."""
        return self.stepper.moving_obstacles

    @property
    def name(self) -> str:
        """``Adaptive[scheme=<spec>,rtol=...,atol=...]``, then every other parameter that is
        not at its default (``t_eval``: its number of times): a spec that
        :func:`impactbench.methods.get_method` reads back, unless ``t_eval`` is given."""
        parts = [f"scheme={self.scheme}", f"rtol={self.rtol}", f"atol={self.atol}"]
        for name, default in _DEFAULTS.items():
            value = getattr(self, name)
            if value != default:
                parts.append(f"{name}={value}")
        if self.t_eval is not None:
            parts.append(f"t_eval={self.t_eval.size} times")
        return f"Adaptive[{','.join(parts)}]"

    def gap_bound(self, problem: Problem) -> float:
        """The gap tolerance on ``problem``: the given one, or by default (None) atol + rtol L
        with L = max_i |g_i(t0, q0)|, the largest initial gap (0 without constraints).

        Parameters
        ----------
        problem : Problem
            The problem to be solved (checked).

        Returns
        -------
        float
            The largest growth of a penetration over one step (``math.inf``: no control).
        """
        if self.gap_tolerance is not None:
            return self.gap_tolerance
        q0 = np.asarray(problem.q0, dtype=float)
        gaps = np.asarray(timed_gap(problem, problem.t0, q0), dtype=float)
        length = float(np.abs(gaps).max(initial=0.0))
        return self.atol + self.rtol * length

    def compile_options(self, problem: Problem) -> dict[str, Any] | None:
        """None when the scheme runs as plain Python, else no option of the controller's own:
        :func:`impactbench.core.compilation.compiled_code` adds the scheme's class and options
        (:attr:`stepper` is a method)."""
        return {} if self.stepper.compiled else None

    def loop_for(self, problem: Problem) -> tuple[Callable, CheckedCalls | None]:
        """The adaptive loop for ``problem`` (compiled once per process for what it binds,
        :func:`impactbench.core.scheme.scheme_loop`), and the checked calls of the
        plain-Python path (None when compiled)."""
        scheme = type(self.stepper)
        n, m = problem.n_dof, problem.n_constraints
        options = self.stepper._loop_options()
        if compiled_code(self, problem) is None:
            calls = CheckedCalls(problem)
            kernels = python_kernels(problem, calls)
            return scheme_loop(scheme, kernels, n, m, False, options, _adaptive_loop), calls
        return scheme_loop(scheme, problem.kernels(), n, m, True, options, _adaptive_loop), None

    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        checked_state(problem)
        self._check_options()
        t0 = float(problem.t0)
        span = t_end - t0
        h_max = span / 10.0 if self.h_max is None else min(self.h_max, span)
        if self.h_min > h_max:
            raise ValueError(
                f"h_min must be <= the largest step {h_max!r} of this run (h_max, at most "
                f"t_end - t0; (t_end - t0) / 10 when h_max is None), got {self.h_min!r}"
            )
        h_first = h_max / 100.0 if h is None else _checks.positive_scalar(h, "h")
        h_first = min(max(h_first, self.h_min), h_max)
        if self.t_eval is None:
            targets = np.empty(0)
            n_out = self.max_samples
        else:
            if self.t_eval[0] <= t0 or self.t_eval[-1] > t_end:
                raise ValueError(f"t_eval must lie in (t0, t_end] = ({t0!r}, {t_end!r}]")
            targets = self.t_eval if self.t_eval[-1] == t_end else np.append(self.t_eval, t_end)
            n_out = targets.size + 1
        gap = self.gap_bound(problem)
        control = np.array(
            [
                self.rtol, self.atol, self.h_min, h_max, gap, self.order,
                float(self.extrapolate), float(self.extension_control),
            ]
        )  # fmt: skip
        loop, calls = self.loop_for(problem)
        n, m = problem.n_dof, problem.n_constraints
        width = max(n, m, 1)
        keep = np.zeros(2 * loop.buffer_size + 8 * n + 8 * width)
        capacity = self.stepper.log_capacity
        log_t = np.empty(capacity)
        log_i = np.empty(capacity, dtype=np.int64)
        log_u = np.empty((capacity, 2))
        out_t = np.empty(n_out)
        out_q = np.empty((n_out, n))
        out_v = np.empty((n_out, n))
        counters = np.zeros(N_COUNTERS, dtype=np.int64)
        extra = np.zeros(2, dtype=np.int64)
        state = np.empty(1 + 2 * n)
        q0 = np.array(problem.q0, dtype=float)
        v0 = np.array(problem.v0, dtype=float)
        p = np.asarray(problem.kernel_parameters(), dtype=float)
        mp = np.asarray(self.stepper._method_vector(), dtype=float)
        e = float(problem.restitution)
        # the impact law's energy record of the accepted steps (a rejected attempt's is
        # discarded with the buffer it restores): impactbench.core.friction.law_energy_change
        reports_law = getattr(loop, "reports_law", False)
        law = np.zeros(2)
        record = {"law": law} if reports_law else {}
        try:
            start = time.perf_counter()
            work_bytes = loop(
                t0, float(t_end), h_first, q0, v0, p, e, mp, control, targets,
                out_t, out_q, out_v, log_t, log_i, log_u, counters, extra, state, keep,
                **record,
            )  # fmt: skip
            integration_time = time.perf_counter() - start
        except SimulationError as error:  # a checked call of the plain-Python path
            raise SimulationError(
                f"{self.name} on {problem.name}: {error.reason}", error.t, error.q, error.v
            ) from None
        count = counters.tolist()
        samples = count[COUNTER_SAMPLES]
        impacts = ImpactLog.from_buffers(
            log_t, log_i, log_u, count[COUNTER_LOGGED], count[COUNTER_IMPACTS]
        )
        stats = {
            "steps": count[COUNTER_STEPS],
            "rejected_steps": int(extra[REJECTED]),
            "contact_steps": int(extra[CONTACT_STEPS]),
            "force_evaluations": count[COUNTER_FORCE_EVALUATIONS],
            "impacts": count[COUNTER_IMPACTS],
            "solver_iterations": count[COUNTER_SOLVER_ITERATIONS],
            "compiled": calls is None,
            "velocity_output": self.stepper.velocity_output,
            "integration_time": integration_time,
            # the loop's work buffers, and with the saved states, output and log all it allocated
            "work_bytes": int(work_bytes),
            "memory_bytes": int(work_bytes)
            + sum(array.nbytes for array in (keep, out_t, out_q, out_v, log_t, log_i, log_u)),
            "energy_creating_impacts": int(law[0]) if reports_law else None,
            "largest_impact_energy_gain": float(law[1]) if reports_law else None,
        }
        status = count[COUNTER_STATUS]
        reason = "reached t_end"
        if status != STATUS_OK:
            deferred = calls.deferred if calls is not None else ""
            reason = deferred or _REASONS.get(status, f"status {status}")
        run_status = Status.OK if status == STATUS_OK else Status.FAILED
        trajectory = Trajectory(
            out_t[:samples].copy(), out_q[:samples].copy(), out_v[:samples].copy(), impacts,
            run_status, reason, stats, self.name, problem.name, None,
        )  # fmt: skip
        if status != STATUS_OK:
            raise SimulationError(
                f"{self.name} on {problem.name}: {reason}",
                state[0],
                state[1 : 1 + n].copy(),
                state[1 + n :].copy(),
                trajectory,
            )
        return trajectory


def _scheme(scheme: Scheme | str) -> Scheme:
    """The scheme instance of ``scheme``: an instance, or a spec ``"Name[param=value,...]"``
    naming a scheme class (a subclass of :class:`impactbench.core.scheme.Scheme` defined by
    the time it is named: the built-in ones and those of imported plug-ins)."""
    if isinstance(scheme, str):
        try:
            factory, kwargs = parse_spec(scheme, _scheme_classes(), "scheme")
            scheme = factory(**kwargs)
        except (ValueError, TypeError) as error:
            raise ValueError(f"scheme {scheme!r}: {error}") from None
    if not isinstance(scheme, Scheme):
        raise ValueError(f"scheme must be a Scheme (impactbench.core.scheme), got {scheme!r}")
    return scheme


def _gap_tolerance(value: float | None) -> float | None:
    """``gap_tolerance`` checked: None (derived per problem), ``math.inf`` (no gap control),
    or a finite float > 0; else ValueError naming it."""
    if value is None:
        return None
    try:  # inf as a float or as the text a spec carries (``gap_tolerance=inf``)
        infinite = not isinstance(value, bool) and float(value) == math.inf
    except (TypeError, ValueError, OverflowError):
        infinite = False
    return math.inf if infinite else _checks.positive_scalar(value, "gap_tolerance")


def _scheme_classes() -> dict[str, type]:
    """The user-facing subclasses of :class:`Scheme` defined so far, by class name: not the
    private ones, not the scheme API's own bases (defined in this package's core, as
    ``ProjectingScheme``), not the built-in methods' internal loops (a class of the methods
    package that the package does not export, as ``ImplicitVelocity``, the loop of
    ``MoreauJean(implicit=True)``); a plug-in's schemes all count."""
    root = __name__.partition(".")[0]
    methods = sys.modules.get(f"{root}.methods")
    found: dict[str, type] = {}
    pending = [Scheme]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            name, module = subclass.__name__, subclass.__module__
            unexported = getattr(methods, name, None) is not subclass
            internal = module.startswith(f"{root}.core.") or (
                module.startswith(f"{root}.methods.") and unexported
            )
            if not name.startswith("_") and not internal:
                found.setdefault(name, subclass)
    return found


#: The parameters :attr:`Adaptive.name` lists when they differ from these defaults.
_DEFAULTS = {
    "h_min": 1e-12,
    "h_max": None,
    "gap_tolerance": None,
    "order": 1,
    "extrapolate": False,
    "extension_control": True,
    "max_samples": 100_000,
}

_REASONS = {
    **FAILURE_REASONS,
    STATUS_STEP_TOO_SMALL: "step rejected at h_min (the error or gap test fails there)",
}
