"""``impactbench validate METHOD``: the conformance suite
(:func:`impactbench.bench.testing.check_method`) on the command line.

METHOD is a name (built-in or plug-in) with optional parameters (``MoreauJean[theta=0.5]``) or
a class of another module, ``MODULE:CLASS[param=value,...]``
(``my_package.schemes:MyScheme[order=2]``); the current directory is searched first for MODULE, as
``python -m`` does. Exit codes: 0 every check passed, 1 a check failed, 2 usage error (unknown
name, import error, bad parameter). Progress lines go to stderr while the battery runs; the
report (a table at most 100 columns wide, then each failed check with its measured value,
threshold, why, and its likely causes) to stdout.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .specs import load_method
from .testing import LEVELS, check_method


def add_parser(commands: Any, usage_error: type[Exception]) -> None:
    """Add the ``validate`` subcommand to the ``impactbench`` parser's subcommands.

    ``usage_error`` is the exception the command raises for a bad command line (exit code 2).
    """
    validate = commands.add_parser(
        "validate",
        help="run the conformance suite on a method (built-in or MODULE:CLASS)",
        description="Run a method through the battery the built-in methods pass (orders "
        "through impacts against closed forms, the kinetic metric, resting and multiple "
        "contacts, energy over impacts, the restitution ratio at isolated impacts, bad inputs, "
        "determinism; for a method declaring a "
        "friction law, non-positive friction work, no creep when sticking and the friction "
        "oscillator's closed form, reported not applicable for any other) and print each property "
        "with its measured value, threshold and verdict (and, for a failed one, its likely "
        "causes). Exit code 0 when every check "
        "passes, 1 when one fails, 2 for a usage error.",
    )
    validate.add_argument(
        "method",
        metavar="METHOD",
        help="'Name[param=value,...]' (built-in) or 'module:Class[param=value,...]'",
    )
    validate.add_argument(
        "--level", choices=sorted(LEVELS), default="quick", help="how much to run (default quick)"
    )
    validate.add_argument(
        "--tolerance",
        default="rtol",
        help="tolerance parameter of an event-driven method (default rtol)",
    )
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.set_defaults(handler=lambda args: _validate(args, usage_error), parser=validate)


def _validate(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    try:
        method = load_method(args.method)
        print(f"validate: {method.name} at level {args.level!r}", file=sys.stderr)
        report = check_method(
            method,
            level=args.level,
            tolerance=args.tolerance,
            progress=lambda line: print(f"validate: {line}", file=sys.stderr, flush=True),
        )
    except ValueError as error:
        raise usage_error(str(error)) from None
    print(report.to_json() if args.json else report)
    return 0 if report.passed else 1
