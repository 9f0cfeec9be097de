"""Dense output of a run: a piecewise-polynomial state y(t) = (q(t), v(t)) over [t0, t_end].

An adaptive ODE solver comes with an interpolant on each accepted step (scipy's
``solver.dense_output()``), as accurate as the solver itself. :class:`DenseOutput` keeps these
interpolants for a whole run, so that an accurate run can be evaluated at any time -- e.g. as the
reference solution of a problem without a closed form, on the grid of a time-stepping run.

Representation
--------------
Piece i covers [breaks[i], breaks[i+1]]; consecutive pieces share their end time (they tile
[t0, t_end]). On each piece the state is the polynomial of degree d that takes the stored values
at the d + 1 Chebyshev-Lobatto nodes x_j = (1 - cos(pi j / d)) / 2 of the normalised time
x = (t - breaks[i]) / (breaks[i+1] - breaks[i]) in [0, 1], evaluated by the (second)
barycentric formula -- numerically stable, and exact at the nodes. A solver interpolant of
degree <= d is therefore reproduced up to round-off (a few eps relative), and the first and last
node hold the run's own states at the ends of the piece. The degree is that of the solver's
interpolant (7 for DOP853, see :mod:`impactbench.methods.event_driven`).

Discontinuities
---------------
At an impact the velocity jumps: the piece before the impact ends with the pre-impact state and
the piece after it starts with the post-impact state. Calling the dense output gives the
right-continuous state (post-impact at an impact time, the convention of the problems'
``exact_solution``); :meth:`DenseOutput.left` gives the left limit (pre-impact). Both apply at
any break, so small jumps of other kinds (projections onto a contact manifold) follow the same
convention; elsewhere the two agree. The pieces are not projected onto a constraint: in
persistent contact they are the solver's interpolants of the contact dynamics, which stay on the
contact manifold only up to the run's drift tolerance and the interpolant's error (see
:class:`impactbench.methods.EventDriven`).

Memory
------
``8 + 16 n (d + 1)`` bytes per piece (one break and the node values of q and v, float64) for n
degrees of freedom: 136 bytes per solver step for n = 1 and DOP853 (d = 7), 264 for n = 2. The
object pickles as its numpy arrays (a few hundred bytes of overhead). ``nbytes`` reports it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS = float(np.finfo(float).eps)
#: Times evaluated together (bounds the temporary (chunk, d + 1, 2n) array).
_CHUNK = 4096
#: Times up to this many ulps of t0 / t_end outside [t0, t_end] are clamped onto it.
_END_ULPS = 4.0


class DeferredDense:
    """A run's dense output whose building is left until after the run's clock stops.

    A compiled engine keeps its raw pieces (each accepted step's interpolant) during the run;
    turning them into a :class:`DenseOutput` (node values of every piece) is post-processing
    that a run without dense output does not do. :meth:`impactbench.core.method.Method.solve`
    calls :meth:`build` once its clock has stopped, so that ``stats["wall_time"]`` counts the
    run's steps and the keeping of its pieces, not their conversion.

    Parameters
    ----------
    build : callable
        ``build() -> DenseOutput or None``, over copies of the pieces (the run's buffers are
        reused by later runs).
    """

    def __init__(self, build: Callable[[], DenseOutput | None]) -> None:
        self.build = build


def chebyshev_lobatto_nodes(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x_j = (1 - cos(pi j / d)) / 2 in [0, 1] (x_0 = 0, x_d = 1 exactly) and their
    barycentric weights (-1)^j delta_j (delta = 1/2 at the ends, 1 inside)."""
    j = np.arange(degree + 1)
    x = 0.5 * (1.0 - np.cos(np.pi * j / degree))
    x[0], x[-1] = 0.0, 1.0
    w = np.where(j % 2 == 0, 1.0, -1.0)
    w[0] *= 0.5
    w[-1] *= 0.5
    return x, w


class DenseOutput:
    """Piecewise-polynomial dense output y(t) = (q(t), v(t)) of a run over [t0, t_end].

    See the module notes for the representation, the convention at discontinuities and the
    memory (``8 + 16 n (d + 1)`` bytes per piece). Build one with :class:`DenseOutputBuilder`.

    Parameters
    ----------
    breaks : ndarray, shape (k + 1,)
        Strictly increasing piece boundaries; ``breaks[0] = t0``, ``breaks[-1] = t_end``.
    values : ndarray, shape (k, d + 1, 2 n)
        State (q, v) of each piece at its d + 1 Chebyshev-Lobatto nodes.
    impacts : array_like, shape (m,)
        Times of the impacts (jumps of v), sorted; each is a break.

    Attributes
    ----------
    breaks, values, impacts : ndarray
        As above (read-only).
    n_dof : int
        n.
    degree : int
        d.
    t0, t_end : float
        The interval covered.
    """

    def __init__(self, breaks: np.ndarray, values: np.ndarray, impacts: np.ndarray) -> None:
        breaks = np.array(breaks, dtype=float)
        values = np.array(values, dtype=float)
        impacts = np.array(impacts, dtype=float).reshape(-1)
        if breaks.ndim != 1 or breaks.shape[0] < 2:
            raise ValueError(f"breaks must be 1-D with at least 2 entries, got {breaks.shape}")
        if not (np.isfinite(breaks).all() and np.all(np.diff(breaks) > 0.0)):
            raise ValueError("breaks must be finite and strictly increasing")
        k = breaks.shape[0] - 1
        if values.ndim != 3 or values.shape[0] != k or values.shape[1] < 2:
            raise ValueError(
                f"values must have shape ({k}, degree + 1, 2 n) with degree >= 1, "
                f"got {values.shape}"
            )
        if values.shape[2] % 2:
            raise ValueError(f"values must hold (q, v): an even last axis, got {values.shape}")
        if impacts.size and (np.any(np.diff(impacts) < 0.0) or not np.isin(impacts, breaks).all()):
            raise ValueError("impacts must be sorted break times")
        for a in (breaks, values, impacts):
            a.flags.writeable = False
        self.breaks, self.values, self.impacts = breaks, values, impacts
        self._nodes, self._weights = chebyshev_lobatto_nodes(values.shape[1] - 1)

    # -- description -----------------------------------------------------------------------------

    @property
    def n_dof(self) -> int:
        return self.values.shape[2] // 2

    @property
    def degree(self) -> int:
        return self.values.shape[1] - 1

    @property
    def t0(self) -> float:
        return float(self.breaks[0])

    @property
    def t_end(self) -> float:
        return float(self.breaks[-1])

    def __len__(self) -> int:
        """Number of pieces."""
        return self.values.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return self.breaks.nbytes + self.values.nbytes + self.impacts.nbytes

    @staticmethod
    def bytes_per_piece(n_dof: int, degree: int) -> int:
        """``8 + 16 n (d + 1)``: memory of one piece (float64)."""
        return 8 + 16 * n_dof * (degree + 1)

    def __repr__(self) -> str:
        return (
            f"DenseOutput(t0={self.t0!r}, t_end={self.t_end!r}, pieces={len(self)}, "
            f"degree={self.degree}, n_dof={self.n_dof}, impacts={self.impacts.shape[0]})"
        )

    # -- evaluation ------------------------------------------------------------------------------

    def __call__(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Right-continuous state (q, v) at times ``t``: the post-impact state at an impact.

        Parameters
        ----------
        t : float or array_like, shape (N,)
            Times in [t0, t_end] (values within 4 ulps outside are clamped), any order.

        Returns
        -------
        q, v : ndarray, shape (N, n)
            N = 1 for a scalar ``t``.
        """
        return self._split(self.state(t, side="right"))

    def left(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Left limit (q, v) at times ``t``: the pre-impact state at an impact (at t0, which has
        no left limit, the same as :meth:`__call__`). Same arguments and shapes as
        :meth:`__call__`."""
        return self._split(self.state(t, side="left"))

    def state(self, t: np.ndarray | float, side: str = "right") -> np.ndarray:
        """y = (q, v) at times ``t``, shape (N, 2 n); ``side`` "right" (right-continuous) or
        "left" (left limits)."""
        if side not in ("right", "left"):
            raise ValueError(f"side must be 'right' or 'left', got {side!r}")
        t = self._times(t)
        out = np.empty((t.shape[0], self.values.shape[2]))
        for start in range(0, t.shape[0], _CHUNK):
            chunk = slice(start, start + _CHUNK)
            out[chunk] = self._evaluate(t[chunk], side)
        return out

    def until(self, t_stop: float) -> DenseOutput:
        """The dense output cut at ``t_stop`` in (t0, t_end]: the same polynomials on
        [t0, t_stop] (the piece containing ``t_stop`` resampled at its nodes on the shortened
        interval, exact up to round-off), with the impacts at or before ``t_stop``."""
        t_stop = float(t_stop)
        if not self.t0 < t_stop <= self.t_end:
            raise ValueError(f"t_stop must lie in (t0, t_end] = ({self.t0!r}, {self.t_end!r}]")
        last = int(np.searchsorted(self.breaks, t_stop, side="left")) - 1
        breaks = np.append(self.breaks[: last + 1], t_stop)
        values = self.values[: last + 1].copy()
        if t_stop != self.breaks[last + 1]:
            start = self.breaks[last]
            times = start + (t_stop - start) * self._nodes
            times[-1] = t_stop
            values[last] = self.on_piece(last, times)
        return DenseOutput(breaks, values, self.impacts[self.impacts <= t_stop])

    def _split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_dof
        return y[:, :n].copy(), y[:, n:].copy()

    def _times(self, t: np.ndarray | float) -> np.ndarray:
        times = np.atleast_1d(np.asarray(t, dtype=float))
        if times.ndim != 1:
            raise ValueError(f"t must be a scalar or a 1-D array, got shape {times.shape}")
        if not np.isfinite(times).all():
            raise ValueError(f"t must be finite, got {times[~np.isfinite(times)][0]!r}")
        t0, t_end = self.t0, self.t_end
        slack = _END_ULPS * _EPS * max(abs(t0), abs(t_end))
        if times.size and (times.min() < t0 - slack or times.max() > t_end + slack):
            raise ValueError(
                f"t must lie in [t0, t_end] = [{t0!r}, {t_end!r}], "
                f"got values in [{times.min()!r}, {times.max()!r}]"
            )
        return np.clip(times, t0, t_end)

    def on_piece(self, piece: int, t: np.ndarray) -> np.ndarray:
        """y = (q, v) of piece ``piece``'s own polynomial at times ``t`` in its interval
        [breaks[piece], breaks[piece + 1]], shape (N, 2 n): at the piece's ends, its own end
        values (the right limit at its start, the left limit at its end)."""
        if not 0 <= piece < len(self):
            raise ValueError(f"piece must lie in [0, {len(self) - 1}], got {piece!r}")
        t = np.atleast_1d(np.asarray(t, dtype=float))
        a, b = self.breaks[piece], self.breaks[piece + 1]
        return self._interpolate(np.full(t.shape[0], piece), np.clip(t, a, b))

    def _evaluate(self, t: np.ndarray, side: str) -> np.ndarray:
        k = len(self)
        piece = np.searchsorted(self.breaks, t, side=side) - 1
        np.clip(piece, 0, k - 1, out=piece)
        return self._interpolate(piece, t)

    def _interpolate(self, piece: np.ndarray, t: np.ndarray) -> np.ndarray:
        """y at times ``t`` (N,), each on its piece ``piece`` (N,) (the barycentric formula)."""
        a, b = self.breaks[piece], self.breaks[piece + 1]
        x = (t - a) / (b - a)  # in [0, 1]: t - a <= b - a is kept by rounding
        values = self.values[piece]  # (N, d + 1, 2n)
        diff = x[:, None] - self._nodes[None, :]
        hit = diff == 0.0
        diff[hit] = 1.0
        c = self._weights / diff
        y = np.einsum("nj,njk->nk", c, values) / c.sum(axis=1)[:, None]
        rows, nodes = np.nonzero(hit)
        y[rows] = values[rows, nodes]
        return y


class DenseOutputBuilder:
    """Collects the pieces of a :class:`DenseOutput` during a run (memory grows by doubling).

    Parameters
    ----------
    n_dof : int
        n; states are y = (q, v) of size 2 n.
    degree : int
        d >= 1: interpolants of degree <= d are stored exactly (up to round-off).
    """

    def __init__(self, n_dof: int, degree: int) -> None:
        if degree < 1:
            raise ValueError(f"degree must be >= 1, got {degree!r}")
        self.n_dof, self.degree = int(n_dof), int(degree)
        self._nodes, _ = chebyshev_lobatto_nodes(self.degree)
        self._breaks = np.empty(17)
        self._values = np.empty((16, self.degree + 1, 2 * self.n_dof))
        self._count = 0
        self._impacts: list[float] = []

    def __len__(self) -> int:
        return self._count

    def add(
        self,
        t_start: float,
        t_stop: float,
        interpolant: Callable[[np.ndarray], np.ndarray],
        y_start: np.ndarray | None = None,
        y_stop: np.ndarray | None = None,
    ) -> None:
        """Append the piece [t_start, t_stop] (t_start = the previous piece's t_stop).

        ``interpolant(times)`` returns the states at ``times`` (shape (k,)) as an array of shape
        (2 n, k) -- scipy's convention. ``y_start`` / ``y_stop`` (2 n,), when given, replace the
        interpolant's values at the ends (the run's own states there). A piece of zero length is
        ignored.
        """
        t_start, t_stop = float(t_start), float(t_stop)
        if self._count and t_start != self._breaks[self._count]:
            raise ValueError(
                f"pieces must tile the interval: t_start={t_start!r} != previous t_stop="
                f"{self._breaks[self._count]!r}"
            )
        if not t_stop >= t_start:
            raise ValueError(f"t_stop must be >= t_start = {t_start!r}, got {t_stop!r}")
        if t_stop == t_start:
            return
        if self._count == self._values.shape[0]:
            self._grow()
        times = t_start + (t_stop - t_start) * self._nodes
        times[-1] = t_stop
        row = self._values[self._count]
        inner = slice(0 if y_start is None else 1, self.degree + (y_stop is None))
        if inner.stop > inner.start:
            row[inner] = np.asarray(interpolant(times[inner]), dtype=float).T
        if y_start is not None:
            row[0] = y_start
        if y_stop is not None:
            row[-1] = y_stop
        self._breaks[self._count] = t_start
        self._breaks[self._count + 1] = t_stop
        self._count += 1

    def set_end_state(self, y: np.ndarray) -> None:
        """Replace the state at the end of the last piece (e.g. by a final projection)."""
        if not self._count:
            raise ValueError("no piece to end")
        self._values[self._count - 1, -1] = y

    def add_impact(self, t: float) -> None:
        """Record an impact (a jump of v) at ``t``, the end of the last piece."""
        t = float(t)
        if not self._impacts or self._impacts[-1] != t:
            self._impacts.append(t)

    def build(self) -> DenseOutput:
        """The dense output of the pieces so far (arrays trimmed to size)."""
        if not self._count:
            raise ValueError("a dense output needs at least one piece")
        k = self._count
        impacts = [t for t in self._impacts if t <= self._breaks[k]]
        return DenseOutput(self._breaks[: k + 1].copy(), self._values[:k].copy(), impacts)

    def _grow(self) -> None:
        size = self._values.shape[0]
        grown = 2 * size
        breaks = np.empty(grown + 1)
        breaks[: size + 1] = self._breaks
        values = np.empty((grown,) + self._values.shape[1:])
        values[:size] = self._values
        self._breaks, self._values = breaks, values
