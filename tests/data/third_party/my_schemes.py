"""A third party's module for the `impactbench validate MODULE:CLASS` tests: a method defined
outside impactbench (here simply the built-in Moreau-Jean under another name)."""

from impactbench.methods import MoreauJean


class MyMoreauJean(MoreauJean):
    """Moreau-Jean, as a third party would subclass or wrap a scheme."""


class NotAMethod:
    """Not an impactbench.Method: `validate` must refuse it by name."""
