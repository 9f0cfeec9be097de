"""Snapshots of an object's attributes: a cheap test that none of them changed.

A :class:`Snapshot` keeps the keys and the values (by identity) of an object's instance
dictionary and, for each NumPy array among the values, its shape, dtype and bytes (an array
changed in place keeps its identity). It matches the object while the same attributes hold the
same objects and no array among them changed: then every value computed from the attributes
alone (e.g. a problem's ``kernel_parameters()``, a method's parameter vector) is unchanged.

Values of other mutable types (a list, a dict, an object of a user class) could change unseen:
an object holding one has no snapshot (:meth:`Snapshot.take` returns None) and its callers
compute everything again. One exception, compared by identity only: the attributes whose name
ends with ``_memo`` hold what was derived from the other attributes (caches, and the values
:func:`keep` keeps for the object's callers).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

#: Types whose instances cannot change (a tuple or a frozenset of them neither).
_IMMUTABLE = frozenset({int, float, complex, bool, str, bytes, type(None)})


def _immutable(value: Any) -> bool:
    """Whether ``value`` cannot change: an instance of an immutable built-in type or a NumPy
    scalar, or a tuple or a frozenset of such values."""
    kind = type(value)
    if kind in _IMMUTABLE or isinstance(value, np.generic):
        return True
    if kind is tuple or kind is frozenset:
        return all(map(_immutable, value))
    return False


class Snapshot:
    """The state of an object's attributes (module docstring): take one with :meth:`take`,
    test it with :meth:`matches`.

    ``extras`` names attributes read through the class (a class attribute such as a problem's
    ``KERNELS``): their values are compared by identity too.
    """

    __slots__ = ("cls", "keys", "values", "arrays", "fingerprints", "extras", "extra_values")

    def __init__(self, obj: Any, attributes: dict[str, Any], extras: tuple[str, ...]) -> None:
        self.cls = type(obj)
        self.keys = tuple(attributes)
        self.values = tuple(attributes.values())
        self.arrays = tuple(value for value in self.values if type(value) is np.ndarray)
        self.fingerprints = _fingerprints(self.arrays)
        # attrgetter of two names or more returns a tuple; one name is read twice to have one
        self.extras = operator.attrgetter(*extras, *extras[:1]) if extras else None
        self.extra_values = self.extras(obj) if extras else None

    @classmethod
    def take(cls, obj: Any, extras: tuple[str, ...] = ()) -> Snapshot | None:
        """The snapshot of ``obj`` now, or None if an attribute holds a value that could change
        unseen (module docstring).

        ``extras``: one name or more (their values are compared by identity)."""
        attributes = getattr(obj, "__dict__", None)
        if type(attributes) is not dict:
            return None
        for key, value in attributes.items():
            if _immutable(value) or key.endswith("_memo"):
                continue
            if type(value) is not np.ndarray or value.dtype.kind not in "biufc":
                return None
        return cls(obj, attributes, extras)

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` is in the state this snapshot was taken in (module docstring)."""
        attributes = obj.__dict__
        return (
            type(obj) is self.cls
            and len(attributes) == len(self.values)
            and all(map(operator.is_, attributes.values(), self.values))
            and tuple(attributes) == self.keys
            and (not self.arrays or _fingerprints(self.arrays) == self.fingerprints)
            and (self.extras is None or all(map(operator.is_, self.extras(obj), self.extra_values)))
        )


def _fingerprints(arrays: tuple[np.ndarray, ...]) -> list[tuple[Any, ...]]:
    """The shape, dtype and bytes of each array."""
    return [(array.shape, array.dtype, array.tobytes()) for array in arrays]


#: The attribute of an owner (e.g. a method) holding what :func:`keep` kept for it.
_KEPT = "_kept_memo"

#: Values kept per owner, one per state: a new one beyond them forgets the others.
MAX_KEPT = 16


def kept(owner: Any, state: Snapshot | None) -> Any:
    """What :func:`keep` kept for ``owner`` and ``state`` (e.g. a method and the checked state
    of a problem, :func:`impactbench.core.problem.checked_state`), if ``owner``'s attributes
    have not changed since; None otherwise."""
    memo = None if state is None else owner.__dict__.get(_KEPT)
    if memo is None:
        return None
    snapshot, values = memo[0]
    entry = values.get(id(state))
    if entry is None or entry[0] is not state or not snapshot.matches(owner):
        return None
    return entry[1]


def keep(owner: Any, state: Snapshot | None, value: Any) -> None:
    """Keep ``value``, derived from the attributes of ``owner`` and from ``state`` alone, for
    :func:`kept` (not kept when ``state`` is None or ``owner`` has no snapshot).

    The values live in an attribute of ``owner`` (ending with ``_memo``: its snapshots compare
    it by identity), replaced as a whole so that a concurrent :func:`kept` sees the old values
    or the new ones."""
    if state is None:
        return
    memo = owner.__dict__.setdefault(_KEPT, [(None, {})])
    snapshot, values = memo[0]
    if snapshot is None or not snapshot.matches(owner):
        snapshot, values = Snapshot.take(owner), {}
    values = {} if len(values) >= MAX_KEPT else dict(values)
    if snapshot is not None:
        values[id(state)] = (state, value)  # the state is kept alive: its id is not reused
    memo[0] = (snapshot, values)
