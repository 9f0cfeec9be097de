"""Snapshots of an object's attributes (impactbench.core.snapshot): every change that could
alter what is computed from them breaks the match, and what cannot be followed has none."""

import numpy as np
import pytest

from impactbench.core.snapshot import Snapshot, keep, kept


class _Thing:
    scale = 1.0  # read through the class: an extra

    def __init__(self):
        self.a = 1.5
        self.b = np.array([1.0, 2.0])
        self.c = (1, "x", (2.0, None))


def _changes():
    def reshaped(thing):
        thing.b.shape = (2, 1)  # in place: same object, same bytes

    def retyped(thing):
        thing.b.dtype = np.int64  # in place: same bytes read as integers

    def renamed(thing):
        value = thing.c
        del thing.c
        thing.d = value  # the same values in the same order, under another name

    return [
        ("value", lambda thing: setattr(thing, "a", 2.5)),
        ("equal value, new object", lambda thing: setattr(thing, "a", float("1.5"))),
        ("entry in place", lambda thing: thing.b.__setitem__(0, -1.0)),
        ("negative zero", lambda thing: thing.b.__setitem__(0, 0.0)),
        ("shape in place", reshaped),
        ("dtype in place", retyped),
        ("attribute renamed", renamed),
        ("attribute added", lambda thing: setattr(thing, "e", 0)),
        ("class attribute", lambda thing: setattr(_Thing, "scale", 2.0)),
    ]


@pytest.mark.parametrize(("change", "mutate"), _changes(), ids=[c for c, _ in _changes()])
def test_a_snapshot_no_longer_matches_after_a_change(change, mutate, monkeypatch):
    monkeypatch.setattr(_Thing, "scale", 1.0)
    thing = _Thing()
    if change == "negative zero":
        thing.b[0] = -0.0
    snapshot = Snapshot.take(thing, ("scale",))
    assert snapshot.matches(thing)
    mutate(thing)
    assert not snapshot.matches(thing)


def test_values_that_could_change_unseen_have_no_snapshot_but_memos_are_exempt():
    thing = _Thing()
    thing.cache_memo = {"derived": [1]}  # a cache: compared by identity
    assert Snapshot.take(thing) is not None
    for value in ([1.0], {"k": 1.0}, (1.0, [2.0]), np.array([object()]), object()):
        thing.other = value
        assert Snapshot.take(thing) is None


def test_kept_values_follow_the_owner_and_the_state():
    owner, thing = _Thing(), _Thing()
    state = Snapshot.take(thing)
    keep(owner, state, "prepared")
    assert kept(owner, state) == "prepared"
    assert kept(owner, Snapshot.take(thing)) is None  # another state (a new snapshot object)
    assert kept(owner, None) is None
    owner.a = 2.5
    assert kept(owner, state) is None
    keep(owner, state, "again")
    assert kept(owner, state) == "again"
