"""The kernels of a compiled problem: :class:`ProblemKernels`, what the compiled loops and
engines call (the contract of :class:`impactbench.core.problem.CompiledProblem`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class ProblemKernels(NamedTuple):
    """Numba-compilable versions of a problem's functions, all writing into preallocated output.

    Each function takes the problem's parameter vector ``p`` (float64, 1-D) and writes its result
    into ``out``; none allocates. Shapes: q, v (n,); ``mass_matrix(q, p, out)`` out (n, n);
    ``forces(t, q, v, p, out)`` out (n,); ``gap(q, p, out)`` out (m,);
    ``gap_gradient(q, p, out)`` out (m, n). ``affine_gap`` declares g(q) = G q + c with constant G
    (the metric projection then needs no Newton iteration); ``constant_mass`` declares M(q) = M
    (the loops then factorise it once per run instead of once per step).

    ``mass_diagonal(q, p, out)``, out (n,), writes the diagonal of M(q) for a problem whose mass
    matrix is diagonal (None if it has none); ``mass_structure`` (one of
    :data:`MASS_STRUCTURES`) says which of the two mass kernels the time-stepping loops call:
    with ``"diagonal"`` they keep M and its factor as length-n rows and every solve with M costs
    O(n) (:func:`impactbench.core.contact.factor_mass`). :meth:`Problem.kernels` sets it from
    the problem's declaration :attr:`Problem.mass_structure`.

    ``sizes_at_run_time`` declares a problem used at many sizes (the meshes of a bar): its
    time-stepping loops read n and m at run time from ``impactbench.core.driver.WHOLE_ROWS_FROM``
    DOF instead of ``GENERIC_FROM``, so that one compiled loop per scheme serves every mesh, at a
    somewhat higher cost per step on small meshes (module docstring of
    ``impactbench/core/driver.py``). A declaration, like the others here: whether a problem is
    run at many sizes is known to its author only (:mod:`impactbench.core.compilation`).

    The compiled loops pass row slices of one work buffer (so that the compiler can prove them
    disjoint): a kernel must accept non-contiguous 2-D ``out`` arrays (index them; do not
    ``reshape`` them) and must not keep references to its arguments.

    Planar Coulomb friction (docs/friction.md): a frictional problem gives both
    ``tangent_gradient(q, p, out)``, out (m, n), whose row i is the tangent row W_T,i(q) of
    contact i (its tangential velocity is W_T,i v), and ``friction(q, p, mu, e_t)``, writing
    the Coulomb coefficient mu_i >= 0 and the tangential restitution e_T,i in [0, 1] of each
    contact into ``mu`` and ``e_t`` (m each); a frictionless problem leaves both None.
    ``tangent_rows`` is the number of tangent rows per contact: 1 (planar friction; spatial
    contacts, two rows per contact and a circular friction cone, are a later extension that
    will declare 2, with ``tangent_gradient`` writing (2 m, n)). A frictional problem whose
    contacts have different normal restitutions gives ``normal_restitution(q, p, e_n)``,
    writing e_N,i in [0, 1] of each contact into ``e_n`` (m); without it every contact takes
    the problem's ``restitution``.

    Linear forces (the implicit ``MoreauJean(theta, implicit=True)``): a problem whose forces
    are F(t, q, v) = -K q - C v + F_rest(t, q, v) with constant matrices K (stiffness) and C
    (damping) may declare them, ``stiffness_matrix(p, out)`` and ``damping_matrix(p, out)``,
    out (n, n) (either, both or neither; None: not declared). They declare a part of
    ``forces``, which still returns the whole F: a scheme that ignores them is unchanged.

    Moving obstacles (``rheonomic`` True, a compile-time flag): the gaps depend on time,
    g(t, q), and every geometric kernel takes t first, as ``forces`` does:
    ``gap(t, q, p, out)`` out (m,), ``gap_gradient(t, q, p, out)`` out (m, n) (G = dg/dq) and,
    frictional, ``tangent_gradient(t, q, p, out)`` out (m, n); with the declared time terms
    ``gap_rate(t, q, p, out)``, out (m,), the partial derivative r = dg/dt at fixed q (the
    relative normal velocity is U = G v + r), and ``gap_drift(t, q, v, p, out)``, out (m,),
    c = d2g/dt2 + 2 (dG/dt) v (partial derivatives in t at fixed q), so that along a motion
    d2g/dt2 = G a + v^T (d2g/dq2) v + c. A frictional rheonomic problem also gives
    ``tangent_rate(t, q, p, out)``, out (m,), the obstacle's term tau of the relative
    tangential velocity u_T = W_T v + tau, and ``tangent_drift(t, q, v, p, out)``, out (m,),
    c_T = dW_T/dt v + dtau/dt + (dtau/dq) v, so that du_T/dt = W_T a + (dW_T/dq)[v] v + c_T.
    ``friction``, ``normal_restitution``, the mass and force kernels are unchanged. For a
    rheonomic problem ``affine_gap`` declares g(t, q) = G q + b(t) with G constant in q and t.
    With ``rheonomic`` False (default) the four time kernels are None and the geometric
    kernels take no t.
    """

    mass_matrix: Callable
    forces: Callable
    gap: Callable
    gap_gradient: Callable
    affine_gap: bool = False
    constant_mass: bool = False
    mass_diagonal: Callable | None = None
    mass_structure: str = "dense"
    sizes_at_run_time: bool = False
    tangent_gradient: Callable | None = None
    friction: Callable | None = None
    tangent_rows: int = 1
    normal_restitution: Callable | None = None
    stiffness_matrix: Callable | None = None
    damping_matrix: Callable | None = None
    rheonomic: bool = False
    gap_rate: Callable | None = None
    gap_drift: Callable | None = None
    tangent_rate: Callable | None = None
    tangent_drift: Callable | None = None
