r"""Impacting elastic bar: P1 finite elements, lumped mass, a rigid wall at its end.

The benchmark of Doyen, Ern and Piperno (2011). A bar of length L, Young's modulus E, density
rho and unit cross-section moves at speed v0 > 0 towards a rigid wall at distance d from its
right end x = L. u(x, t) is the displacement, c = sqrt(E / rho) the wave speed:

.. math::

    \rho u_{tt} = E u_{xx}, \quad E u_x(0, t) = 0, \quad
    0 \le g = d - u(L, t) \ \perp \ \lambda = -E u_x(L, t) \ge 0,

with u(x, 0) = 0, u_t(x, 0) = v0.

**Exact solution (d'Alembert).** Let t1 = t0 + d / v0 be the time of contact and s = t - t1.

* s <= 0: rigid flight, u = v0 (t - t0), u_t = v0.
* 0 <= s <= L/c: a compression wave leaves the wall at speed c. Ahead of it (x < L - c s) the
  bar still flies, u = v0 (t - t0); behind it the bar is at rest. The wave front reaches x at
  t1 + (L - x)/c, where u = d + v0 (L - x)/c, and u keeps this value: strain u_x = -v0/c,
  contact force lambda = E v0 / c = rho c v0 (the jump condition across a front:
  [E u_x] = -rho c [u_t]).
* L/c <= s <= 2L/c: the wave reflects on the free end as a release wave, behind which (x <
  c s - L) the stress vanishes and the velocity is -v0 (jump conditions again): there
  u = d + 2 v0 L / c - v0 s; ahead of it still u = d + v0 (L - x)/c, u_t = 0.
* s >= 2L/c: the release wave reaches the wall, the contact force drops to zero and the
  whole bar leaves unstressed at -v0: u = d - v0 (s - 2L/c).

So the contact lasts 2L/c, the force is rho c v0 throughout it, the end displacement u(L, t)
stays at d during contact, and the energy rho L v0^2 / 2 is conserved (kinetic energy turned
into strain energy and back; the outcome is an elastic bounce although the contact law has no
restitution: for the continuum, e plays no role).

**Discretisation.** N P1 elements of size h_e = L/N, nodes x_i = i h_e (i = 0..N), q_i =
u(x_i). Lumped mass M = rho h_e diag(1/2, 1, ..., 1, 1/2), stiffness K = (E/h_e)
tridiag(-1, 2, -1) (1 at both ends), forces -K q (K declared, ``stiffness_matrix()``: the implicit
``MoreauJean(theta, implicit=True)`` takes it implicitly), one constraint g(q) = d - q_N (the
contact node's gap) with the Newton coefficient ``restitution`` (default 0, the usual choice
for a semi-discrete continuum). :meth:`ImpactingBar.exact_solution` returns the nodal values
u(x_i, t), u_t(x_i, t) of the continuous solution: the discrete solution converges to them as
N grows and h -> 0 (at a fixed CFL number h c / h_e), not for a fixed mesh.

**Stable step.** The largest eigenfrequency of M^-1 K is omega_max = 2 c / h_e exactly (the
zigzag mode q_i = (-1)^i; Gershgorin's bound 4 c^2 / h_e^2 on every row of M^-1 K is attained),
so explicit central-difference-type schemes are stable for h <= 2 / omega_max = h_e / c
(CFL number 1): :attr:`ImpactingBar.stable_step`, the problem's declaration
(:mod:`impactbench.core.divergence`). Above their limit the explicit schemes refuse the step
(ValueError): PaoliSchatzman (central difference), D1MinusLinear (velocity Verlet) and
CatchingUp (symplectic Euler) at h_e / c; MoreauJean and MoreauJeanProjection at
h_e / (c sqrt(4 theta - 1)) for theta >= 1/2 (h_e / c at theta = 1/2; below 1/2 no step is
stable). ``MoreauJean(theta, implicit=True)`` with theta >= 1/2 has no limit (its energy
behaviour at steps above h_e / c: tests/test_moreau_jean_implicit.py).
NonsmoothGeneralizedAlpha is implicit and declares no limit: its fixed-point iteration, which
stops contracting on the bar's highest mode near that limit, stops the run (status 100) there
(tests/test_nonsmooth_generalized_alpha.py, at 3 h_e / c).

References
----------
D. Doyen, A. Ern, S. Piperno, "Time-integration schemes for the finite element dynamic
Signorini problem", SIAM J. Sci. Comput. 33 (2011) 223-249; T. J. R. Hughes et al., "A finite
element method for a class of contact-impact problems", Comput. Methods Appl. Mech. Engrg. 8
(1976) 249-276 (the exact solution of the impacting bar).
"""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels, valid_mass_structure

#: The parameters of the kernels, in the order of the vector p: the mass rho h_e of an interior
#: node, the stiffness E / h_e of an element, and the initial gap d.
PARAMETERS = ("node_mass", "element_stiffness", "initial_gap")
NODE_MASS, ELEMENT_STIFFNESS, INITIAL_GAP = parameter_indices(PARAMETERS)


@kernel
def _bar_mass_matrix(q, p, out):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = p[NODE_MASS]
    out[0, 0] = 0.5 * p[NODE_MASS]
    out[n - 1, n - 1] = 0.5 * p[NODE_MASS]


@kernel
def _bar_mass_diagonal(q, p, out):
    n = q.shape[0]
    for i in range(n):
        out[i] = p[NODE_MASS]
    out[0] = 0.5 * p[NODE_MASS]
    out[n - 1] = 0.5 * p[NODE_MASS]


@kernel
def _bar_forces(t, q, v, p, out):
    n = q.shape[0]
    k = p[ELEMENT_STIFFNESS]
    out[0] = -k * (q[0] - q[1])
    for i in range(1, n - 1):
        out[i] = -k * (2.0 * q[i] - q[i - 1] - q[i + 1])
    out[n - 1] = -k * (q[n - 1] - q[n - 2])


@kernel
def _bar_stiffness(p, out):
    n = out.shape[0]
    k = p[ELEMENT_STIFFNESS]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
    for i in range(n - 1):
        out[i, i] += k
        out[i + 1, i + 1] += k
        out[i, i + 1] = -k
        out[i + 1, i] = -k


@kernel
def _bar_gap(q, p, out):
    out[0] = p[INITIAL_GAP] - q[q.shape[0] - 1]


@kernel
def _bar_gap_gradient(q, p, out):
    n = q.shape[0]
    for j in range(n):
        out[0, j] = 0.0
    out[0, n - 1] = -1.0


class ImpactingBar(CompiledProblem):
    """Elastic bar (N P1 elements, lumped mass) flying at v0 onto a rigid wall (see the module).

    N + 1 DOF (the nodal displacements), 1 constraint (the gap d - q_N of the end node).

    Parameters
    ----------
    n_elements : int, default 10
        N >= 1.
    length : float, default 1.0
        L > 0.
    young_modulus : float, default 1.0
        E > 0 (unit cross-section).
    density : float, default 1.0
        rho > 0.
    speed : float, default 1.0
        v0 > 0, the initial velocity of every node, towards the wall.
    gap : float, default 0.1
        d > 0, the initial distance from the end node to the wall.
    restitution : float, default 0.0
        e in [0, 1], the Newton coefficient of the contact node.
    t0 : float, default 0.0
        Initial time.
    mass_structure : {"diagonal", "dense"}, default "diagonal"
        How the loops store and solve with the lumped mass matrix: its diagonal (O(n) per step)
        or the dense (n, n) array (O(n^2) per step; the same trajectory to round-off, kept to
        measure the difference).

    Raises
    ------
    ValueError
        For a parameter that is not finite, of the wrong type, or out of range (named in the
        message).
    """

    coordinates = (("q_{i0}", "m"),)
    parameter_units = dict(
        n_elements="-",
        length="m",
        young_modulus="Pa",
        density="kg/m^3",
        speed="m/s",
        gap="m",
        restitution="-",
        t0="s",
        mass_structure="-",
    )

    KERNELS = ProblemKernels(
        _bar_mass_matrix,
        _bar_forces,
        _bar_gap,
        _bar_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        mass_diagonal=_bar_mass_diagonal,
        sizes_at_run_time=True,  # its meshes share one compiled loop per scheme
        stiffness_matrix=_bar_stiffness,
    )

    def __init__(
        self,
        n_elements: int = 10,
        length: float = 1.0,
        young_modulus: float = 1.0,
        density: float = 1.0,
        speed: float = 1.0,
        gap: float = 0.1,
        restitution: float = 0.0,
        t0: float = 0.0,
        mass_structure: str = "diagonal",
    ) -> None:
        self.n_elements = checks.positive_int(n_elements, "n_elements")
        self.length = checks.positive_scalar(length, "length")
        self.young_modulus = checks.positive_scalar(young_modulus, "young_modulus")
        self.density = checks.positive_scalar(density, "density")
        self.speed = checks.positive_scalar(speed, "speed")
        self.initial_gap = checks.positive_scalar(gap, "gap")
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.mass_structure = valid_mass_structure(mass_structure)
        n = self.n_elements + 1
        self.element_size = self.length / self.n_elements
        self.wave_speed = float(np.sqrt(self.young_modulus / self.density))
        self.nodes = self.element_size * np.arange(n)
        self.q0 = np.zeros(n)
        self.v0 = np.full(n, self.speed)
        self.name = "ImpactingBar"
        self.n_dof = n
        self.n_constraints = 1
        self._finish_init()

    @property
    def stable_step(self) -> float:
        """h_e / c = 2 / omega_max, the CFL bound of the explicit schemes on this mesh (module
        docstring: the schemes that refuse a larger step)."""
        return self.element_size / self.wave_speed

    @property
    def contact_time(self) -> float:
        """t1 = t0 + d / v0, when the end node reaches the wall."""
        return self.t0 + self.initial_gap / self.speed

    @property
    def contact_duration(self) -> float:
        """2 L / c, the duration of the contact of the continuous bar."""
        return 2.0 * self.length / self.wave_speed

    @property
    def contact_force(self) -> float:
        """rho c v0, the wall's force on the continuous bar throughout the contact."""
        return self.density * self.wave_speed * self.speed

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        h_e = self.element_size
        return parameter_vector(
            PARAMETERS,
            node_mass=self.density * h_e,
            element_stiffness=self.young_modulus / h_e,
            initial_gap=self.initial_gap,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """Strain energy (E / (2 h_e)) sum_i (q_{i+1} - q_i)^2."""
        strain = np.diff(np.asarray(q, dtype=float))
        return 0.5 * self.young_modulus / self.element_size * float(strain @ strain)

    def exact_energy(self) -> float:
        """rho L v0^2 / 2, the conserved energy of the continuous bar."""
        return 0.5 * self.density * self.length * self.speed**2

    def impact_times(self, t_end: float, max_count: int = 1) -> np.ndarray:
        """The impact of the continuous bar in [t0, t_end]: [t1] or empty.

        The bar hits the wall once (at t1 = t0 + d / v0); the release at t1 + 2L/c is not an
        impact. A discrete bar with e = 0 has many small impacts of its end node during the
        contact (chattering as the compression wave reflects between nodes).
        """
        checks.positive_int(max_count, "max_count")
        t_end = checks.finite_scalar(t_end, "t_end")
        return np.array([self.contact_time]) if self.contact_time <= t_end else np.zeros(0)

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nodal values of the continuous solution (module notes).

        Parameters
        ----------
        t : array_like, shape (T,)
            Times >= t0.

        Returns
        -------
        q, v : ndarray, shape (T, N + 1)
            u(x_i, t) and u_t(x_i, t) at the nodes. At a wave front (a set of measure zero)
            the velocity takes the value behind the front.

        Raises
        ------
        ValueError
            If t is not finite, not 1-D or below t0.
        """
        t = checks.times(t, self.t0)[:, None]
        x = self.nodes[None, :]
        c, v0, d, length = self.wave_speed, self.speed, self.initial_gap, self.length
        s = t - self.contact_time
        flying = v0 * (t - self.t0)
        compressed = d + v0 * (length - x) / c
        released = d + 2.0 * v0 * length / c - v0 * s
        front = length - c * s  # compression front, for 0 <= s <= L/c
        back = c * s - length  # release front, for L/c <= s <= 2L/c
        q = np.where(
            s <= 0.0,
            flying,
            np.where(
                s * c <= length,
                np.where(x < front, flying, compressed),
                np.where(x <= back, released, compressed),
            ),
        )
        v = np.where(
            s <= 0.0,
            v0,
            np.where(s * c <= length, np.where(x < front, v0, 0.0), np.where(x <= back, -v0, 0.0)),
        )
        after = s * c >= 2.0 * length
        q = np.where(after, d - v0 * (s - 2.0 * length / c), q)
        v = np.where(after, -v0, v)
        return q, v
