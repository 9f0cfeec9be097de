"""Names and units of a problem's coordinates and parameters, as its figures and tables show them.

A problem declares them as class attributes (:class:`impactbench.core.problem.Problem`):

* ``coordinates``: one ``(name, unit)`` pair per coordinate, e.g. ``(("x", "m"), ("y", "m"),
  ("phi", "rad"))``; or a single pair whose name holds ``{i}`` (1-based) or ``{i0}`` (0-based),
  repeated for every coordinate of a problem whose size is a parameter, e.g.
  ``(("q_{i}", "m"),)``. A name is plain text: a Greek letter spelled out (``phi``, ``theta``),
  an index after ``_`` (``phi_M``, ``q_3``); :func:`math_name` renders it in mathtext.
* ``parameter_units``: the unit of each constructor parameter, by name ("-" dimensionless).

A problem that declares no coordinates (e.g. a user's) gets ``q_1 ... q_n`` with the unit
:data:`UNDECLARED`: no unit is invented for it.
"""

from __future__ import annotations

from typing import Any

#: The unit shown for a quantity whose unit its problem does not declare.
UNDECLARED = "unit not declared"

#: Names spelled out that mathtext renders as Greek letters.
GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi chi psi omega".split()
)


def coordinates(problem: Any, n_dof: int) -> list[tuple[str, str]]:
    """``(name, unit)`` of each of the ``n_dof`` coordinates of ``problem`` (see the module
    docstring), ``("q_i", UNDECLARED)`` when it declares none.

    Raises
    ------
    ValueError
        If the declaration is not a tuple of (str, str) pairs, or its length is neither 1 (with
        ``{i}`` or ``{i0}`` in the name) nor ``n_dof``.
    """
    declared = getattr(problem, "coordinates", None)
    if declared is None:
        return [(f"q_{k + 1}", UNDECLARED) for k in range(n_dof)]
    pairs = [tuple(pair) for pair in declared]
    if not all(len(p) == 2 and all(isinstance(s, str) for s in p) for p in pairs):
        raise ValueError(f"coordinates must be (name, unit) pairs of str, got {declared!r}")
    if len(pairs) == 1 and ("{i}" in pairs[0][0] or "{i0}" in pairs[0][0]):
        name, unit = pairs[0]
        return [
            (name.replace("{i0}", str(k)).replace("{i}", str(k + 1)), unit) for k in range(n_dof)
        ]
    if len(pairs) != n_dof:
        raise ValueError(
            f"coordinates must name each of the {n_dof} coordinates, got {len(pairs)} pairs"
        )
    return pairs  # type: ignore[return-value]


def math_name(name: str, dot: bool = False) -> str:
    """The mathtext of a coordinate's plain-text name, without dollars: ``phi_M`` ->
    ``\\phi_{M}``, ``q_3`` -> ``q_{3}``, ``x`` -> ``x``; with ``dot``, its time derivative
    (``\\dot{\\phi}_{M}``)."""
    base, _, index = name.partition("_")
    base = f"\\{base}" if base in GREEK else base
    base = f"\\dot{{{base}}}" if dot else base
    return f"{base}_{{{index}}}" if index else base


def rate_unit(unit: str) -> str:
    """The unit of the time derivative of a quantity in ``unit``: ``m`` -> ``m/s``,
    ``-`` -> ``1/s``, ``kg m`` -> ``(kg m)/s``, ``m, rad`` -> ``m/s, rad/s``; :data:`UNDECLARED`
    stays undeclared."""
    if unit == UNDECLARED:
        return unit
    if ", " in unit:  # a list of units
        return ", ".join(rate_unit(part) for part in unit.split(", "))
    if unit == "-":
        return "1/s"
    return f"({unit})/s" if any(c in unit for c in " /") else f"{unit}/s"


def units_text(units: list[str]) -> str:
    """The distinct ``units`` in order of first appearance, joined by ", " (one axis holding
    coordinates of several units names them all)."""
    return ", ".join(dict.fromkeys(units))


def parameter_unit(problem: Any, name: str) -> str | None:
    """The declared unit of the constructor parameter ``name`` of ``problem`` (a class or an
    instance), or None when it declares none."""
    units = getattr(problem, "parameter_units", None) or {}
    return units.get(name)
