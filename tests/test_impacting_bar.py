"""Impacting elastic bar: the d'Alembert solution, and the schemes converging to it.

The exact solution is checked against the mathematics it must satisfy (continuity across the
fronts, the jump conditions, the energy, the contact duration 2L/c); the schemes against it
under joint mesh and step refinement at a fixed CFL number.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.fitting import ORDER, fit_order
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import PROBLEMS, ImpactingBar
from impactbench.studies import STUDIES
from impactbench.studies import impacting_bar_mesh as study

T_END = 2.6  # contact on [0.1, 2.1] for the defaults (L = c = v0 = 1, d = 0.1)
CFL = 0.5


def test_registered_and_mesh():
    assert PROBLEMS["ImpactingBar"] is ImpactingBar
    p = ImpactingBar(4, length=2.0, young_modulus=9.0, density=4.0)
    assert p.n_dof == 5 and p.n_constraints == 1
    assert p.wave_speed == 1.5 and p.contact_duration == 2.0 * 2.0 / 1.5
    # omega_max of M^-1 K equals 2 c / h_e, so stable_step = 2 / omega_max = h_e / c
    M = p.mass_matrix(p.q0)
    K = -np.array([p.forces(0.0, e, 0 * e) for e in np.eye(5)]).T
    omega_max = np.sqrt(np.linalg.eigvals(np.linalg.solve(M, K)).real.max())
    assert p.stable_step == pytest.approx(2.0 / omega_max, rel=1e-12)
    assert p.stable_step == pytest.approx(0.5 / 1.5, rel=1e-15)
    np.testing.assert_allclose(np.diag(M), 4.0 * 0.5 * np.array([0.5, 1, 1, 1, 0.5]), rtol=1e-15)


def test_exact_solution_is_the_dalembert_wave():
    p = ImpactingBar(400, speed=2.0, gap=0.3, young_modulus=4.0)  # c = 2, t1 = 0.15
    t1, duration = p.contact_time, p.contact_duration
    assert (t1, duration) == (0.15, 1.0)
    t = np.linspace(0.0, 3.0, 601)
    q, v = p.exact_solution(t)
    contact = (t >= t1) & (t <= t1 + duration)
    np.testing.assert_allclose(q[contact, -1], 0.3, rtol=0, atol=1e-14)  # end held at the wall
    assert np.all(q[:, -1] <= 0.3 + 1e-14)  # admissible throughout
    np.testing.assert_allclose(v[t > t1 + duration], -2.0, rtol=0, atol=0)  # rigid rebound
    np.testing.assert_allclose(q[t < t1], 2.0 * t[t < t1, None] * np.ones(401), rtol=0, atol=1e-15)
    # continuous in x at every time: jumps between neighbouring nodes O(h_e) (no jump in u)
    assert np.abs(np.diff(q, axis=1)).max() <= (2.0 / 2.0) * p.element_size * (1 + 1e-12)
    # energy rho L v0^2 / 2 = 2 of the nodal interpolant, up to the element holding a front
    energies = np.array([p.energy(qi, vi) for qi, vi in zip(q, v, strict=True)])
    assert p.exact_energy() == 2.0
    assert np.abs(energies - 2.0).max() < 4.0 * 2.0 * p.element_size
    # strain behind the compression front is -v0/c and the force rho c v0 = 4 (jump condition)
    mid = np.searchsorted(t, t1 + 0.25)
    behind = p.nodes > 1.0 - 2.0 * 0.25 + 2 * p.element_size
    strain = np.diff(q[mid]) / p.element_size
    np.testing.assert_allclose(strain[behind[1:]], -1.0, rtol=0, atol=1e-10)
    assert p.contact_force == -p.young_modulus * -1.0 == 4.0


#: 10 meshes over 1.5 decades (10 to 320 elements), geometric.
MESHES = tuple(int(n) for n in np.unique(np.round(np.geomspace(10, 320, 10))))


@pytest.fixture(
    scope="module",
    params=[MoreauJean(theta=0.5), PaoliSchatzman()],
    ids=lambda m: m.name.split("[")[0],
)
def refinement(request):
    """Each method on every mesh at h = CFL stable_step. The compiled loop is specialised on
    the number of DOF, so each mesh is one compilation (about 3.5 s on a cold numba cache, the
    runs themselves 0.3 s at most): 70 s cold, 3 s warm for the two methods."""
    method = request.param
    errors, runs = [], []
    for n in MESHES:
        p = ImpactingBar(n)
        trajectory = simulate(p, method, T_END, h=CFL * p.stable_step)
        q_exact, _ = p.exact_solution(trajectory.t)
        errors.append(np.abs(trajectory.q - q_exact).max())
        runs.append((p, trajectory))
    return method, np.array(errors), runs


@pytest.mark.slow  # 10 numba compilations per method on a cold cache (fixture docstring)
def test_error_converges_under_refinement_at_fixed_cfl(refinement):
    """Joint mesh and step refinement (h = CFL h_e / c): the largest nodal displacement error
    against the exact solution, order fitted in h_e over 10 meshes with its 95 % interval."""
    _, errors, _ = refinement
    assert len(MESHES) >= 10 and np.log10(MESHES[-1] / MESHES[0]) >= 1.5
    fit = fit_order(1.0 / np.array(MESHES), errors)
    assert fit.status == ORDER, fit.text()
    # measured 0.71 [0.62, 0.80] (MoreauJean) and 0.71 [0.69, 0.72] (PaoliSchatzman): below 1,
    # the fronts (jumps in the strain and the velocity) are not resolved by the mesh
    assert 0.6 < fit.low and fit.high < 0.9, fit.text()
    assert errors[-1] < 0.015


@pytest.mark.slow  # (the refinement fixture)
def test_invariants_of_the_runs(refinement):
    method, _, runs = refinement
    for p, trajectory in runs:
        energy = np.array([p.energy(q, v) for q, v in zip(trajectory.q, trajectory.v, strict=True)])
        flight = trajectory.t < p.contact_time - p.stable_step
        np.testing.assert_allclose(energy[flight], p.exact_energy(), rtol=1e-12)
        # e = 0: energy is lost at the contact node and never created beyond E0 (it is not
        # monotone: the sampled energy is not the schemes' conserved discrete energy)
        assert energy.max() <= p.exact_energy() * (1.0 + 1e-12)
        # the energy lost to the contact node vanishes with the mesh: 1 - E_end/E0 < 5 h_e
        assert energy[-1] > p.exact_energy() * (1.0 - 5.0 * p.element_size)
        gaps = np.array([p.gap(q)[0] for q in trajectory.q])
        if method.name.startswith("PaoliSchatzman"):
            assert gaps.min() >= -1e-12
        else:  # Moreau-Jean: velocity-level law, positions penetrate at most one step's travel
            assert gaps.min() >= -trajectory.h * p.speed * (1.0 + 1e-12)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_elements": 0}, "n_elements"),
        ({"n_elements": 2.5}, "n_elements"),
        ({"length": 0.0}, "length"),
        ({"young_modulus": -1.0}, "young_modulus"),
        ({"density": float("nan")}, "density"),
        ({"speed": 0.0}, "speed"),
        ({"gap": -0.1}, "gap"),
        ({"restitution": 2.0}, "restitution"),
        ({"t0": float("inf")}, "t0"),
    ],
)
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ImpactingBar(**kwargs)


def test_mesh_study_grid():
    """The ``impacting_bar`` study: 10 meshes over 1.5 decades, h = CFL stable_step on each."""
    assert STUDIES["impacting_bar"] is study.STUDY
    runs = study.runs(quick=False)
    meshes = sorted({run.problem_kwargs["n_elements"] for run in runs})
    assert len(meshes) >= 10 and np.log10(meshes[-1] / meshes[0]) >= 1.5
    for run in runs:
        n = run.problem_kwargs["n_elements"]
        assert run.h == pytest.approx(study.CFL * ImpactingBar(n).stable_step, rel=1e-15)
    assert {run.method.__name__ for run in runs} == set(study.METHOD_NAMES)
