"""The documentation builds with Sphinx, warnings as errors.

The API reference is generated from the numpydoc docstrings of the public names, the pages from
docs/*.md; a docstring that does not parse (a broken section, a bad reference, stray markup) or
a page that links nowhere fails the build, and so this test. numpydoc reports a section it does
not know as a Python warning, which Sphinx's -W does not see: those fail the test too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sphinx_builds_the_docs_without_warnings(tmp_path: Path) -> None:
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-b",
            "html",
            "-q",
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = build.stdout + build.stderr
    assert build.returncode == 0, output
    assert "UserWarning" not in output, output
    assert (tmp_path / "html" / "api.html").exists()
    api = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    for name in ("simulate", "Problem", "MoreauJean", "EventDriven", "BouncingBall"):
        assert name in api
