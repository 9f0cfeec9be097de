"""``impactbench list``: the problems, methods and studies, with their parameters on request.

``impactbench list`` prints one line per entry; ``--verbose`` adds the parameters each problem
and method takes, with their defaults (:func:`impactbench.core.names.parameters`: the names the
``Name[param=value,...]`` syntax accepts) and, for a problem, their units (its
``parameter_units``); ``impactbench list problems`` (``methods``,
``studies``) lists one kind only, importing only that kind's plug-ins; ``impactbench list NAME
...`` prints only the named entries, with their parameters.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Mapping
from typing import Any

from ..core import names
from ..core.coordinates import UNDECLARED, parameter_unit


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def parameter_line(factory: Any, units: bool = False) -> str:
    """``name=default, ...`` of the parameters ``factory`` takes ("any keyword" when it takes
    any, "none" when it takes none); with ``units`` (a problem), each followed by its unit in
    brackets as the problem declares it (``parameter_units``; "unit not declared" otherwise)."""
    accepted = names.parameters(factory)
    if accepted is None:
        return "any keyword"
    shown = []
    for p in accepted:
        text = p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        if units:
            text += f" [{parameter_unit(factory, p.name) or UNDECLARED}]"
        shown.append(text)
    return ", ".join(shown) or "none"


#: The kinds ``impactbench list KIND`` lists alone.
KINDS = {"problems": "Problems", "methods": "Methods", "studies": "Studies"}


def _tables(kinds: set[str]) -> dict[str, Mapping[str, Any]]:
    """The registries (built-in entries and plug-ins) of ``kinds`` (all when empty)."""
    tables: dict[str, Mapping[str, Any]] = {}
    if not kinds or "Problems" in kinds:
        from .plugins import PROBLEMS

        tables["Problems"] = PROBLEMS
    if not kinds or "Methods" in kinds:
        from .plugins import METHODS

        tables["Methods"] = METHODS
    if not kinds or "Studies" in kinds:
        from .plugins import STUDIES

        tables["Studies"] = STUDIES
    return tables


def _line(kind: str, name: str, entry: Any, usage_error: type[Exception]) -> str:
    if kind == "Methods":
        return f"  {name:24} {entry.family:14} {_first_line(entry.__doc__)}"
    if kind == "Studies":
        from .plugins import study_runs

        try:
            sizes = [len(study_runs(entry, quick)) for quick in (True, False)]
        except ValueError as error:
            raise usage_error(str(error)) from None
        return f"  {name:24} {entry.title} (quick {sizes[0]} runs, full {sizes[1]} runs)"
    return f"  {name:24} {_first_line(entry.__doc__)}"


def list_entries(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """Print the entries (see the module docstring); ``usage_error`` for an unknown name."""
    kinds = {KINDS[name] for name in args.names if name in KINDS}
    wanted = {name for name in args.names if name not in KINDS}
    tables = _tables(kinds if not wanted else set())
    known = {name for table in tables.values() for name in table}
    for name in sorted(wanted):
        if name not in known:
            raise usage_error(
                f"unknown name {name!r}{names.did_you_mean(name, known)}: not a problem, "
                "method or study"
            )
    verbose = args.verbose or bool(wanted)
    for kind, table in tables.items():
        shown = [name for name in table if not wanted or name in wanted]
        if not shown:
            continue
        print(f"{kind}:")
        for name in shown:
            print(_line(kind, name, table[name], usage_error))
            if verbose and kind != "Studies":
                line = parameter_line(table[name], units=kind == "Problems")
                print(f"  {'':24} parameters: {line}")
    return 0


def add_parser(commands: Any, usage_error: type[Exception]) -> None:
    """Add the ``list`` subcommand to the ``impactbench`` parser's subcommands."""
    listing = commands.add_parser(
        "list",
        help="list the problems, methods and studies",
        description="List the problems, methods and studies; --verbose, or naming entries, "
        "also shows the parameters of each problem and method (for 'Name[param=value,...]').",
    )
    listing.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="only these entries, or one kind: problems, methods or studies",
    )
    listing.add_argument(
        "--verbose", "-v", action="store_true", help="show the parameters and their defaults"
    )
    listing.set_defaults(handler=lambda args: list_entries(args, usage_error), parser=listing)
