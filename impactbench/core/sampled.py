"""A compiled problem's kernels evaluated at every sample of a trajectory, in one compiled call.

The metrics and reports evaluate the gaps and the kinetic energy at each of up to 10^5-10^6
output samples; called from Python once per sample, the kernels cost 2-4 us a call (argument
checks, an output array), which was most of a short run's cost in the studies (a 385 ms
energy-decay run spent 87 ms simulating). The loops here call the same kernels over all the
samples: :func:`sample_gaps` returns exactly what ``gap`` returns sample by sample;
:func:`sample_kinetic_energies` sums v^T M(q) v / 2 in its own order (agreeing with the
per-sample formula to round-off). Each loop is compiled once per kernel (cached on disk, see
:func:`impactbench.core._jit.specialize`) and kept per kernel in this process.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._jit import specialize


def _gaps_loop(Q, p, out):  # noqa: N803
    for k in range(Q.shape[0]):
        gap(Q[k], p, out[k])  # noqa: F821 (bound by specialize)


def _kinetic_loop(Q, V, p, M, out):  # noqa: N803
    n = Q.shape[1]
    for k in range(Q.shape[0]):
        mass_matrix(Q[k], p, M)  # noqa: F821 (bound by specialize)
        total = 0.0
        for i in range(n):
            row = 0.0
            for j in range(n):
                row += M[i, j] * V[k, j]
            total += V[k, i] * row
        out[k] = 0.5 * total


def _diagonal_kinetic_loop(Q, V, p, d, out):  # noqa: N803
    n = Q.shape[1]
    for k in range(Q.shape[0]):
        mass_diagonal(Q[k], p, d)  # noqa: F821 (bound by specialize)
        total = 0.0
        for i in range(n):
            total += d[i] * V[k, i] * V[k, i]
        out[k] = 0.5 * total


_LOOPS: dict[tuple[str, Callable], Callable] = {}


def _loop(template: Callable, name: str, kernel: Callable) -> Callable:
    key = (template.__name__, kernel)
    loop = _LOOPS.get(key)
    if loop is None:
        loop = _LOOPS[key] = specialize(template, {name: kernel}, compile=True, nrt=False)
    return loop


def _samples(values: np.ndarray, n: int, name: str) -> np.ndarray:
    array = np.ascontiguousarray(np.atleast_2d(values), dtype=float)
    if array.ndim != 2 or array.shape[1] != n:
        raise ValueError(f"{name} must have shape (N, {n}), got {np.shape(values)}")
    return array


def sample_gaps(
    gap: Callable, p: np.ndarray, n_dof: int, n_constraints: int, q: np.ndarray
) -> np.ndarray:
    """g(q_k) at each sample.

    Parameters
    ----------
    gap : numba function
        A problem's ``gap(q, p, out)`` kernel.
    p : ndarray, shape (P,)
        Its parameter vector.
    n_dof, n_constraints : int
        n and m (q of another width is refused: the compiled kernel does not check indices).
    q : ndarray, shape (N, n)

    Returns
    -------
    ndarray, shape (N, m)
    """
    q = _samples(q, n_dof, "q")
    out = np.empty((q.shape[0], n_constraints))
    _loop(_gaps_loop, "gap", gap)(q, p, out)
    return out


def sample_kinetic_energies(
    mass_matrix: Callable,
    mass_diagonal: Callable | None,
    p: np.ndarray,
    n_dof: int,
    q: np.ndarray,
    v: np.ndarray,
) -> np.ndarray:
    """v_k^T M(q_k) v_k / 2 at each sample.

    Parameters
    ----------
    mass_matrix : numba function
        A problem's ``mass_matrix(q, p, out)`` kernel (used when ``mass_diagonal`` is None).
    mass_diagonal : numba function or None
        Its ``mass_diagonal(q, p, out)`` kernel, for a diagonal M: O(n) per sample.
    p : ndarray, shape (P,)
    n_dof : int
        n (q and v of another width are refused).
    q, v : ndarray, shape (N, n)

    Returns
    -------
    ndarray, shape (N,)
    """
    q = _samples(q, n_dof, "q")
    v = _samples(v, n_dof, "v")
    if v.shape[0] != q.shape[0]:
        raise ValueError(f"v must have as many samples as q ({q.shape[0]}), got {v.shape[0]}")
    n = q.shape[1]
    out = np.empty(q.shape[0])
    if mass_diagonal is not None:
        _loop(_diagonal_kinetic_loop, "mass_diagonal", mass_diagonal)(q, v, p, np.empty(n), out)
    else:
        _loop(_kinetic_loop, "mass_matrix", mass_matrix)(q, v, p, np.empty((n, n)), out)
    return out
