"""The continuous extension of a time-stepping run: its state between the steps.

A time-stepping scheme computes (q_k, v_k) at the grid times t_k only. :class:`SampledExtension`
defines its value between them, for ``simulate(t_eval=..., events=...)``, on each step
[t_k, t_{k+1}]:

- q is the linear interpolant of q_k and q_{k+1};
- v is the linear interpolant of v_k and v_{k+1} in a step without an impulse, and in a step
  where the scheme applied a contact impulse (the impact log has an entry in (t_k, t_{k+1}]:
  time-stepping logs an impact at the end of its step) v keeps v_k up to t_{k+1} and jumps
  to v_{k+1} there: the impact's velocity jump is placed at the logged impact time, as the
  impact log places it, instead of being smeared over the step.

The extension is right-continuous (at a logged impact, the post-impact v_{k+1}) and takes the
run's values at the grid times exactly. It is as accurate as the scheme plus O(h) in q
(O(h^2) in a smooth step), and in v O(h^2) in a smooth step and O(h) within an impact step:
an event located on it is located to that accuracy. It is not the scheme's own interpolation
(the schemes define none); it interpolates the run's output, so it needs every step stored
(``output_every=1``).

:class:`SampledExtension` has the interface of :class:`impactbench.DenseOutput` that the event
location and ``t_eval`` use (``breaks``, :meth:`on_piece`, :meth:`state`), with one piece per
step.
"""

from __future__ import annotations

import numpy as np

from .trajectory import Trajectory


class SampledExtension:
    """The continuous extension of a time-stepping run's samples (see the module notes).

    Parameters
    ----------
    t : ndarray, shape (N,)
        Strictly increasing sample times, N >= 2.
    q, v : ndarray, shape (N, n)
        The samples.
    impact_times : ndarray, shape (k,)
        Times of the logged impulses (any order, repeats allowed).

    Attributes
    ----------
    breaks : ndarray, shape (N,)
        The sample times: piece i is the step [t_i, t_{i+1}].
    held : ndarray of bool, shape (N - 1,)
        Whether piece i holds v_i (an impulse was logged in (t_i, t_{i+1}]).
    """

    def __init__(
        self, t: np.ndarray, q: np.ndarray, v: np.ndarray, impact_times: np.ndarray
    ) -> None:
        if t.shape[0] < 2 or not np.all(np.diff(t) > 0.0):
            raise ValueError(
                "a continuous extension needs at least 2 strictly increasing sample times, "
                f"got {t.shape[0]} samples"
            )
        self.breaks = t
        self.y = np.hstack((q, v))
        self.n_dof = q.shape[1]
        step = np.searchsorted(t, np.asarray(impact_times, dtype=float), side="left") - 1
        self.held = np.zeros(t.shape[0] - 1, dtype=bool)
        self.held[step[(step >= 0) & (step < t.shape[0] - 1)]] = True

    def __len__(self) -> int:
        """Number of pieces (steps)."""
        return self.breaks.shape[0] - 1

    def on_piece(self, piece: int, t: np.ndarray) -> np.ndarray:
        """y = (q, v) on step ``piece`` at times ``t`` in [t_i, t_{i+1}], shape (N, 2 n): at
        its end, the piece's own left limit (v_i in a step with an impulse)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        pieces = np.full(t.shape[0], piece)
        a, b = self.breaks[piece], self.breaks[piece + 1]
        return self._interpolate(pieces, np.clip(t, a, b))

    def state(self, t: np.ndarray | float, side: str = "right") -> np.ndarray:
        """y = (q, v) at times ``t`` in [t0, t_end], shape (N, 2 n), right-continuous (only
        ``side="right"``: the extension's convention, post-impact at a logged impact)."""
        if side != "right":
            raise ValueError(f"side must be 'right', got {side!r}")
        t = np.atleast_1d(np.asarray(t, dtype=float))
        if t.size and (t.min() < self.breaks[0] or t.max() > self.breaks[-1]):
            raise ValueError(
                f"t must lie in [{self.breaks[0]!r}, {self.breaks[-1]!r}], got values in "
                f"[{t.min()!r}, {t.max()!r}]"
            )
        pieces = np.searchsorted(self.breaks, t, side="right") - 1
        np.clip(pieces, 0, len(self) - 1, out=pieces)
        y = self._interpolate(pieces, t)
        last = t == self.breaks[-1]  # the run's final state (post-impact in a held step)
        y[last] = self.y[-1]
        return y

    def _interpolate(self, pieces: np.ndarray, t: np.ndarray) -> np.ndarray:
        """y at times ``t`` (N,), each on its step ``pieces`` (N,)."""
        a, b = self.breaks[pieces], self.breaks[pieces + 1]
        x = ((t - a) / (b - a))[:, None]
        start, stop = self.y[pieces], self.y[pieces + 1]
        y = (1.0 - x) * start + x * stop  # exact at x = 0 and x = 1
        n = self.n_dof
        held = self.held[pieces]
        y[held, n:] = start[held, n:]
        return y


def sampled_extension(trajectory: Trajectory) -> SampledExtension:
    """The continuous extension of a time-stepping run stored at every step.

    Raises
    ------
    ValueError
        When the run did not store every step (``output_every`` > 1; for ``Adaptive``, its own
        ``t_eval`` or more accepted steps than ``max_samples``), or when the impact log was
        truncated (the steps with an impulse past its capacity are not known: raise the
        method's ``log_capacity``).
    """
    steps = trajectory.stats.get("steps")
    if steps is None or trajectory.t.shape[0] != steps + 1:
        raise ValueError(
            "the continuous extension needs every step of the run stored, and "
            f"{trajectory.method} stored {trajectory.t.shape[0]} samples of {steps} steps: use "
            "output_every=1 (for Adaptive: no t_eval of its own, and max_samples above the "
            "number of steps)"
        )
    log = trajectory.impacts
    if log.truncated:
        raise ValueError(
            f"the continuous extension needs every logged impulse, and the impact log of "
            f"{trajectory.method} kept {len(log)} of {log.total} entries: raise the method's "
            "log_capacity"
        )
    return SampledExtension(trajectory.t, trajectory.q, trajectory.v, log.t)
