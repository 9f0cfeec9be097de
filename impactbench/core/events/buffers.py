"""The arrays of one event-driven run, grouped by role into named tuples.

:class:`Run` holds the run's constants, :class:`Output` what the run writes for its caller (the
samples, the impact log, the counters and ``info``), :class:`Work` the scratch of the loop. A
:class:`Buffers` allocates them once per (stepper, n, m, capacity) and hands them, reset, to later
runs of the same sizes.

Slots of ``info`` (float, 11 + 3 m): failure details, the accumulation cut, contact phases; then
three blocks of m: constraints switched at the cut (1.0), start of each constraint's contact phase
(nan when open), values of the constraints named by a failure (nan otherwise).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from impactbench.core.contact import WARM_START_ENTRY, make_workspace
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
INFO_HEAD = 11

# Statuses of the event loop beyond those of impactbench.core.status_codes.
STATUS_STEP_TOO_SMALL = 20
STATUS_NO_PROGRESS = 22
STATUS_PENETRATION = 23
STATUS_OUTPUT_FULL = 24
STATUS_CONTACT_MATRIX_SINGULAR = 25
STATUS_CONTACT_LCP_FAILED = 26
#: Counter slots of the located events, of the solver restarts (the start included) and of the
#: consecutive events without progress in t, after those of impactbench.core.status_codes.
COUNTER_EVENTS = 6
COUNTER_SEGMENTS = 7
COUNTER_STALLED = 8

#: The run's constants: ``p`` the kernel parameters, ``e`` the restitution, ``every`` the output
#: decimation, ``length`` the length scale L, ``impact_interval`` = min_impact_interval
#: (t_end - t0), ``tolerance`` the contact tolerance 10 (atol + rtol L) per unit |grad g|.
Run = namedtuple(
    "Run",
    "t0 t_end p e rtol atol max_step every length rest_velocity min_impact_interval "
    "impact_interval tolerance",
)
#: Samples (t, q, v), impact log (log_t, log_i, log_u), counters, the stop state (t, y), info;
#: ``growth`` the state's bounds and what exceeded them (impactbench.core.divergence).
Output = namedtuple("Output", "t q v log_t log_i log_u counters state info growth")
#: Scratch of the loop: the stepper's (K, dense, rws), the states (y and its slope f at the
#: start of the step, y_new and f_new at its end, a probe of the dense output, a shifted state,
#: v after an impact, y before an event), the dense-output check (tau, gs, rs, ls), the event
#: levels (armed, armed_next, floor), per-constraint state and the contact solves' arrays.
Work = namedtuple(
    "Work",
    "K dense rws y f y_new f_new probe ahead v_new before tau gs rs ls armed armed_next floor "
    "last_impact closed mark g G Gp Gm M F tol u u_after rest rows W WF x cws",
)

_STATES = ("y", "f", "y_new", "f_new", "probe", "ahead", "v_new", "before")


class Buffers:
    """The output and work arrays of a run, allocated once and reset by :meth:`fresh`.

    The arrays a fresh run needs initialised (zeros; NaN in some slots of ``info``, -inf in
    ``last_impact``; the contact workspace's warm-start memory) are views of three flat buffers
    (float64, int64, bool), so that :meth:`fresh` sets them with three operations; the samples,
    the impact log and the rest of the contact workspace are written before they are read.

    Parameters
    ----------
    stages, dense : tuple of int
        Shapes of the stepper's stage array ``K`` and dense-output coefficients.
    n, m : int
        Degrees of freedom and constraints.
    capacity : int
        Output samples.
    """

    def __init__(
        self, stages: tuple[int, ...], dense: tuple[int, ...], n: int, m: int, capacity: int
    ) -> None:
        workspace = list(getattr(make_workspace, "py_func", make_workspace)(n, m))
        s = SUBINTERVALS + 1
        f, i, b = np.float64, np.int64, np.bool_
        zeroed = (
            ("counters", (N_COUNTERS + 2,), i),
            ("growth", (GROWTH_SIZE,), f),
            ("info", (INFO_HEAD + 3 * m,), f),
            ("K", stages, f),
            ("dense", dense, f),
            ("rws", rhs_workspace(n, m).shape, f),
            *((name, (2 * n,), f) for name in _STATES),
            ("tau", (s,), f),
            ("gs", (s, m), f),
            ("rs", (s, m), f),
            ("ls", (s, m), f),
            ("armed", (m,), b),
            ("armed_next", (m,), b),
            ("floor", (m,), f),
            ("last_impact", (m,), f),
            ("closed", (m,), i),
            ("mark", (m,), i),
            ("g", (m,), f),
            *((name, (m, n), f) for name in ("G", "Gp", "Gm")),
            ("M", (n, n), f),
            ("F", (n, n), f),
            *((name, (m,), f) for name in ("tol", "u", "u_after", "rest")),
            ("rows", (m,), i),
            ("W", (m, m), f),
            ("WF", (m, m), f),
            ("x", (m,), f),
            ("warm_start", workspace[WARM_START_ENTRY].shape, b),  # make_workspace's entry
        )
        sizes = {f: 0, i: 0, b: 0}
        for _, shape, dtype in zeroed:
            sizes[dtype] += math.prod(shape)
        flat = {dtype: np.zeros(size, dtype=dtype) for dtype, size in sizes.items()}
        self.flat = (flat[f], flat[i], flat[b])
        offsets = dict.fromkeys(sizes, 0)
        views: dict[str, Any] = {}
        for name, shape, dtype in zeroed:
            start, offsets[dtype] = offsets[dtype], offsets[dtype] + math.prod(shape)
            views[name] = flat[dtype][start : offsets[dtype]].reshape(shape)
        views["info"][[INFO_ZENO_TIME, INFO_CONTACT_TIME]] = math.nan
        views["info"][INFO_HEAD + m :] = math.nan
        views["last_impact"].fill(-math.inf)
        #: the float buffer as a fresh run needs it (zeros, and the NaN and -inf above)
        self.initial = self.flat[0].copy()
        workspace[WARM_START_ENTRY] = views["warm_start"]
        views["v_new"] = views["v_new"][:n]
        views["cws"] = tuple(workspace)
        self.output = Output(
            np.empty(capacity), np.empty((capacity, n)), np.empty((capacity, n)),
            np.empty(IMPACT_LOG_CAPACITY), np.empty(IMPACT_LOG_CAPACITY, dtype=np.int64),
            np.empty((IMPACT_LOG_CAPACITY, 2)), views["counters"], np.empty(1 + 2 * n),
            views["info"], views["growth"],
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
