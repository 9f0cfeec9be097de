"""Binding the event loop to a problem and a stepper; running it; its trajectory.

:func:`bind` copies the templates of :mod:`impactbench.core.events` with the problem's kernels,
sizes and a stepper bound (compiled with numba, or as plain Python: the same source).
:func:`make_engine` binds the compiled Runge-Kutta stepper (:mod:`impactbench.core.events.
stepping`) and caches the loop per (pair, sizes, constant mass, friction, moving obstacle):
compiled, it takes
the problem's kernels as run-time values (:mod:`impactbench.core.events.kernels`), so every
problem of those shares it and compiles only its kernels' entry points (the plain-Python loop
binds the kernels, per problem); :class:`PreparedEngine` holds it with
what the runs of one problem state share, :func:`simulate_compiled` runs it once;
:func:`trajectory` turns the output of either engine into a :class:`impactbench.Trajectory`.

How the compiled engine is compiled: helpers are typed with the non-literal types of their
arguments; those of rare paths (the resolution of a restart, the root search, projections, the
start of a segment, the contact part of the acceleration) are called functions compiled once; those
with one call site (the RK step, the dense-output preparation and check, the gap-crossing test, the
drift test, the step's acceptance, the restart, the end of the run, the steps of a restart's
resolution) are copied into their caller by numba; the small helpers of every step are inlined by
LLVM; the kernels are called through their entry points. numba links what a called function calls
into its library and optimises it again there, so called functions call few others (a called
restart would optimise the resolution and all it calls once more); and LLVM's cost grows faster
than a function's size (the resolution copied into the loop would cost more than the two apart).
The sizes are compile-time constants (one engine per pair, sizes and flags). Every function of the
loop takes the run's work arrays packed in a few blocks (:attr:`Buffers.packed`) and cuts its named
views with ``w = views(work)`` (:func:`~impactbench.core.events.buffers.packed_views`): a call of a
called helper passes a handful of arrays instead of the sixty of :class:`Work`. As plain Python
``work`` is the :class:`Work` itself and ``views`` returns it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from impactbench.core import _checks, compiled_rk
from impactbench.core._jit import specialize
from impactbench.core.dense import DeferredDense, DenseOutput, chebyshev_lobatto_nodes
from impactbench.core.divergence import state_bounds
from impactbench.core.entry import DirectCall
from impactbench.core.problem import Problem, timed_gradient
from impactbench.core.stall import kink, stall_reason
from impactbench.core.status_codes import (
    COUNTER_FORCE_EVALUATIONS,
    COUNTER_IMPACTS,
    COUNTER_LOGGED,
    COUNTER_SAMPLES,
    COUNTER_STATUS,
    COUNTER_STEPS,
    FAILURE_REASONS,
    STATUS_OK,
    STATUS_PAINLEVE_INCONSISTENT,
    STATUS_PAINLEVE_INDETERMINATE,
    STATUS_PROJECTION_NOT_CONVERGED,
)
from impactbench.core.trajectory import ImpactLog, Status, Trajectory

from . import coulomb, dynamics, location, loop, resolution, stepping
from . import kernels as first_class
from .buffers import (
    COUNTER_EVENTS,
    COUNTER_PIECES,
    COUNTER_SEGMENTS,
    INFO_CONTACT_DURATION,
    INFO_CONTACT_PHASES,
    INFO_CONTACT_TIME,
    INFO_FAILED_CONSTRAINT,
    INFO_FAILED_VALUE,
    INFO_HEAD,
    INFO_LAW_GAINS,
    INFO_LAW_LARGEST_GAIN,
    INFO_PROJECTIONS,
    INFO_REST_SPEED,
    INFO_STALL_START,
    INFO_ZENO_BEFORE,
    INFO_ZENO_SPACED,
    INFO_ZENO_TIME,
    INFO_ZENO_VELOCITY,
    STATUS_CONTACT_LCP_FAILED,
    STATUS_CONTACT_MATRIX_SINGULAR,
    STATUS_NO_PROGRESS,
    STATUS_OUTPUT_FULL,
    STATUS_PENETRATION,
    STATUS_STALLED,
    STATUS_STEP_TOO_SMALL,
    Buffers,
    Output,
    Run,
    Work,
    packed_views,
    unpacked,
)

#: Contact tolerance in units of the solver's error scale atol + rtol L.
CONTACT_TOLERANCE_FACTOR = 10.0

# (global name, template, how): inlined by LLVM (True), copied into the caller by numba ("ir"),
# or called (False); callees before their callers. "STEPPER" marks where the stepper is bound.
# A template given as a pair (frictionless, frictional) is chosen by the problem
# (impactbench.core.events.coulomb); None: not bound.
_TEMPLATES = (
    ("_free_acceleration", dynamics._free_acceleration, True),
    ("gauss_solve", (None, coulomb.gauss_solve), True),
    ("_difference_step", (None, coulomb._difference_step), True),
    ("_tangent_rows", (None, coulomb._tangent_rows), True),
    ("_tangent_rate", (None, coulomb._tangent_rate), True),
    ("_decode", (None, coulomb._decode), True),
    ("_contact_system", (None, coulomb._contact_system), "ir"),
    ("_contact_forces", (None, coulomb._contact_forces), "ir"),
    (
        "contact_acceleration",
        (dynamics._contact_acceleration, coulomb._contact_acceleration),
        False,
    ),
    ("acceleration", (dynamics.acceleration, coulomb.acceleration), True),
    ("rhs", dynamics.rhs, True),
    ("factor_constant_mass", dynamics.factor_constant_mass, False),
    ("STEPPER", None, None),
    ("friction_value", (location.no_friction_value, coulomb.friction_value), True),
    ("probe_friction", (location.no_friction_probe, coulomb.probe_friction), True),
    ("event_value", location.evaluate, True),  # inlined into the root search
    ("_brent_step", location._brent_step, True),
    ("root", location.brent, False),
    ("event_value", location.evaluate, False),  # called by the rare re-arming tests
    ("friction_event", (location.no_friction_event, coulomb.friction_event), False),
    ("gap_crossing", location.crossing, "ir"),
    ("probe_step", location.probe_step, "ir"),
    ("earliest_event", location.earliest_event, "ir"),
    ("name_failed_rows", resolution._name_failed_rows, True),
    ("_subtract_reactions", resolution._subtract_reactions, True),
    ("project_position", resolution._project_position, False),
    ("_add_penetrated", resolution._add_penetrated, True),
    ("project_admissible", resolution._project_admissible, False),
    ("_at_rest_tangentially", (None, coulomb._at_rest_tangentially), True),
    ("_add_row", (None, coulomb._add_row), True),
    ("project_velocity", (resolution._project_velocity, coulomb.project_velocity), False),
    ("acceleration_lcp", resolution._acceleration_lcp, False),
    ("impact_impulse", (resolution._frictionless_impulse, coulomb.impact_impulse), "ir"),
    ("record_law_energy", resolution._record_law_energy, True),
    ("record_relative_law_energy", resolution._record_relative_law_energy, True),
    ("impact_law", resolution._impact_law, "ir"),
    ("free_accelerations", resolution._free_accelerations, "ir"),
    ("_rest_contacts", (None, coulomb._rest_contacts), "ir"),
    ("_contact_couplings", (None, coulomb._contact_couplings), "ir"),
    ("_combination_system", (None, coulomb._combination_system), "ir"),
    ("_feasible", (None, coulomb._feasible), "ir"),
    ("_different_motions", (None, coulomb._different_motions), "ir"),
    ("_solve_combinations", (None, coulomb._solve_combinations), "ir"),
    ("decide_contacts", (resolution._decide_contacts, coulomb.decide_contacts), "ir"),
    ("closing", resolution._closing, "ir"),
    ("record_switch", resolution._record_switch, "ir"),
    ("project_closed", resolution._project_closed, "ir"),
    ("resolve", resolution.resolve, False),
    ("friction_drifted", (resolution.no_friction_drift, coulomb.friction_drifted), True),
    ("drifted", resolution.drifted, "ir"),
    ("diverged", loop._diverged, True),
    ("stalled", loop._stalled, True),
    ("add_sample", loop._add_sample, True),
    ("_contact_status", loop._contact_status, True),
    ("project_contacts", loop._project_contacts, False),
    ("restart", loop._restart, "ir"),
    ("advance", loop._advance, "ir"),
    ("locate", loop._locate, False),
    ("accept", loop._accept, "ir"),
    ("segment", loop._segment, "ir"),
    ("finish", loop._finish, "ir"),
)


def bind(
    kernels: dict[str, Any],
    stepper: Callable[[dict[str, Any], Callable], None],
    compile: bool,
    shapes: tuple[Any, ...] | None = None,
) -> Callable:
    """The event loop ``loop(run, out, work)`` with ``kernels`` (the problem's kernels and
    flags, ``N_DOF``, ``N_CONSTRAINTS``, ``FRICTION``, :func:`kernel_bindings`) bound, and the
    stepper that ``stepper(bindings, add)`` binds (``add(name, template, how)`` binds a
    template; callables may also be put in ``bindings`` directly). Compiled with numba
    (``_nrt=False``, cached on disk), ``work`` the packed work arrays (:attr:`Buffers.packed`)
    of :class:`Buffers` of ``shapes``; or plain Python, ``work`` the :class:`Work`."""
    bindings = dict(kernels)
    friction = bool(bindings["FRICTION"])
    if compile:
        views = packed_views(*shapes, friction=friction)
        bindings["views"] = specialize(views, {}, compile, inline=True, helper=True)
    else:
        bindings["views"] = unpacked

    def add(name: str, template: Callable, how: bool | str) -> None:
        bindings[name] = specialize(
            template, bindings, compile, inline=how is True, helper=True, ir_inline=how == "ir"
        )

    for name, template, how in _TEMPLATES:
        if name == "STEPPER":
            stepper(bindings, add)
        else:
            if isinstance(template, tuple):
                template = template[friction]
            if template is not None:  # None: a helper of the frictional templates only
                add(name, template, how)
    return specialize(loop.event_loop, bindings, compile, nrt=False)


def _rk_stepper(integrator: str, compile: bool) -> Callable[[dict[str, Any], Callable], None]:
    """The binder of the compiled Runge-Kutta pair ``integrator`` (see :func:`bind`)."""

    def bind_rk(bindings: dict[str, Any], add: Callable) -> None:
        n_stages, _, pair = compiled_rk.pair_bindings(integrator)
        pair["rhs"] = bindings["rhs"]
        attempt = specialize(compiled_rk._attempt, pair, compile, ir_inline=True)
        bindings["rk_initial_step"] = specialize(
            compiled_rk._initial_step, pair, compile, ir_inline=True
        )
        bindings["rk_step"] = specialize(
            compiled_rk._step, {**pair, "attempt": attempt}, compile, ir_inline=True
        )
        bindings["rk_dense_prepare"] = specialize(
            compiled_rk._dense_prepare, pair, compile, ir_inline=True
        )
        bindings["N_STAGES"] = n_stages
        bindings["dense_evaluate"] = specialize(
            compiled_rk._dense_evaluate, pair, compile, inline=True, helper=True
        )
        add("start_segment", stepping.start_segment, False)
        add("take_step", stepping.take_step, "ir")
        add("prepare_dense", stepping.prepare_dense, "ir")
        add("record_piece", stepping.record_piece, True)

    return bind_rk


def kernel_bindings(
    kernels: Any, n: int, m: int, constant_mass: bool, rheonomic: bool = False
) -> dict[str, Any]:
    """The names the templates read from a problem: its kernels, flags and sizes; for a
    frictional problem (``kernels.tangent_gradient`` not None) its friction kernels and the
    rows of the friction scratch (:func:`impactbench.core.events.dynamics.friction_layout`).

    ``kernels``' ``gap`` and ``gap_gradient`` take the time first (:func:`timed_kernels`), and
    it gives ``gap_rate`` and ``gap_drift`` (stand-ins for a scleronomic problem); ``rheonomic``
    binds ``RHEONOMIC``, under which the templates add the obstacle's terms r and c."""
    names = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "gap_rate": kernels.gap_rate,
        "gap_drift": kernels.gap_drift,
        "CONSTANT_MASS": constant_mass,
        "RHEONOMIC": bool(rheonomic),
        "N_DOF": n,
        "N_CONSTRAINTS": m,
        "FRICTION": kernels.tangent_gradient is not None,
    }
    if names["FRICTION"]:
        names.update(tangent_gradient=kernels.tangent_gradient, friction=kernels.friction)
        names.update(dynamics.friction_layout(n, m))
    return names


def timed_kernels(kernels: Any) -> SimpleNamespace:
    """A problem's ``kernels`` (``problem.kernels()``) as the plain-Python engine binds them:
    ``gap(t, q, p, out)`` and ``gap_gradient(t, q, p, out)``, which drop t for a scleronomic
    problem, and ``gap_rate``, ``gap_drift`` (stand-ins that do nothing for a scleronomic
    problem: :mod:`impactbench.core.events.kernels`)."""
    names = {field: getattr(kernels, field) for field in kernels._fields}
    if not kernels.rheonomic:
        gap, gap_gradient = kernels.gap, kernels.gap_gradient

        def timed_gap(t, q, p, out):
            gap(q, p, out)

        def timed_gap_gradient(t, q, p, out):
            gap_gradient(q, p, out)

        names.update(
            gap=timed_gap,
            gap_gradient=timed_gap_gradient,
            gap_rate=first_class.no_rate,
            gap_drift=first_class.no_drift,
        )
    return SimpleNamespace(**names)


_ENGINES: dict[tuple[Any, ...], Callable] = {}


def make_engine(problem: Problem, integrator: str, compile: bool = True) -> Callable:
    """The event loop for the kernels of ``problem`` and the RK pair ``integrator``.

    Compiled (``_nrt=False``, cached on disk), the loop takes the problem's kernels as
    run-time values in its run's ``p`` (:func:`run_kernels`): one loop per pair, sizes,
    constant mass, friction and moving obstacle (``rheonomic``) serves every problem of them.
    Plain Python (``compile=False``), the kernels are bound into a copy of the templates per
    problem."""
    kernels = problem.kernels()
    if kernels is None:
        raise ValueError(f"problem must have compiled kernels, got {problem.name!r} without")
    if integrator not in compiled_rk.METHODS:
        raise ValueError(f"integrator must be one of {compiled_rk.METHODS}, got {integrator!r}")
    n, m = int(problem.n_dof), int(problem.n_constraints)
    constant_mass = bool(kernels.constant_mass)
    frictional = kernels.tangent_gradient is not None
    rheonomic = bool(kernels.rheonomic)
    if compile:
        key: tuple[Any, ...] = (integrator, n, m, constant_mass, frictional, rheonomic)
    else:
        key = (kernels, n, m, integrator)
    if key not in _ENGINES:
        if compile:
            calls = first_class_calls(frictional, rheonomic)
        else:
            calls = timed_kernels(kernels)
        names = kernel_bindings(calls, n, m, constant_mass, rheonomic)
        shapes = buffer_shapes(integrator, n, m)
        _ENGINES[key] = bind(names, _rk_stepper(integrator, compile), compile, shapes)
    return _ENGINES[key]


def first_class_calls(frictional: bool, rheonomic: bool = False) -> SimpleNamespace:
    """The kernels a compiled engine binds: the calls of :mod:`impactbench.core.events.kernels`
    (each the kernel carried in the run's ``p``; the timed ones when ``rheonomic``), inlined
    by LLVM; the friction kernels None unless ``frictional``."""
    source = first_class.TIMED_CALLS if rheonomic else first_class.CALLS
    calls = {
        name: specialize(call, {}, True, inline=True, helper=True) for name, call in source.items()
    }
    if not frictional:
        calls.update(tangent_gradient=None, friction=None)
    return SimpleNamespace(**calls)


def run_kernels(problem: Problem, parameters: np.ndarray, compile: bool) -> Any:
    """The run's ``p`` of the engine of :func:`make_engine`: the kernel parameters with the
    problem's first-class kernels (:func:`impactbench.core.events.kernels.engine_kernels`)
    when ``compile``, else the parameters alone."""
    if not compile:
        return parameters
    return (parameters, first_class.engine_kernels(problem.kernels()))


def buffer_shapes(integrator: str, n: int, m: int) -> tuple[Any, ...]:
    """The arguments of :class:`Buffers` but the capacity for the compiled pair ``integrator``:
    its stage array's and dense output's shapes, n, m."""
    stages = compiled_rk.pair_bindings(integrator)[0] + 1 + 3 * (integrator == "DOP853") + 1
    dense = compiled_rk.RungeKuttaIntegrator.dense_buffer(2 * n).shape
    return ((stages, 2 * n), dense, n, m)


def run_settings(
    problem: Problem,
    t_end: float,
    rtol: float,
    atol: float,
    max_step: float,
    output_every: int,
    rest_velocity: float,
    min_impact_interval: float,
) -> Run:
    """The :class:`Run` of a problem and validated settings (floats and ints, as the compiled
    call needs them)."""
    t0 = float(problem.t0)
    q0 = np.array(problem.q0, dtype=float)
    p = np.array(problem.kernel_parameters(), dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"kernel_parameters() must be a 1-D array, got shape {p.shape}")
    length = max(1.0, *map(abs, q0.tolist()))
    return Run(
        t0, float(t_end), p, float(problem.restitution), float(rtol), float(atol),
        float(max_step), int(output_every), float(length), float(rest_velocity),
        float(min_impact_interval), float(min_impact_interval * (t_end - t0)),
        CONTACT_TOLERANCE_FACTOR * (float(atol) + float(rtol) * length),
    )  # fmt: skip


def start_state(problem: Problem, run: Run, out: Output, w: Work) -> None:
    """The initial state (q0, v0) into ``w.y``, the state's bounds into ``out.growth``."""
    out.growth[:] = state_bounds(problem, run.t_end)
    n = int(problem.n_dof)
    w.y[:n] = np.asarray(problem.q0, dtype=float)
    w.y[n:] = np.asarray(problem.v0, dtype=float)


#: Runs (t_end, output_every) a :class:`PreparedEngine` keeps: one beyond them forgets the others.
MAX_RUNS = 64

#: The event loops' calls without numba's dispatch (fixed argument types).
_DIRECT_CALLS: dict[Callable, DirectCall] = {}

#: The buffers of finished runs by (pair, n, m, friction, output capacity), taken by the next
#: run of those sizes (list.pop and list.append are atomic: concurrent runs take their own set).
_FREE_BUFFERS: dict[tuple[str, int, int, int], list[Buffers]] = {}


def simulate_compiled(
    problem: Problem,
    t_end: float,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    integrator: str = "DOP853",
    output_every: int = 1,
    max_step: float = math.inf,
    rest_velocity: float = 1e-6,
    min_impact_interval: float = 1e-12,
    compile: bool = True,
    capacity: int = 4096,
    dense_output: bool = False,
) -> Trajectory:
    """Run the compiled event-driven engine from the problem's initial state to ``t_end``.

    Parameters
    ----------
    problem : Problem
        A problem with compiled kernels (``problem.kernels()`` not None).
    t_end : float
        Final time, > ``problem.t0``.
    rtol, atol : float
        Solver tolerances (``rtol >= 100 eps``, ``atol > 0``), as ``EventDriven``.
    integrator : {"RK45", "DOP853"}
        The Runge-Kutta pair (scipy-identical, :mod:`impactbench.core.compiled_rk`).
    output_every : int
        Keep every ``output_every``-th accepted step (events and the final state always).
    max_step : float
        Largest step size (inf allowed).
    rest_velocity, min_impact_interval : float
        The accumulation (Zeno) thresholds of ``EventDriven``.
    compile : bool
        numba (cached on disk) or the same source as plain Python.
    capacity : int
        Initial number of output samples (and of pieces of the dense output); the run is
        repeated with twice the capacity when the output fills up.
    dense_output : bool
        Keep the pair's interpolant of every accepted step, cut at the events, as
        ``Trajectory.dense`` (:func:`dense_output`).

    Returns
    -------
    Trajectory
        As ``EventDriven``'s (status ZENO_HANDLED, OK or FAILED with the reason; the samples up
        to a failure are kept, and so is the dense output); ``stats`` also has ``events``,
        ``t_stop``, ``state_stop``, ``status_code`` (:mod:`impactbench.core.status_codes`) and
        ``growth`` (the state's bounds, :func:`impactbench.core.divergence.state_bounds`).
    """
    if problem.kernels() is None:
        raise ValueError(f"problem must have compiled kernels, got {problem.name!r} without")
    t0 = float(problem.t0)
    t_end = _checks.finite_scalar(t_end, "t_end")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0!r}, got {t_end!r}")
    rtol = _checks.positive_scalar(rtol, "rtol")
    if rtol < compiled_rk.RTOL_FLOOR:
        raise ValueError(f"rtol must be >= 100 eps = {compiled_rk.RTOL_FLOOR:.3g}, got {rtol!r}")
    atol = _checks.positive_scalar(atol, "atol")
    if not (isinstance(output_every, (int, np.integer)) and output_every >= 1):
        raise ValueError(f"output_every must be an integer >= 1, got {output_every!r}")
    if not float(max_step) > 0.0:
        raise ValueError(f"max_step must be > 0 (inf allowed), got {max_step!r}")
    rest_velocity = _checks.in_interval(rest_velocity, "rest_velocity", 0.0, 1.0)
    min_impact_interval = _checks.in_interval(min_impact_interval, "min_impact_interval", 0.0, 1.0)
    if not (isinstance(capacity, (int, np.integer)) and capacity >= 2):
        raise ValueError(f"capacity must be an integer >= 2, got {capacity!r}")
    name = f"CompiledEventDriven(integrator={integrator}, rtol={rtol:g}, atol={atol:g})"
    engine = PreparedEngine(
        problem, rtol, atol, integrator, max_step, rest_velocity, min_impact_interval, compile,
        name, bool(dense_output),
    )  # fmt: skip
    result = engine.run(problem, t_end, output_every, int(capacity))
    if isinstance(result.dense, DeferredDense):
        result.dense = result.dense.build()
    return result


class PreparedEngine:
    """The compiled event loop on one problem and what its runs read that depends on neither
    ``t_end`` nor ``output_every``, prepared once for many runs (kept by the values of the
    ``EventDriven`` instance and of the problem's checked state,
    :func:`impactbench.core.snapshot.keep`: it holds copies of the problem's arrays only);
    the :class:`Run` and the initial float buffer (initial state, the state's bounds) of each
    ``(t_end, output_every)``, kept at its first run (at most ``MAX_RUNS``), with the output
    capacity its last run needed: a later run of it starts there, so that it integrates once
    (a run whose output fills up is repeated with twice the room).

    Parameters are those of :func:`simulate_compiled`, validated; ``name`` the trajectories'
    ``method``; ``dense`` keep the run's dense output (``dense_output`` of
    :func:`simulate_compiled`). The loop copies the initial state into its work arrays and
    reads the kernel parameters only (the kernel contract): one copy of each serves every run.

    Raises
    ------
    ValueError
        If ``kernel_parameters()`` is not a 1-D array.
    """

    def __init__(
        self,
        problem: Problem,
        rtol: float,
        atol: float,
        integrator: str,
        max_step: float,
        rest_velocity: float,
        min_impact_interval: float,
        compile: bool,
        name: str,
        dense: bool = False,
    ) -> None:
        #: the run's settings but t_end, every and impact_interval (set by each run's Run)
        base = run_settings(
            problem, math.inf, rtol, atol, max_step, 1, rest_velocity, min_impact_interval
        )
        self.base = base._replace(p=run_kernels(problem, base.p, compile))
        loop_function = make_engine(problem, integrator, compile)
        self.call = _DIRECT_CALLS.get(loop_function)
        if self.call is None:
            self.call = _DIRECT_CALLS.setdefault(loop_function, DirectCall(loop_function))
        n, m = int(problem.n_dof), int(problem.n_constraints)
        self.friction = bool(problem.has_friction)
        self.key = (integrator, n, m, self.friction)
        self.shapes = buffer_shapes(integrator, n, m)
        self.compile = compile
        self.y0 = np.concatenate(
            (np.asarray(problem.q0, dtype=float), np.asarray(problem.v0, dtype=float))
        )
        self.name = name
        self.integrator = integrator
        self.dense = bool(dense)
        #: the Run and the fresh float buffer (:meth:`Buffers.image`) of each (t_end, every)
        self.runs: dict[tuple[Any, Any], tuple[Run, np.ndarray]] = {}
        #: the output capacity the last run of each (t_end, every) needed
        self.capacities: dict[tuple[Any, Any], int] = {}

    def run(
        self, problem: Problem, t_end: float, output_every: int, capacity: int = 4096
    ) -> Trajectory:
        """A run of ``problem`` (the one prepared, in the same state) to ``t_end`` keeping every
        ``output_every``-th accepted step, with room for ``capacity`` samples at first (see
        :func:`simulate_compiled`)."""
        kept = self.runs.get((t_end, output_every))
        if kept is None:
            t0, min_impact_interval = self.base.t0, self.base.min_impact_interval
            run = self.base._replace(
                t_end=float(t_end),
                every=int(output_every),
                impact_interval=float(min_impact_interval * (t_end - t0)),
            )
            # the float buffer with the initial state and the state's bounds, set by one copy
            buffers = Buffers(*self.shapes, 2, friction=self.friction)
            image = buffers.image(self.y0, state_bounds(problem, run.t_end))
            kept = (run, image)
            if len(self.runs) >= MAX_RUNS:
                self.runs.clear()
            self.runs[t_end, output_every] = kept
        run, image = kept
        capacity = max(capacity, self.capacities.get((t_end, output_every), capacity))
        integration_time = 0.0
        while True:
            key = (*self.key, capacity, self.dense)
            free = _FREE_BUFFERS.get(key)
            if free is None:
                free = _FREE_BUFFERS.setdefault(key, [])
            try:
                buffers = free.pop()
            except IndexError:
                pieces = capacity if self.dense else 0
                buffers = Buffers(*self.shapes, capacity, friction=self.friction, pieces=pieces)
            out, w = buffers.fresh(image)
            work = buffers.packed if self.compile else w
            call = self.call.entry or self.call  # the entry point once selected
            start = time.perf_counter()
            call(run, out, work)
            integration_time += time.perf_counter() - start
            if out.counters[COUNTER_STATUS] != STATUS_OUTPUT_FULL:
                break
            free.append(buffers)
            capacity *= 2
        if len(self.capacities) >= MAX_RUNS:
            self.capacities.clear()
        self.capacities[t_end, output_every] = capacity
        result = trajectory(problem, run, out, self.name)
        result.stats["integration_time"] = integration_time
        if self.dense:
            result.dense = deferred_dense_output(self.integrator, out, result)
        free.append(buffers)  # every array the trajectory keeps is a copy
        return result


def deferred_dense_output(integrator: str, out: Output, result: Trajectory) -> DeferredDense:
    """The dense output of a compiled run (:func:`dense_output`), built when asked: a copy of
    the pieces in ``out`` (whose buffers later runs reuse), converted after the run's clock
    stopped (:class:`impactbench.core.dense.DeferredDense`)."""
    k = int(out.counters[COUNTER_PIECES])
    piece_t, piece_y, piece_c = (a[:k].copy() for a in (out.piece_t, out.piece_y, out.piece_c))
    final_state = out.state[1:].copy()
    return DeferredDense(
        lambda: dense_output(integrator, piece_t, piece_y, piece_c, final_state, result)
    )


def dense_output(
    integrator: str,
    piece_t: np.ndarray,
    piece_y: np.ndarray,
    piece_c: np.ndarray,
    final_state: np.ndarray,
    result: Trajectory,
) -> DenseOutput | None:
    """The dense output of a compiled run from its k pieces (None without a piece).

    Piece i is the interpolant of the pair ``integrator`` on its accepted step [t_old,
    t_old + h] (``piece_t[i] = (t_old, h, t_stop)``, shape (k, 3); ``piece_y[i]`` its end states,
    shape (k, 2, 2 n); ``piece_c[i]`` its interpolation coefficients;
    :func:`impactbench.core.compiled_rk._dense_evaluate`, the polynomial the run's event
    location evaluated), restricted to [t_old, t_stop] (t_stop < t_old + h where the step
    was cut at an event) and stored at the ``DENSE_DEGREE + 1`` Chebyshev-Lobatto nodes of that
    interval (:mod:`impactbench.core.dense`: exact up to round-off), its end nodes the run's
    states (the state after a restart or a projection at its start, the step's end or the
    located event at its end); the last node is ``final_state`` (shape (2 n,)) for a run that
    reached t_end (projected onto the closed contacts), the impacts those of ``result``'s log,
    as on the scipy path (:class:`impactbench.core.events.plain.PlainRun`).
    """
    k = piece_t.shape[0]
    if k == 0:
        return None
    t_old, h, t_stop = piece_t[:, 0], piece_t[:, 1], piece_t[:, 2]
    nodes, _ = chebyshev_lobatto_nodes(compiled_rk.DENSE_DEGREE[integrator])
    times = t_old[:, None] + (t_stop - t_old)[:, None] * nodes[None, :]
    times[:, -1] = t_stop
    x = (times - t_old[:, None]) / h[:, None]
    y_start, y_end = piece_y[:, 0], piece_y[:, 1]
    values = compiled_rk.dense_values(integrator, x, h, y_start, piece_c)
    values[:, 0] = y_start
    values[:, -1] = y_end
    if result.status is not Status.FAILED:
        values[-1, -1] = final_state
    breaks = np.append(t_old, t_stop[-1])
    impacts = np.unique(result.impacts.t)
    return DenseOutput(breaks, values, impacts[impacts <= breaks[-1]])


def trajectory(
    problem: Problem, run: Run, out: Output, name: str, failure: str | None = None
) -> Trajectory:
    """The trajectory of a finished (or stopped) run from its output; ``failure`` the reason of
    a run stopped by an exception."""
    counts = out.counters.tolist()
    status = counts[COUNTER_STATUS]
    slots = out.info[:INFO_HEAD].tolist()
    m = int(problem.n_constraints)
    t_stop = float(out.state[0])
    impacts = ImpactLog.from_buffers(
        out.log_t, out.log_i, out.log_u, counts[COUNTER_LOGGED], counts[COUNTER_IMPACTS]
    )
    zeno_time = None if math.isnan(slots[INFO_ZENO_TIME]) else slots[INFO_ZENO_TIME]
    contact_time = None if math.isnan(slots[INFO_CONTACT_TIME]) else slots[INFO_CONTACT_TIME]
    if failure is not None or status != STATUS_OK:
        run_status = Status.FAILED
        message = failure or _failure_message(status, t_stop, out.info, m)
        if failure is None and status == STATUS_STALLED:
            message = _stall_message(problem, run, out)
    elif zeno_time is not None:
        run_status = Status.ZENO_HANDLED
        message = (
            f"{_zeno_message(out.info, m, run)}; reached t_end={t_stop!r} with "
            f"{impacts.total} impacts"
        )
    else:
        run_status = Status.OK
        message = f"reached t_end={t_stop!r} with {impacts.total} impacts"
        if contact_time is not None:
            message += f"; persistent contact from t={contact_time!r}"
    count = counts[COUNTER_SAMPLES]
    stats = _stats(run, out, counts, slots, impacts.total, zeno_time, contact_time)
    # t, q, v, impacts, status, message, stats, method, problem, h (by position: faster)
    return Trajectory(
        out.t[:count].copy(), out.q[:count].copy(), out.v[:count].copy(), impacts, run_status,
        message, stats, name, problem.name, None,
    )  # fmt: skip


def _stats(
    run: Run,
    out: Output,
    counts: list[int],
    slots: list[float],
    impacts: int,
    zeno_time: float | None,
    contact_time: float | None,
) -> dict[str, Any]:
    """The trajectory's stats; ``counts`` and ``slots`` the counters and head of ``info``."""
    return {
        "steps": counts[COUNTER_STEPS],
        "force_evaluations": counts[COUNTER_FORCE_EVALUATIONS],
        "impacts": impacts,
        "segments": counts[COUNTER_SEGMENTS],
        "projections": int(slots[INFO_PROJECTIONS]),
        "rest_velocity": run.rest_velocity,
        "min_impact_interval": run.min_impact_interval,
        "rest_speed": None if zeno_time is None else slots[INFO_REST_SPEED],
        "impact_interval": run.impact_interval,
        "contact_tolerance": run.tolerance,
        "length_scale": run.length,
        "zeno_time": zeno_time,
        "contact_time": contact_time,
        "contact_phases": int(slots[INFO_CONTACT_PHASES]),
        "contact_duration": slots[INFO_CONTACT_DURATION],
        "events": counts[COUNTER_EVENTS],
        # the impact law's energy record (impactbench.core.events.resolution._record_law_energy)
        "energy_creating_impacts": int(slots[INFO_LAW_GAINS]),
        "largest_impact_energy_gain": slots[INFO_LAW_LARGEST_GAIN],
        "t_stop": float(out.state[0]),
        "state_stop": out.state[1:].copy(),
        "status_code": counts[COUNTER_STATUS],
        "growth": out.growth.copy(),
    }


def _failure_message(status: int, t: float, info: np.ndarray, m: int) -> str:
    """The failure's reason, with the time."""
    named = info[INFO_HEAD + 2 * m : INFO_HEAD + 3 * m]
    rows = np.flatnonzero(~np.isnan(named))
    reasons = {
        STATUS_STEP_TOO_SMALL: "the RK step size fell below the spacing of floats near t",
        STATUS_NO_PROGRESS: "events repeat without progress",
        STATUS_PENETRATION: (
            f"run ended inside the obstacle: gap {int(info[INFO_FAILED_CONSTRAINT])} = "
            f"{info[INFO_FAILED_VALUE]:.3g} < -2 x contact tolerance"
        ),
        STATUS_OUTPUT_FULL: "output buffer full",
        STATUS_CONTACT_MATRIX_SINGULAR: "singular contact (Delassus) matrix of the closed contacts",
        STATUS_CONTACT_LCP_FAILED: f"contact LCP failed on constraints {rows.tolist()}",
        **FAILURE_REASONS,
    }
    if status in (STATUS_PAINLEVE_INCONSISTENT, STATUS_PAINLEVE_INDETERMINATE):
        reasons[status] = (
            f"{FAILURE_REASONS[status]} on contacts {rows.tolist()} (tangential velocities "
            f"{named[rows].tolist()}; {int(info[INFO_FAILED_VALUE])} solutions)"
        )
    if status == STATUS_PROJECTION_NOT_CONVERGED:
        reasons[status] = (
            f"projection onto the contact manifold of constraints {rows.tolist()} did not "
            f"converge (gap {named[rows].tolist()})"
        )
    return f"{reasons.get(status, f'status {status}')} at t={t!r}"


def _stall_message(problem: Problem, run: Run, out: Output) -> str:
    """The reason of a stalled run (:mod:`impactbench.core.stall`): its last block's advance
    and a kink of a gap at the state where it stopped, if any, with the time."""
    t_stop = float(out.state[0])
    n = int(problem.n_dof)
    q, v = out.state[1 : 1 + n].copy(), out.state[1 + n :].copy()
    reason = stall_reason(float(out.info[INFO_STALL_START]), t_stop)
    if problem.n_constraints > 0:
        reason += kink(lambda x: timed_gradient(problem, t_stop, x), q, v, run.length)
    return f"{reason} at t={t_stop!r}"


def _zeno_message(info: np.ndarray, m: int, run: Run) -> str:
    """Why and where an accumulation was cut, from the slots of ``info``."""
    rows = [i for i in range(m) if info[INFO_HEAD + i] == 1.0]
    if info[INFO_ZENO_SPACED]:
        why = (
            f"impacts closer than {run.impact_interval:.3g} "
            f"(min_impact_interval={run.min_impact_interval:g} x (t_end - t0))"
        )
    else:
        why = (
            f"rebound normal velocity {info[INFO_ZENO_VELOCITY]:.3g} below the rest speed "
            f"{info[INFO_REST_SPEED]:.3g} (rest_velocity={run.rest_velocity:g} x "
            f"sqrt(2 |g''| |grad g| L), L={run.length:g})"
        )
    return (
        f"accumulation of impacts on constraint(s) {rows} cut at "
        f"t={float(info[INFO_ZENO_TIME])!r} (impact normal velocity "
        f"{info[INFO_ZENO_BEFORE]:.3g}): {why}; switched to persistent contact"
    )
