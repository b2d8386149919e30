"""The loop's cases on small repositories this test writes, in real Docker: the second test
configuration verifies in round 2; a touched test skipped on the first interpreter for its
version verifies on a second plan; a reused environment that collects but does not verify falls
back to a full build; a test target needing tclsh or dc gets its package from Debian's file index; the second instance of a
Go and of a Rust repository reuses the first's environment and verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import Instance, StepRecord
from tests.agents.ecosystems.conftest import git, write_files
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow]


class Repo:
    """A git repository the test writes, commit by commit; `instance(...)` makes an Instance on the
    current HEAD whose test_patch / patch are the diffs of `tests` / `fix` against it."""

    def __init__(self, root: Path, name: str):
        self.work = root / name
        self.work.mkdir(parents=True)
        self.name = name
        git(self.work, "init", "-q")
        self.n = 0

    @property
    def git_dir(self) -> Path:
        return self.work / ".git"

    def commit(self, files: dict[str, str], when: str) -> str:
        write_files(self.work, files)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", f"base {self.n}", when=when)
        return git(self.work, "rev-parse", "HEAD").strip()

    def instance(self, tests: dict[str, str], fix: dict[str, str], created_at: str, language: str | None,
                 **extra) -> Instance:
        self.n += 1
        base = git(self.work, "rev-parse", "HEAD").strip()
        write_files(self.work, {**tests, **fix})
        git(self.work, "add", "-A")
        test_patch = git(self.work, "diff", "--cached", "--no-color", "HEAD", "--", *tests)
        patch = git(self.work, "diff", "--cached", "--no-color", "HEAD", "--", *fix)
        git(self.work, "reset", "-q", "--hard")
        return Instance(instance_id=f"acme__{self.name}-{self.n}", repo=f"acme/{self.name}", base_commit=base,
                        patch=patch, test_patch=test_patch, created_at=created_at, language=language, **extra)


@pytest.fixture
def mint(tmp_path, docker_client):
    """mint(instance, git_dir, **kw) -> InstanceResult with the memory off; images removed after."""
    made: list[str] = []

    def run(inst: Instance, git_dir: Path, **kw):
        cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-loop-{SESSION}", image_repository=ENV_REPOSITORY,
                         memory={"enabled": False})
        res = mint_instance(inst, git_dir, cfg, **kw)
        if res.image:
            made.append(res.image)
        return res

    yield run
    for image in made:
        try:
            docker_client.images.remove(image, force=True)
        except Exception:  # noqa: BLE001 - removed already
            pass


def steps(res) -> list[StepRecord]:
    return [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]


CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def test_the_first_test_configuration_finds_nothing_and_the_second_verifies(tmp_path, mint, python_image):
    """The test patch changes a helper module in tests/ (pytest collects no test from it): the
    touched file selects nothing, its folder holds the tests that verify -- round 2."""
    repo = Repo(tmp_path, "helpers")
    repo.commit({"calc.py": CALC, "tests/helpers.py": "CASES = [(0, 0, 0)]\n",
                 "tests/test_calc.py": "from calc import add\nfrom tests.helpers import CASES\n\n\n"
                                       "def test_cases():\n    for a, b, want in CASES:\n        assert add(a, b) == want\n",
                 "tests/__init__.py": ""}, "2023-05-01T00:00:00")
    inst = repo.instance({"tests/helpers.py": "CASES = [(0, 0, 0), (2, 3, 5)]\n"}, {"calc.py": FIXED},
                         "2023-05-02T00:00:00Z", "python")
    res = mint(inst, repo.git_dir)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and [r.test for r in res.rounds] == ["touched", "folders"]
    assert res.rounds[0].attribution.startswith("test_config")
    assert res.FAIL_TO_PASS == ["tests/test_calc.py::test_cases"] and res.test_files == ["tests"]


def test_a_touched_test_skipped_for_its_python_version_verifies_on_a_newer_interpreter(tmp_path, mint, python_image):
    repo = Repo(tmp_path, "skipver")
    repo.commit({"calc.py": CALC, "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n"
                                                        "    assert add(0, 0) == 0\n"}, "2021-05-01T00:00:00")
    new_test = ("import sys\n\nimport pytest\n\nfrom calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n\n\n"
                "@pytest.mark.skipif(sys.version_info < (3, 11), reason='requires python3.11')\n"
                "def test_add():\n    assert add(2, 3) == 5\n")
    inst = repo.instance({"tests/test_calc.py": new_test}, {"calc.py": FIXED}, "2021-05-02T00:00:00Z", "python")
    res = mint(inst, repo.git_dir)
    assert res.outcome == "verified", res.reason
    assert [r.toolchain for r in res.rounds] == ["3.9", "3.11"] and res.round == 2
    assert res.rounds[0].attribution.startswith("toolchain") and "3.11" in res.rounds[0].attribution
    assert res.FAIL_TO_PASS == ["tests/test_calc.py::test_add"] and res.interpreter == "3.11"


def test_a_reused_environment_that_collects_but_does_not_verify_falls_back_to_a_full_build(tmp_path, mint,
                                                                                          python_image):
    """Instance 1 (2020) builds on Python 3.9. Instance 2 (2024) reuses it -- its tests collect --
    but its fix uses int.bit_count (3.10): no FAIL_TO_PASS there, so a full build on its own
    interpreter (3.11) verifies."""
    repo = Repo(tmp_path, "bits")
    repo.commit({"bits.py": "def ones(n):\n    return bin(n).count('0')\n",
                 "tests/test_bits.py": "from bits import ones\n\n\ndef test_zero():\n    assert ones(0) in (0, 1)\n"},
                "2020-03-01T00:00:00")
    first = repo.instance({"tests/test_bits.py": "from bits import ones\n\n\ndef test_zero():\n"
                                                 "    assert ones(0) in (0, 1)\n\n\ndef test_seven():\n"
                                                 "    assert ones(7) == 3\n"},
                          {"bits.py": "def ones(n):\n    return bin(n).count('1')\n"}, "2020-03-02T00:00:00Z", "python")
    r1 = mint(first, repo.git_dir)
    assert r1.outcome == "verified" and r1.interpreter == "3.9", r1.reason
    repo.commit({"bits.py": "def ones(n):\n    return bin(n).count('0')\n\n\ndef popcount(n):\n    return n\n"},
                "2024-03-01T00:00:00")
    second = repo.instance({"tests/test_pop.py": "from bits import popcount\n\n\ndef test_five():\n"
                                                 "    assert popcount(5) == 2\n"},
                           {"bits.py": "def ones(n):\n    return bin(n).count('0')\n\n\ndef popcount(n):\n"
                                       "    return n.bit_count()\n"}, "2024-03-02T00:00:00Z", "python")
    res = mint(second, repo.git_dir, candidates=[r1.env])
    assert res.outcome == "verified", res.reason
    assert [r.source for r in res.rounds] == ["reused", "built"] and res.round == 2
    assert res.rounds[0].outcome == "no_fail_to_pass" and res.rounds[0].feedback == "rebuild"
    assert res.interpreter == "3.11" and res.reused_from is None
    assert any(s.agent == "envpatch" and s.rule == "reused" for s in steps(res))


MAKEFILE = "all: calc\n\ncalc: calc.c\n\tcc -o calc calc.c\n\ncheck: all\n\ttclsh tests/run.tcl\n"
RUN_TCL = ('proc check {name a b want} {\n  set got [exec ./calc $a $b]\n'
           '  if {$got == $want} {puts "PASS: $name"} else {puts "FAIL: $name"}\n}\ncheck zero 0 0 0\n')
CALC_C = ('#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n'
          '  printf("%d\\n", atoi(v[1]) - atoi(v[2]));\n  return 0;\n}\n')


DC_MAKEFILE = "all: calc\n\ncalc: calc.c\n\tcc -o calc calc.c\n\ncheck: all\n\tsh tests/run.sh\n"
RUN_SH = ('check() {\n  want=$(echo "$2 $3 + p" | dc)\n  got=$(./calc "$2" "$3")\n'
          '  if [ "$got" = "$want" ]; then echo "PASS: $1"; else echo "FAIL: $1"; fi\n}\ncheck zero 0 0\n')


@pytest.mark.parametrize("tool,package,makefile,script,text,added,bug", [
    ("tclsh", "tcl", MAKEFILE, "tests/run.tcl", RUN_TCL, "check add 2 3 5\n", CALC_C),
    # dc: a tool no swemint table ever named
    ("dc", "dc", DC_MAKEFILE, "tests/run.sh", RUN_SH, "check add 2 3\n", CALC_C.replace(" - ", " * ")),
])
def test_a_tool_the_test_target_needs_is_found_by_debians_index_and_installed(
        tmp_path, mint, docker_client, tool, package, makefile, script, text, added, bug):
    """`make check` runs a tool the toolchain image lacks: the run's output names it ("You need
    tcl", "dc: not found"), Debian's own file index (apt-file, in an index image made on the
    build network) answers its package, the query and its answer are in the trajectory,
    Execution amends the image and round 2 verifies."""
    repo = Repo(tmp_path, f"{tool}calc")
    repo.commit({"Makefile": makefile, "calc.c": bug, script: text}, "2023-05-01T00:00:00")
    inst = repo.instance({script: text + added}, {"calc.c": CALC_C.replace(" - ", " + ")}, "2023-05-02T00:00:00Z", "c")
    res = mint(inst, repo.git_dir)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and res.rounds[0].attribution.startswith(f"environment: the image lacks command {tool}")
    q = [s for s in steps(res) if s.rule == "debian-index"]
    assert len(q) == 1 and q[0].command == f"apt-file search --regexp '^/(usr/)?s?bin/{tool}$'"
    assert f"{package}: /usr/bin/{tool}" in q[0].output_excerpt
    assert q[0].note.startswith(f"index: command {tool} -> {package}")
    assert res.rounds[1].source == "amended" and f"--no-install-recommends {package} " in res.setup_script
    assert res.FAIL_TO_PASS == ["add"] and res.PASS_TO_PASS == ["zero"]


GO_MOD = "module example.com/calc\n\ngo 1.19\n"


def test_the_second_instance_of_a_go_repository_reuses_the_first_environment(tmp_path, mint, docker_client):
    repo = Repo(tmp_path, "gocalc")
    repo.commit({"go.mod": GO_MOD, "calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
                 "calc_test.go": 'package calc\n\nimport "testing"\n\nfunc TestZero(t *testing.T) {\n'
                                 '\tif Add(0, 0) != 0 {\n\t\tt.Fatal()\n\t}\n}\n'}, "2023-05-01T00:00:00")
    first = repo.instance({"add_test.go": 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n'
                                          '\tif Add(2, 3) != 5 {\n\t\tt.Fatal()\n\t}\n}\n'},
                          {"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"},
                          "2023-05-02T00:00:00Z", "go")
    r1 = mint(first, repo.git_dir)
    assert r1.outcome == "verified", r1.reason
    repo.commit({"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n\n"
                            "func Mul(a, b int) int { return a + b }\n"}, "2023-06-01T00:00:00")
    second = repo.instance({"mul_test.go": 'package calc\n\nimport "testing"\n\nfunc TestMul(t *testing.T) {\n'
                                           '\tif Mul(2, 3) != 6 {\n\t\tt.Fatal()\n\t}\n}\n'},
                           {"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n\n"
                                       "func Mul(a, b int) int { return a * b }\n"}, "2023-06-02T00:00:00Z", "go")
    res = mint(second, repo.git_dir, candidates=[r1.env])
    assert res.outcome == "verified", res.reason
    assert res.reused_from == first.instance_id and res.reuse_kind == "same_repo" and res.round == 1
    assert res.FAIL_TO_PASS == ["example.com/calc::TestMul"] and res.env.language == "go"


CARGO = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'


def test_the_second_instance_of_a_rust_repository_reuses_the_first_environment(tmp_path, mint, docker_client):
    repo = Repo(tmp_path, "rscalc")
    repo.commit({"Cargo.toml": CARGO, "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a - b }\n",
                 "tests/zero.rs": "#[test]\nfn zero() { assert_eq!(calc::add(0, 0), 0); }\n"}, "2023-05-01T00:00:00")
    first = repo.instance({"tests/add.rs": "#[test]\nfn add() { assert_eq!(calc::add(2, 3), 5); }\n"},
                          {"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n"}, "2023-05-02T00:00:00Z",
                          "rust")
    r1 = mint(first, repo.git_dir)
    assert r1.outcome == "verified", r1.reason
    repo.commit({"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a - b }\npub fn mul(a: i32, b: i32) -> i32 "
                               "{ a + b }\n"}, "2023-06-01T00:00:00")
    second = repo.instance({"tests/mul.rs": "#[test]\nfn mul() { assert_eq!(calc::mul(2, 3), 6); }\n"},
                           {"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a - b }\npub fn mul(a: i32, b: i32) "
                                          "-> i32 { a * b }\n"}, "2023-06-02T00:00:00Z", "rust")
    res = mint(second, repo.git_dir, candidates=[r1.env])
    assert res.outcome == "verified", res.reason
    assert res.reused_from == first.instance_id and res.round == 1
    assert any("mul" in t for t in res.FAIL_TO_PASS)
