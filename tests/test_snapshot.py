"""Snapshots of an object's attributes (impactbench.core.snapshot): every change that could
alter what is computed from them breaks the match, and what cannot be followed has none."""

import numpy as np
import pytest

from impactbench.core.snapshot import Snapshot, keep, kept, typed, value_key


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


def test_kept_values_follow_the_values_of_the_owner_and_the_state(monkeypatch):
    from impactbench.core import snapshot

    monkeypatch.setattr(snapshot, "_KEPT", {})
    owner, thing = _Thing(), _Thing()
    state = Snapshot.take(thing)
    keep(owner, state, "prepared")
    assert kept(owner, state) == "prepared"
    # new objects holding equal values: the same kept value (keyed by value, not identity)
    assert kept(_Thing(), Snapshot.take(_Thing())) == "prepared"
    assert kept(owner, None) is None
    owner.a = 2.5
    assert kept(owner, state) is None
    keep(owner, state, "again")
    assert kept(owner, state) == "again"
    assert kept(_Thing(), state) == "prepared"  # the owner of the first values still finds it
    thing.b[0] = -1.0  # in place: a state of other values
    assert kept(owner, Snapshot.take(thing)) is None
    owner.c = (1, "x", [2.0])  # a value that could change unseen: nothing is kept for it
    keep(owner, state, "unseen")
    assert kept(owner, state) is None


def _equal_but_not_the_same():
    return [
        ("int and float", 1, 1.0),
        ("bool and int", True, 1),
        ("zero and negative zero", 0.0, -0.0),
        ("numpy scalar and float", np.float64(1.5), 1.5),
        ("dtype", np.array([1.0, 2.0]), np.array([1, 2])),
        ("shape", np.array([1.0, 2.0]), np.array([[1.0, 2.0]])),
        ("nested", (1.0, (2, None)), (1.0, (2.0, None))),
    ]


@pytest.mark.parametrize(
    ("case", "first", "second"),
    _equal_but_not_the_same(),
    ids=[case for case, _, _ in _equal_but_not_the_same()],
)
def test_value_keys_tell_apart_values_that_compare_equal_but_differ_in_type_or_bits(
    case, first, second
):
    one, other = _Thing(), _Thing()
    one.x, other.x = first, second
    assert value_key(one) != value_key(other)
    other.x = first.copy() if isinstance(first, np.ndarray) else first
    assert value_key(one) == value_key(other)
    assert Snapshot.take(one).value == Snapshot.take(other).value


def test_value_keys_leave_out_memos_and_refuse_what_could_change_unseen():
    one, other = _Thing(), _Thing()
    one.cache_memo = {"derived": [1]}
    assert value_key(one) == value_key(other)
    assert typed([1.0]) is None and typed((1.0, {"k": 1})) is None
    other.d = [1.0]
    assert value_key(other) is None
    assert value_key(_Thing) is None  # a class: its dictionary is no plain dict
