"""docs/adding-a-problem.md runs as written, and the public names it teaches do what it says.

The page's first Python block is the module it tells the reader to save, ``pendulum_wall.py``:
it is saved as such (in a folder that outlives the test, written only when the block changed, so
that numba's disk cache of its kernels stays valid from one run to the next), and the other
blocks run after it, in order, in one namespace, beside it.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import impactbench as ib
from impactbench.core import _checks

PAGE = Path(__file__).resolve().parent.parent / "docs" / "adding-a-problem.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
#: Where the page's module is saved (kept between runs, like any user's module).
MODULE_FOLDER = Path(tempfile.gettempdir()) / "impactbench-tests-adding-a-problem"


def test_the_page_runs(tmp_path, monkeypatch, capsys):
    blocks = BLOCK.findall(PAGE.read_text())
    assert len(blocks) == 5 and "class PendulumWall(ib.CompiledProblem)" in blocks[0]
    assert re.search(r"p\[\d", blocks[0]) is None  # its kernels read parameters by name
    MODULE_FOLDER.mkdir(exist_ok=True)
    module = MODULE_FOLDER / "pendulum_wall.py"
    if not module.exists() or module.read_text() != blocks[0]:
        module.write_text(blocks[0])
    monkeypatch.syspath_prepend(str(MODULE_FOLDER))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IMPACTBENCH_CACHE_DIR", str(tmp_path / "runs"))
    namespace: dict = {"__name__": "docs_adding_a_problem"}
    try:
        for number, block in enumerate(blocks[1:], start=2):
            code = compile(block, f"adding-a-problem.md block {number}", "exec")
            exec(code, namespace)  # noqa: S102 - the documentation's own examples
    finally:
        sys.modules.pop("pendulum_wall", None)
    printed = capsys.readouterr().out
    assert "refused: q0 must be admissible" in printed
    assert printed.count("max position error") == 2


def test_the_exact_solution_of_the_page_is_the_pendulum_s_motion():
    """Between impacts the closed form solves m l^2 q'' = -m g l sin q (finite differences of
    its velocity), and at each impact time q = 0 with v+ = -e v-."""
    blocks = BLOCK.findall(PAGE.read_text())
    namespace: dict = {"__name__": "pendulum_wall_plain"}
    # plain Python: the closed form, not the kernels, is under test here
    exec(compile(blocks[0].replace("@ib.kernel\n", ""), "pendulum_wall", "exec"), namespace)
    pendulum = namespace["PendulumWall"](angle=2.0, restitution=0.6, length=0.7, t0=0.5)
    impacts = pendulum.impact_times(4.0)
    assert len(impacts) >= 3 and np.all(np.diff(impacts) > np.pi * np.sqrt(0.7 / 9.81))
    t = np.linspace(0.5, 4.0, 20001)
    t = t[np.all(np.abs(t[:, None] - impacts) > 1e-3, axis=1)]
    step = 1e-5
    q, v = pendulum.exact_solution(t)
    _, v_plus = pendulum.exact_solution(t + step)
    _, v_minus = pendulum.exact_solution(np.maximum(t - step, 0.5))
    inner = t > 0.5 + step
    acceleration = (v_plus - v_minus)[inner, 0] / (2 * step)
    assert np.allclose(acceleration, -9.81 / 0.7 * np.sin(q[inner, 0]), atol=1e-5)
    assert np.allclose(pendulum.exact_solution(np.array([0.5]))[0], 2.0)
    q_at, v_after = pendulum.exact_solution(impacts)
    _, v_before = pendulum.exact_solution(impacts - 1e-9)
    assert np.allclose(q_at, 0.0, atol=1e-12)
    assert np.allclose(v_after[:, 0], -0.6 * v_before[:, 0], rtol=1e-6)


def test_parameter_indices_number_the_names_in_order():
    assert ib.parameter_indices(("gravity", "mass")) == (0, 1)
    assert ib.parameter_indices(["a"]) == (0,)


@pytest.mark.parametrize(
    "names, message",
    [
        ("mass", "names must be a tuple"),
        ((), "at least one"),
        (("mass", "mass"), "distinct"),
        (("mass", "2nd"), "identifiers"),
        (("mass", 1), "identifiers"),
    ],
)
def test_parameter_names_are_checked(names, message):
    with pytest.raises(ValueError, match=message):
        ib.parameter_indices(names)
    with pytest.raises(ValueError, match=message):
        ib.parameter_vector(names)


def test_parameter_vector_places_each_value_at_its_index():
    p = ib.parameter_vector(("b", "a", "rows"), a=2, rows=np.array([3.0, 4.0]), b=1.5)
    assert p.dtype == np.float64 and p.tolist() == [1.5, 2.0, 3.0, 4.0]
    assert ib.parameter_vector(("a", "b"), a=np.float32(1), b=2.5).tolist() == [1.0, 2.5]


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(a=1.0), r"missing \['b'\]"),
        (dict(a=1.0, b=2.0, c=3.0), r"unknown \['c'\]"),
        (dict(a=True, b=2.0), "a must be a real number"),
        (dict(a=[1.0, 2.0], b=2.0), "a must be a real number"),  # a block only at the end
        (dict(a=1.0, b=[[1.0]]), "b must be a real number or a 1-D array"),
        (dict(a=1.0, b="x"), "b must be a real number"),
        (dict(a=np.nan, b=2.0), "a must be finite"),
        (dict(a=1.0, b=[1.0, np.inf]), "b must be finite"),
    ],
)
def test_parameter_vector_refuses_bad_values_by_name(values, message):
    with pytest.raises(ValueError, match=message):
        ib.parameter_vector(("a", "b"), **values)


def test_the_public_names_are_those_the_problems_use():
    assert ib.checks.positive_scalar is _checks.positive_scalar
    assert sorted(ib.checks.__all__) == sorted(
        name for name in vars(ib.checks) if not name.startswith("_") and name != "annotations"
    )
    with pytest.raises(ValueError, match="mass must be > 0"):
        ib.checks.positive_scalar(0.0, "mass")
