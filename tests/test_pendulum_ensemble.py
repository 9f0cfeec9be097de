"""The pendulum ensemble study's statistics, worked by hand (quick run: tests/quick_run.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from impactbench.problems import DoublePendulum
from impactbench.studies import STUDIES
from impactbench.studies import pendulum_ensemble as ensemble


def test_the_study_is_registered_with_at_least_100_members_in_its_full_grid():
    assert STUDIES[ensemble.NAME] is ensemble.STUDY
    assert ensemble.MEMBERS["full"] >= 100
    runs = ensemble.runs(quick=True)
    members = {tuple(run.problem_kwargs["q0"]) for run in runs}
    assert len(members) == ensemble.MEMBERS["quick"]
    # every member is run by every method setting, the reference included
    per_member = len(runs) // len(members)
    assert per_member * len(members) == len(runs)
    assert sum(run.tolerance_value == ensemble.REFERENCE_RTOL for run in runs) == len(members)


def test_members_are_seeded_perturbations_of_the_default_start():
    first, again = ensemble.member_q0(100), ensemble.member_q0(100)
    np.testing.assert_array_equal(first, again)
    deviation = first - np.asarray(DoublePendulum().q0)
    assert 0.5 * ensemble.SPREAD < deviation.std() < 2.0 * ensemble.SPREAD
    assert ensemble._member_index(list(first[37])) == 37


def test_wall_energy_is_the_least_energy_with_the_tip_on_the_wall():
    problem = DoublePendulum()
    level = ensemble.wall_energy(problem)
    # brute force over the wall: q2 from q1 on the lower branch, every admissible q1
    q1 = np.linspace(-1.5, 1.5, 300_001)
    s2 = (-problem.wall_distance - problem.l1 * np.sin(q1)) / problem.l2
    q1, s2 = q1[np.abs(s2) <= 1], s2[np.abs(s2) <= 1]
    v = -(problem.m1 + problem.m2) * problem.gravity * problem.l1 * np.cos(q1) - (
        problem.m2 * problem.gravity * problem.l2 * np.sqrt(1 - s2 * s2)
    )
    assert level == pytest.approx(v.min(), abs=1e-9)
    rest = -(problem.m1 + problem.m2) * problem.gravity - problem.m2 * problem.gravity
    assert rest < level  # the hanging rest state is below it: a settled pendulum exists


def test_shadowing_horizon_is_the_first_sample_beyond_the_tolerance():
    t_ref = np.linspace(0.0, 10.0, 101)
    q_ref = np.column_stack([np.sin(t_ref), np.cos(t_ref)])
    t = np.linspace(0.0, 10.0, 1001)
    q = np.column_stack([np.sin(t), np.cos(t)])
    q[:, 1] += np.where(t > 4.0, 0.05, 0.0)  # leaves the reference after t = 4
    horizon = ensemble.shadowing_horizon(t, q, t_ref, q_ref, 8.0)
    assert horizon == pytest.approx(4.01)
    assert (
        ensemble.shadowing_horizon(t, np.column_stack([np.sin(t), np.cos(t)]), t_ref, q_ref, 8.0)
        == 8.0
    )


def test_wasserstein_of_a_shifted_ensemble_is_the_shift_and_its_interval_holds_it():
    reference = np.random.default_rng(1).normal(size=200)
    w, low, high = ensemble.bootstrap_wasserstein(reference + 0.3, reference)
    assert w == pytest.approx(0.3)
    assert low == pytest.approx(0.3) and high == pytest.approx(0.3)  # paired: the shift is exact
    w, low, high = ensemble.bootstrap_wasserstein(reference[::-1].copy(), reference)
    assert w == pytest.approx(0.0, abs=1e-12)


def test_ensemble_distances_pair_members_and_test_the_distributions():
    rng = np.random.default_rng(2)
    energy = rng.normal(size=150)
    rows = []
    for member, value in enumerate(energy):
        rows.append((member, "EventDriven[atol=1e-14]", math.nan, 1e-12, value))
        rows.append((member, "Same", 1e-3, math.nan, energy[(member + 1) % 150]))  # permuted
        rows.append((member, "Biased", 1e-3, math.nan, value + 1.0))
    members = pd.DataFrame(rows, columns=["member", "method", "h", "tolerance", "E"])
    members["setting"] = "h = 0.001"
    distances = ensemble.ensemble_distances(members, ["E"]).set_index("method")
    assert distances.loc["Same", "W1"] == pytest.approx(0.0, abs=1e-12)
    assert distances.loc["Same", "KS p"] > 0.05
    assert distances.loc["Biased", "W1"] == pytest.approx(1.0)
    assert distances.loc["Biased", "KS p"] < 1e-6
    assert "EventDriven[atol=1e-14]" not in distances.index  # the reference is not compared


def test_no_energy_statistic_from_a_reconstructed_velocity():
    import impactbench as ib
    from impactbench.bench.runner import Run
    from impactbench.methods import MoreauJean, PaoliSchatzman

    q0 = [float(x) for x in ensemble.member_q0(1)[0]]
    for method, defined in ((PaoliSchatzman, False), (MoreauJean, True)):
        run = Run(DoublePendulum, method, 2.0, 1e-3, problem_kwargs={"q0": q0})
        problem = DoublePendulum(q0=q0)
        trajectory = ib.simulate(problem, method(), 2.0, h=1e-3)
        row = ensemble.member_statistics(run, problem, trajectory)["member"].iloc[0]
        energies = [row[c] for c in row.index if c.startswith("E(")] + [row[ensemble.SETTLING]]
        assert all(np.isfinite(energies)) is defined
        assert np.isfinite(row[ensemble.SHADOW])  # positions are the scheme's own
    members = pd.DataFrame(
        [(i, m, 1e-3, np.nan, v) for i in range(5) for m, v in (("PS", np.nan), ("MJ", 1.0 * i))]
        + [(i, "ref", np.nan, 1e-12, 1.0 * i) for i in range(5)],
        columns=["member", "method", "h", "tolerance", "E"],
    ).assign(setting="h")
    distances = ensemble.ensemble_distances(members, ["E"])
    assert list(distances["method"]) == ["MJ"]  # nothing reported where the energy is undefined


def test_a_method_with_the_references_distributions_is_indistinguishable():
    """The shadowing horizon is not compared with the reference's (which is the comparison
    horizon), the settling time not where no reference member settles (censored at T), and the
    k KS tests of a setting are read at 0.05 / k: an ensemble whose statistics are the
    reference's, members permuted, is indistinguishable; a biased one is not."""
    rng = np.random.default_rng(3)
    energy, impacts = rng.normal(size=120), rng.integers(80, 110, size=120).astype(float)
    rows = []
    for member in range(120):
        other = (member + 7) % 120
        rows.append((member, "ref", math.nan, ensemble.REFERENCE_RTOL, energy[member],
                     impacts[member], ensemble.SHADOW_HORIZON))  # fmt: skip
        rows.append((member, "Same", 1e-3, math.nan, energy[other], impacts[other], 4.0))
        rows.append((member, "Biased", 1e-3, math.nan, energy[member] + 0.5, impacts[member], 4.0))
    members = pd.DataFrame(
        rows, columns=["member", "method", "h", "tolerance", "E(10)", ensemble.IMPACTS,
                       ensemble.SHADOW],
    ).assign(setting="h = 0.001", settled=0.0)  # fmt: skip
    members[ensemble.SETTLING] = 200.0
    statistics = ensemble._statistics(members)
    assert statistics == ["E(10)", ensemble.IMPACTS]
    distances = ensemble.ensemble_distances(members, statistics)
    passing = ensemble.indistinguishable_settings(distances)
    assert passing == {"Same": ["h = 0.001"], "Biased": []}
    members.loc[members.index[:3], "settled"] = 1.0  # some reference member settles
    assert ensemble.SETTLING in ensemble._statistics(members)
