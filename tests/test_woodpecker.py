"""Woodpecker (problems/woodpecker.py): MoreauJean (theta = 1/2, h = 2e-5, the published
example's discretisation) on Glocker's woodpecker toy against Siconos' own regression output of
the same example (tests/data/siconos/Woodpecker10.ref), and the limit cycle's properties: the
sequence of phases, the period, periodicity and the energy balance per cycle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import impactbench as ib
from impactbench.methods import MoreauJean
from impactbench.problems import Woodpecker

REFERENCE = Path(__file__).parent / "data" / "siconos" / "Woodpecker10.ref"
SICONOS_RUN = REFERENCE.with_name("Woodpecker.siconos.gz")


@pytest.fixture(scope="module")
def woodpecker():
    problem = Woodpecker()
    runs = {h: ib.simulate(problem, MoreauJean(), 0.3, h=h) for h in (2e-5, 1e-5)}
    return problem, runs


def _reference():
    data = np.loadtxt(REFERENCE, skiprows=1)
    return data[:, 0], data[:, [1, 3, 5]], data[:, [2, 4, 6]]


def _phases(problem, q, v):
    """Each sample's phase: which contacts are closed (beak B, sleeve edges 1, 2) and whether
    the sleeve sticks (its tangential velocity y' + r_M phi_M' is 0)."""
    g = np.column_stack([problem.gap(qi) for qi in q]).T
    sleeve = v[:, 0] + problem.r_M * v[:, 1]
    labels = []
    for gk, uk in zip(g <= 1e-9, sleeve, strict=True):
        label = "B" if gk[0] else ""
        edges = "".join(str(i) for i in (1, 2) if gk[i])
        if edges:
            label += f"S{edges}" + ("stick" if abs(uk) <= 1e-9 else "slip")
        labels.append(label or "free")
    return np.array(labels)


def _sequence(t, labels, shortest=1e-3):
    """The phases lasting at least ``shortest``, in order, neighbours merged."""
    runs = []
    for k, label in enumerate(labels):
        if runs and runs[-1][0] == label:
            runs[-1][2] = t[k]
        else:
            runs.append([label, t[k], t[k]])
    sequence = []
    for label, start, end in runs:
        if end - start >= shortest and (not sequence or sequence[-1] != label):
            sequence.append(label)
    return sequence


def _stick_onsets(problem, t, q, v):
    labels = _phases(problem, q, v)
    stick = np.char.endswith(labels.astype(str), "stick")
    return t[np.flatnonzero(stick[1:] & ~stick[:-1]) + 1]


def test_the_limit_cycle_matches_siconos_output(woodpecker):
    """From the published state, to T = 0.3 (two cycles): the same sequence of phases lasting
    1 ms or more as Siconos' run (sleeve slipping on edge 1, jammed, slipping, free, edge 2
    after the beak's impact, free, edge 1 ...); the sleeve jams within 6e-4 s of Siconos'
    (measured shift 3.4e-4 s after one cycle on Siconos' full output; the kept one samples
    every 2e-4 s), the beak strikes once a cycle, within 5e-4 s of Siconos' maximum of phi_S,
    and y, phi_S stay within 5e-4 and 1e-2 of Siconos' (the explicit MoreauJean evaluates the
    spring at the midpoint, Siconos' MoreauJeanOSI takes it in its iteration matrix: the
    implicit scheme's comparison is :func:`test_the_implicit_scheme_is_siconos_step_by_step`)."""
    problem, runs = woodpecker
    run = runs[2e-5]
    t_ref, q_ref, v_ref = _reference()
    ours = _sequence(run.t, _phases(problem, run.q, run.v))
    theirs = _sequence(t_ref, _phases(problem, q_ref, v_ref))
    assert ours == theirs, (ours, theirs)
    assert ours[:4] == ["S1slip", "S1stick", "S1slip", "free"]
    jams, jams_ref = (
        _stick_onsets(problem, run.t, run.q, run.v),
        _stick_onsets(problem, t_ref, q_ref, v_ref),
    )
    assert len(jams) == len(jams_ref) == 2
    assert np.abs(jams - jams_ref).max() <= 6e-4
    beak = run.impacts.t[run.impacts.constraint == 0]
    phi_s = q_ref[:, 2]
    peaks = t_ref[1:-1][(phi_s[1:-1] > phi_s[:-2]) & (phi_s[1:-1] >= phi_s[2:])]
    assert len(beak) == len(peaks) == 2
    assert np.abs(beak - peaks).max() <= 5e-4
    on_grid = np.searchsorted(run.t, t_ref - 1e-12)
    assert np.abs(run.q[on_grid, 0] - q_ref[:, 0]).max() <= 5e-4
    assert np.abs(run.q[on_grid, 2] - q_ref[:, 2]).max() <= 1e-2


def test_the_limit_cycle_is_periodic_with_the_energy_balanced(woodpecker):
    """Between the sleeve's two jams (one period; from the published start 0.1460 s at
    h = 2e-5, as Siconos' output, and 0.1457 at h = 1e-5: the first-order scheme's period
    converging, the two within 0.3 %): the state but y returns (phi_S within 0.5 %, phi_S'
    within 0.5 %, phi_M and the sleeve at rest in both), the sleeve drops 19 mm, and the
    energy dissipated (by the friction and the beak's impact) is the work of gravity on that
    drop to 1 %
    (the rest of the energy, spring, body and kinetic, returns: measured 0.2 %)."""
    problem, runs = woodpecker
    periods = []
    for run in runs.values():
        jams = np.searchsorted(run.t, _stick_onsets(problem, run.t, run.q, run.v) - 1e-12)
        assert len(jams) == 2
        a, b = jams
        periods.append(run.t[b] - run.t[a])
        assert abs(run.q[b, 2] - run.q[a, 2]) <= 5e-3 * abs(run.q[a, 2])
        assert abs(run.v[b, 2] - run.v[a, 2]) <= 5e-3 * abs(run.v[a, 2])
        assert np.abs(run.v[[a, b], :2]).max() <= 1e-12  # jammed: the sleeve at rest
        drop = run.q[a, 0] - run.q[b, 0]
        assert 0.015 <= drop <= 0.025
        energy = ib.energy(problem, run)
        work = (problem.m_S + problem.m_M) * problem.gravity * drop
        assert abs((energy[a] - energy[b]) - work) <= 0.01 * work
    assert abs(periods[0] - periods[1]) <= 3e-3 * periods[1]
    assert 0.14 <= periods[1] <= 0.15


def test_the_contacts_restitutions_and_rows():
    """The beak's e_N is 0.5 and the sleeve's 0 (per-contact normal restitution); the sleeve's
    edges have equal tangent rows (dependent when both close); the default start is the
    published state, edge 1 8.8e-7 inside the pole (within the declared
    initial_penetration_tolerance), and a start deeper than that tolerance is refused."""
    problem = Woodpecker()
    e_n = np.empty(3)
    problem.KERNELS.normal_restitution(problem.q0, problem.kernel_parameters(), e_n)
    assert e_n.tolist() == [0.5, 0.0, 0.0]
    rows = problem.tangent_gradient(problem.q0)
    np.testing.assert_array_equal(rows[1], rows[2])
    assert problem.q0.tolist() == [0.0, -0.1036, -0.2788]
    assert problem.gap(problem.q0)[1] == pytest.approx(-8.8e-7, rel=1e-9)
    deeper = (0.0, -0.1036 - 2e-6 / problem.h_M, -0.2788)  # g_1 = -8.8e-7 - 2e-6
    with pytest.raises(ValueError, match="initial_penetration_tolerance"):
        Woodpecker(q0=deeper)


def test_the_implicit_scheme_is_siconos_step_by_step():
    """The spring is declared as the stiffness K, so MoreauJean(theta = 1/2, implicit=True) is
    Siconos' MoreauJeanOSI discretisation of the example (W = M + (h/2)^2 K, the impulse in
    the metric of W): from the published state, at h = 2e-5 to T = 0.3 (two cycles: jams,
    slips, flights, the beak's impacts), every step's state equals that of Siconos 4.4's run
    (tests/data/siconos/Woodpecker.siconos.gz, written by woodpecker_siconos.py there) to
    round-off: within 1e-12 of each coordinate's and each velocity's largest magnitude."""
    data = np.loadtxt(SICONOS_RUN, skiprows=1)
    t_ref, q_ref, v_ref = data[:, 0], data[:, [1, 3, 5]], data[:, [2, 4, 6]]
    problem = Woodpecker()
    assert problem.stiffness_matrix()[1:, 1:].tolist() == [
        [problem.c_phi, -problem.c_phi],
        [-problem.c_phi, problem.c_phi],
    ]
    run = ib.simulate(problem, MoreauJean(theta=0.5, implicit=True), 0.3, h=2e-5)
    assert run.t.shape == t_ref.shape
    np.testing.assert_allclose(run.t, t_ref, rtol=0.0, atol=1e-15)
    assert len(_stick_onsets(problem, t_ref, q_ref, v_ref)) == 2  # both cycles compared
    q_scale, v_scale = np.abs(q_ref).max(axis=0), np.abs(v_ref).max(axis=0)
    assert np.all(np.abs(run.q - q_ref) <= 1e-12 * q_scale)
    assert np.all(np.abs(run.v - v_ref) <= 1e-12 * v_scale)


@ib.kernel
def _too_elastic(q, p, e_n):
    for i in range(e_n.shape[0]):
        e_n[i] = 1.5


def test_a_normal_restitution_out_of_range_or_without_friction_is_refused():
    class TooElastic(Woodpecker):
        KERNELS = Woodpecker.KERNELS._replace(normal_restitution=_too_elastic)

    with pytest.raises(ValueError, match=r"normal_restitution\(q0\) must lie in \[0, 1\]"):
        TooElastic().check()

    class Frictionless(ib.problems.BouncingBall):
        KERNELS = ib.problems.BouncingBall.KERNELS._replace(normal_restitution=_too_elastic)

    with pytest.raises(ValueError, match="normal_restitution is for frictional problems"):
        Frictionless().check()
