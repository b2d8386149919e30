"""Regenerate the golden outputs in this folder from real pytest runs (needs Docker + PyPI).

    .venv/bin/python tests/data/testrun/regenerate.py

Writes, for pytest 8.4.2 on Python 3.11 (`pytest8_*`) and pytest 4.6.11 on Python 3.9
(`pytest46_*`): the plugin's records (received on the signed report channel, written as JSON
lines), the JUnit XML and the console log of one run of the
repository below with `per_test_timeout=2`; plus pytest 8 console logs with `--color=yes`,
with `-s`, and of a run interrupted by a collection error. The repository's files are the
constants of tests/envpool/test_pytest_runner_docker.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "envpool"))

import test_pytest_runner_docker as T  # noqa: E402

from envpool.docker_sandbox import DockerSandboxFactory  # noqa: E402
from envpool.sandbox import SandboxSpec  # noqa: E402
from envpool.testrun import channel  # noqa: E402
from envpool.testrun.pytest_runner import (PytestPaths, install_plugin, pytest_command,  # noqa: E402
                                           pytest_script)

EXTRA = '''

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_teardown_error(broken_teardown):
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


class TestKlass:
    @pytest.mark.parametrize("s", ["x y", "p - q", "a] - b"])
    def test_method(self, s):
        assert s != "p - q"


def test_hangs():
    import time
    time.sleep(600)
'''
HANGS = "def test_hangs():\n    import time\n    time.sleep(600)\n"
FILES = {"calc/__init__.py": T.CALC, "tests/test_ids.py": T.TEST_IDS,
         "tests/test_cases.py": T.OLD_CASES.replace(HANGS, "") + EXTRA,
         "tests/test_forge.py": T.FORGER, "tests/test_new.py": T.TEST_NEW}
TEST_FILES = ["tests/test_cases.py", "tests/test_forge.py", "tests/test_ids.py", "tests/test_new.py"]
PY = "/opt/venv/bin/python"


def run(sb, name: str, extra=(), files=TEST_FILES, keep_reports=False, cont=True) -> None:
    paths = PytestPaths.new("golden")
    cmd = pytest_command(files, python=PY, paths=paths, extra_args=list(extra),
                         continue_on_collection_errors=cont)
    key = channel.new_key()
    res = sb.exec(pytest_script(cmd + " > /tmp/console.log", paths, 2, "/testbed"), timeout=120,
                  stdin=channel.key_line(key), channel=True)
    (HERE / f"{name}_rA.log").write_bytes(sb.get_file("/tmp/console.log"))
    if keep_reports:
        chan = channel.read_channel(res.channel, key)
        assert chan.sealed and not chan.tampered, chan
        (HERE / f"{name}_report.jsonl").write_text("".join(__import__("json").dumps(r, sort_keys=True) + "\n"
                                                           for r in chan.records))
        (HERE / f"{name}_junit.xml").write_bytes(sb.get_file(paths.junit))


def main() -> None:
    f = DockerSandboxFactory(run_id="golden-regen")
    try:
        for name, version, req in [("pytest8", "3.11", "pytest==8.4.2"), ("pytest46", "3.9", "pytest==4.6.11")]:
            base = T._local_image(f.client, f"swemint/python:{version}-")
            with f.sandbox(SandboxSpec(image=base, run_id="golden-regen", network="bridge")) as sb:
                r = sb.exec(f"python3 -m venv /opt/venv && /opt/venv/bin/pip install -q '{req}'", timeout=300)
                assert r.ok, r.output
                T.make_repo(sb, "/testbed", FILES)
                install_plugin(sb)
                run(sb, name, keep_reports=True)
                if name == "pytest8":
                    run(sb, "pytest8_color", ["--color=yes"])
                    run(sb, "pytest8_capture_no", ["-s"])
                    run(sb, "pytest8_collection_error", files=["tests/test_ids.py", "tests/test_new.py"],
                        cont=False)
    finally:
        f.sweep("golden-regen")


if __name__ == "__main__":
    main()
