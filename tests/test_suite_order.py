"""The order in which pytest-xdist hands the test files to its workers (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conftest import FIRST_FILES, files_in_order


def test_the_first_files_come_first_then_the_largest_files():
    items = [
        SimpleNamespace(nodeid=nodeid)
        for nodeid in (
            "tests/test_a.py::one",
            "tests/test_b.py::one",
            "tests/test_c.py::one",
            "tests/test_c.py::two",
            "tests/test_d.py::one",
            "tests/test_b.py::two",
            "tests/test_e.py::one",
        )
    ]
    ordered = [item.nodeid for item in files_in_order(items, ("tests/test_d.py",))]
    assert ordered == [
        "tests/test_d.py::one",  # first, though it has one test
        "tests/test_b.py::one",  # two tests each, in the order of collection
        "tests/test_b.py::two",
        "tests/test_c.py::one",
        "tests/test_c.py::two",
        "tests/test_a.py::one",  # one test each, in the order of collection
        "tests/test_e.py::one",
    ]


def test_the_first_files_exist():
    root = Path(__file__).parent.parent
    assert all((root / name).is_file() for name in FIRST_FILES)
