"""Writing a fixed-step scheme: its named state, its options, and the shared velocity impulse.

A scheme is a subclass of :class:`Scheme` that declares

* ``state``: its variables by name and shape, kept from step to step in one work buffer;
* ``run_time``: the names of its run-time parameters (floats, instance attributes), which the
  functions read as ``par.<name>``: one compiled loop serves every value;
* ``compile_time``: its compile-time options, name -> ``bool`` or ``int`` (instance attributes
  or properties), read as ``options.<name>``: each value compiles its own loop, whose machine
  code keeps only the branch that the value takes;

and writes the step (and, when the defaults do not fit, start, commit, sample and current) as
plain Python functions on numbers and arrays. The driver (:mod:`impactbench.core.driver`)
places the state in its work buffer, hands every function the state ``s`` as a named tuple of
views (``s.q``, ``s.M``, ``s.G``...), and runs them in its one time loop, which owns output
sampling, finite checks, divergence bounds, the impact log, counters and statuses. The same
source is compiled by numba (the problem's kernels run-time values, the sizes constant:
:func:`scheme_loop`) or runs as plain Python (``compiled=False``, or a problem numba cannot
compile).

Shapes of ``state`` entries: ``"n"`` (a vector of length n, the degrees of freedom), ``"m"`` (a
vector of length m, the constraints), ``"scalar"`` (an array of length 1: ``s.x[0]``),
``"mass"`` (the mass matrix M or its factor, as :func:`factor_mass` and :func:`solve_mass`
take them: (n, n), or (1, n) holding the diagonal of a diagonal M), ``("m", "n")`` (e.g. the
gap gradient G), ``("n", "n")``. Every scheme has ``q`` and ``v`` (n), its state at the last
step. The driver adds:

* ``s.q_next``, ``s.v_next`` (n): the candidate state the step writes (on the loop's stack in a
  compiled loop; ``None`` in ``start``);
* ``s.impulse``, ``s.normal_before``, ``s.normal_after`` (m): on a step with contact, the
  impulse of each constraint (0 where it took none) and, where it is positive, the normal
  velocities before and after, which the driver logs as an impact;
* ``s.law_gains``, ``s.law_largest_gain`` (1): the impact law's energy record (the number of
  impacts whose law created kinetic energy, the largest energy created), kept over the run
  (:func:`impactbench.core.friction.friction_impulse` writes it);
* ``s.rows`` (int64, m) and ``s.ws`` (:func:`impactbench.core.contact.make_workspace`): work
  space of the contact solvers, and ``s.multipliers`` (m), the solution of the last LCP
  solved in ``s.ws`` (impulses, or the multipliers of a projection) (``None`` in ``commit``,
  ``sample`` and ``current``).

The work buffer is zero when ``start`` runs.

The functions (static methods of the class; ``n``, ``m`` the sizes, ``p`` the problem's kernel
parameters, ``e`` the restitution coefficient, ``par`` the run-time parameters):

``start(s, problem, options, n, m, t0, h, q0, v0, p, e, par) -> (status, iterations, evaluations)``
    Set the state from (q0, v0) (default: ``s.q = q0``, ``s.v = v0``; a two-step scheme takes
    its first step here). ``evaluations`` counts the calls of ``problem.forces``.
``step(s, problem, options, n, m, k, t, t_next, h, p, e, par) -> (status, contact, its, evals)``
    Step k, from t = t0 + k h to t_next = t0 + (k + 1) h: write the candidate state into
    ``s.q_next``, ``s.v_next`` and, when ``contact``, ``s.impulse`` and the normal velocities
    (:func:`velocity_impulse` does); leave the rest of the state as the next step needs it
    once the candidate is committed. ``status`` is ``STATUS_OK`` or a failure code
    (:mod:`impactbench.core.status_codes`), which stops the run with the state of ``current``.
``commit(s, n)``
    Make the candidate the state (default: ``s.q = s.q_next``, ``s.v = s.v_next``).
``sample(s, n, q_out, v_out)``
    The output (q, v) after a commit (default: ``s.q``, ``s.v``).
``current(s, n, q_out, v_out)``
    The state reported at a failed step, ``lead`` steps after the last sample (default: as
    ``sample``).

``problem`` is a named tuple of the problem's kernels and flags (:class:`Kernels`), ``options``
one of the scheme's compile-time options. Helpers that a scheme's functions call with ``s`` or
``problem`` are decorated with :func:`scheme_function`; the shared contact numerics
(:func:`factor_mass`, :func:`solve_mass`, :mod:`impactbench.core.contact`) are called as they
are.

This module is everything a scheme imports from impactbench (the schemes of ``methods/`` import
nothing else, at most 12 names each: ``tests/test_layout.py``): the base classes
(:class:`Scheme`, :class:`ProjectingScheme`), the declared parameters (:class:`Parameter`), the
statuses, the shared steps (:func:`velocity_impulse`, with or without friction, with fixed or
moving obstacles; :func:`reaction_forces`, :func:`closed_rows`, :func:`projection_status`;
:data:`gap_at` and :data:`gradient_at`, the gap and its gradient at a time, which a problem with
moving obstacles needs and a fixed one ignores), the contact numerics
a step calls, the stable-step helpers (:func:`declared_stable_step`,
:func:`theta_scheme_limit`) and :func:`bind_problem` for a compiled function of one problem.
The base class does for a scheme what each would otherwise write: it checks the parameters
``run_time`` declares with a :class:`Parameter`, picks the loop of the scheme's
``frictional_step`` on a frictional problem (:func:`frictional_scheme`, with the friction
law's sizes and failure reasons), adds the rates of the impact law to the state on a problem
with moving obstacles (:func:`rheonomic_scheme`), and gives the step limit of a declared
``stable_step_factor``.
"""

from __future__ import annotations

import math
import sys
from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import numpy as np

from . import _checks
from ._jit import (
    CompileTimeTuple,
    compile_time_choice,
    first_class_kernel,
    generated_functions,
    kernel,
    scheme_function,
    specialize,
)
from .contact import (
    CURVATURE_FD_STEP,
    DEGENERATE_GRADIENT,
    LCP_SLOT_ACCELERATION,
    add_reactions,
    affine_projection_step,
    all_finite,
    delassus,
    factor_mass,
    impulse,
    impulse_single,
    impulse_span,
    ldl_factor,
    ldl_solve,
    make_metric_projection,
    metric_row,
    solve_lcp_warm,
    solve_mass,
)
from .divergence import theta_scheme_limit
from .driver import (
    FIRST_SCHEME_ROW,
    IMPULSE,
    LAW_GAINS,
    LAW_LARGEST_GAIN,
    NEXT_Q,
    NEXT_V,
    NORMAL_AFTER,
    NORMAL_BEFORE,
    make_loop,
)
from .driver import Scheme as LoopFunctions
from .friction import (
    FRICTION_FAILURE_REASONS,
    FRICTION_STATE,
    check_friction_sizes,
    friction_impulse,
    problem_restitution,
)
from .mass import mass_bindings
from .problem import Problem, ProblemKernels, declared_stable_step
from .status_codes import (
    FAILURE_REASONS,
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
)
from .timestepping import TimeStepping

__all__ = [
    "CURVATURE_FD_STEP",
    "COUNT",
    "DEGENERATE_GRADIENT",
    "IMPACT_STATE",
    "LCP_SLOT_ACCELERATION",
    "POSITIVE",
    "RHEONOMIC_STATE",
    "STATUS_CONTACT_SOLVE_FAILED",
    "STATUS_DEGENERATE_GRADIENT",
    "STATUS_GAP_NOT_FINITE",
    "STATUS_MASS_NOT_SPD",
    "STATUS_OK",
    "STATUS_PROJECTION_NOT_CONVERGED",
    "Kernels",
    "Parameter",
    "Problem",
    "ProblemKernels",
    "ProjectingScheme",
    "Scheme",
    "add_reactions",
    "affine_projection_step",
    "all_finite",
    "bind_problem",
    "closed_rows",
    "declared_stable_step",
    "delassus",
    "factor_mass",
    "frictional_scheme",
    "gap_at",
    "gradient_at",
    "ldl_factor",
    "ldl_solve",
    "metric_row",
    "projection_status",
    "reaction_forces",
    "rheonomic_scheme",
    "scheme_function",
    "solve_lcp_warm",
    "solve_mass",
    "theta_scheme_limit",
    "velocity_impulse",
]

#: The loop option of a specialised build (:func:`scheme_loop`).
SPECIALISED = "specialised"

#: The shapes a ``state`` entry may take (module docstring).
SHAPES = ("n", "m", "scalar", "mass", ("m", "n"), ("n", "n"))

#: The state :func:`velocity_impulse` works in; a scheme calling it adds these entries to its
#: own ``state`` (and a factor ``L`` of its mass matrix, shape ``"mass"``).
IMPACT_STATE: dict[str, Any] = {
    "g": "m",
    "G": ("m", "n"),
    "Y": ("m", "n"),
    "inv_w": "scalar",
    "metric_ready": "scalar",
}

#: The entry of the workspace tuple that holds the solution of its last LCP.
LCP_SOLUTION = 4

#: The entries the driver adds to every state (module docstring).
DRIVER_STATE = (
    "q_next",
    "v_next",
    "impulse",
    "normal_before",
    "normal_after",
    "law_gains",
    "law_largest_gain",
    "rows",
    "ws",
    "multipliers",
)


class Kernels(
    CompileTimeTuple,
    namedtuple(
        "Kernels",
        "mass_matrix forces gap gap_gradient constant_mass affine_gap diagonal_mass "
        "single_constraint rheonomic",
    ),
):
    """The problem as a scheme's functions see it (their argument ``problem``).

    Attributes
    ----------
    mass_matrix : function
        ``mass_matrix(q, p, M)``: M(q) into ``M`` (shape ``"mass"``: the diagonal into row 0
        when ``diagonal_mass``).
    forces : function
        ``forces(t, q, v, p, f)``: the smooth generalized forces F(t, q, v) into ``f`` (n).
    gap : function
        ``gap(q, p, g)``: the gaps g(q) into ``g`` (m); ``gap(t, q, p, g)`` when
        ``rheonomic`` (call it through :func:`gap_at`).
    gap_gradient : function
        ``gap_gradient(q, p, G)``: the rows grad g_i(q) into ``G`` (m, n);
        ``gap_gradient(t, q, p, G)`` when ``rheonomic`` (:func:`gradient_at`).
    constant_mass, affine_gap, diagonal_mass, single_constraint, rheonomic : bool
        Compile-time constants: M does not depend on q; g is affine (G constant); M is
        diagonal; m = 1; the obstacles move (g(t, q): the problem tuple then has the further
        fields ``gap_rate(t, q, p, r)``, r = dg/dt (m), and ``gap_drift(t, q, v, p, c)``,
        c = d2g/dt2 + 2 (dG/dt) v (m), :class:`impactbench.core.problem.ProblemKernels`).
    """

    __slots__ = ()


@scheme_function
def _single_impulse(s, problem, n, m, G, rows, active, vfree, v, e, v_out, restitution, offset):
    """The impulse of :func:`velocity_impulse` on its single constraint, in closed form."""
    if not (problem.constant_mass and problem.affine_gap and s.metric_ready[0] > 0.0):
        s.inv_w[0] = metric_row(n, G, 0, s.L, s.Y)
        s.metric_ready[0] = 1.0
    e_0 = e
    if restitution is not None:
        e_0 = restitution[0]
    if offset is not None:  # None: a fixed obstacle, the branch is not compiled
        return impulse_single(n, G, 0, vfree, v, e_0, s.Y, s.inv_w[0], s.impulse, v_out, offset[0])
    used = impulse_single(n, G, 0, vfree, v, e_0, s.Y, s.inv_w[0], s.impulse, v_out)
    return used


@scheme_function
def _lcp_impulses(s, problem, n, m, G, rows, active, vfree, v, e, v_out, restitution, offset):
    """The impulses of :func:`velocity_impulse` on the active set ``rows[:active]``, by the
    LCP."""
    if offset is not None:  # None: a fixed obstacle, the branch is not compiled
        used = impulse(n, G, rows, active, vfree, v, e, s.L, s.ws, v_out, restitution, offset)
    elif restitution is None:
        used = impulse(n, G, rows, active, vfree, v, e, s.L, s.ws, v_out)
    else:
        used = impulse(n, G, rows, active, vfree, v, e, s.L, s.ws, v_out, restitution)
    for i in range(m):
        s.impulse[i] = 0.0
    for a in range(active):
        s.impulse[rows[a]] = s.multipliers[a]
    return used


#: The impulses of :func:`velocity_impulse`: the closed form of a single-constraint problem or
#: the LCP, the other one not compiled.
_active_impulse = compile_time_choice("single_constraint", _single_impulse, _lcp_impulses)


@scheme_function
def _whole_span(s, problem, n, active, a):
    return 0, n - 1


@scheme_function
def _lcp_span(s, problem, n, active, a):
    return impulse_span(s.ws, active, a, n)


#: The columns (first, last) over which the a-th active gradient is nonzero: all of them for a
#: single constraint, the spans the LCP kept otherwise.
_gradient_span = compile_time_choice("single_constraint", _whole_span, _lcp_span)


@scheme_function
def _timed_gap(problem, t, q, p, out):
    problem.gap(t, q, p, out)


@scheme_function
def _fixed_gap(problem, t, q, p, out):
    problem.gap(q, p, out)


#: ``gap_at(problem, t, q, p, out)``: the gaps g(t, q) into ``out`` (m); on a problem whose
#: obstacles do not move (``problem.rheonomic`` False) g(q), t unused (and not compiled in).
gap_at = compile_time_choice("rheonomic", _timed_gap, _fixed_gap)


@scheme_function
def _timed_gradient(problem, t, q, p, out):
    problem.gap_gradient(t, q, p, out)


@scheme_function
def _fixed_gradient(problem, t, q, p, out):
    problem.gap_gradient(q, p, out)


#: ``gradient_at(problem, t, q, p, out)``: G = dg/dq at (t, q) into ``out`` (m, n); G(q) on a
#: problem whose obstacles do not move.
gradient_at = compile_time_choice("rheonomic", _timed_gradient, _fixed_gradient)


@scheme_function
def _timed_gap_of(problem, times, q, p, out):
    problem.gap(times[0], q, p, out)


@scheme_function
def _fixed_gap_of(problem, times, q, p, out):
    problem.gap(q, p, out)


#: g at (t_q, q) for :func:`velocity_impulse`'s ``times`` = (t_q, t_before, t_after); g(q)
#: on a fixed obstacle, where ``times`` may be None.
_gap_of = compile_time_choice("rheonomic", _timed_gap_of, _fixed_gap_of)


@scheme_function
def _timed_gradient_of(problem, times, q, p, out):
    problem.gap_gradient(times[0], q, p, out)


@scheme_function
def _fixed_gradient_of(problem, times, q, p, out):
    problem.gap_gradient(q, p, out)


#: G at (t_q, q), as :data:`_gap_of`.
_gradient_of = compile_time_choice("rheonomic", _timed_gradient_of, _fixed_gradient_of)


@scheme_function
def _moving_offsets(s, problem, m, times, q, p, e, restitution):
    """The rates r_before = dg/dt(t_before, q) and r_after = dg/dt(t_after, q) into
    ``s.rate_before``, ``s.rate_after`` and the law's offsets o_i = r_after,i + e_i
    r_before,i into ``s.rate_offset``; returns (finite, ``s.rate_offset``)."""
    problem.gap_rate(times[1], q, p, s.rate_before)
    problem.gap_rate(times[2], q, p, s.rate_after)
    finite = True
    for i in range(m):
        e_i = e
        if restitution is not None:
            e_i = restitution[i]
        s.rate_offset[i] = s.rate_after[i] + e_i * s.rate_before[i]
        finite &= abs(s.rate_offset[i]) < math.inf
    return finite, s.rate_offset


@scheme_function
def _fixed_offsets(s, problem, m, times, q, p, e, restitution):
    return True, None


#: The offsets of a moving obstacle's impact law (:func:`velocity_impulse`), None (no term) on
#: a fixed one.
_offsets = compile_time_choice("rheonomic", _moving_offsets, _fixed_offsets)


@scheme_function
def _rate_before(s, problem, i):
    return s.rate_before[i]


@scheme_function
def _rate_after(s, problem, i):
    return s.rate_after[i]


@scheme_function
def _no_rate(s, problem, i):
    return 0.0


#: The value a relative normal velocity U_i = G_i v + r_i starts its sum from: r_i before and
#: after the impulse on a moving obstacle, 0.0 (the sum G_i v as it always was) on a fixed one.
_start_before = compile_time_choice("rheonomic", _rate_before, _no_rate)
_start_after = compile_time_choice("rheonomic", _rate_after, _no_rate)


@scheme_function
def velocity_impulse(
    s, problem, n, m, q, v, vfree, e, v_out, p, approaching, forced, restitution=None,
    tangent_impulse=None, times=None,
):  # fmt: skip
    """Newton's impact law at velocity level on the constraints active at ``q``; with
    ``tangent_impulse``, the planar Newton-Coulomb law of a frictional problem.

    The contract of the velocity-impulse step shared by the velocity-level schemes. Evaluates
    g(q) into ``s.g`` and, when a constraint is closed, G = grad g(q) into ``s.G``; the active
    set is

        A = {i : g_i(q) <= 0}, and {i : forced[i] > 0} when ``forced`` is an array,
        with ``approaching``: only those with G_i v <= 0,

    and on A the impulses P solve, in the kinetic metric of M (``s.L``, its factor by
    :func:`factor_mass`),

        v_out = vfree + M^-1 G_A^T P,    0 <= P  _|_  G_A v_out + e G_A v >= 0,

    (with ``restitution``: e_i G_i v in the row of constraint i), in closed form for one
    constraint (M^-1 G^T and 1 / (G M^-1 G^T) kept in ``s.Y`` and ``s.inv_w`` while M and G
    are constant: ``s.metric_ready``), by the LCP (:func:`impactbench.core.contact.impulse`,
    warm-started) for several.

    Moving obstacles (``problem.rheonomic``, the state with :data:`RHEONOMIC_STATE`): with
    ``times`` = (t_q, t_before, t_after), g and G are taken at (t_q, q), the rates
    r_before = dg/dt(t_before, q), r_after = dg/dt(t_after, q) into ``s.rate_before``,
    ``s.rate_after``, and the law acts on the relative normal velocities
    U_before = G v + r_before, U_after = G v_out + r_after: the approaching test is
    U_before,i <= 0 and

        0 <= P  _|_  U_after + e U_before = G_A v_out + e G_A v + r_after + e r_before >= 0,

    (Siconos' MoreauJeanOSI: hdot at t_{k+1} and e times the output y_k(1) at t_k); the log
    reports U_before and U_after. On a fixed obstacle ``times`` is unused (None allowed) and
    no term is added.

    Parameters
    ----------
    s : named tuple
        The scheme's state, with :data:`IMPACT_STATE`, ``L`` (the factor of M) and the
        driver's entries.
    problem : Kernels
    n, m : int
    q : array (n)
        Where the constraints are evaluated.
    v : array (n)
        The velocity at the start of the step: Newton's law uses G v, and the log reports it.
    vfree : array (n)
        The velocity without impulse.
    e : float
        Restitution coefficient.
    v_out : array (n)
        Receives the velocity after the impulse (when A is not empty).
    p : array
        The problem's kernel parameters.
    approaching : bool
        The activation rule above (a compile-time constant: ``options.<name>``).
    forced : array (m) or None
        Constraints to activate whatever their gap (flags > 0); None: none (the code reading
        it is then not compiled).
    restitution : array (m) or None
        A restitution coefficient e_i for each constraint, in place of ``e``, for a law that
        sets it by constraint (D1MinusLinear: e on the contacts that close during the step, 0
        or 1 on those closed before it); None (default): ``e`` for all (the code reading it is
        then not compiled).
    tangent_impulse : array (m) or None
        None (default): Newton's law above (the frictional code is then not compiled). On a
        frictional problem, ``s.tangent_impulse`` of a state with
        :data:`impactbench.core.friction.FRICTION_STATE` (the state of a scheme's
        ``frictional_step``, :class:`Scheme`): the planar Newton-Coulomb law in place of
        Newton's (:func:`impactbench.core.friction.friction_impulse`, with its contract: the
        active set from g(q) <= 0 and ``approaching`` alone, ``forced`` and ``restitution``
        unused), the tangential impulses into ``tangent_impulse``.
    times : tuple of 3 floats or None
        (t_q, t_before, t_after): the time of ``q`` and those of the velocities before and
        after the impulse, for a moving obstacle (above); required when ``problem.rheonomic``,
        unused otherwise.

    Returns
    -------
    status : int
        ``STATUS_OK``; ``STATUS_GAP_NOT_FINITE`` (a gap, or G where a constraint is closed, not
        finite), ``STATUS_DEGENERATE_GRADIENT`` (an active constraint with a vanishing
        gradient), ``STATUS_CONTACT_SOLVE_FAILED`` (the LCP failed).
    active : int
        The size of A, whose constraints are ``s.rows[:active]``. When positive,
        ``s.impulse`` holds P (0 off A) and ``s.normal_before``, ``s.normal_after`` hold G_i v
        and G_i v_out for each i in A; ``v_out`` is unset otherwise.
    iterations : int
        The LCP's count of bases (1 for the closed form); with ``tangent_impulse``, the count
        of :func:`impactbench.core.friction.friction_impulse`.

    Notes
    -----
    For a caller:

    * the step that calls it factors M into ``s.L`` first (every step, or at k = 0 only when
      ``problem.constant_mass``: the kept ``s.Y``, ``s.inv_w`` assume M and G unchanged since
      the last call when ``problem.constant_mass`` and ``problem.affine_gap``); the buffer is
      zero at the start of a run, so ``s.metric_ready`` is unset then;
    * a scheme that grows the active set within a step (a constraint pushed out of K by the
      impulses on the others: Moreau-Jean with projection, the nonsmooth generalized-alpha
      scheme) sets its flags in an (m) entry of its state and calls it again with that entry
      as ``forced``: g and G are evaluated again at the same q, so nothing else changes;
    * ``s.g`` and ``s.G`` keep g(q) and G(q) after the call (G only when a constraint is
      closed), for a later position-level step;
    * a scheme whose impact law acts on another velocity (an impulse from a smooth velocity at
      mid-step) passes it as ``vfree`` and its reference velocity as ``v``; the impact log
      then reports G v before and G v_out after.
    """
    if tangent_impulse is not None:  # None: the branch is not compiled
        return friction_impulse(
            s, problem, n, m, q, v, vfree, e, v_out, p, approaching, tangent_impulse
        )
    g = s.g
    G = s.G
    _gap_of(problem, times, q, p, g)
    closed = False
    for i in range(m):
        if g[i] <= 0.0:
            closed = True
        elif not g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
            return STATUS_GAP_NOT_FINITE, 0, 0
    if forced is not None:  # None: the branch is not compiled
        for i in range(m):
            if forced[i] > 0.0:
                closed = True
    if not closed:
        return STATUS_OK, 0, 0
    _gradient_of(problem, times, q, p, G)
    if not all_finite(G, m, n):
        return STATUS_GAP_NOT_FINITE, 0, 0
    finite, offset = _offsets(s, problem, m, times, q, p, e, restitution)
    if not finite:
        return STATUS_GAP_NOT_FINITE, 0, 0
    rows = s.rows
    active = 0
    for i in range(m):
        take = g[i] <= 0.0
        if forced is not None:
            take = take or forced[i] > 0.0
        if take:
            if approaching:
                u = _start_before(s, problem, i)
                for j in range(n):
                    u += G[i, j] * v[j]
                if u <= 0.0:
                    rows[active] = i
                    active += 1
            else:
                rows[active] = i
                active += 1
    if active == 0:
        return STATUS_OK, 0, 0
    used = _active_impulse(
        s, problem, n, m, G, rows, active, vfree, v, e, v_out, restitution, offset
    )
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT, 0, 0
    if used < 0:
        return STATUS_CONTACT_SOLVE_FAILED, 0, 0
    for a in range(active):
        i = rows[a]
        before = _start_before(s, problem, i)
        after = _start_after(s, problem, i)
        first, last = _gradient_span(s, problem, n, active, a)
        for j in range(first, last + 1):
            before += G[i, j] * v[j]
            after += G[i, j] * v_out[j]
        s.normal_before[i] = before
        s.normal_after[i] = after
    return STATUS_OK, active, used


@scheme_function
def projection_status(used):
    """The status of a projection's result ``used`` (:func:`affine_projection_step` or a
    problem's ``project``): ``STATUS_OK`` for a count of iterations (>= 0),
    ``STATUS_DEGENERATE_GRADIENT`` for :data:`DEGENERATE_GRADIENT` (an active gradient
    vanishes), ``STATUS_PROJECTION_NOT_CONVERGED`` for any other negative count."""
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT
    if used < 0:
        return STATUS_PROJECTION_NOT_CONVERGED
    return STATUS_OK


@scheme_function
def closed_rows(s, problem, n, m, q, p):
    """List the constraints with g_i <= 0 (``s.g`` holds g(q)) in ``s.rows[:closed]``; evaluate
    G = grad g(q) into ``s.G`` when there is one. Returns (status, closed): status
    ``STATUS_GAP_NOT_FINITE`` for a NaN gap, or G not finite."""
    closed = 0
    for i in range(m):
        if s.g[i] <= 0.0:
            s.rows[closed] = i
            closed += 1
        elif not s.g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
            return STATUS_GAP_NOT_FINITE, 0
    if closed > 0:
        problem.gap_gradient(q, p, s.G)
        if not all_finite(s.G, m, n):
            return STATUS_GAP_NOT_FINITE, 0
    return STATUS_OK, closed


@scheme_function
def reaction_forces(s, n, k, b, a_free, a_out):
    """Contact forces at acceleration level: a_out = a_free + M^-1 G_A^T lambda with

        0 <= lambda  _|_  W lambda + b >= 0   on A = ``s.rows[:k]``,  W = G_A M^-1 G_A^T

    (``s.G`` holds G, ``s.L`` the factor of M, ``b`` (k) the right-hand side). For k = 1 the
    closed form (:func:`impactbench.core.contact.metric_row`), otherwise the Delassus matrix
    (:func:`impactbench.core.contact.delassus`) and the LCP warm-started from the last active
    set of the contact forces (:func:`impactbench.core.contact.solve_lcp_warm`, slot
    :data:`LCP_SLOT_ACCELERATION`); lambda is left in ``s.multipliers``.

    Returns
    -------
    status : int
        ``STATUS_OK``, ``STATUS_DEGENERATE_GRADIENT`` (an active gradient vanishes) or
        ``STATUS_CONTACT_SOLVE_FAILED`` (the LCP failed).
    iterations : int
        The LCP's count of bases (1 for the closed form).
    """
    ws = s.ws
    Y = ws[1]  # the rows M^-1 grad g_i, W and the spans of make_workspace's tuple
    W = ws[2]
    span = ws[19]
    P = s.multipliers
    if k == 1:  # closed form, inlined (solve_lcp_warm is a separately compiled call)
        inv_w = metric_row(n, s.G, s.rows[0], s.L, Y)
        if not inv_w > 0.0:
            return STATUS_DEGENERATE_GRADIENT, 0
        P[0] = max(0.0, -b[0] * inv_w)
        for j in range(n):
            a_out[j] = a_free[j] + P[0] * Y[0, j]
        return STATUS_OK, 1
    delassus(s.G, s.rows, k, s.L, n, Y, W, span)
    for a in range(k):
        if not (W[a, a] > 0.0 and 1.0 / W[a, a] < math.inf):
            return STATUS_DEGENERATE_GRADIENT, 0
    used = solve_lcp_warm(W, b, s.rows, k, P, ws, LCP_SLOT_ACCELERATION)
    if used < 0:
        return STATUS_CONTACT_SOLVE_FAILED, 0
    add_reactions(n, k, Y, P, span, a_free, a_out)
    return STATUS_OK, used


class Parameter(NamedTuple):
    """The range of a run-time parameter, declared in a scheme's ``run_time`` and checked by
    :class:`Scheme`'s constructor.

    A finite real in [low, high] (``low`` excluded when ``open_low``), or with ``integer`` a
    positive integer (in the int64 range of the loops). :meth:`check` raises a ValueError
    naming the parameter and the value.
    """

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    integer: bool = False

    def check(self, value: Any, name: str) -> float | int:
        """``value`` as a float within the range (an int with ``integer``), or ValueError."""
        if self.integer:
            return _checks.positive_int(value, name)
        x = _checks.finite_scalar(value, name)
        if (x > self.low if self.open_low else x >= self.low) and x <= self.high:
            return x
        low = f"{'>' if self.open_low else '>='} {self.low:g}"
        if self.high == math.inf:
            raise ValueError(f"{name} must be {low}, got {value!r}")
        interval = f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")


#: A positive real run-time parameter (a tolerance) and a positive integer one (a count).
POSITIVE = Parameter(0.0, open_low=True)
COUNT = Parameter(integer=True)


@kernel
def no_linear_force(p, out):
    """The ``stiffness_matrix`` or ``damping_matrix`` of a problem that declares none: zero
    (n, n)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0.0


def _start(s, problem, options, n, m, t0, h, q0, v0, p, e, par):
    for j in range(n):
        s.q[j] = q0[j]
        s.v[j] = v0[j]
    return STATUS_OK, 0, 0


def _commit(s, n):
    for j in range(n):
        s.q[j] = s.q_next[j]
        s.v[j] = s.v_next[j]


def _sample(s, n, q_out, v_out):
    for j in range(n):
        q_out[j] = s.q[j]
        v_out[j] = s.v[j]


class Scheme(TimeStepping):
    """Base class of a fixed-step scheme written on named state (see the module docstring).

    A subclass sets ``state`` and ``step`` (and ``run_time``, ``compile_time``, ``lead``,
    ``frictional_step``, ``stable_step_factor``, or its own ``start``, ``commit``, ``sample``
    and ``current`` as needed), and writes its ``__init__``, which passes the values of its
    declared run-time parameters on to this constructor by name (checked and set here) and
    sets the attributes that ``compile_time`` names.

    Parameters
    ----------
    **options
        The run-time parameters that ``run_time`` declares with a :class:`Parameter` (checked
        against it and set as attributes; one not given keeps its class attribute), then
        ``compiled``, ``log_capacity`` and ``specialised`` (:class:`impactbench.TimeStepping`).

    Attributes
    ----------
    state : dict
        Name -> shape (:data:`SHAPES`) of the scheme's variables; ``q`` and ``v`` included.
    run_time : dict or tuple of str
        Run-time parameters, read as ``par.<name>``: name -> :class:`Parameter` (a constructor
        argument, checked) or ``float`` (an attribute the scheme sets itself), or their names
        alone.
    compile_time : dict
        Compile-time options: name -> ``bool`` or ``int``; attributes, read as
        ``options.<name>``.
    lead : int
        Steps by which ``current`` is ahead of the last sample (1 for a two-step scheme whose
        current position is q^{k+1} when q^k is the last sample).
    linear_forces : bool
        Whether the scheme's functions read the constant K and C of the forces' linear part,
        ``problem.stiffness_matrix(p, K)`` and ``problem.damping_matrix(p, C)`` (K, C of shape
        ``("n", "n")``; zero where the problem declares none:
        :class:`impactbench.core.problem.ProblemKernels`). Default False.
    frictional_step : function or None
        The step on a frictional problem (docs/friction.md), with the parameters of ``step``:
        it runs on ``state`` plus :data:`impactbench.core.friction.FRICTION_STATE` (and passes
        ``s.tangent_impulse`` to :func:`velocity_impulse` for the Newton-Coulomb law). A scheme
        that declares it has a friction law (``friction_law``); None (default): a frictional
        problem is refused. The frictional loop requires n_constraints <= n_dof.
    stable_step_factor : float or None
        For a scheme whose smooth part is stable iff h <= c 2 / omega_max, that factor c: the
        default :meth:`step_limit` is c ``problem.stable_step``. None (default): no limit
        stated.
    failure_reasons : dict
        The message of each failure status: the driver's, and the friction law's
        (:data:`impactbench.core.friction.FRICTION_FAILURE_REASONS`); a scheme adds its own
        codes (>= 100).
    """

    state: ClassVar[dict[str, Any]] = {}
    run_time: ClassVar[dict[str, Any] | tuple[str, ...]] = ()
    compile_time: ClassVar[dict[str, type]] = {}
    lead: ClassVar[int] = 0
    linear_forces: ClassVar[bool] = False
    frictional_step: ClassVar[Callable | None] = None
    stable_step_factor: ClassVar[float | None] = None
    failure_reasons: ClassVar[dict[int, str]] = {**FAILURE_REASONS, **FRICTION_FAILURE_REASONS}
    start = staticmethod(_start)
    commit = staticmethod(_commit)
    sample = staticmethod(_sample)
    current = staticmethod(_sample)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.friction_law = cls.frictional_step is not None

    def __init__(self, **options: Any) -> None:
        declared = self.run_time if isinstance(self.run_time, dict) else {}
        for name, kind in declared.items():
            if isinstance(kind, Parameter) and name in options:
                setattr(self, name, kind.check(options.pop(name), name))
        super().__init__(**options)

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        """One step (module docstring); every scheme writes its own."""
        raise NotImplementedError

    def step_limit(self, problem: Problem) -> float | None:
        """``stable_step_factor`` times ``problem.stable_step`` (2 / omega_max), or None when
        either is None (:func:`impactbench.core.problem.declared_stable_step`)."""
        if self.stable_step_factor is None:
            return None
        stable = declared_stable_step(problem)
        return None if stable is None else self.stable_step_factor * stable

    def _loop_options(self) -> dict[str, Any]:
        values = {}
        for name, kind in self.compile_time.items():
            value = getattr(self, name)
            if type(value) is not kind:
                raise ValueError(f"option {name} must be of type {kind.__name__}, got {value!r}")
            values[name] = value
        if self.specialised:  # the build, not an option of the scheme (scheme_loop)
            values[SPECIALISED] = True
        return values

    def _method_vector(self) -> np.ndarray:
        return np.array([float(getattr(self, name)) for name in self.run_time])

    @classmethod
    def loop_scheme(
        cls, kernels: ProblemKernels, options: dict[str, Any]
    ) -> tuple[type[Scheme], dict[str, Any]]:
        """The scheme whose functions :func:`scheme_loop` compiles for these kernels and loop
        options, with the options that scheme takes: ``cls`` and ``options`` by default, on a
        frictional problem the scheme of its ``frictional_step`` (:func:`frictional_scheme`).
        A scheme whose options select other functions (``MoreauJean(implicit=True)``) returns
        them here, so that every loop template (the fixed-step and the adaptive one) runs them.
        On a problem with moving obstacles (``rheonomic``), the scheme with
        :data:`RHEONOMIC_STATE` (:func:`rheonomic_scheme`; a frictional one is refused: the
        friction law takes no moving obstacle yet)."""
        if kernels.rheonomic:
            if kernels.tangent_gradient is not None:
                raise ValueError(
                    f"{cls.__name__} has no friction law for moving obstacles: a frictional "
                    "rheonomic problem is not supported by the time-stepping schemes"
                )
            return rheonomic_scheme(cls), options
        if kernels.tangent_gradient is None or cls.frictional_step is None:
            return cls, options
        return frictional_scheme(cls), options

    @classmethod
    def derived_kernels(cls, problem: Kernels, n_constraints: int, compile: bool) -> dict:
        """Functions built from the problem's kernels that the scheme's functions call, by
        name -> function; they join ``problem`` as its further fields (none by default; e.g. a
        projection, :func:`impactbench.core.contact.make_metric_projection`)."""
        return {}

    @classmethod
    def _make_loop(
        cls,
        kernels: ProblemKernels,
        n_dof: int,
        n_constraints: int,
        compile: bool,
        **options: Any,
    ) -> Callable:
        return scheme_loop(cls, kernels, n_dof, n_constraints, compile, options)


class ProjectingScheme(Scheme):
    """A scheme that keeps its positions on K by the metric projection.

    Its functions call ``problem.project(y, n, m, p, tol, max_iter, M, L, x, g, G, ws)``: the
    projection of y onto K = {g >= 0} in the metric of M
    (:func:`impactbench.core.contact.make_metric_projection`, closed form for one affine
    constraint, Newton on the Lagrangian otherwise), whose tolerance and iteration limit are the
    run-time parameters ``projection_tol`` (> 0) and ``projection_max_iter`` (a positive
    integer): ``run_time`` declares them (a subclass adds its own to
    ``ProjectingScheme.run_time``).
    """

    run_time: ClassVar[dict[str, Any]] = {"projection_tol": POSITIVE, "projection_max_iter": COUNT}

    @classmethod
    def derived_kernels(cls, problem: Kernels, n_constraints: int, compile: bool) -> dict:
        """``project``: the metric projection onto K, built from the problem's kernels."""
        project = make_metric_projection(
            problem.gap,
            problem.gap_gradient,
            problem.affine_gap,
            n_constraints,
            compile,
            problem.diagonal_mass,
        )
        return {"project": project}


def scheme_loop(
    scheme: type[Scheme],
    kernels: ProblemKernels,
    n_dof: int,
    n_constraints: int,
    compile: bool,
    options: dict[str, Any],
    time_loop: Callable | None = None,
) -> Callable:
    """The driver's loop (:func:`impactbench.core.driver.make_loop`) for ``scheme`` on one
    problem's ``kernels`` with the compile-time ``options``. The scheme's functions see the
    problem as :class:`Kernels`, with the further fields ``gap_rate`` and ``gap_drift`` for a
    problem with moving obstacles (``rheonomic``), ``tangent_gradient``, ``friction`` and
    ``normal_restitution`` (default :func:`impactbench.core.friction.problem_restitution`) for a
    frictional problem (:class:`impactbench.core.problem.ProblemKernels`),
    ``stiffness_matrix`` and ``damping_matrix`` for a scheme that declares ``linear_forces``
    (the problem's kernels, or :func:`no_linear_force`), then those of
    :meth:`Scheme.derived_kernels`.

    Compiled, the loop takes the kernels as run-time values (first-class kernels,
    :func:`impactbench.core._jit.first_class_kernel`; the projection a scheme derives from
    them too): one loop per scheme, options, sizes and flags serves every problem. With the
    option :data:`SPECIALISED` (``TimeStepping(specialised=True)``), and for a scheme that
    declares ``linear_forces`` (K and C have no first-class form yet), the kernels are bound as
    compile-time constants and inlined instead: one loop per scheme and problem.
    ``time_loop``: the loop template (default: the fixed-step loop; see
    :func:`impactbench.core.driver.make_loop`).
    """
    scheme, options = scheme.loop_scheme(kernels, dict(options))
    # what the loop binds: the scheme's functions, the template, the kernels, sizes and options
    key = (scheme, time_loop, kernels, n_dof, n_constraints, tuple(sorted(options.items())))
    if compile and key in _SCHEME_LOOPS:
        return _SCHEME_LOOPS[key]
    if kernels.tangent_gradient is not None:
        check_friction_sizes(n_dof, n_constraints)
    specialised = options.pop(SPECIALISED, False)
    mass = mass_bindings(kernels, n_dof, compile)
    linear = scheme.linear_forces
    first_class = compile and not specialised and not linear
    if first_class:
        kernels = _first_class(kernels, mass)
    problem = Kernels(
        mass["mass_matrix"],
        kernels.forces,
        kernels.gap,
        kernels.gap_gradient,
        bool(kernels.constant_mass),
        bool(kernels.affine_gap),
        mass["DIAGONAL_MASS"],
        n_constraints == 1,
        bool(kernels.rheonomic),
    )
    further = {}
    if kernels.rheonomic:  # a moving obstacle: the time terms of its gap
        further.update(gap_rate=kernels.gap_rate, gap_drift=kernels.gap_drift)
    if kernels.tangent_gradient is not None:  # a frictional problem (docs/friction.md)
        further.update(
            tangent_gradient=kernels.tangent_gradient,
            friction=kernels.friction,
            normal_restitution=kernels.normal_restitution or problem_restitution,
        )
    if linear:  # K and C of the forces' linear part, zero where the problem declares none
        for name in ("stiffness_matrix", "damping_matrix"):
            declared = getattr(kernels, name)
            further[name] = no_linear_force if declared is None else declared
    further.update(scheme.derived_kernels(problem, n_constraints, compile))
    if further:
        problem = _kernels_with(tuple(further))(*problem, *further.values())
    layout = _layout(scheme)
    functions = {
        f"{name}_function": getattr(scheme, name)
        for name in ("start", "step", "commit", "sample", "current")
    }
    if compile:
        functions = {
            name: scheme_function(getattr(function, "py_func", function))
            for name, function in functions.items()
        }
    bindings = {
        **mass,
        **functions,
        # the driver sizes the projection's Hessian in the workspace by it (1 x 1 when affine)
        "AFFINE_GAP": bool(kernels.affine_gap),
        "OPTIONS": layout.options(**options),
    }
    if not first_class:
        bindings["PROBLEM"] = problem
    # numba finds the functions of a cached loop again by their module: not one run by exec
    cache = all(_importable(function) for function in functions.values())
    loop = make_loop(
        layout.functions,
        bindings,
        n_dof,
        n_constraints,
        compile,
        cache=cache,
        problem=problem if first_class else None,
        time_loop=time_loop,
    )
    if compile:
        _SCHEME_LOOPS[key] = loop
    return loop


#: The compiled loops of this process, by everything :func:`scheme_loop` binds into them: the
#: scheme class whose functions it compiles (after :meth:`Scheme.loop_scheme`), the loop
#: template, the problem's kernels, the sizes and the compile-time options.
_SCHEME_LOOPS: dict[tuple[Any, ...], Callable] = {}


#: The schemes of the frictional steps, by scheme class (made once per class).
_FRICTIONAL: dict[type, type] = {}


#: The state a scheme's loop adds on a problem with moving obstacles (:func:`rheonomic_scheme`):
#: the rates dg/dt before and after the impulse and the offsets of the impact law
#: (:func:`velocity_impulse`).
RHEONOMIC_STATE: dict[str, Any] = {"rate_before": "m", "rate_after": "m", "rate_offset": "m"}

#: The schemes of the steps with moving obstacles, by scheme class (made once per class).
_RHEONOMIC: dict[type, type] = {}


def rheonomic_scheme(scheme: type[Scheme]) -> type[Scheme]:
    """The scheme that runs ``scheme`` on a problem with moving obstacles (``rheonomic``): its
    functions on its state plus :data:`RHEONOMIC_STATE` (a scheme with a fixed obstacle keeps
    its layout); everything else is ``scheme``'s."""
    if scheme not in _RHEONOMIC:
        _RHEONOMIC[scheme] = type(
            f"{scheme.__name__}Rheonomic",
            (scheme,),
            {"state": {**scheme.state, **RHEONOMIC_STATE}, "__module__": scheme.__module__},
        )
    return _RHEONOMIC[scheme]


def frictional_scheme(scheme: type[Scheme]) -> type[Scheme]:
    """The scheme that runs ``scheme`` on a frictional problem: its ``frictional_step`` as the
    step, on its state plus :data:`impactbench.core.friction.FRICTION_STATE`; the rest
    (parameters, options, start, commit, sample, current) is ``scheme``'s."""
    if scheme not in _FRICTIONAL:
        _FRICTIONAL[scheme] = type(
            f"{scheme.__name__}Frictional",
            (scheme,),
            {
                "state": {**scheme.state, **FRICTION_STATE},
                "step": staticmethod(scheme.frictional_step),
                "__module__": scheme.__module__,
            },
        )
    return _FRICTIONAL[scheme]


#: The globals that :func:`bind_problem` binds in its copies of :func:`_bound` (each copy has
#: its own; never called here).
_FUNCTION = _PROBLEM = None
_N_DOF = 0


def _bound(*arguments):
    return _FUNCTION(_PROBLEM, _N_DOF, *arguments)


def bind_problem(function: Callable, kernels: ProblemKernels, n_dof: int) -> Callable:
    """``function(problem, n, *arguments)`` (a :func:`scheme_function`) as a compiled function
    of one problem, ``bound(*arguments)``, for a caller in Python (the event-driven method's
    free flight, :mod:`impactbench.core.events.free_flight`).

    ``problem`` is the problem's ``kernels`` as :class:`Kernels` (``mass_matrix`` the dense
    (n, n) kernel; ``diagonal_mass`` and ``single_constraint`` False; no further field, so a
    moving obstacle's gap is reached by :func:`gap_at` alone) and ``n`` is ``n_dof``:
    both compile-time constants, the kernels inlined. Compiled once per call (keep the result),
    cached on disk.
    """
    problem = Kernels(
        kernels.mass_matrix,
        kernels.forces,
        kernels.gap,
        kernels.gap_gradient,
        bool(kernels.constant_mass),
        bool(kernels.affine_gap),
        False,
        False,
        bool(kernels.rheonomic),
    )
    bindings = {"_FUNCTION": function, "_PROBLEM": problem, "_N_DOF": n_dof}
    return specialize(_bound, bindings, True)


def _first_class(kernels: ProblemKernels, mass: dict[str, Any]) -> ProblemKernels:
    """``kernels`` as first-class kernels (:func:`impactbench.core._jit.first_class_kernel`),
    the mass kernel in ``mass`` (``mass_matrix``) too."""
    if mass["DIAGONAL_MASS"]:
        mass["mass_matrix"] = first_class_kernel(kernels.mass_diagonal, "first row")
    else:
        mass["mass_matrix"] = first_class_kernel(kernels.mass_matrix, "matrix")
    if kernels.rheonomic:  # the geometric kernels take the time first
        geometric = dict(
            gap=first_class_kernel(kernels.gap, "timed vector"),
            gap_gradient=first_class_kernel(kernels.gap_gradient, "timed matrix"),
            gap_rate=first_class_kernel(kernels.gap_rate, "timed vector"),
            gap_drift=first_class_kernel(kernels.gap_drift, "forces"),
        )
    else:
        geometric = dict(
            gap=first_class_kernel(kernels.gap, "vector"),
            gap_gradient=first_class_kernel(kernels.gap_gradient, "matrix"),
        )
    frictional = {}
    if kernels.tangent_gradient is not None:
        frictional = dict(
            tangent_gradient=first_class_kernel(kernels.tangent_gradient, "matrix"),
            friction=first_class_kernel(kernels.friction, "pair"),
            normal_restitution=first_class_kernel(
                kernels.normal_restitution or problem_restitution, "vector"
            ),
        )
    return kernels._replace(
        forces=first_class_kernel(kernels.forces, "forces"),
        **geometric,
        **frictional,
    )


def _importable(function: Callable) -> bool:
    """Whether ``function`` (or the function a dispatcher compiles) is a global of a module
    loaded from a file."""
    function = getattr(function, "py_func", function)
    module = sys.modules.get(function.__module__)
    return getattr(module, "__file__", None) is not None and module.__dict__ is (
        function.__globals__
    )


#: The problem tuples with further fields, by their names.
_KERNELS: dict[tuple[str, ...], type] = {}


def _kernels_with(names: tuple[str, ...]) -> type:
    """:class:`Kernels` with the further fields ``names``."""
    if names not in _KERNELS:
        base = namedtuple("Kernels", (*Kernels._fields, *names))
        # a module attribute: pickled by name in the numba types of the loops' cache index
        name = "_".join(("Kernels", *names))
        made = type(name, (CompileTimeTuple, base), {"__slots__": (), "__module__": __name__})
        _KERNELS[names] = globals()[name] = made
    return _KERNELS[names]


#: Layouts by scheme class (generated once per class).
_LAYOUTS: dict[type, Any] = {}

_Layout = namedtuple("_Layout", "functions options")


def _rows_expression(constant: int, mass: int, constraints: int, dofs: int) -> str:
    """The row ``constant + mass MASS_ROWS + constraints N_CONSTRAINTS + dofs N_DOF``."""
    terms = [str(constant)]
    for count, name in ((mass, "MASS_ROWS"), (constraints, "N_CONSTRAINTS"), (dofs, "N_DOF")):
        if count:
            terms.append(f"{count} * {name}")
    return " + ".join(terms)


def _views(state: dict[str, Any], candidate: bool, work: bool) -> tuple[str, str]:
    """The expression of the named tuple of views ``s`` of the buffer ``X`` (and ``Z``), and
    the rows of ``X`` the state takes."""
    fields = []
    counts = [FIRST_SCHEME_ROW, 0, 0, 0]  # constant, MASS_ROWS, N_CONSTRAINTS, N_DOF rows
    for shape in state.values():
        row = _rows_expression(*counts)
        if shape in ("n", "m", "scalar"):
            width = {"n": "N_DOF", "m": "N_CONSTRAINTS", "scalar": "1"}[shape]
            fields.append(f"X[{row}, :{width}]")
            counts[0] += 1
            continue
        index = {"mass": 1, ("m", "n"): 2, ("n", "n"): 3}[shape]
        counts[index] += 1
        fields.append(f"matrix_rows(X, {row}, {_rows_expression(*counts)})")
    height = _rows_expression(counts[0] - FIRST_SCHEME_ROW, *counts[1:])
    if candidate:
        fields += [f"Z[{NEXT_Q}, :N_DOF]", f"Z[{NEXT_V}, :N_DOF]"]
    else:
        fields += ["None", "None"]
    fields += [f"X[{row}, :N_CONSTRAINTS]" for row in (IMPULSE, NORMAL_BEFORE, NORMAL_AFTER)]
    fields += [f"X[{row}, :1]" for row in (LAW_GAINS, LAW_LARGEST_GAIN)]
    fields += ["rows", "ws", f"ws[{LCP_SOLUTION}]"] if work else ["None"] * 3
    return f"State({', '.join(fields)})", height


_SOURCE = """
def rows(N_DOF, N_CONSTRAINTS, MASS_ROWS):
    return {height}


def start(t0, h, q0, v0, p, e, mp, X, rows, ws):
    return start_function(
        {start}, PROBLEM, OPTIONS, N_DOF, N_CONSTRAINTS, t0, h, q0, v0, p, e, {par}
    )


def step(k, t, t_next, h, p, e, mp, X, Z, rows, ws):
    return step_function(
        {step}, PROBLEM, OPTIONS, N_DOF, N_CONSTRAINTS, k, t, t_next, h, p, e, {par}
    )


def commit(X, Z):
    commit_function({other}, N_DOF)


def sample(X, Z, q_out, v_out):
    sample_function({other}, N_DOF, q_out, v_out)


def current(X, Z, q_out, v_out):
    current_function({other}, N_DOF, q_out, v_out)


def gaps(t, q, p, g):
    gap_at(PROBLEM, t, q, p, g)
"""


def _layout(scheme: type[Scheme]) -> Any:
    """The driver's functions for ``scheme`` (generated from its declarations: the views of
    its state in the buffer, its parameters read from ``mp``) and its options' tuple."""
    if scheme in _LAYOUTS:
        return _LAYOUTS[scheme]
    state = dict(scheme.state)
    for name, shape in state.items():
        if shape not in SHAPES:
            raise ValueError(f"{scheme.__name__}.state[{name!r}] must be one of {SHAPES}")
        if name in DRIVER_STATE:
            raise ValueError(f"{scheme.__name__}.state may not declare {name!r} (the driver's)")
    for name in ("q", "v"):
        if state.get(name) != "n":
            raise ValueError(f"{scheme.__name__}.state must declare {name!r} of shape 'n'")
    views, height = _views(state, True, True)
    par = ", ".join(f"mp[{index}]" for index in range(len(scheme.run_time)))
    source = _SOURCE.format(
        height=height,
        start=_views(state, False, True)[0],
        step=views,
        other=_views(state, True, False)[0],
        par=f"Parameters({par})",
    )
    namespace = {
        "__name__": __name__,
        "State": namedtuple("State", [*state, *DRIVER_STATE]),
        "Parameters": namedtuple("Parameters", scheme.run_time),
        "gap_at": gap_at,
    }
    made = generated_functions(source, namespace, __name__)
    options = type(
        "Options",
        (CompileTimeTuple, namedtuple("Options", tuple(scheme.compile_time))),
        {"__slots__": ()},
    )
    functions = LoopFunctions(
        start=made["start"],
        step=made["step"],
        commit=made["commit"],
        sample=made["sample"],
        current=made["current"],
        rows=made["rows"],
        lead=scheme.lead,
        gaps=made["gaps"],
    )
    _LAYOUTS[scheme] = _Layout(functions, options)
    return _LAYOUTS[scheme]
