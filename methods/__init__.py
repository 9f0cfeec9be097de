"""The methods: time-stepping (Paoli-Schatzman, Moreau-Jean, catching-up) and event-driven.

``METHODS`` maps each class name to its class; :func:`get_method` builds an instance from a name
such as ``"MoreauJean"`` or ``"MoreauJean[theta=0.5]"`` (the form of ``Method.name``).
"""

from __future__ import annotations

import ast
import re

from impactbench.method import Method

from .event_driven import EventDriven
from .moreau_jean import CatchingUp, MoreauJean
from .paoli_schatzman import PaoliSchatzman

METHODS: dict[str, type[Method]] = {
    "PaoliSchatzman": PaoliSchatzman,
    "MoreauJean": MoreauJean,
    "CatchingUp": CatchingUp,
    "EventDriven": EventDriven,
}


def reference_method(rtol: float = 1e-12, atol: float = 1e-14) -> EventDriven:
    """The method of reference solutions: DOP853 event-driven with dense output.

    Use with :func:`impactbench.reference` for problems without a closed form.
    """
    return EventDriven(integrator="DOP853", rtol=rtol, atol=atol, dense_output=True)


_SPEC = re.compile(r"^\s*(\w+)\s*(?:\[(.*)\])?\s*$")


def get_method(spec: str) -> Method:
    """Instantiate a method from ``"Name"`` or ``"Name[param=value,...]"``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones) or a malformed parameter list.
    """
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if match is None:
        raise ValueError(f"method must look like 'Name' or 'Name[param=value,...]', got {spec!r}")
    name, params = match.groups()
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known methods: {', '.join(METHODS)}")
    kwargs = {}
    for item in filter(None, (part.strip() for part in (params or "").split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"method parameter must look like name=value, got {item!r}")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = value.strip()
    try:
        return METHODS[name](**kwargs)
    except TypeError as error:
        raise ValueError(f"bad parameters for method {name!r}: {error}") from None


__all__ = [
    "METHODS",
    "CatchingUp",
    "EventDriven",
    "MoreauJean",
    "PaoliSchatzman",
    "get_method",
    "reference_method",
]
