"""Snapshots of an object's attributes: a cheap test that none of them changed.

A :class:`Snapshot` keeps the keys and the values (by identity) of an object's instance
dictionary and, for each NumPy array among the values, its shape, dtype and bytes (an array
changed in place keeps its identity). It matches the object while the same attributes hold the
same objects and no array among them changed: then every value computed from the attributes
alone (e.g. a problem's ``kernel_parameters()``, a method's parameter vector) is unchanged.

Values of other mutable types (a list, a dict, an object of a user class) could change unseen:
an object holding one has no snapshot (:meth:`Snapshot.take` returns None) and its callers
compute everything again. One exception, compared by identity only: the attributes whose name
ends with ``_memo`` hold what was derived from the other attributes (caches).

Values derived from an object's attributes alone are kept by value: :func:`value_key` is the
object's class with the types and the bits of its attributes (an array by shape, dtype and
bytes), equal for two objects exactly when they hold equal values, and :func:`keep` keeps what
a method derives from itself and a problem's checked state under the value keys of both, so
that a new instance with the same parameters finds it (:func:`kept`).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


class _Mutable(Exception):
    """Raised by :func:`_image` for a value that could change unseen."""


def _image(value: Any) -> Hashable:
    """A hashable image of ``value``, equal for two values exactly when they have the same
    types and bits (so that 1, 1.0 and True differ, and so do 0.0 and -0.0): a NumPy array by
    shape, dtype and bytes; :class:`_Mutable` for a value that could change unseen."""
    kind = type(value)
    if kind is float:  # equal nonzero floats have equal bits; the sign of a zero by its text
        return kind, value if value else value.hex()
    if kind is int or kind is str or kind is bool or value is None or kind is bytes:
        return kind, value
    if kind is np.ndarray:
        dtype = value.dtype
        if dtype.kind in "biufc":
            return kind, value.shape, dtype, value.tobytes()
        raise _Mutable
    if kind is tuple or kind is frozenset:
        return kind, kind(map(_image, value))
    if kind is complex:
        return kind, _image(value.real), _image(value.imag)
    if isinstance(value, np.generic):
        return kind, value.tobytes()
    raise _Mutable


def typed(value: Any) -> Hashable | None:
    """The hashable image of ``value`` by its types and bits (:func:`_image`), or None when it
    could change unseen (a list, a dict, an object of a user class, an array of objects)."""
    try:
        return _image(value)
    except _Mutable:
        return None


def value_key(obj: Any) -> Hashable | None:
    """The class of ``obj`` with the names, types and bits of its attributes (those ending
    with ``_memo`` left out: they are derived from the others), or None when one holds a value
    that could change unseen. Two objects of one class have equal keys exactly when their
    attributes hold equal values: what is computed from the attributes alone is then equal."""
    attributes = getattr(obj, "__dict__", None)
    if type(attributes) is not dict:
        return None
    try:
        return type(obj), _images(attributes)
    except _Mutable:
        return None


def _images(
    attributes: dict[str, Any], arrays: list[np.ndarray] | None = None
) -> tuple[tuple[str, Hashable], ...]:
    """The name and the :func:`_image` of each attribute but the ``_memo`` ones (a float, an
    int, a str or a bool imaged here, without a call: the common case); the NumPy arrays among
    them appended to ``arrays`` when given."""
    images = []
    for key, value in attributes.items():
        if key.endswith("_memo"):
            continue
        kind = type(value)
        if kind is float:
            images.append((key, (kind, value if value else value.hex())))
        elif kind is int or kind is str or kind is bool:
            images.append((key, (kind, value)))
        else:
            images.append((key, _image(value)))
            if kind is np.ndarray and arrays is not None:
                arrays.append(value)
    return tuple(images)


class Snapshot:
    """The state of an object's attributes (module docstring): take one with :meth:`take`,
    test it with :meth:`matches`; its :attr:`value` is the object's :func:`value_key` with the
    extras.

    ``extras`` names attributes read through the class (a class attribute such as a problem's
    ``KERNELS``): their values are compared by identity too.
    """

    __slots__ = (
        "cls",
        "keys",
        "values",
        "arrays",
        "fingerprints",
        "extras",
        "extra_values",
        "value",
    )

    def __init__(
        self,
        obj: Any,
        attributes: dict[str, Any],
        images: tuple[tuple[str, Hashable], ...],
        arrays: tuple[np.ndarray, ...],
        fingerprints: list[Hashable],
        extras: tuple[str, ...],
    ) -> None:
        self.cls = type(obj)
        self.keys = tuple(attributes)
        self.values = tuple(attributes.values())
        self.arrays = arrays
        self.fingerprints = fingerprints
        self.extras = _getter(extras) if extras else None
        self.extra_values = self.extras(obj) if extras else None
        #: The values of the attributes by their types and bits (:func:`value_key`), with the
        #: extras: equal for two snapshots of objects holding equal values, whatever their
        #: identity.
        self.value: Hashable = (self.cls, images, self.extra_values)

    @classmethod
    def take(cls, obj: Any, extras: tuple[str, ...] = ()) -> Snapshot | None:
        """The snapshot of ``obj`` now, or None if an attribute holds a value that could change
        unseen (module docstring).

        ``extras``: one name or more (their values are compared by identity)."""
        attributes = getattr(obj, "__dict__", None)
        if type(attributes) is not dict:
            return None
        arrays: list[np.ndarray] = []
        try:
            images = _images(attributes, arrays)  # the _memo attributes: by identity only
        except _Mutable:
            return None
        fingerprints = [image for _, image in images if image[0] is np.ndarray]
        return cls(obj, attributes, images, tuple(arrays), fingerprints, extras)

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` is in the state this snapshot was taken in (module docstring)."""
        attributes = obj.__dict__
        return (
            type(obj) is self.cls
            and len(attributes) == len(self.values)
            and all(map(operator.is_, attributes.values(), self.values))
            and tuple(attributes) == self.keys
            and (not self.arrays or list(map(_image, self.arrays)) == self.fingerprints)
            and (self.extras is None or all(map(operator.is_, self.extras(obj), self.extra_values)))
        )


@functools.cache
def _getter(extras: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The reader of the attributes ``extras`` of an object, as a tuple (kept per names)."""
    # attrgetter of two names or more returns a tuple; one name is read twice to have one
    return operator.attrgetter(*extras, *extras[:1])


#: What :func:`keep` kept, by the value keys of its owner and of the state it was derived from.
_KEPT: dict[tuple[Hashable, Hashable], Any] = {}

#: Values kept at most: a new one beyond them forgets the oldest.
MAX_KEPT = 64


def kept(owner: Any, state: Snapshot | None) -> Any:
    """What :func:`keep` kept for an owner (e.g. a method) whose attributes hold the values of
    ``owner``'s now, and a state (e.g. the checked state of a problem,
    :func:`impactbench.core.problem.checked_state`) of the same values as ``state``; None when
    nothing was kept for them, or either has no value key."""
    if state is None:
        return None
    key = value_key(owner)
    if key is None:
        return None
    return _KEPT.get((key, state.value))


def keep(owner: Any, state: Snapshot | None, value: Any) -> None:
    """Keep ``value``, derived from the attributes of ``owner`` and from ``state`` alone, for
    :func:`kept` (not kept when ``state`` is None or ``owner`` has no value key). ``value``
    must hold no reference to an array of either that could change later (copies only)."""
    if state is None:
        return
    key = value_key(owner)
    if key is None:
        return
    if len(_KEPT) >= MAX_KEPT:
        try:
            del _KEPT[next(iter(_KEPT))]
        except (KeyError, RuntimeError, StopIteration):  # taken by a concurrent keep
            pass
    _KEPT[key, state.value] = value
