"""Writing a compiled problem: the kernel decorator and the named parameters.

A :class:`impactbench.CompiledProblem` writes its physics as kernels, functions compiled by
:func:`kernel` that read the problem's parameters from one float64 vector ``p``. The parameters
are named once, in a tuple; :func:`parameter_indices` gives the module-level integer constants
that the kernels index ``p`` with, and :func:`parameter_vector` builds ``p`` from the values by
name, in the same order::

    PARAMETERS = ("gravity", "mass")
    GRAVITY, MASS = parameter_indices(PARAMETERS)


    @kernel
    def forces(t, q, v, p, out):
        out[0] = -p[MASS] * p[GRAVITY]

    # in the problem class
    def kernel_parameters(self):
        return parameter_vector(PARAMETERS, gravity=self.gravity, mass=self.mass)

numba reads a module-level integer as a compile-time constant, so ``p[MASS]`` compiles to the
same machine code as ``p[1]``. Name each constant as its parameter in upper case (the built-in
problems are held to it by ``tests/test_layout.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _jit


def kernel(function: Callable) -> Callable:
    """Compile a problem kernel with numba (nopython mode, cached on disk, releasing the GIL).

    The kernels of a :class:`impactbench.ProblemKernels` are ``mass_matrix(q, p, out)``,
    ``forces(t, q, v, p, out)``, ``gap(q, p, out)``, ``gap_gradient(q, p, out)`` and, for a
    diagonal mass, ``mass_diagonal(q, p, out)`` (a moving obstacle, ``rheonomic=True``:
    ``gap(t, q, p, out)``, ``gap_gradient(t, q, p, out)``, ``gap_rate(t, q, p, out)`` and
    ``gap_drift(t, q, v, p, out)``): each writes its result into ``out`` and
    allocates nothing; ``p`` is the problem's parameter vector (:func:`parameter_vector`). A
    kernel may call other functions compiled by this decorator. The compiled time-stepping
    loops call the kernels through compiled entry points, so that one loop serves every
    problem (``TimeStepping(specialised=True)`` inlines them instead).

    Parameters
    ----------
    function : callable
        A module-level function that numba can compile in nopython mode (its module must be a
        file: the machine code is cached beside it).

    Returns
    -------
    callable
        The compiled function (a numba dispatcher), callable from Python too; ``function``
        itself when numba's JIT is disabled (``NUMBA_DISABLE_JIT=1``).
    """
    return _jit.kernel(function)


def _checked_names(names: Any) -> tuple[str, ...]:
    """``names`` as a tuple of distinct Python identifiers, or ValueError naming ``names``."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"names must be a tuple of parameter names, got {names!r}")
    names = tuple(names)
    bad = [name for name in names if not isinstance(name, str) or not name.isidentifier()]
    if bad:
        raise ValueError(f"names must be Python identifiers, got {bad[0]!r} in {names!r}")
    if not names:
        raise ValueError("names must name at least one parameter, got ()")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"names must be distinct, got {repeated} more than once in {names!r}")
    return names


@functools.lru_cache(maxsize=256)
def _valid_names(names: tuple[str, ...]) -> bool:
    """:func:`_checked_names` of a tuple passed (kept per tuple; a tuple cannot change)."""
    return bool(_checked_names(names))


#: The types of the values :func:`parameter_vector` takes without converting them.
_FLOAT_TYPES = frozenset({float, np.float64})


def parameter_indices(names: Sequence[str]) -> tuple[int, ...]:
    """The index in the parameter vector ``p`` of each named parameter: 0, 1, ...

    Unpacked into module-level constants named as the parameters in upper case
    (``GRAVITY, MASS = parameter_indices(("gravity", "mass"))``), which the kernels index ``p``
    with; numba compiles ``p[MASS]`` as ``p[1]``.

    Parameters
    ----------
    names : sequence of str
        The parameter names, distinct Python identifiers, in the order of ``p``.

    Returns
    -------
    tuple of int
        ``(0, 1, ..., len(names) - 1)``.

    Raises
    ------
    ValueError
        If ``names`` is not a non-empty sequence of distinct identifiers.
    """
    return tuple(range(len(_checked_names(names))))


def parameter_vector(names: Sequence[str], **values: Any) -> np.ndarray:
    """The parameter vector ``p`` of a problem: each named value at its index.

    Every value is a finite real number, except that of the last name, which may also be a 1-D
    array of them (a block of any length at the end of ``p``, for data whose size depends on the
    problem: its constant is the index of its first entry).

    Parameters
    ----------
    names : sequence of str
        The parameter names, in the order of ``p`` (as given to :func:`parameter_indices`).
    **values : float or array_like
        One value for each name, by name.

    Returns
    -------
    ndarray of float64, shape (k,)
        The values in the order of ``names`` (k = len(names), plus the length of a final block
        minus one).

    Raises
    ------
    ValueError
        If a name has no value, a value has no name, or a value is not finite real (booleans
        included); the message names it.
    """
    if type(names) is tuple and len(values) == len(names) and _valid_names(names):
        row = [values.get(name) for name in names]
        # every value a finite float: the vector of them (anything else is checked below)
        if _FLOAT_TYPES.issuperset(map(type, row)) and all(map(math.isfinite, row)):
            return np.array(row, dtype=float)
    names = _checked_names(names)
    missing = [name for name in names if name not in values]
    unknown = sorted(set(values) - set(names))
    if missing or unknown:
        raise ValueError(
            f"the values must be given for exactly the parameters {list(names)}: "
            f"missing {missing}, unknown {unknown}"
        )
    blocks = []
    for position, name in enumerate(names):
        value = values[name]
        array = np.asarray(value)
        last = position == len(names) - 1
        if array.dtype.kind not in "iuf" or array.ndim > (1 if last else 0):
            want = "a real number or a 1-D array of them" if last else "a real number"
            raise ValueError(f"{name} must be {want}, got {value!r}")
        array = np.atleast_1d(array.astype(float))
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite, got {value!r}")
        blocks.append(array)
    return np.concatenate(blocks)
