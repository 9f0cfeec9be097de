"""README's example runs as printed, and says what it claims."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def test_readme_example_runs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"## Example\n\n```python\n(.*?)```", text, re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    wall, mj, ed = namespace["wall"], namespace["mj"], namespace["ed"]
    # through the accumulation point both families stay close to the closed form
    q_exact, _ = wall.exact_solution(mj.t)
    assert np.abs(mj.q - q_exact).max() < 1e-2
    assert ed.status.value in {"ok", "zeno-handled"}
    assert len(namespace["energy"]) == len(mj.t)
