"""The mass matrix as the compiled loops form it: dense, or for a diagonal M its diagonal only.

:func:`mass_bindings` binds a scheme's ``mass_matrix``, ``DIAGONAL_MASS`` and ``MASS_ROWS``
(the driver's module notes, :mod:`impactbench.core.driver`); :mod:`impactbench.core.sampled`
forms M(q) at the samples of a trajectory the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._jit import specialize

if TYPE_CHECKING:
    from .problem_kernels import ProblemKernels

# Name bound per problem by mass_bindings.
mass_diagonal = None


def _diagonal_mass_row(q, p, out):
    """The loops' mass kernel for a diagonal M: its diagonal into row 0 of ``out`` (1, n)."""
    mass_diagonal(q, p, out[0])


def mass_bindings(kernels: ProblemKernels, n_dof: int, compile: bool) -> dict[str, Any]:
    """The mass-matrix globals of a scheme's functions for one problem's kernels.

    Parameters
    ----------
    kernels : ProblemKernels
        The problem's kernels; ``kernels.mass_structure`` chooses the form of M.
    n_dof : int
    compile : bool
        As for :func:`make_loop`.

    Returns
    -------
    dict
        ``mass_matrix``: the kernel writing M(q) into a block of ``MASS_ROWS`` rows (the dense
        kernel, or for a diagonal M the problem's ``mass_diagonal`` writing row 0);
        ``DIAGONAL_MASS``; ``MASS_ROWS`` (n or 1); ``SIZES_AT_RUN_TIME``, the problem's
        declaration read by :func:`make_loop` (``ProblemKernels.sizes_at_run_time``).
    """
    declared = {"SIZES_AT_RUN_TIME": bool(kernels.sizes_at_run_time)}
    if kernels.mass_structure == "dense":
        return {
            "mass_matrix": kernels.mass_matrix,
            "DIAGONAL_MASS": False,
            "MASS_ROWS": n_dof,
            **declared,
        }
    if kernels.mass_structure != "diagonal" or kernels.mass_diagonal is None:
        raise ValueError(
            f"kernels.mass_structure must be 'dense', or 'diagonal' with a mass_diagonal "
            f"kernel, got mass_structure={kernels.mass_structure!r} and "
            f"mass_diagonal={kernels.mass_diagonal!r}"
        )
    row = specialize(
        _diagonal_mass_row, {"mass_diagonal": kernels.mass_diagonal}, compile, inline=True
    )
    return {"mass_matrix": row, "DIAGONAL_MASS": True, "MASS_ROWS": 1, **declared}
