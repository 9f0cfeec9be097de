"""MoreauJean(theta, implicit=True): the linear forces -K q - C v a problem declares, taken
implicitly in the metric of W = M + h theta C + h^2 theta^2 K (methods/moreau_jean_implicit.py).

The impacting bar declares its K: the implicit scheme runs it at steps far above the CFL limit
that the explicit schemes refuse, with the exact discrete energy balance of the module
docstring. A problem that declares no K or C runs the explicit scheme, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench import Problem
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall, FrictionOscillator, ImpactingBar, SlidingBlock


def _energy_terms(bar: ImpactingBar, run: ib.Trajectory, h: float, theta: float):
    """Per step: the energy change E_{k+1} - E_k, the normal impulse P of the end node
    (W (v_{k+1} - v_k) = h F(q_p, v_k) + G^T P, G = -e_N), G v_theta, the quadratic
    (theta - 1/2) (|dv|_M^2 + |dq|_K^2) and the reaction G^T P."""
    M = bar.mass_matrix(bar.q0)
    K = bar.stiffness_matrix()
    W = M + (h * theta) ** 2 * K
    q, v = run.q, run.v
    dq, dv = np.diff(q, axis=0), np.diff(v, axis=0)
    qp = q[:-1] + theta * h * v[:-1]
    reaction = dv @ W.T - h * np.array([bar.forces(0.0, x, x) for x in qp])  # G^T P
    impulse = -reaction[:, -1]  # G = (0, ..., 0, -1)
    v_theta = (1.0 - theta) * v[:-1] + theta * v[1:]
    normal = -v_theta[:, -1]
    quadratic = (theta - 0.5) * (
        np.einsum("ki,ij,kj->k", dv, M, dv) + 2.0 * bar.potential_energies(dq)
    )
    energy = ib.energy(bar, run)  # the strain energy from differences of q: no cancellation
    return np.diff(energy), impulse, normal, quadratic, reaction


@pytest.mark.parametrize("theta", [0.5, 0.75, 1.0])
@pytest.mark.parametrize("factor", [4.0, 20.0])
def test_the_bar_runs_far_above_its_cfl_limit_with_the_exact_energy_balance(theta, factor):
    """h = 4 and 20 times the CFL step h_e / c, which the explicit scheme refuses (100 and 20
    steps to t = 4; the continuous bar's contact lasts 2). On every step,
    E_{k+1} - E_k = P G v_theta - (theta - 1/2) (|dv|_M^2 + |dq|_K^2) to round-off (the module
    docstring; E = v^T M v / 2 + q^T K q / 2): theta = 1/2 conserves E exactly on the steps
    without impulse, theta > 1/2 dissipates on them. The impulses act on the end node only,
    are >= 0 and obey Newton's law with e = 0 (P G v_{k+1} = 0), so their work is
    P G v_theta = (1 - theta) P G v_k: never positive where the contact approaches (G v_k <= 0);
    positive only where a separating end node is still inside the wall at q_p (measured: one
    step, theta = 1/2 at 20 times the limit, +1.3e-3 after a loss of 3.6e-2). E never exceeds
    E_0 in these runs and ends below it."""
    bar = ImpactingBar(n_elements=100)
    h = factor * bar.stable_step
    t_end = round(4.0 / h) * h  # a whole number of steps: the contact lasts 2, t1 = 0.1
    with pytest.raises(ValueError, match="stable"):
        ib.simulate(bar, MoreauJean(theta), t_end, h=h)
    run = ib.simulate(bar, MoreauJean(theta, implicit=True), t_end, h=h)
    np.testing.assert_allclose(np.diff(run.t), h, rtol=1e-12)
    assert run.status == ib.Status.OK and run.impacts.total > 0
    change, impulse, normal, quadratic, reaction = _energy_terms(bar, run, h, theta)
    e0 = bar.exact_energy()
    round_off = 1e-12 * e0
    np.testing.assert_allclose(reaction[:, :-1], 0.0, rtol=0, atol=round_off)
    assert np.all(impulse >= -round_off)
    np.testing.assert_allclose(impulse * run.v[1:, -1], 0.0, rtol=0, atol=round_off)
    np.testing.assert_allclose(change, impulse * normal - quadratic, rtol=0, atol=round_off)
    before = -run.v[:-1, -1]  # G v_k
    work = impulse * normal
    np.testing.assert_allclose(work, (1.0 - theta) * impulse * before, rtol=0, atol=round_off)
    assert np.all(work[before <= 0.0] <= round_off)
    free = impulse <= round_off
    assert free.sum() > 0 and (~free).sum() > 0
    if theta == 0.5:
        np.testing.assert_allclose(change[free], 0.0, rtol=0, atol=round_off)
    else:
        assert np.all(quadratic >= 0.0) and quadratic[free].max() > 1e3 * round_off
    energy = np.cumsum(np.concatenate([[e0], change]))
    assert energy.max() <= e0 + 10 * round_off and energy[-1] < e0


def test_without_a_declared_linear_part_the_implicit_scheme_is_the_explicit_one():
    """W = M: the same steps, bit for bit, frictionless (the ball, compiled, to t = 2) and
    frictional (the block launched uphill, through its reversal at t = 0.27, on the
    plain-Python path: one compilation less)."""
    cases = (
        (BouncingBall(restitution=0.8), True, 2.0),
        (SlidingBlock(angle=0.5, mu=0.3, u0=-2.0), False, 0.4),
    )
    for problem, compiled, t_end in cases:
        explicit = ib.simulate(problem, MoreauJean(compiled=compiled), t_end, h=1e-3)
        method = MoreauJean(implicit=True, compiled=compiled)
        implicit = ib.simulate(problem, method, t_end, h=1e-3)
        np.testing.assert_array_equal(implicit.q, explicit.q)
        np.testing.assert_array_equal(implicit.v, explicit.v)
        assert implicit.impacts.total == explicit.impacts.total


def test_the_implicit_bar_compiled_and_plain_python_agree_and_declare_no_limit():
    bar = ImpactingBar(n_elements=6)
    method = MoreauJean(0.5, implicit=True)
    assert method.step_limit(bar) is None and MoreauJean(0.5).step_limit(bar) == bar.stable_step
    h = 3.0 * bar.stable_step
    compiled = ib.simulate(bar, method, 1.0, h=h)
    plain = ib.simulate(bar, MoreauJean(0.5, implicit=True, compiled=False), 1.0, h=h)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    np.testing.assert_allclose(plain.q, compiled.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(plain.v, compiled.v, rtol=0, atol=1e-13)


class SpringBall(Problem):
    """A plain-Python unit mass on a spring of stiffness k (rest position 1) above a floor
    q >= 0, declaring K = (k) and a damping C = (c)."""

    def __init__(self, k: float = 1e4, c: float = 0.0, stiffness_matrix=None, damping_matrix=None):
        self.name = "SpringBall"
        self.restitution = 0.0
        self.q0 = np.array([1.0])
        self.v0 = np.array([-1.0])
        self.k, self.c = k, c
        self._stiffness = np.array([[k]]) if stiffness_matrix is None else stiffness_matrix
        self._damping = np.array([[c]]) if damping_matrix is None else damping_matrix
        self.stable_step = 2.0 / np.sqrt(k)

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return -self.k * (q - 1.0) - self.c * v

    def gap(self, q):
        return q.copy()

    def gap_gradient(self, q):
        return np.ones((1, 1))

    def potential_energy(self, q):
        return 0.5 * self.k * float(q[0] - 1.0) ** 2

    def stiffness_matrix(self):
        return self._stiffness

    def damping_matrix(self):
        return self._damping


def test_a_plain_python_problem_declares_k_and_c_and_is_damped_as_the_theta_method():
    """One free step of W (v1 - v0) = h F(q_p, v0) with W = 1 + h theta c + h^2 theta^2 k, at
    ten times the explicit limit, from the declared matrices on the plain-Python path."""
    ball = SpringBall(k=1e4, c=3.0)
    h, theta = 10 * ball.stable_step, 0.6
    run = ib.simulate(ball, MoreauJean(theta, implicit=True), h, h=h)
    assert run.t[1] == h
    q0, v0 = 1.0, -1.0
    qp = q0 + theta * h * v0
    w = 1.0 + h * theta * ball.c + (h * theta) ** 2 * ball.k
    v1 = v0 + h * (-ball.k * (qp - 1.0) - ball.c * v0) / w
    assert run.q[1, 0] >= 0.0  # no contact on this step
    assert run.v[1, 0] == pytest.approx(v1, rel=1e-14)
    assert run.q[1, 0] == pytest.approx(q0 + h * ((1 - theta) * v0 + theta * v1), rel=1e-14)


@pytest.mark.parametrize(
    ("keyword", "value", "message"),
    [
        ("stiffness_matrix", np.array([[1.0, 2.0]]), r"stiffness_matrix\(\) must return shape"),
        ("damping_matrix", np.array([[np.nan]]), r"damping_matrix\(\)"),
    ],
)
def test_a_bad_linear_part_is_refused_by_name(keyword, value, message):
    with pytest.raises(ValueError, match=message):
        SpringBall(**{keyword: value}).check()


def test_a_non_symmetric_stiffness_is_refused():
    class Twisted(SpringBall):
        def __init__(self):
            super().__init__()
            self.q0 = np.array([1.0, 1.0])
            self.v0 = np.zeros(2)
            self._stiffness = np.array([[1.0, 1.0], [0.0, 1.0]])

        def mass_matrix(self, q):
            return np.eye(2)

        def forces(self, t, q, v):
            return -self._stiffness @ q

        def gap(self, q):
            return q[:1].copy()

        def gap_gradient(self, q):
            return np.array([[1.0, 0.0]])

        def damping_matrix(self):
            return None

    with pytest.raises(ValueError, match="stiffness_matrix.. must be symmetric"):
        Twisted().check()


def test_implicit_must_be_a_bool_and_is_named_only_when_true():
    with pytest.raises(ValueError, match="implicit"):
        MoreauJean(implicit=1)
    assert MoreauJean().name == "MoreauJean[theta=0.5,activation=position]"
    assert MoreauJean(implicit=True).name.endswith("implicit=True]")
    assert ib.methods.get_method("MoreauJean[implicit=True]").implicit is True


def test_the_step_size_controller_runs_the_implicit_scheme():
    """Adaptive's loop runs the same functions (:meth:`Scheme.loop_scheme`; here on the
    plain-Python path, which builds its loop as the compiled one does): on the ball (no K) the
    implicit scheme's adaptive run is the explicit one's, bit for bit; on the bar it takes steps
    above the CFL limit (W is formed again at each new h) and the energy stays below E_0. The
    controller holds the bar's velocities (its elastic waves, in contact and after) to rtol, so
    the tolerance is one whose accuracy allows such steps: at rtol = 1e-3 the waves alone keep h
    below the CFL limit."""
    from impactbench.core.adaptive import Adaptive

    ball = BouncingBall(restitution=0.8)
    explicit = ib.simulate(ball, Adaptive(MoreauJean(compiled=False), rtol=1e-4), 2.0)
    implicit = ib.simulate(
        ball, Adaptive(MoreauJean(implicit=True, compiled=False), rtol=1e-4), 2.0
    )
    assert not implicit.stats["compiled"]
    np.testing.assert_array_equal(implicit.t, explicit.t)
    np.testing.assert_array_equal(implicit.q, explicit.q)
    bar = ImpactingBar(n_elements=20)
    method = Adaptive(MoreauJean(implicit=True, compiled=False), rtol=3e-2)
    run = ib.simulate(bar, method, 4.0)
    assert run.status == ib.Status.OK and np.diff(run.t).max() > bar.stable_step
    assert ib.energy(bar, run).max() <= bar.exact_energy() * (1 + 1e-12)
    tight = Adaptive(MoreauJean(implicit=True, compiled=False), rtol=1e-3)
    accurate = ib.simulate(bar, tight, 4.0)
    assert accurate.status == ib.Status.OK and np.diff(accurate.t).max() < bar.stable_step


class SpringSlider(Problem):
    """A plain-Python unit mass on the floor y >= 0, pressed onto it by gravity and tied along
    it by a spring of stiffness k to x = 0: K = diag(k, 0) declared, no friction. The contact
    rests (y = 0) while the mass slides back and forth on it."""

    def __init__(self, k: float = 1e4, x0: float = 1.0, u0: float = 0.0, y0: float = 0.0):
        self.name = "SpringSlider"
        self.restitution = 0.0
        self.k, self.gravity = k, 9.81
        self.q0 = np.array([x0, y0])
        self.v0 = np.array([u0, 0.0])
        self.stable_step = 2.0 / np.sqrt(k)

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([-self.k * q[0], -self.gravity])

    def gap(self, q):
        return q[1:].copy()

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0]])

    def potential_energy(self, q):
        return 0.5 * self.k * float(q[0]) ** 2 + self.gravity * float(q[1])

    def stiffness_matrix(self):
        return np.diag([self.k, 0.0])

    def damping_matrix(self):
        return None


def assert_cayley_rotation(run, x0: float, u0: float, omega: float, h: float) -> None:
    """The implicit midpoint rule on x'' = -omega^2 x (what theta = 1/2 with K implicit is on a
    free linear oscillator: W (v1 - v0) = -h K (q0 + h v0 / 2)) rotates (x, v / omega) by
    phi = 2 atan(omega h / 2) at each step, exactly: x and v of ``run`` at every sample follow
    that rotation to 1e-9 of the amplitude, and y = y' = 0 (the contact rests)."""
    k = np.round(run.t / h)
    phi = 2.0 * np.arctan(0.5 * omega * h)
    c, s = np.cos(k * phi), np.sin(k * phi)
    x, u = x0 * c + u0 / omega * s, u0 * c - omega * x0 * s
    amplitude = np.hypot(x0, u0 / omega)
    assert run.status == ib.Status.OK and run.t[-1] == pytest.approx(1000.0)
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
    assert np.abs(run.q[:, 0] - x).max() <= 1e-9 * amplitude
    assert np.abs(run.v[:, 0] - u).max() <= 1e-9 * omega * amplitude


def test_a_frictionless_sliding_contact_on_a_spring_runs_to_t_1000_above_the_cfl_limit():
    """theta = 1/2, implicit, at five times the explicit limit, 10^4 steps to t = 1000 (plain
    Python: the frictionless path): the contact rests (y = 0, y' = 0 exactly at every step)
    while the mass slides on it as the Cayley rotation of the closed form, to 1e-9 of its
    amplitude after 10^4 steps, and the energy is conserved to round-off (the trapezoidal rule
    conserves the quadratic energy; the contact does no work)."""
    slider = SpringSlider(k=1e4, x0=1.0, u0=50.0)
    h = 5.0 * slider.stable_step
    run = ib.simulate(slider, MoreauJean(0.5, implicit=True, compiled=False), 1000.0, h=h)
    assert_cayley_rotation(run, 1.0, 50.0, np.sqrt(slider.k), h)
    energy = ib.energy(slider, run)
    assert np.abs(energy - energy[0]).max() <= 1e-10 * energy[0]


class PressedBall(SpringBall):
    """The spring ball with its rest position x = -1/2 below the floor: the spring presses it
    onto the floor with force k / 2 once it is there."""

    def forces(self, t, q, v):
        return -self.k * (q + 0.5)

    def potential_energy(self, q):
        return 0.5 * self.k * float(q[0] + 0.5) ** 2


@pytest.mark.parametrize("theta", [0.5, 0.75, 1.0])
@pytest.mark.parametrize("start", ["resting", "dropped"])
def test_a_contact_pressed_by_a_stiff_spring_stays_frozen_to_t_1000(theta, start):
    """Ten times the explicit limit (omega h = 20), 5000 steps to t = 1000, e = 0.

    Resting (q0 = 0, v0 = 0): q_p = 0 is active at every step and the impulse cancels the
    spring's, so v = 0 and q = 0 for all time. Dropped (q0 = 1 cm, v0 = 0): the forecast
    q_p = q_k + theta h v_k misses the contact while the stiff spring accelerates the ball, so
    the free steps carry it below the floor before an impulse stops it (the scheme's depth is
    set by the closing steps, not by h^2: up to the spring's rest offset 1/2 at this step); once
    a step leaves v = 0 the state is frozen for good: v = 0 and q constant at every later step,
    and a frozen state lies in [-1/2, 0] (below -1/2 the spring would lift it off)."""
    ball = PressedBall(k=1e4)
    ball.q0 = np.array([0.0 if start == "resting" else 0.01])
    ball.v0 = np.array([0.0])
    h = 10.0 * ball.stable_step
    run = ib.simulate(ball, MoreauJean(theta, implicit=True, compiled=False), 1000.0, h=h)
    assert run.status == ib.Status.OK and run.t[-1] == pytest.approx(1000.0)
    moving = np.flatnonzero(run.v[:, 0] != 0.0)
    if start == "resting":
        assert moving.size == 0 and np.all(run.q == 0.0)
        return
    rest = moving[-1] + 1
    assert run.t[rest] < 20.0
    assert np.all(run.v[rest:] == 0.0) and np.all(run.q[rest:] == run.q[rest])
    assert -0.5 <= run.q[rest, 0] < 0.0


def test_a_compiled_frictional_contact_with_zero_friction_slides_as_the_rotation_to_t_1000():
    """The friction oscillator with friction level 0 (the frictional loop, compiled, mu = 0):
    the same Cayley rotation of the closed form to t = 1000 at five times the explicit limit,
    the block on the floor throughout."""
    problem = FrictionOscillator(friction_level=0.0, stiffness=1e4, x0=1.0, u0=50.0)
    h = 5.0 * 2.0 / np.sqrt(problem.stiffness)
    run = ib.simulate(problem, MoreauJean(0.5, implicit=True), 1000.0, h=h, output_every=7)
    assert_cayley_rotation(run, 1.0, 50.0, np.sqrt(problem.stiffness), h)
