"""``impactbench list``: the problems, methods and studies, with their parameters on request.

``impactbench list`` prints one line per entry; ``--verbose`` adds the parameters each problem
and method takes, with their defaults (:func:`impactbench.core.names.parameters`: the names the
``Name[param=value,...]`` syntax accepts); ``impactbench list NAME ...`` prints only the named
entries, with their parameters.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Mapping
from typing import Any

from ..core import names


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def parameter_line(factory: Any) -> str:
    """``name=default, ...`` of the parameters ``factory`` takes ("any keyword" when it takes
    any, "none" when it takes none)."""
    accepted = names.parameters(factory)
    if accepted is None:
        return "any keyword"
    shown = [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in accepted
    ]
    return ", ".join(shown) or "none"


def _tables() -> dict[str, Mapping[str, Any]]:
    from ..methods import METHODS
    from ..problems import PROBLEMS
    from ..studies import STUDIES

    return {"Problems": PROBLEMS, "Methods": METHODS, "Studies": STUDIES}


def _line(kind: str, name: str, entry: Any) -> str:
    if kind == "Methods":
        return f"  {name:24} {entry.family:14} {_first_line(entry.__doc__)}"
    if kind == "Studies":
        counts = f"quick {len(entry.runs(True))} runs, full {len(entry.runs(False))} runs"
        return f"  {name:24} {entry.title} ({counts})"
    return f"  {name:24} {_first_line(entry.__doc__)}"


def list_entries(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """Print the entries (see the module docstring); ``usage_error`` for an unknown name."""
    tables = _tables()
    wanted = set(args.names)
    known = {name for table in tables.values() for name in table}
    for name in args.names:
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
            print(_line(kind, name, table[name]))
            if verbose and kind != "Studies":
                print(f"  {'':24} parameters: {parameter_line(table[name])}")
    return 0


def add_parser(commands: Any, usage_error: type[Exception]) -> None:
    """Add the ``list`` subcommand to the ``impactbench`` parser's subcommands."""
    listing = commands.add_parser(
        "list",
        help="list the problems, methods and studies",
        description="List the problems, methods and studies; --verbose, or naming entries, "
        "also shows the parameters of each problem and method (for 'Name[param=value,...]').",
    )
    listing.add_argument("names", nargs="*", metavar="NAME", help="only these entries")
    listing.add_argument(
        "--verbose", "-v", action="store_true", help="show the parameters and their defaults"
    )
    listing.set_defaults(handler=lambda args: list_entries(args, usage_error), parser=listing)
