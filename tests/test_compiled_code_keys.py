"""Compiled code is kept under a key that says what it is: every scheme, plain or under
:class:`impactbench.Adaptive`, runs its own compiled loop whatever ran before it in the process.

A process runs every (scheme, wrapper) pair on the bouncing ball, in several orders; each
trajectory must equal bit for bit the one a fresh process computes for that pair alone. A loop
kept under a key that leaves out the scheme (the adaptive loops were once kept under the
scheme's options alone) makes the second adaptive scheme of a process run the first one's loop.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from impactbench import Adaptive
from impactbench.core.adaptive import _scheme_classes
from impactbench.core.compilation import compiled_code
from impactbench.problems import BouncingBall

#: Every built-in scheme of the scheme API, by class name (not the subclasses other test
#: modules define in the same process, which the fresh processes do not know).
SCHEMES = sorted(
    name
    for name, cls in _scheme_classes().items()
    if cls.__module__.startswith("impactbench.methods")
)
#: The schemes Adaptive takes: the one-step ones (a two-step scheme is refused by name).
ONE_STEP = [name for name in SCHEMES if not _scheme_classes()[name].lead]
PAIRS = [f"plain:{scheme}" for scheme in SCHEMES] + [f"adaptive:{scheme}" for scheme in ONE_STEP]

RUNS = Path(__file__).with_name("compiled_code_runs.py")


def run_in_fresh_process(pairs: list[str]) -> dict[str, str]:
    """Digest of each pair's trajectory, the pairs run in this order in one new process."""
    done = subprocess.run(
        [sys.executable, str(RUNS), *pairs], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_key_of_an_adaptive_run_names_its_scheme():
    """Two schemes under the controller have different keys; the same scheme, equal ones."""
    ball = BouncingBall()
    classes = _scheme_classes()
    classes = {name: cls for name, cls in classes.items() if not cls.lead}
    keys = {name: compiled_code(Adaptive(cls()), ball) for name, cls in classes.items()}
    assert len(set(keys.values())) == len(classes)
    for name, cls in classes.items():
        assert compiled_code(Adaptive(cls()), ball) == keys[name]


@pytest.mark.slow
def test_every_scheme_under_every_wrapper_runs_its_own_loop_in_any_order():
    alone = {pair: run_in_fresh_process([pair])[pair] for pair in PAIRS}
    plain, adaptive = PAIRS[: len(SCHEMES)], PAIRS[len(SCHEMES) :]
    interleaved = [pair for duo in zip(adaptive, plain, strict=False) for pair in duo]
    interleaved += plain[len(adaptive) :]
    for order in (PAIRS, PAIRS[::-1], interleaved):
        together = run_in_fresh_process(order)
        differing = [pair for pair in PAIRS if together[pair] != alone[pair]]
        assert not differing, f"in the order {order}, these differ from a fresh process"
