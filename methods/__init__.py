"""The methods: time-stepping (Paoli-Schatzman, Moreau-Jean, catching-up) and event-driven."""

from .moreau_jean import CatchingUp, MoreauJean
from .paoli_schatzman import PaoliSchatzman

METHODS = {
    "PaoliSchatzman": PaoliSchatzman,
    "MoreauJean": MoreauJean,
    "CatchingUp": CatchingUp,
}

__all__ = ["METHODS", "CatchingUp", "MoreauJean", "PaoliSchatzman"]
