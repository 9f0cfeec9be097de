"""The arrays of one event-driven run, grouped by role into named tuples.

:class:`Run` holds the run's constants, :class:`Output` what the run writes for its caller (the
samples, the impact log, the counters and ``info``), :class:`Work` the scratch of the loop. A
:class:`Buffers` allocates them once per (stepper, n, m, capacity) and hands them, reset, to later
runs of the same sizes.

Slots of ``info`` (float, 13 + 3 m): failure details, the accumulation cut, contact phases, the
stall test's block; then
three blocks of m: constraints switched at the cut (1.0), start of each constraint's contact phase
(nan when open), values of the constraints named by a failure (nan otherwise).
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

from impactbench.core._jit import generated_functions
from impactbench.core.contact import make_workspace
from impactbench.core.divergence import GROWTH_SIZE
from impactbench.core.status_codes import N_COUNTERS
from impactbench.core.trajectory import IMPACT_LOG_CAPACITY

from .dynamics import rhs_workspace
from .location import SUBINTERVALS

INFO_FAILED_CONSTRAINT = 0
INFO_FAILED_VALUE = 1
INFO_ZENO_TIME = 2
INFO_REST_SPEED = 3
INFO_ZENO_VELOCITY = 4
INFO_ZENO_BEFORE = 5
INFO_ZENO_SPACED = 6
INFO_CONTACT_TIME = 7
INFO_CONTACT_PHASES = 8
INFO_CONTACT_DURATION = 9
INFO_PROJECTIONS = 10
#: The stall test's block (impactbench.core.stall): the time at its start, its advances so far.
INFO_STALL_START = 11
INFO_STALL_STEPS = 12
#: The impact law's energy record: the impacts whose law created kinetic energy and the largest
#: energy created (:func:`impactbench.core.events.resolution._record_law_energy`).
INFO_LAW_GAINS = 13
INFO_LAW_LARGEST_GAIN = 14
INFO_HEAD = 15

# Statuses of the event loop beyond those of impactbench.core.status_codes.
STATUS_STEP_TOO_SMALL = 20
STATUS_NO_PROGRESS = 22
STATUS_PENETRATION = 23
STATUS_OUTPUT_FULL = 24
STATUS_CONTACT_MATRIX_SINGULAR = 25
STATUS_CONTACT_LCP_FAILED = 26
STATUS_STALLED = 27
#: Counter slots of the located events, of the solver restarts (the start included) and of the
#: consecutive events without progress in t, after those of impactbench.core.status_codes.
COUNTER_EVENTS = 6
COUNTER_SEGMENTS = 7
COUNTER_STALLED = 8
#: Counter slot of the pieces of the dense output recorded (:class:`Output` ``piece_*``).
COUNTER_PIECES = 9

#: The run's constants: ``p`` the kernel parameters, ``e`` the restitution, ``every`` the output
#: decimation, ``length`` the length scale L, ``impact_interval`` = min_impact_interval
#: (t_end - t0), ``tolerance`` the contact tolerance 10 (atol + rtol L) per unit |grad g|.
Run = namedtuple(
    "Run",
    "t0 t_end p e rtol atol max_step every length rest_velocity min_impact_interval "
    "impact_interval tolerance",
)
#: Samples (t, q, v), impact log (log_t, log_i, log_u), counters, the stop state (t, y), info;
#: ``growth`` the state's bounds and what exceeded them (impactbench.core.divergence); the
#: pieces of the compiled engine's dense output (none without one): ``piece_t`` (t_old, h,
#: t_stop) of piece k, the solution on [t_old, t_stop] being the interpolant of the accepted
#: step [t_old, t_old + h], ``piece_y`` its states at t_old and t_stop, ``piece_c`` the
#: interpolant's coefficients (the stepper's ``dense`` array of that step).
Output = namedtuple(
    "Output", "t q v log_t log_i log_u counters state info growth piece_t piece_y piece_c"
)
#: Scratch of the loop: the stepper's (K, dense, rws), the states (y and its slope f at the
#: start of the step, y_new and f_new at its end, a probe of the dense output, a shifted state,
#: v after an impact, y before an event), the dense-output check (tau, gs, rs, ls), the event
#: levels (armed, armed_next, floor), per-constraint state and the contact solves' arrays; ``r``
#: the obstacle's terms (rate r or drift c) of a moving obstacle.
Work = namedtuple(
    "Work",
    "K dense rws y f y_new f_new probe ahead v_new before tau gs rs ls armed armed_next floor "
    "last_impact closed mark g G Gp Gm M F tol u u_after rest rows W WF x r cws",
)

_STATES = ("y", "f", "y_new", "f_new", "probe", "ahead", "before")


def _work_arrays(
    stages: tuple[int, ...], dense: tuple[int, ...], n: int, m: int, friction: bool = False
) -> list[tuple[str, tuple[int, ...], Any]]:
    """(name, shape, dtype) of the arrays of :class:`Work`, the contact workspace's entries
    (:func:`impactbench.core.contact.make_workspace`) as ``cws0``, ``cws1``, ...; ``friction``
    adds the friction scratch to ``rws`` (:func:`impactbench.core.events.dynamics.
    rhs_workspace`)."""
    workspace = getattr(make_workspace, "py_func", make_workspace)(n, m)
    s = SUBINTERVALS + 1
    f, i, b = np.float64, np.int64, np.bool_
    return [
        ("K", stages, f),
        ("dense", dense, f),
        ("rws", rhs_workspace(n, m, friction).shape, f),
        *((name, (2 * n,), f) for name in _STATES),
        ("v_new", (n,), f),
        ("tau", (s,), f),
        *((name, (s, m), f) for name in ("gs", "rs", "ls")),
        ("armed", (m,), b),
        ("armed_next", (m,), b),
        *((name, (m,), f) for name in ("floor", "last_impact", "g", "tol", "u", "u_after")),
        *((name, (m,), f) for name in ("rest", "x", "r")),
        *((name, (m,), i) for name in ("closed", "mark", "rows")),
        *((name, (m, n), f) for name in ("G", "Gp", "Gm")),
        *((name, (n, n), f) for name in ("M", "F")),
        *((name, (m, m), f) for name in ("W", "WF")),
        *((f"cws{k}", a.shape, a.dtype.type) for k, a in enumerate(workspace)),
    ]


def _blocks(
    arrays: list[tuple[str, tuple[int, ...], Any]],
) -> tuple[dict[tuple[Any, int], int], dict[str, tuple[int, int, int]]]:
    """The packed layout of ``arrays``: the rows of each block (one 2-D array per dtype and
    width), and where each array lies: name -> (block, first row, rows; 0 rows for a 1-D array,
    which takes one row)."""
    rows: dict[tuple[Any, int], int] = {}
    places: dict[str, tuple[int, int, int]] = {}
    for name, shape, dtype in arrays:
        height = shape[0] if len(shape) == 2 else 0
        key = (dtype, shape[-1])
        first = rows.setdefault(key, 0)
        rows[key] = first + max(height, 1)
        places[name] = (list(rows).index(key), first, height)
    return rows, places


def _view(block: int, first: int, rows: int) -> str:
    """The expression of one view of the packed ``work``."""
    if rows == 0:
        return f"work[{block}][{first}]"
    return f"work[{block}][{first}:{first + rows}]"


def packed_views(
    stages: tuple[int, ...], dense: tuple[int, ...], n: int, m: int, friction: bool = False
) -> Callable:
    """``views(work)``: the :class:`Work` of views into the packed work arrays ``work``
    (:attr:`Buffers.packed`) of a run of these sizes (with the friction scratch when
    ``friction``), as plain Python; its source is generated from the layout (rows are
    constants), so that compiled it costs a few additions."""
    places = _blocks(_work_arrays(stages, dense, n, m, friction))[1]
    fields = [_view(*places[name]) for name in Work._fields if name != "cws"]
    workspace = [_view(*place) for name, place in places.items() if name.startswith("cws")]
    fields.append(f"({', '.join(workspace)},)")
    body = ",\n        ".join(fields)
    source = f"def views(work):\n    return Work(\n        {body},\n    )\n"
    return generated_functions(source, {"Work": Work}, __name__)["views"]


def unpacked(work: Work) -> Work:
    """``views(work)`` where ``work`` is already the :class:`Work` (the plain-Python loop)."""
    return work


class Buffers:
    """The output and work arrays of a run, allocated once and reset by :meth:`fresh`.

    The work arrays are views of a few 2-D blocks (one per dtype and row width,
    :attr:`packed`), which the compiled loop takes in place of :class:`Work` and cuts into the
    same views (:func:`packed_views`): a call then passes a handful of arrays, not sixty. The
    blocks and the counters, ``info`` and ``growth`` of the output are views of three flat
    buffers (float64, int64, bool), so that :meth:`fresh` resets them with three operations
    (zeros; NaN in some slots of ``info``, -inf in ``last_impact``); the samples and the impact
    log are written before they are read.

    Parameters
    ----------
    stages, dense : tuple of int
        Shapes of the stepper's stage array ``K`` and dense-output coefficients.
    n, m : int
        Degrees of freedom and constraints.
    capacity : int
        Output samples.
    friction : bool
        Room for the friction scratch (a frictional problem).
    pieces : int
        Room for the pieces of a dense output (0: the run keeps none).
    """

    def __init__(
        self,
        stages: tuple[int, ...],
        dense: tuple[int, ...],
        n: int,
        m: int,
        capacity: int,
        friction: bool = False,
        pieces: int = 0,
    ) -> None:
        f, i, b = np.float64, np.int64, np.bool_
        heads = (
            ("counters", N_COUNTERS + 2, i),
            ("growth", GROWTH_SIZE, f),
            ("info", INFO_HEAD + 3 * m, f),
        )
        arrays = _work_arrays(stages, dense, n, m, friction)
        rows, places = _blocks(arrays)
        sizes = {f: 0, i: 0, b: 0}
        for _, size, dtype in heads:
            sizes[dtype] += size
        for (dtype, width), height in rows.items():
            sizes[dtype] += height * width
        flat = {dtype: np.zeros(size, dtype=dtype) for dtype, size in sizes.items()}
        self.flat = (flat[f], flat[i], flat[b])
        offsets = dict.fromkeys(sizes, 0)

        def cut(dtype: Any, size: int) -> np.ndarray:
            start, offsets[dtype] = offsets[dtype], offsets[dtype] + size
            return flat[dtype][start : offsets[dtype]]

        views: dict[str, Any] = {name: cut(dtype, size) for name, size, dtype in heads}
        #: the blocks the compiled loop takes as its work (:func:`packed_views`)
        self.packed = tuple(
            cut(dtype, height * width).reshape(height, width)
            for (dtype, width), height in rows.items()
        )
        for name, (block, first, height) in places.items():
            block_rows = self.packed[block]
            views[name] = block_rows[first] if height == 0 else block_rows[first : first + height]
        views["info"][[INFO_ZENO_TIME, INFO_CONTACT_TIME]] = math.nan
        views["info"][INFO_HEAD + m :] = math.nan
        views["last_impact"].fill(-math.inf)
        #: the float buffer as a fresh run needs it (zeros, and the NaN and -inf above)
        self.initial = self.flat[0].copy()
        views["cws"] = tuple(views[name] for name, _, _ in arrays if name.startswith("cws"))
        self.output = Output(
            np.empty(capacity), np.empty((capacity, n)), np.empty((capacity, n)),
            np.empty(IMPACT_LOG_CAPACITY), np.empty(IMPACT_LOG_CAPACITY, dtype=np.int64),
            np.empty((IMPACT_LOG_CAPACITY, 2)), views["counters"], np.empty(1 + 2 * n),
            views["info"], views["growth"], np.empty((pieces, 3)), np.empty((pieces, 2, 2 * n)),
            np.empty((pieces, *dense)),
        )  # fmt: skip
        self.work = Work(**{name: views[name] for name in Work._fields})

    def image(self, y: np.ndarray, growth: np.ndarray) -> np.ndarray:
        """The float buffer of a fresh run with the initial state ``y`` in ``Work.y`` and the
        state's bounds ``growth`` in ``Output.growth``, for :meth:`fresh` (of any buffers of
        these shapes and sizes: the capacity does not change it)."""
        floats = self.flat[0]
        floats[:] = self.initial
        self.work.y[:] = y
        self.output.growth[:] = growth
        return floats.copy()

    def fresh(self, image: np.ndarray | None = None) -> tuple[Output, Work]:
        """The output and work arrays, as a new run needs them; ``image`` the float buffer from
        :meth:`image` (default: zeros in ``y`` and ``growth``)."""
        floats, integers, booleans = self.flat
        floats[:] = self.initial if image is None else image
        integers.fill(0)
        booleans.fill(False)
        return self.output, self.work
