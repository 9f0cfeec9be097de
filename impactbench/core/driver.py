"""The one time loop of the fixed-step schemes, and the contract a scheme meets to run in it.

The driver (:func:`_time_loop`) owns everything that is not the scheme: the work buffers
(allocated once, in Python, before the loop), output sampling and decimation, the finite check
of every new state and its bounds (:mod:`impactbench.core.divergence`: every ``CHECK_EVERY``
steps and at the last), the impact log, the counters and the statuses, and the state reported
at the end or at a failure. A scheme supplies five small functions and its buffer layout
(:class:`Scheme`); they are bound per problem, with the problem's kernels and the scheme's
compile-time options, by :func:`make_loop` and inlined by numba into one compiled loop (the same
source runs as plain Python with ``compile=False``). A scheme written on
:mod:`impactbench.core.scheme` (named state, typed options, the shared velocity impulse) has these
functions and its layout generated from its declarations; the rest of this docstring is the
contract between the loop and those functions, and the form a scheme written directly on the
driver takes.

Buffers. ``X`` is one float array of shape (FIRST_SCHEME_ROW + rows(n, m), max(n, m)); the
driver reads its first rows:

* ``X[IMPULSE, :m]``: the impulse (or projection multiplier) of each constraint on a step with
  contact, 0 where the constraint took none;
* ``X[NORMAL_BEFORE, :m]``, ``X[NORMAL_AFTER, :m]``: the normal velocities logged for each
  constraint with a positive impulse.
* ``X[LAW_GAINS, 0]``, ``X[LAW_LARGEST_GAIN, 0]``: the impact law's energy record, written
  by a law that checks its energy balance (the Newton-Coulomb law,
  :func:`impactbench.core.friction.friction_impulse`): the number of impacts whose law created
  kinetic energy and the largest energy created; read after the run (:func:`make_loop`'s
  ``law``).

The scheme's own rows start at ``FIRST_SCHEME_ROW``. ``Z`` (2, n) holds the candidate new state,
``Z[NEXT_Q]`` and ``Z[NEXT_V]``, checked for finiteness by the driver before the scheme commits
it (so that a failure reports the last finite state). ``rows`` (int64, max(m, 1)) and ``ws``
(:func:`impactbench.core.contact.make_workspace`) complete the work space.

Four compilation choices keep the driver as fast as a hand-written loop per scheme
(``benchmarks/loops.py`` times the loops):

* the loop is compiled with numba's reference counting switched off (``_nrt=False``): nothing
  in it allocates (the buffers are allocated by :func:`make_loop`'s wrapper), and every array
  passed to an inlined scheme function, and every slice of it, would otherwise be
  reference-counted at each step, which costs more than a small step itself;
* ``X`` is seen through :func:`impactbench.core._jit.constant_shape_view` (plain Python: a
  reshape), whose shape and strides are compile-time constants: slices of it at constant
  offsets are then provably disjoint for LLVM, which keeps values in registers across the
  stores of a step (not so with the argument's run-time strides, or with ``reshape``);
* ``Z`` is an array on the loop's stack (:func:`impactbench.core._jit.stack_array`; plain Python:
  zeros): LLVM promotes it to registers, so the candidate state costs no stores;
* the matrices a scheme keeps in ``X`` (M, its factor, G) are taken as
  ``matrix_rows(X, start, stop)``: ``X[start:stop]``, a C-contiguous array, when the rows of
  ``X`` are n wide (n >= m) and n >= ``WHOLE_ROWS_FROM``, ``X[start:stop, :n]`` otherwise.
  numba types a slice of columns as of any layout, whose run-time inner stride keeps LLVM from
  vectorising the loops over a row; with a row or two there is nothing to vectorise, and the
  C-contiguous blocks are slower there.

Problem kernels as run-time values. A scheme written on :mod:`impactbench.core.scheme` gets
the problem's kernels as first-class values (:func:`impactbench.core._jit.first_class_kernel`:
each kernel compiled once into a C entry point, called through its address), in the tuple
``PROBLEM`` that :func:`make_loop` passes to the loop at run time (``problem``), at the end of
the tuple ``sizes`` below: the loop's machine code then depends on the scheme, its options, the
sizes and the problem's flags (``constant_mass``, ``affine_gap``, diagonal M, one constraint),
not on its kernels, and every problem with the same ones runs the same compiled loop. An
indirect call costs a little per kernel call over inlined kernels (``benchmarks/loops.py``
times both, the inlined ones with ``--specialised``); ``TimeStepping(specialised=True)`` binds
the kernels as constants and inlines them instead. The sizes stay constants below
``GENERIC_FROM``: read at run time, the views of the buffer lose their constant strides and
the candidate state its place on the stack, which with kernels called through a pointer costs
several times a small step.

Generic loops. Bound as constants, the sizes make one compiled loop per size of a problem. From
n = ``GENERIC_FROM`` DOF, when m <= n, :func:`make_loop` compiles a *generic* loop instead: it
reads the sizes at run time, and one loop (one cache entry, one compilation) serves every size
of the problem. The templates are copied by :func:`impactbench.core._jit.with_runtime_sizes`,
which turns the globals of ``RUNTIME_SIZES`` (``N_DOF``, ``N_CONSTRAINTS``, ``MASS_ROWS``,
``HEIGHT``, ``WIDTH``; ``N_CONSTRAINTS`` and ``MASS_ROWS`` stay constants when they are 1: one
constraint, a diagonal M) into locals read from a tuple ``sizes``, passed to the loop and on to
each scheme function and helper: the same source, compiled or run as plain Python, and a digest
(a cache name) that does not depend on the sizes. The flags stay constants
(``SINGLE_CONSTRAINT`` among them: the bar's loop is not the column's). ``X`` is then the buffer
reshaped at run time, ``Z`` the buffer's last 2 n entries (``GENERIC``), and ``matrix_rows``
gives whole rows (m <= n).

The threshold ``GENERIC_FROM`` is where the two loops cost the same per step
(``benchmarks/scaling.py``): below it the constant shapes are worth more than a compilation
saves. A problem used at many small sizes can declare ``sizes_at_run_time`` in its kernels
(:class:`impactbench.core.problem.ProblemKernels`): its loops are then generic from
``WHOLE_ROWS_FROM`` DOF, at a per-step cost a few to twenty per cent higher on small meshes,
for one compilation per scheme instead of one per size. The impacting bar and the column of
beads declare it (their studies and tests run many sizes).

Scheme functions (globals such as ``mass_matrix``, ``forces``, ``gap``, ``gap_gradient``,
``N_DOF``, ``N_CONSTRAINTS``, ``CONSTANT_MASS``, ``AFFINE_GAP``, ``SINGLE_CONSTRAINT``,
``matrix_rows`` and the scheme's own options are bound by :func:`make_loop`):

Mass matrix. :func:`impactbench.core.mass.mass_bindings` binds ``mass_matrix``,
``DIAGONAL_MASS`` and ``MASS_ROWS``: a scheme keeps M and its factor as blocks of ``MASS_ROWS``
rows of ``X`` (n for a dense M; 1 for a diagonal M, whose kernel then writes the diagonal into
that row) and factors and solves with
:func:`impactbench.core.contact.factor_mass` and :func:`impactbench.core.contact.solve_mass`,
which take both forms: with a diagonal M no step does O(n^2) work or stores an (n, n) array.

``start(t0, h, q0, v0, p, e, mp, X, rows, ws) -> (status, iterations, force_evaluations)``
    Set the scheme's state from (q0, v0) (a two-step scheme computes its first step here).
``step(k, t, t_next, h, p, e, mp, X, Z, rows, ws) -> (status, contact, iterations, evaluations)``
    Step k (t = t0 + k h, t_next = t0 + (k + 1) h): write the candidate state into
    ``Z[NEXT_Q]`` and ``Z[NEXT_V]`` and, when ``contact``, the impulses and normal velocities of
    the driver rows; leave the scheme's state unchanged (the driver commits it after its checks).
    ``evaluations`` counts the calls of ``forces`` the step made (``stats["force_evaluations"]``
    is their sum plus those of ``start``).
``commit(X, Z)``
    Make the candidate the current state.
``sample(X, Z, q_out, v_out)``
    The output (q, v) at t0 + (steps) h after a commit.
``current(X, Z, q_out, v_out)``
    The state reported at a failure of a step, at time t0 + (steps + lead) h (``Z`` may hold
    the failed, non-finite candidate there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._jit import constant_shape_view, specialize, stack_array, with_runtime_sizes
from .contact import WARM_START_ENTRY, make_workspace
from .divergence import CHECK_EVERY, GREW, POSITION, Q_BOUND, V_BOUND, VALUE, VELOCITY, WHEN
from .entry import DirectCall
from .status_codes import (
    STATUS_DIVERGED,
    STATUS_NOT_FINITE,
    STATUS_OK,
    log_impacts,
    store_counters,
)

#: Rows of the work buffer ``X`` read by the driver (see the module docstring).
IMPULSE = 0
NORMAL_BEFORE = 1
NORMAL_AFTER = 2
LAW_GAINS = 3
LAW_LARGEST_GAIN = 4
#: First row of the scheme's own part of ``X``.
FIRST_SCHEME_ROW = 5
#: Rows of the candidate state ``Z`` (2, n), on the loop's stack.
NEXT_Q = 0
NEXT_V = 1


@dataclass(frozen=True)
class Scheme:
    """A time-stepping scheme as the driver runs it (see the module docstring).

    Attributes
    ----------
    start, step, commit, sample, current : function
        Templates of the scheme's functions: module-level functions whose problem-specific names
        are free globals.
    rows : function
        ``rows(n_dof, n_constraints, mass_rows) -> int``: the scheme's rows of ``X``
        (``mass_rows`` = ``MASS_ROWS``, the rows of a block holding M or its factor).
    lead : int
        Steps by which :func:`current` is ahead of the last sample (1 for a two-step scheme
        whose current position is q^{k+1} when q^k is the last sample).
    helpers : tuple of (str, function)
        Templates that the scheme's functions call under these names, bound like them (first,
        in this order: a helper may call an earlier one) and inlined into them.
    """

    start: Callable
    step: Callable
    commit: Callable
    sample: Callable
    current: Callable
    rows: Callable[[int, int, int], int]
    lead: int = 0
    helpers: tuple[tuple[str, Callable], ...] = ()
    gaps: Callable | None = None


# Names bound per problem and scheme by make_loop.
scheme_start = scheme_step = scheme_commit = scheme_sample = scheme_current = shape_view = (
    scratch
) = None
N_DOF = N_CONSTRAINTS = LEAD = HEIGHT = WIDTH = 0
GENERIC = False


def _time_loop(
    t0, h, n_steps, q0, v0, p, e, mp, every,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, state, growth, buffer, rows, ws,
):  # fmt: skip
    if GENERIC:  # compile-time constant: the sizes are read at run time (module docstring)
        X = buffer[: HEIGHT * WIDTH].reshape((HEIGHT, WIDTH))  # noqa: N806
        Z = buffer[HEIGHT * WIDTH :].reshape((2, N_DOF))  # noqa: N806
    else:
        # The buffer as a view of constant shape: its row offsets are compile-time constants,
        # so LLVM can prove its rows disjoint (with reshape they would be run-time multiples).
        X = shape_view(buffer, HEIGHT, WIDTH)  # noqa: N806
        Z = scratch(2, N_DOF)  # noqa: N806
    n = N_DOF
    m = N_CONSTRAINTS
    status, iterations, force_evaluations = scheme_start(t0, h, q0, v0, p, e, mp, X, rows, ws)
    started = status == STATUS_OK
    out_t[0] = t0
    for j in range(n):
        out_q[0, j] = q0[j]
        out_v[0, j] = v0[j]
    samples = 1
    impacts = 0
    logged = 0
    steps = 0
    countdown = every
    if status == STATUS_OK:
        for k in range(n_steps):
            t = t0 + k * h
            t_next = t0 + (k + 1) * h
            status, contact, used, evaluated = scheme_step(
                k, t, t_next, h, p, e, mp, X, Z, rows, ws
            )
            force_evaluations += evaluated
            if status != STATUS_OK:
                break
            check = 0.0
            for j in range(n):
                check += Z[NEXT_Q, j] + Z[NEXT_V, j]
            if not np.isfinite(check):
                status = STATUS_NOT_FINITE
                break
            if (k & (CHECK_EVERY - 1)) == CHECK_EVERY - 1 or k == n_steps - 1:
                largest_q = 0.0
                largest_v = 0.0
                for j in range(n):
                    largest_q = max(largest_q, abs(Z[NEXT_Q, j]))
                    largest_v = max(largest_v, abs(Z[NEXT_V, j]))
                if largest_q > growth[Q_BOUND] or largest_v > growth[V_BOUND]:
                    position = largest_q > growth[Q_BOUND]
                    growth[GREW] = POSITION if position else VELOCITY
                    growth[VALUE] = largest_q if position else largest_v
                    growth[WHEN] = t_next
                    status = STATUS_DIVERGED
                    break
            if contact:
                iterations += used
                impacts, logged = log_impacts(
                    log_t, log_i, log_u, logged, impacts, t_next,
                    X[IMPULSE], X[NORMAL_BEFORE], X[NORMAL_AFTER], m,
                )  # fmt: skip
            scheme_commit(X, Z)
            steps = k + 1
            countdown -= 1
            if countdown == 0 or steps == n_steps:
                countdown = every
                out_t[samples] = t_next
                scheme_sample(X, Z, out_q[samples], out_v[samples])
                samples += 1
    store_counters(counters, status, steps, force_evaluations, impacts, logged, samples, iterations)
    if status == STATUS_OK:
        state[0] = t0 + steps * h
        scheme_sample(X, Z, state[1 : 1 + n], state[1 + n :])
    elif not started:  # the start failed: report the initial state
        state[0] = t0
        for j in range(n):
            state[1 + j] = q0[j]
            state[1 + n + j] = v0[j]
    else:
        state[0] = t0 + (steps + LEAD) * h
        scheme_current(X, Z, state[1 : 1 + n], state[1 + n :])


#: Smallest n for which ``matrix_rows`` gives C-contiguous blocks (module docstring).
WHOLE_ROWS_FROM = 8


def _whole_rows(X, start, stop):  # noqa: N803
    """Rows start:stop of an ``X`` n wide: a C-contiguous (stop - start, n) array."""
    return X[start:stop]


def _leading_columns(X, start, stop):  # noqa: N803
    """Rows start:stop, columns :n of an ``X`` wider than n (m > n)."""
    return X[start:stop, :N_DOF]


def _zeros(height: int, width: int) -> np.ndarray:
    """Plain-Python counterpart of :func:`impactbench.core._jit.stack_array`."""
    return np.zeros((height, width))


def _reshaped(buffer: np.ndarray, height: int, width: int) -> np.ndarray:
    """Plain-Python counterpart of :func:`impactbench.core._jit.constant_shape_view`."""
    return buffer.reshape((height, width))


#: Smallest n from which a compiled loop reads the sizes at run time (module docstring).
GENERIC_FROM = 300

#: The globals a generic loop reads at run time, in the order of its ``sizes`` tuple.
RUNTIME_SIZES = ("N_DOF", "N_CONSTRAINTS", "MASS_ROWS", "HEIGHT", "WIDTH")

#: The generic loops of this process, by name (which carries the digest of what they compile).
_GENERIC_LOOPS: dict[str, Callable] = {}


def make_loop(
    scheme: Scheme,
    bindings: dict[str, Any],
    n_dof: int,
    n_constraints: int,
    compile: bool,
    generic: bool | None = None,
    cache: bool = True,
    problem: tuple | None = None,
    time_loop: Callable | None = None,
) -> Callable:
    """The driver's loop for one scheme and one problem.

    Parameters
    ----------
    scheme : Scheme
        The scheme's function templates and buffer layout.
    bindings : dict
        Name -> value of the globals of the scheme's templates: the problem's kernels
        (:func:`impactbench.core.mass.mass_bindings`, ``forces``, ``gap``, ``gap_gradient``),
        its flags (``CONSTANT_MASS``, ``AFFINE_GAP``) and the scheme's compile-time options. Without
        ``MASS_ROWS`` the mass matrix is dense (``MASS_ROWS`` = n). ``N_DOF``, ``N_CONSTRAINTS``,
        ``SINGLE_CONSTRAINT`` and ``matrix_rows`` (module docstring) are added here.
    n_dof, n_constraints : int
        Sizes, bound as compile-time constants (numba then unrolls the small linear algebra), or
        read at run time by a generic loop.
    compile : bool
        Compile with numba (cached on disk, see :func:`impactbench.core._jit.specialize`), or return
        the plain-Python loop.
    generic : bool, optional
        Read the sizes at run time (module docstring): one compiled loop serves every size of
        the problem. Default: compiled, n_constraints <= n_dof and n_dof >= ``GENERIC_FROM``
        (``WHOLE_ROWS_FROM`` for a problem declaring ``SIZES_AT_RUN_TIME`` in ``bindings``).
    cache : bool
        Keep the compiled loop in numba's disk cache (False for functions defined where numba
        cannot find them again in another process, e.g. in ``exec``'d code).
    problem : tuple, optional
        The problem's kernels as run-time values (first-class kernels,
        :func:`impactbench.core._jit.first_class_kernel`), which the scheme's functions read as
        the global ``PROBLEM``: compiled, the loop takes it at run time and serves every
        problem whose tuple has the same numba type (module docstring). None: ``PROBLEM``, if
        the functions read it, is one of ``bindings``.
    time_loop : function, optional
        The loop template (default: the fixed-step loop of this module; the adaptive loop of
        :mod:`impactbench.core.adaptive` is bound the same way, its arguments before the work
        buffers its own, and calls ``scheme_gaps``, the scheme's ``gaps``, as well).

    Returns
    -------
    function
        ``loop(t0, h, n_steps, q0, v0, p, e, mp, every, out_t, out_q, out_v, log_t, log_i,
        log_u, counters, state, growth, law=None)`` (see :mod:`impactbench.core.timestepping`);
        the work buffers are allocated on each call, before the loop, and the call returns their
        size in bytes; ``law``, an array of 2 floats, receives the impact law's energy record
        (the module docstring) when given. Its attribute ``loop`` is the compiled (or
        plain-Python) loop it calls, ``buffer_size`` the size of the scheme's part of the work
        buffer (``X``), ``reports_law`` True (it takes ``law``).
    """
    if generic is None:
        smallest = WHOLE_ROWS_FROM if bindings.get("SIZES_AT_RUN_TIME", False) else GENERIC_FROM
        generic = compile and n_dof >= smallest and n_constraints <= n_dof
    elif generic and not (n_dof >= WHOLE_ROWS_FROM and n_constraints <= n_dof):
        raise ValueError(
            f"a generic loop needs n_dof >= {WHOLE_ROWS_FROM} and n_constraints <= n_dof, got "
            f"n_dof={n_dof}, n_constraints={n_constraints}"
        )
    mass_rows = bindings.get("MASS_ROWS", n_dof)
    diagonal = bindings.get("DIAGONAL_MASS", False)
    width = max(n_dof, n_constraints, 1)
    height = FIRST_SCHEME_ROW + scheme.rows(n_dof, n_constraints, mass_rows)
    sizes = {
        "N_DOF": n_dof,
        "N_CONSTRAINTS": n_constraints,
        "MASS_ROWS": mass_rows,
        "HEIGHT": height,
        "WIDTH": width,
    }
    # in a generic loop, the sizes that follow n (one constraint, a diagonal M: 1 row)
    fixed = {"N_CONSTRAINTS": n_constraints == 1, "MASS_ROWS": diagonal}
    runtime = {
        name: index
        for index, name in enumerate(RUNTIME_SIZES)
        if generic and not fixed.get(name, False)
    }
    if compile and problem is not None:  # read from the tuple of sizes, at its end
        runtime["PROBLEM"] = len(RUNTIME_SIZES)
    constants = {name: value for name, value in sizes.items() if name not in runtime}
    constants.update(SINGLE_CONSTRAINT=n_constraints == 1, DIAGONAL_MASS=diagonal)
    functions = {
        "scheme_start": scheme.start,
        "scheme_step": scheme.step,
        "scheme_commit": scheme.commit,
        "scheme_sample": scheme.sample,
        "scheme_current": scheme.current,
    }
    if scheme.gaps is not None:
        functions["scheme_gaps"] = scheme.gaps
    callees = {name for name, _ in scheme.helpers} | set(functions) | {"matrix_rows"}

    def template(function: Callable) -> Callable:
        return with_runtime_sizes(function, runtime, callees) if runtime else function

    whole = n_constraints <= n_dof and n_dof >= WHOLE_ROWS_FROM
    rows_of = _whole_rows if whole else _leading_columns
    bound = {
        **bindings,
        **constants,
        "matrix_rows": specialize(template(rows_of), constants, compile, ir_inline=True),
    }
    if problem is not None and not compile:
        bound["PROBLEM"] = problem
    for name, helper in scheme.helpers:
        bound[name] = specialize(template(helper), bound, compile, inline=True)
    loop_bindings = {
        name: specialize(template(function), bound, compile, inline=True)
        for name, function in functions.items()
    }
    # the projection's Hessian is formed only for a nonlinear gap; a dense M keeps n x n
    hessian = 1 if diagonal and bindings.get("AFFINE_GAP", False) else n_dof
    loop_bindings.update(constants, LEAD=scheme.lead, GENERIC=generic)
    loop_bindings["shape_view"] = constant_shape_view if compile else _reshaped
    loop_bindings["scratch"] = stack_array if compile else _zeros
    time_loop = _time_loop if time_loop is None else time_loop
    loop = specialize(template(time_loop), loop_bindings, compile, nrt=False, cache=cache)
    if runtime:  # one dispatcher per process for every size or problem it serves
        name = getattr(loop, "py_func", loop).__qualname__  # plain with NUMBA_DISABLE_JIT
        loop = _GENERIC_LOOPS.setdefault(name, loop)
    arguments_of_sizes = ()
    if runtime:
        run_time = tuple(sizes[name] for name in RUNTIME_SIZES)
        arguments_of_sizes = (run_time if problem is None else (*run_time, problem),)
    m = max(n_constraints, 1)
    new_workspace = getattr(make_workspace, "py_func", make_workspace)

    def work_buffers() -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        # a generic loop keeps its candidate state Z (2, n) after X in the buffer
        buffer = np.zeros(height * width + (2 * n_dof if generic else 0))
        return buffer, np.zeros(m, dtype=np.int64), new_workspace(n_dof, m, mass_rows, hessian)

    buffers = work_buffers()
    work_bytes = buffers[0].nbytes + buffers[1].nbytes + sum(array.nbytes for array in buffers[2])
    # Work buffers of finished calls, taken by the next (list.pop and list.append are atomic:
    # concurrent calls each take their own set). A set is handed over as a fresh one would be:
    # the arrays allocated with zeros are zeroed again (the others are written before read).
    free = [buffers]
    # the arguments have fixed types (timestepping.TimeStepping._solve_impl builds them)
    call = DirectCall(loop)

    def run(*arguments: Any, law: np.ndarray | None = None) -> int:
        try:
            buffer, rows, ws = free.pop()
        except IndexError:
            buffer, rows, ws = work_buffers()
        else:
            buffer.fill(0.0)
            rows.fill(0)
            ws[WARM_START_ENTRY].fill(False)
        # the overload's entry point once DirectCall selected it (one Python call less)
        (call.entry or call)(*arguments_of_sizes, *arguments, buffer, rows, ws)
        if law is not None:
            law[0] = buffer[LAW_GAINS * width]
            law[1] = buffer[LAW_LARGEST_GAIN * width]
        free.append((buffer, rows, ws))
        return work_bytes

    run.loop = loop
    run.buffer_size = height * width
    run.reports_law = True
    return run
