"""Where a cold command's compile time goes: every numba compilation of every process, by kind.

    python benchmarks/compile_breakdown.py [--top 20] [--log compile.tsv] -- COMMAND...

e.g. ``python benchmarks/compile_breakdown.py -- python -m impactbench run --quick --output
/tmp/quick``. The command runs with empty numba, run and reference caches (fresh temporary
folders), and with a listener on numba's compile events (``numba.core.event``, the
``numba:compile`` kind) installed in every Python process it starts, its parallel workers
included (through a ``sitecustomize`` module on ``PYTHONPATH``). Each top-level compilation
(one not nested in another's) is logged with its process, function and CPU time (the process's,
so a loaded machine does not inflate it); the summary gives the command's wall time, the total
compile CPU time, and the compile CPU time per kind of compiled code (fixed-step loops,
adaptive loops, event-driven engines, the rest) and per function. A compilation loaded from
numba's disk cache is not a compilation and is not logged.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LISTENER = """
import os, time
from numba.core import event

class _CompileLog(event.Listener):
    def __init__(self):
        self.started = []

    def on_start(self, ev):
        self.started.append(time.process_time())

    def on_end(self, ev):
        start = self.started.pop()
        dispatcher = (ev.data or {}).get("dispatcher")
        function = getattr(dispatcher, "py_func", None)
        name = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', '?')}"
        with open(os.environ["IMPACTBENCH_COMPILE_LOG"], "a") as log:
            log.write(f"{os.getpid()}\\t{len(self.started)}\\t{name}\\t"
                      f"{time.process_time() - start:.3f}\\n")

event.register("numba:compile", _CompileLog())
"""

#: Kinds of compiled code, by a part of the compiled function's name.
KINDS = (
    ("fixed-step loops", "_time_loop"),
    ("adaptive loops", "_adaptive_loop"),
    ("event-driven engines", "event_loop"),
)


def kind(name: str) -> str:
    """The kind of compiled code a function's qualified name is (:data:`KINDS`), else "other"."""
    for label, part in KINDS:
        if part in name:
            return label
    return "other (kernels, helpers)"


def summarise(log: Path, top: int) -> str:
    """The table of the top-level compilations of ``log``: per kind, then the ``top`` functions."""
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    outer = [(name, float(seconds)) for _, depth, name, seconds in rows if depth == "0"]
    per_kind: dict[str, list[float]] = collections.defaultdict(list)
    per_function: dict[str, list[float]] = collections.defaultdict(list)
    for name, seconds in outer:
        per_kind[kind(name)].append(seconds)
        per_function[name].append(seconds)
    lines = [f"{'compiled code':44s} {'count':>6s} {'CPU [s]':>9s}"]
    for label, times in sorted(per_kind.items(), key=lambda item: -sum(item[1])):
        lines.append(f"{label:44s} {len(times):6d} {sum(times):9.1f}")
    lines.append(f"{'all':44s} {len(outer):6d} {sum(s for _, s in outer):9.1f}")
    lines.append("")
    for name, times in sorted(per_function.items(), key=lambda item: -sum(item[1]))[:top]:
        lines.append(f"{name[-44:]:44s} {len(times):6d} {sum(times):9.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20, help="functions listed (default 20)")
    parser.add_argument("--log", default=None, help="keep the compile log in this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("command: give the command to run after --")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "hook").mkdir()
        (root / "hook" / "sitecustomize.py").write_text(LISTENER)
        log = Path(args.log).resolve() if args.log else root / "compile.tsv"
        log.unlink(missing_ok=True)
        environment = dict(os.environ)
        path = [str(root / "hook"), environment.get("PYTHONPATH", "")]
        environment.update(
            PYTHONPATH=os.pathsep.join(p for p in path if p),
            IMPACTBENCH_COMPILE_LOG=str(log),
            NUMBA_CACHE_DIR=str(root / "numba"),
            IMPACTBENCH_CACHE_DIR=str(root / "runs"),
            IMPACTBENCH_REFERENCE_DIR=str(root / "references"),
        )
        start = time.perf_counter()
        done = subprocess.run(command, env=environment)
        wall = time.perf_counter() - start
        print(f"command: {' '.join(command)} (exit code {done.returncode}, {wall:.1f} s wall)")
        print(summarise(log, args.top))
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
