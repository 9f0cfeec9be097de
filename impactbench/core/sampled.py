"""A compiled problem's kernels evaluated at every sample of a trajectory, in one compiled call.

The metrics and reports evaluate the gaps and the kinetic energy at each of up to 10^5-10^6
output samples; called from Python once per sample, each kernel call pays argument checks and
an output array, more than a short run costs. The loops here call the same kernels over all the
samples: :func:`sample_gaps` returns exactly what ``gap`` returns sample by sample;
:func:`sample_kinetic_energies` forms M(q) as the time-stepping loops do (the dense matrix, or
for a diagonal M its diagonal) and sums v^T M(q) v / 2 in its own order (agreeing with the
per-sample formula to round-off). Each loop is compiled once per kernel (cached on disk, see
:func:`impactbench.core._jit.specialize`) and kept per kernel in this process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ._jit import specialize
from .mass import mass_bindings

if TYPE_CHECKING:
    from .problem_kernels import ProblemKernels


def _gaps_loop(Q, p, out):  # noqa: N803
    for k in range(Q.shape[0]):
        gap(Q[k], p, out[k])  # noqa: F821 (bound by specialize)


def _gaps_loop_t(T, Q, p, out):  # noqa: N803
    for k in range(Q.shape[0]):
        gap(T[k], Q[k], p, out[k])  # noqa: F821 (bound by specialize; a rheonomic gap)


def _kinetic_loop(Q, V, p, M, out):  # noqa: N803
    n = Q.shape[1]
    for k in range(Q.shape[0]):
        mass_matrix(Q[k], p, M)  # noqa: F821 (M(q), or for a diagonal M its diagonal in row 0)
        total = 0.0
        for i in range(n):
            if DIAGONAL_MASS:  # noqa: F821 (bound by specialize)
                row = M[0, i] * V[k, i]
            else:
                row = 0.0
                for j in range(n):
                    row += M[i, j] * V[k, j]
            total += V[k, i] * row
        out[k] = 0.5 * total


_LOOPS: dict[tuple, Callable] = {}


_FLOAT64 = np.dtype(np.float64)


def _loop(template: Callable, bindings: dict, key: tuple) -> Callable:
    loop = _LOOPS.get(key)
    if loop is None:
        loop = _LOOPS[key] = specialize(template, bindings, compile=True, nrt=False)
    return loop


def _samples(values: np.ndarray, n: int, name: str) -> np.ndarray:
    if (
        type(values) is np.ndarray
        and values.dtype is _FLOAT64
        and values.ndim == 2
        and values.shape[1] == n
        and values.flags.c_contiguous
    ):
        return values  # a trajectory's samples: the array the loops take
    array = np.ascontiguousarray(np.atleast_2d(values), dtype=float)
    if array.ndim != 2 or array.shape[1] != n:
        raise ValueError(f"{name} must have shape (N, {n}), got {np.shape(values)}")
    return array


def sample_gaps(
    gap: Callable,
    p: np.ndarray,
    n_dof: int,
    n_constraints: int,
    q: np.ndarray,
    t: np.ndarray | None = None,
) -> np.ndarray:
    """g(q_k) at each sample, or g(t_k, q_k) with ``t``.

    Parameters
    ----------
    gap : numba function
        A problem's ``gap(q, p, out)`` kernel, or with ``t`` a rheonomic problem's
        ``gap(t, q, p, out)``.
    p : ndarray, shape (P,)
        Its parameter vector.
    n_dof, n_constraints : int
        n and m (q of another width is refused: the compiled kernel does not check indices).
    q : ndarray, shape (N, n)
    t : ndarray, shape (N,), optional
        The samples' times (float64, contiguous), for a rheonomic ``gap``.

    Returns
    -------
    ndarray, shape (N, m)
    """
    q = _samples(q, n_dof, "q")
    out = np.empty((q.shape[0], n_constraints))
    if t is None:
        _loop(_gaps_loop, {"gap": gap}, ("gaps", gap))(q, p, out)
    else:
        if t.shape != (q.shape[0],):
            raise ValueError(f"t must have shape ({q.shape[0]},), got {t.shape}")
        _loop(_gaps_loop_t, {"gap": gap}, ("timed gaps", gap))(t, q, p, out)
    return out


def sample_kinetic_energies(
    kernels: ProblemKernels, p: np.ndarray, n_dof: int, q: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """v_k^T M(q_k) v_k / 2 at each sample.

    Parameters
    ----------
    kernels : ProblemKernels
        A problem's kernels; M is formed as the time-stepping loops form it
        (:func:`impactbench.core.mass.mass_bindings`: for ``mass_structure="diagonal"`` its
        diagonal only, O(n) per sample).
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
    key = ("kinetic", kernels.mass_matrix, kernels.mass_diagonal, kernels.mass_structure)
    loop = _LOOPS.get(key)
    if loop is None:
        mass = mass_bindings(kernels, n_dof, compile=True)
        bindings = {name: mass[name] for name in ("mass_matrix", "DIAGONAL_MASS")}
        loop = _loop(_kinetic_loop, bindings, key)
    diagonal = kernels.mass_structure == "diagonal"
    out = np.empty(q.shape[0])
    loop(q, v, p, np.empty((1 if diagonal else n_dof, n_dof)), out)
    return out
