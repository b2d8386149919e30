"""S16: a Python project whose requires-python excludes every interpreter up to 3.13
(``>=3.14``, as a 2026 project may say) minted end to end in Docker: before S16 the plan took
3.13 and every install failed ("the current Python version (3.13.5) does not satisfy
Python>=3.14"); now it gets Debian unstable's Python 3.14 and verifies."""

from __future__ import annotations

import pytest

from agents.ecosystems import python

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FILES = {"pyproject.toml": '[project]\nname = "calc"\nversion = "1.0"\nrequires-python = ">=3.14"\n\n'
                           '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
         "calc/__init__.py": "def add(a, b):\n    return a - b\n",
         "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"}
TESTS = {"tests/test_calc.py": FILES["tests/test_calc.py"] + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
FIX = {"calc/__init__.py": "def add(a, b):\n    return a + b\n"}


def test_requires_python_314_gets_python_314(mint_with):
    res = mint_with(python.ECOSYSTEM, FILES, "py314", language="python", created_at="2026-05-20 10:00:00",
                    tests=TESTS, fix=FIX, when="2026-05-20T10:00:00Z")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]
    assert res.PASS_TO_PASS == ["tests/test_calc.py::test_zero"]
    assert res.interpreter.startswith("3.14") or "3.14" in res.interpreter, res.interpreter
