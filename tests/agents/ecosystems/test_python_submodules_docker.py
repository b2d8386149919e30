"""A Python project whose setup.py imports a helper package from a git submodule the mirror
lacks (an empty gitlink named after a small PyPI distribution, `six`), minted end to end in
Docker: the builder fills the submodule from six's sdist as of the commit's date before the
project installs, the instance verifies, and the step is in the trajectory, the setup script
and the Dockerfile; the recorded command also fills the folder again in a plain container."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.dockerfile import run_line
from agents.ecosystems import python
from agents.models import StepRecord
from envpool.docker_sandbox import CA_ENV_VARS, CA_PATH_IN_CONTAINER, host_ca_bundle
from envpool.netguard import BuildNetworkConfig

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SETUP = '''import os
import sys

SIX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "six")
sys.path.insert(0, SIX_DIR)
import six  # the helper package the `six` submodule holds: without it the install fails

assert os.path.abspath(six.__file__).startswith(SIX_DIR), six.__file__
from setuptools import setup

setup(name="calc", version="1.0", packages=["calc"])
'''
FILES = {".gitmodules": '[submodule "six"]\n\tpath = six\n\turl = https://github.com/benjaminp/six.git\n',
         "setup.py": SETUP, "calc/__init__.py": "def add(a, b):\n    return a - b\n",
         "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"}
TESTS = {"tests/test_calc.py": FILES["tests/test_calc.py"] + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
FIX = {"calc/__init__.py": "def add(a, b):\n    return a + b\n"}


def test_an_empty_submodule_is_filled_from_its_pypi_sdist_before_the_install(mint_with, docker_client):
    res = mint_with(python.ECOSYSTEM, FILES, "submod", language="python", created_at="2022-03-01 10:00:00",
                    tests=TESTS, fix=FIX, gitlinks={"six": "d23a53f46dd1c3703e5eee63dca3f53bd18a4e8b"})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]
    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    fill = next(s for s in steps if s.rule == "submodule:pypi-sdist")
    assert fill.exit_code == 0 and "six-1.16.0.tar.gz" in fill.note and "/testbed/six" in fill.command
    install = next(s for s in steps if s.rule.startswith("install:project") and s.exit_code == 0)
    assert steps.index(fill) < steps.index(install)
    assert fill.command in res.setup_script and run_line(fill.command) in res.dockerfile
    # the recorded command needs nothing of swemint: it fills an emptied folder in a plain container
    ca = host_ca_bundle()
    out = docker_client.containers.run(
        res.image, ["bash", "-c", "rm -rf /testbed/six && mkdir /testbed/six && " + fill.command +
                    " && ls /testbed/six"], network=BuildNetworkConfig().name, remove=True,
        environment={k: CA_PATH_IN_CONTAINER for k in CA_ENV_VARS} if ca else {},
        volumes={str(ca): {"bind": CA_PATH_IN_CONTAINER, "mode": "ro"}} if ca else {}).decode()
    assert "six.py" in out.split() and "setup.py" in out.split()
