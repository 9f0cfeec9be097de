"""A loop compiles each contact helper once per array layout, never for a transient literal.

numba types a call with the argument types known at that point of its type inference: an
active-set counter initialised with ``0`` is first ``Literal[int](0)``, then int64, and each
type compiled a whole specialisation of the impulse law and of the LCP solver under it (MoreauJean
on a 3-ball cradle: 3.4 s of its 12.4 s of compilation), never called by the finished loop. The
helpers declare their count k of active constraints (``impactbench.core._jit.count_arguments``):
a literal 0 passed for it is typed int64; this test compiles the multi-contact loops and
the event engine on a cold numba cache, in a fresh process, and reads which specialisations exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: The helpers taking the number k of active constraints, and the position of k.
HELPERS = {
    "impulse": 3,
    "solve_lcp": 2,
    "solve_lcp_warm": 3,
    "_principal_pivoting": 2,
    "delassus": 2,
}

SCRIPT = f"""
import json
from impactbench import simulate
from impactbench.core import contact
from impactbench.methods import D1MinusLinear, EventDriven, MoreauJean, NonsmoothGeneralizedAlpha
from impactbench.problems import NewtonsCradle

for method in (MoreauJean(), NonsmoothGeneralizedAlpha(), D1MinusLinear(), EventDriven()):
    problem = NewtonsCradle(n_balls=3)
    h = None if isinstance(method, EventDriven) else 1e-4
    simulate(problem, method, problem.t0 + 1e-3, h=h)
print(json.dumps({{
    name: [[str(a) for a in s] for s in getattr(contact, name).signatures]
    for name in {tuple(HELPERS)!r}
}}))
"""


@pytest.mark.slow
def test_multi_contact_loops_compile_no_helper_for_a_literal_counter(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("NUMBA_DISABLE_JIT", None)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    signatures = json.loads(result.stdout.strip().splitlines()[-1])
    for name, position in HELPERS.items():
        compiled = signatures[name]
        assert compiled, f"{name} was not compiled: the test no longer exercises it"
        # a constant count (all m constraints of a projection) may stay a literal, which the
        # helper's machine code uses; k = 0 is only ever a counter's start value
        for signature in compiled:
            assert signature[position] != "Literal[int](0)", f"{name} compiled for {signature}"


def _template(x):
    return x + 1.0


def test_a_loop_name_changes_with_the_compilation_policy(monkeypatch):
    # numba's disk cache keys a loop on its name: a change in how _jit compiles the helpers
    # must give every loop a new name, or a stale machine code is loaded
    from impactbench.core import _jit

    before = _jit.specialize(_template, {}, True).py_func.__qualname__
    real = _jit.inspect.getsource

    def edited(value):
        text = real(value)
        return text + "\n# edited\n" if value is _jit else text

    monkeypatch.setattr(_jit.inspect, "getsource", edited)
    after = _jit.specialize(_template, {}, True).py_func.__qualname__
    assert before.startswith("_template_") and after.startswith("_template_")
    assert before != after
