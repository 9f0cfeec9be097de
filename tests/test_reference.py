"""Reference solutions: exact where available, else a cached accurate event-driven run.

The double pendulum (no closed form) is the test case: the reference is self-consistent under a
100x tightening of the tolerance, and the time-stepping schemes converge to it at order >= 0.85
in the max position error (least squares over 12 jittered step sizes, 1.6 decades). The cache
holds data only: a planted pickle is never opened, and an entry failing validation is
recomputed.
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest
from plain_floor import Floor

import impactbench as ib
from impactbench.analysis.fitting import observed_order
from impactbench.analysis.metrics import METRICS
from impactbench.analysis.reference import SCHEMA_VERSION, _checksum, problem_fingerprint
from impactbench.methods import (
    CatchingUp,
    EventDriven,
    MoreauJean,
    PaoliSchatzman,
    reference_method,
)
from impactbench.problems import BouncingBall, DoublePendulum, TightJoint, TightJoint2D

from conftest import plant_pickle, step_grid

#: Claimed accuracy of the reference (rtol 1e-12) in the state at T, max norm.
CLAIMED_ACCURACY = 1e-9

PENDULA = [DoublePendulum(), DoublePendulum.two_contact()]


def state_at_end(problem, rtol):
    trajectory = ib.simulate(problem, EventDriven(rtol=rtol, atol=1e-2 * rtol), problem.t_end)
    return np.concatenate([trajectory.q[-1], trajectory.v[-1]])


def test_exact_solution_is_used_where_it_exists(tmp_path):
    ball = BouncingBall()
    reference = ib.reference(ball, 3.0, cache_dir=tmp_path)
    assert reference.kind == "exact" and reference.accuracy == 0.0
    t = np.linspace(0.0, 3.0, 7)
    np.testing.assert_array_equal(reference.state(t)[0], ball.exact_solution(t)[0])
    assert not list(tmp_path.iterdir())


def test_problem_without_closed_form_needs_a_dense_method(tmp_path):
    pendulum = DoublePendulum()
    with pytest.raises(ValueError, match="method"):
        ib.reference(pendulum, 1.0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="dense output"):
        ib.reference(pendulum, 1.0, EventDriven(), cache_dir=tmp_path)


def test_reference_is_cached_and_records_its_parameters(tmp_path):
    pendulum = DoublePendulum()
    first = ib.reference(pendulum, 2.0, reference_method(), cache_dir=tmp_path)
    assert "rtol=1e-12" in first.parameters["method"] and "cached" not in first.parameters
    assert first.accuracy == pytest.approx(CLAIMED_ACCURACY)  # what the tightening test checks
    assert len(list(tmp_path.glob("*.npz"))) == 1
    second = ib.reference(pendulum, 2.0, reference_method(), cache_dir=tmp_path)
    assert second.parameters["cached"] and second.accuracy == first.accuracy
    t = np.linspace(0.0, 2.0, 101)
    np.testing.assert_array_equal(first.state(t)[0], second.state(t)[0])
    np.testing.assert_array_equal(first.impact_times, second.impact_times)
    # another horizon, another restitution: other entries
    ib.reference(pendulum, 2.5, reference_method(), cache_dir=tmp_path)
    ib.reference(DoublePendulum(restitution=0.5), 2.0, reference_method(), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 3


def test_a_planted_pickle_is_never_opened(tmp_path):
    """The pickle sits under the exact name the cache used to read (``<key>.pkl``), and a pickle
    poses as the entry itself (``<key>.npz``): neither runs, each is a warning, and the
    reference is recomputed."""
    pendulum, marker = DoublePendulum(), tmp_path / "marker"
    cache = tmp_path / "references"
    first = ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache)
    key = first.parameters["key"]
    for entry in list(cache.iterdir()):
        entry.unlink()
    plant_pickle(cache / f"{key}.pkl", marker)
    with pytest.warns(ib.CacheWarning, match="pickle is never opened"):
        again = ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache)
    assert not marker.exists()
    assert "cached" not in again.parameters
    plant_pickle(cache / f"{key}.npz", marker)
    with pytest.warns(ib.CacheWarning, match="ignoring the reference cache entry"):
        again = ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache)
    assert not marker.exists()
    t = np.linspace(0.0, 1.0, 101)
    np.testing.assert_array_equal(again.state(t)[0], first.state(t)[0])
    assert ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache).parameters["cached"]


def _rewrite(path, *, signed=True, **changes):
    """Rewrite the entry at ``path`` with members replaced (header as a dict); ``signed``: its
    checksum recomputed (as a writer who edits on purpose can), so that the checks behind the
    checksum are reached."""
    with np.load(path, allow_pickle=False) as stored:
        members = {name: stored[name] for name in stored.files}
    header = json.loads(str(members["header"]))
    header.update(changes.pop("header", {}))
    members.update(changes)
    if signed:
        header["checksum"] = _checksum(header, members)
    members["header"] = np.array(json.dumps(header))
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    path.write_bytes(buffer.getvalue())


def _huge_declared_shape(path):
    """``breaks`` declares 10^12 float64 (8 TB) but stores a few bytes."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    )
    members["breaks.npy"] = header.getvalue() + b"\0" * 16
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _scaled_values(path):
    with np.load(path, allow_pickle=False) as stored:
        return stored["values"] * 1.001


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _link_to_dev_zero(path):
    path.unlink()
    path.symlink_to("/dev/zero")


#: Damage done to a stored entry, and the reason the loader must give.
CORRUPTIONS = {
    "not a zip": (lambda path: path.write_bytes(b"not an archive"), "not a readable .npz"),
    "truncated": (lambda path: path.write_bytes(path.read_bytes()[:-100]), "not a readable"),
    "object array": (
        lambda path: _rewrite(path, impacts=np.array([None, 1.0], dtype=object)),
        "impacts has dtype object",
    ),
    "old schema": (
        lambda path: _rewrite(path, header={"schema": 2}),
        f"schema must be {SCHEMA_VERSION}",
    ),
    "edited values": (
        lambda path: _rewrite(path, signed=False, values=_scaled_values(path)),
        "checksum mismatch",
    ),
    "edited impact time": (
        lambda path: _rewrite(path, signed=False, impacts=np.array([0.5])),
        "checksum mismatch",
    ),
    "fifo": (_fifo, "not a regular file"),
    "link to /dev/zero": (_link_to_dev_zero, "not a regular file"),
    "other key": (lambda path: _rewrite(path, header={"key": "0" * 24}), "key must be"),
    "NaN values": (
        lambda path: _rewrite(path, values=np.full((3, 8, 4), np.nan)),
        "values must be finite",
    ),
    "wrong n": (
        lambda path: _rewrite(path, values=np.zeros((3, 8, 6))),
        r"values must hold \(q, v\) of 2 coordinates",
    ),
    "short horizon": (
        lambda path: _rewrite(path, breaks=np.array([0.0, 0.5])),
        "breaks must run from t0 = 0.0 to 1.0",
    ),
    "integer breaks": (
        lambda path: _rewrite(path, breaks=np.array([0, 1])),
        "breaks must be a 1-D float64 array",
    ),
    "extra member": (lambda path: _rewrite(path, extra=np.zeros(1)), "members must be"),
    "huge declared shape": (_huge_declared_shape, r"declares shape \(1000000000000,\)"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_an_entry_failing_validation_is_recomputed(tmp_path, corruption):
    pendulum = DoublePendulum()
    first = ib.reference(pendulum, 1.0, reference_method(), cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.npz")
    damage, reason = CORRUPTIONS[corruption]
    damage(entry)
    with pytest.warns(ib.CacheWarning, match=f"ignoring the reference cache entry .*{reason}"):
        again = ib.reference(pendulum, 1.0, reference_method(), cache_dir=tmp_path)
    assert "cached" not in again.parameters
    np.testing.assert_array_equal(again.impact_times, first.impact_times)
    assert ib.reference(pendulum, 1.0, reference_method(), cache_dir=tmp_path).parameters["cached"]


def test_an_unwritable_reference_cache_warns_and_returns_the_reference(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.warns(ib.CacheWarning, match="reference cache not written"):
        result = ib.reference(DoublePendulum(), 1.0, reference_method(), cache_dir=blocked)
    assert len(result.impact_times) == 1


@pytest.mark.parametrize("pendulum", PENDULA, ids=["tip-wall", "two-contact"])
def test_reference_is_self_consistent_under_tightening(pendulum):
    """A 100x tighter tolerance moves the state at T by less than the claimed accuracy.

    The move from rtol 1e-10 to 1e-12 bounds the error of the looser run; the reference (1e-12)
    is then within the claimed accuracy too. (scipy's solvers cap rtol at 100 eps, so 1e-12 is
    the tightest setting that can itself be tightened by 100x.)
    """
    change = np.abs(state_at_end(pendulum, 1e-10) - state_at_end(pendulum, 1e-12)).max()
    assert change < CLAIMED_ACCURACY


@pytest.mark.parametrize("pendulum", PENDULA, ids=["tip-wall", "two-contact"])
@pytest.mark.parametrize(
    "method", [PaoliSchatzman(), MoreauJean(theta=0.5), CatchingUp()], ids=lambda m: m.name
)
def test_time_steppers_converge_to_the_reference(pendulum, method, tmp_path):
    reference = ib.reference(pendulum, pendulum.t_end, reference_method(), cache_dir=tmp_path)
    assert len(reference.impact_times) >= 3
    steps = step_grid(1e-4, 4e-3, 12, seed=7)
    error = METRICS["max_position_error"].function
    errors = [error(pendulum, ib.simulate(pendulum, method, pendulum.t_end, h=h), reference)
              for h in steps]  # fmt: skip
    order, residual = observed_order(steps, np.array(errors))
    assert order >= 0.85, (order, residual)


@pytest.mark.parametrize(
    "factory",
    [lambda **k: TightJoint(damping=0.1, **k), lambda **k: TightJoint2D(**k), DoublePendulum],
    ids=["damped-joint", "joint-2d", "pendulum"],
)
def test_identical_problems_share_one_cache_key(factory):
    """Keys are built from the attributes, including precomputed data (a damped joint's flight
    schedule object once entered through its repr, with a memory address: no hit, ever)."""
    assert problem_fingerprint(factory()) == problem_fingerprint(factory())
    assert problem_fingerprint(factory()) != problem_fingerprint(factory(restitution=0.3))


def test_a_value_without_a_stable_description_is_refused():
    pendulum = DoublePendulum()
    pendulum.extra = lambda: None
    with pytest.raises(ValueError, match="memory address"):
        problem_fingerprint(pendulum)


class SizelessFall(Floor):
    """A plain-Python ball that leaves n_dof and n_constraints to check() (no closed form)."""


def test_a_cached_reference_of_a_problem_without_n_dof_is_read_back(tmp_path):
    """The cache entry is found again by a fresh instance (as in a second process), whose n_dof
    is still unset, and by the instance a run has checked: one key, read without error."""
    first = ib.reference(SizelessFall(), 0.5, reference_method(), cache_dir=tmp_path)
    again = ib.reference(SizelessFall(), 0.5, reference_method(), cache_dir=tmp_path)
    checked = SizelessFall()
    checked.check()
    third = ib.reference(checked, 0.5, reference_method(), cache_dir=tmp_path)
    assert again.parameters["cached"] and third.parameters["cached"]
    assert len(list(tmp_path.glob("*.npz"))) == 1
    t = np.linspace(0.0, 0.5, 11)
    np.testing.assert_array_equal(first.state(t)[0], again.state(t)[0])


def test_a_report_keeps_the_references_it_reads_and_reads_them_back_without_the_cache(tmp_path):
    """reference_archive: a reference read from the cache with compute=False is copied into the
    report's folder unchanged; with an empty cache it is read back from there (the same
    states), a damaged copy is refused as a cache entry is, and a reference in neither is a
    MissingReferenceError; only the entries read are reported."""
    from impactbench.analysis.reference import MissingReferenceError, reference_archive

    pendulum = DoublePendulum()
    cache, empty, archive = tmp_path / "cache", tmp_path / "empty", tmp_path / "report" / "refs"
    first = ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache)
    (entry,) = cache.glob("*.npz")
    with reference_archive(archive) as read:
        ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache, compute=False)
    assert read == {entry.name}
    assert (archive / entry.name).read_bytes() == entry.read_bytes()
    t = np.linspace(0.0, 1.0, 51)
    with reference_archive(archive) as read:
        again = ib.reference(pendulum, 1.0, reference_method(), cache_dir=empty, compute=False)
        with pytest.raises(MissingReferenceError):
            ib.reference(pendulum, 0.5, reference_method(), cache_dir=empty, compute=False)
    assert read == {entry.name} and not list(empty.glob("*.npz"))
    np.testing.assert_array_equal(again.state(t)[0], first.state(t)[0])
    np.testing.assert_array_equal(again.impact_times, first.impact_times)
    with pytest.raises(MissingReferenceError):  # no archive outside the block
        ib.reference(pendulum, 1.0, reference_method(), cache_dir=empty, compute=False)
    _rewrite(archive / entry.name, extra=np.zeros(1))
    with reference_archive(archive), pytest.raises(MissingReferenceError):
        with pytest.warns(ib.CacheWarning, match="members must be"):
            ib.reference(pendulum, 1.0, reference_method(), cache_dir=empty, compute=False)


def test_a_report_reads_its_archived_reference_after_the_code_changed(tmp_path, monkeypatch):
    """The archive of a report holds the references its study was measured against, keyed by
    the code version that ran it: once the source changes (a new code version, a new key) the
    report still reads that entry, found by the rest of its description and checked as a cache
    entry; another reference (another t_end) is still missing."""
    import impactbench.analysis.reference as module
    from impactbench.analysis.reference import MissingReferenceError, reference_archive

    pendulum = DoublePendulum()
    cache, empty, archive = tmp_path / "cache", tmp_path / "empty", tmp_path / "refs"
    first = ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache)
    with reference_archive(archive):
        ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache, compute=False)
    (entry,) = archive.glob("*.npz")
    monkeypatch.setattr(module, "source_digest", lambda *types: "a-later-code-version")
    with reference_archive(archive) as read:
        again = ib.reference(pendulum, 1.0, reference_method(), cache_dir=empty, compute=False)
        with pytest.raises(MissingReferenceError):
            ib.reference(pendulum, 0.5, reference_method(), cache_dir=empty, compute=False)
    assert read == {entry.name}
    t = np.linspace(0.0, 1.0, 51)
    np.testing.assert_array_equal(again.state(t)[0], first.state(t)[0])
    with pytest.raises(MissingReferenceError):  # the cache itself is never read across versions
        ib.reference(pendulum, 1.0, reference_method(), cache_dir=cache, compute=False)
