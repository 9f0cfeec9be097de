"""The methods: time-stepping (Paoli-Schatzman, Moreau-Jean, catching-up, nonsmooth
generalized-alpha, D1MinusLinear, Moreau-Jean with position projection), time-stepping with
step-size control (:class:`Adaptive`, any scheme: ``Adaptive[scheme=CatchingUp,rtol=1e-4]``)
and event-driven.

``METHODS`` maps each class name to its class (the built-in methods; those of installed
third-party packages join them in :data:`impactbench.bench.plugins.METHODS`); :func:`get_method`
builds an instance from a name such as ``"MoreauJean"`` or ``"MoreauJean[theta=0.5]"`` (the form
of ``Method.name``).
"""

from __future__ import annotations

from impactbench.core.adaptive import Adaptive
from impactbench.core.method import Method
from impactbench.core.names import parse_spec

from .d1_minus_linear import D1MinusLinear
from .event_driven import EventDriven
from .moreau_jean import CatchingUp, MoreauJean
from .moreau_jean_projection import MoreauJeanProjection
from .nonsmooth_generalized_alpha import NonsmoothGeneralizedAlpha
from .paoli_schatzman import PaoliSchatzman

METHODS: dict[str, type[Method]] = {
    "PaoliSchatzman": PaoliSchatzman,
    "MoreauJean": MoreauJean,
    "CatchingUp": CatchingUp,
    "MoreauJeanProjection": MoreauJeanProjection,
    "NonsmoothGeneralizedAlpha": NonsmoothGeneralizedAlpha,
    "D1MinusLinear": D1MinusLinear,
    "Adaptive": Adaptive,
    "EventDriven": EventDriven,
}


def reference_method(rtol: float = 1e-12, atol: float = 1e-14) -> EventDriven:
    """The method of reference solutions: DOP853 event-driven with dense output.

    Use with :func:`impactbench.reference` for problems without a closed form.
    """
    return EventDriven(integrator="DOP853", rtol=rtol, atol=atol, dense_output=True)


def get_method(spec: str) -> Method:
    """Instantiate a method from ``"Name"`` or ``"Name[param=value,...]"``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones), a malformed parameter list or
        parameters the method rejects.
    """
    factory, kwargs = parse_spec(spec, METHODS, "method")
    try:
        return factory(**kwargs)
    except TypeError as error:
        raise ValueError(f"bad parameters for method {spec!r}: {error}") from None


__all__ = [
    "METHODS",
    "Adaptive",
    "CatchingUp",
    "D1MinusLinear",
    "EventDriven",
    "MoreauJean",
    "MoreauJeanProjection",
    "NonsmoothGeneralizedAlpha",
    "PaoliSchatzman",
    "get_method",
    "reference_method",
]
