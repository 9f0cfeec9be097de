"""``impactbench compile [METHOD ...]``: compile the methods' loops ahead, for the built-in
problems, with a progress bar.

numba compiles a method's loop for each problem (its kernels) and its sizes
(:func:`impactbench.core.compilation.compiled_code`), and keeps it in its disk cache: once per
machine. This command compiles each METHOD (default: every built-in method) for each built-in
problem at its default parameters (or the problems given with ``--problem``), by a short run of
a few steps (:func:`impactbench.core.compilation.compile_by_short_run`); a later run of the same
method on the same problem and sizes loads the code instead of compiling it. A problem used at
other sizes (another number of beads or balls) is compiled when first run at them, unless its
loops read the sizes at run time. Pairs that run no compiled code (a plain-Python problem, a
scipy path) and pairs a method refuses (a frictional problem for a method without a friction
law) are skipped and counted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm.auto import tqdm

from ..core import compilation, compile_clock
from ..core.method import Method
from ..core.problem import Problem
from . import user_errors
from .specs import load_method, load_problem

#: Horizon after t0 and step of the short compiling runs (a few steps of the loop).
SPAN, STEP = 1.0, 1e-3


def _pairs(args: argparse.Namespace, usage_error: type[Exception]) -> list[tuple[Method, Problem]]:
    from ..methods import METHODS
    from ..problems import PROBLEMS

    try:
        methods = [load_method(spec) for spec in args.methods or METHODS]
        problems = [load_problem(spec) for spec in args.problems or PROBLEMS]
    except (TypeError, ValueError) as error:
        raise usage_error(str(error)) from None
    pairs = []
    for method in methods:
        for problem in problems:
            if problem.has_friction and not method.friction_law:
                continue
            if problem.rheonomic and not method.moving_obstacles:
                continue
            if compilation.compiled_code(method, problem) is not None:
                pairs.append((method, problem))
    return pairs


def run_compile(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """The ``compile`` subcommand: compile every (method, problem) pair; exit code 1 when one
    failed (its message on stderr; the traceback with ``--debug``)."""
    pairs = _pairs(args, usage_error)
    failed = 0
    print(
        f"compiling {len(pairs)} (method, problem) pairs that run compiled code; each is "
        "compiled once per machine, then loaded from numba's disk cache"
    )
    with tqdm(total=len(pairs), desc="compile", unit="pair", disable=None) as bar:
        for method, problem in pairs:
            bar.set_postfix_str(f"{method.name} for {problem.name}", refresh=True)
            h = STEP if method.requires_step else None
            try:
                with compile_clock.clock(f"{method.name} for {problem.name}") as compiling:
                    compilation.compile_by_short_run(problem, method, problem.t0 + SPAN, h)
            except Exception as error:  # noqa: BLE001 - a failed pair is reported, the others go on
                failed += 1
                message = user_errors.describe(error)
                bar.write(f"{method.name} for {problem.name}: failed: {message}", file=sys.stderr)
                if args.debug:
                    user_errors.print_traceback(error)
            else:
                bar.write(f"{method.name} for {problem.name}: {compiling.seconds:.1f} s")
            bar.update()
    print(f"compiled or loaded {len(pairs) - failed} of {len(pairs)} pairs")
    if failed:
        print(f"{failed} pairs failed", file=sys.stderr)
    return 1 if failed else 0


def add_parser(commands: Any, usage_error: type[Exception]) -> None:
    """Add the ``compile`` subcommand to the ``impactbench`` parser's subcommands."""
    parser = commands.add_parser(
        "compile",
        help="compile methods ahead for the built-in problems (numba's disk cache)",
        description="Compile each METHOD (default: every built-in method) for each built-in "
        "problem at its default parameters (or each --problem), by a short run, into numba's "
        "disk cache: a later run of the method on that problem and its sizes loads the code "
        "instead of compiling it (compilation happens once per machine). Other sizes of a "
        "problem (another number of beads) compile when first run. Pairs without compiled "
        "code (plain-Python problems, scipy paths) are skipped.",
    )
    parser.add_argument(
        "methods",
        nargs="*",
        metavar="METHOD",
        help="'Name[p=v,...]' or 'module:Class[p=v,...]' (default: every built-in method)",
    )
    parser.add_argument(
        "--problem",
        dest="problems",
        action="append",
        default=[],
        metavar="PROBLEM",
        help="a problem to compile for, repeatable (default: every built-in problem)",
    )
    parser.add_argument(
        "--debug", action="store_true", help="print the full traceback of a pair that failed"
    )
    parser.set_defaults(handler=lambda args: run_compile(args, usage_error), parser=parser)
