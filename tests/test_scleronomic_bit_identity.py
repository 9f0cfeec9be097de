"""Problems with fixed obstacles run bit-identically across the moving-obstacle change (issue 53).

Moving obstacles (time-dependent gaps g(t, q)) enter the contract behind a compile-time flag;
problems whose gaps do not depend on time must keep their arithmetic exactly. The digests in
tests/data/scleronomic_digests.json (tests/scleronomic_digests.py: SHA-256 of the output
times, positions, velocities, status, impact log and step and force-evaluation counters of short
runs of BouncingBall, DoublePendulum, SlidingBlock (friction) and a column of three beads, with
every method that applies) were computed from the code before the change (commit f36fc37) and
are compared here exactly.

Machine dependence: the digests hold on the machine they were computed on only. numba compiles
for the host CPU, and LLVM contracts a * b + c into a fused multiply-add where the CPU has one
(one rounding instead of two), chooses vector widths by its features, and calls the libm of the
platform: another CPU model, another feature set (FMA, AVX2, AVX-512) or other numpy, numba or
llvmlite versions can change the last bits of a run, and then every digest. The stored
``machine`` tag records these (:func:`scleronomic_digests.machine_tag`; generated on an AMD EPYC
x86_64 with FMA and AVX2, without AVX-512). On a machine with another tag the comparison is
skipped, naming both tags: regenerate the baseline there at the commit above
(``python tests/scleronomic_digests.py --write`` in a worktree of it) before comparing.
"""

from __future__ import annotations

import json

import pytest
import scleronomic_digests as digests

STORED = json.loads(digests.DATA.read_text())


def test_the_baseline_covers_every_case():
    assert list(STORED["digests"]) == digests.cases()


@pytest.mark.parametrize("case", list(STORED["digests"]))
def test_a_scleronomic_run_is_bit_identical(case):
    here = digests.machine_tag()
    if here != STORED["machine"]:
        pytest.skip(f"baseline computed on {STORED['machine']}, this machine is {here}")
    assert digests.digest(case) == STORED["digests"][case]
