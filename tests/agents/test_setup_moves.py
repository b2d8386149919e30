"""Classes half A of issue 25's generalisation set found (data/genset/A-before.md), on inputs the
tests write: a build that fails for what the project's CI provides (its apt packages -- in
workflows, composite actions, .travis.yml --, its configure options) gets a `ci_setup` move once
the diagnosis and the other routes are used up, and the failure forms met there are diagnosed
(pkg-config's newer wording, CMake's missing package config, a project's "Unable to find 'x'",
autoconf's "Try to install x package", scikit-build's missing cmake)."""

from __future__ import annotations

import pytest

from agents.mint_config import MintConfig
from agents.debindex import Need, query_for
from agents.diagnosis import diagnose
from agents.ecosystems import cfamily
from agents.ecosystems.base import Ecosystem, Plan, PlanRequest
from agents.ecosystems.ci import action_steps, ci_apt_packages
from agents.ecosystems.move_types import Move, MoveContext
from agents.minter import mint_instance
from envpool.fake import FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem, make_tree
from tests.agents.test_loop import events, instance_on, patched, steps


@pytest.mark.parametrize("text, rule, packages, needs", [
    ("configure: error: Leptonica 1.74 or higher is required. Try to install libleptonica-dev package.",
     "configure-names-its-package", ["libleptonica-dev"], []),
    ("--   Package 'lept', required by 'virtual:world', not found", "missing-pkgconfig-module", [], ["pkgconfig lept"]),
    ("CMake Error at CMakeLists.txt:85 (message):\n  Unable to find 'pg_config'", "project-unable-to-find-program", [],
     ["command pg_config"]),
    ("Could NOT find Leptonica (missing: Leptonica_DIR)", "cmake-package-not-found", [], ["cmake Leptonica"]),
    ("CMake Error at CMakeLists.txt:451 (message):\n  Cannot find required library Leptonica.  Quitting!",
     "project-cannot-find-library", [], ["cmake Leptonica"]),
    ("scikit_build_core.errors.CMakeNotFoundError: Could not find CMake with version >=3.24.0",
     "cmake-command-missing", [], ["command cmake"]),
    # S24: a Find module's error (not the "-- Could NOT find" status line of an optional package before it)
    ("-- Could NOT find MKL (missing: MKL_LIBRARIES) \n-- Looking for sgemm_ - not found\n"
     "CMake Error at /usr/share/cmake-3.31/Modules/FindPackageHandleStandardArgs.cmake:233 (message):\n"
     "  Could NOT find BLAS (missing: BLAS_LIBRARIES)\nCall Stack (most recent call first):\n",
     "cmake-find-module-failed", [], ["link blas"]),
])
def test_the_failure_forms_of_half_a_are_diagnosed(text, rule, packages, needs):
    d = diagnose(text, "cfamily")
    assert (d.rule, d.packages, [n.label for n in d.needs]) == (rule, packages, needs)


def test_a_named_package_that_is_no_debian_name_is_not_taken_and_zlib_is_not_a_config_package():
    assert diagnose("Try to install Foo;rm package", "cfamily") is None
    assert diagnose("Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)", "cfamily") is None
    assert diagnose("-- Could NOT find MKL (missing: MKL_LIBRARIES)\n", "cfamily") is None  # optional: a status line
    assert query_for(Need(kind="link", name="blas")) == r"^/(usr/)?lib/([\w.+-]+-linux-gnu/)?libblas\.(so|a)$"
    assert query_for(Need(kind="cmake", name="Leptonica")) == \
        r"^/usr/(lib/([\w.+-]+-linux-gnu/)?|share/)cmake/[^/]+/(LeptonicaConfig|leptonica-config)\.cmake$"


WORKFLOW = """jobs:
  build:
    steps:
      - uses: ./.github/actions/build_cmake
      - run: sudo apt-get update && sudo apt-get install -y libleptonica-dev autoconf
"""
ACTION = """runs:
  using: composite
  steps:
    - run: |
        cmake -B build -DCALC_ENABLE_GPU=OFF -DCALC_OPT_LEVEL=${{ inputs.opt }} \\
          -DBUILD_TESTING=ON -DCMAKE_INSTALL_PREFIX=/opt/x .
      shell: bash
"""
TRAVIS = "addons:\n  apt:\n    packages: [zlib1g-dev, 'bad;name']\nbefore_install:\n  - sudo apt install -y xxd\n"


def test_the_ci_packages_and_options_come_from_workflows_actions_and_travis(tmp_path):
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": WORKFLOW, ".github/actions/build_cmake/action.yml": ACTION,
                                ".travis.yml": TRAVIS, "CMakeLists.txt": ""})
    assert [s.path for s in action_steps(tree)] == [".github/actions/build_cmake/action.yml"]
    assert ci_apt_packages(tree) == ["zlib1g-dev", "libleptonica-dev", "autoconf", "xxd"]
    plan = Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="cmake", parser="ctest_log",
                setup_commands=["cmake -S /testbed -B /opt/build -DBUILD_TESTING=ON"], ci_packages=["autoconf"])
    ctx = MoveContext(tree=tree, instance=None, plan=plan, touched=[], why="setup failed: cmake: nvcc")
    moves = cfamily.ECOSYSTEM.next_moves(ctx)
    assert [m.kind for m in moves] == ["ci_setup"]
    assert moves[0].request.options == {"ci_packages": ["zlib1g-dev", "libleptonica-dev", "xxd"],
                                        "cmake_flags": ["-DCALC_ENABLE_GPU=OFF"]}
    assert "-DCALC_ENABLE_GPU=OFF (.github/actions/build_cmake/action.yml)" in moves[0].evidence


class Failing(Ecosystem):
    """An ecosystem whose build fails until its plan carries the `ci` option a move asks for."""

    name = "go"
    languages = ("go",)

    def __init__(self):
        self.contexts: list[MoveContext] = []

    def detect(self, tree, language):
        return 10

    def plan(self, tree, instance, touched, images, request=None):
        on = (request or PlanRequest()).options.get("ci", [])
        return Plan(ecosystem="go", toolchain="go 1.19", image="toy:1.19", setup_commands=[f"build {' '.join(on)}"],
                    test_command="go test -json ./...", parser="go_test_json", test_files=["calc_test.go"])

    def repair(self, plan, command, output, tried):
        return None

    def next_moves(self, ctx):
        self.contexts.append(ctx)
        return [Move(kind="ci_setup", serves="what the CI provides", evidence="the CI installs libx-dev",
                     request=PlanRequest(options={"ci": ["libx"]}))]


def test_a_failed_build_gets_a_ci_setup_move_and_the_next_round_verifies(tmp_path, monkeypatch):
    eco = Failing()
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"build libx", (0, "built"))
    f.on(r"build\s*$", (2, "configure: error: the x library is required\n"))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}),
                        factory=f)
    assert res.outcome == "verified", res.reason
    assert res.rounds[0].outcome == "replan" and res.rounds[0].feedback == "replan: move ci_setup"
    assert res.rounds[1].move == "ci_setup" and res.rounds[1].evidence == "the CI installs libx-dev"
    assert eco.contexts[0].why.startswith("setup failed") and "the x library is required" in eco.contexts[0].output
    assert [(s.rule, s.exit_code) for s in steps(res) if s.rule.startswith("move:")] == [("move:ci_setup", 0)]


ALTERNATIVE_JOBS = """jobs:
  linux:
    runs-on: ubuntu-latest
    steps:
      - run: cmake -B build -DBUILD_TESTING=ON -DCALC_ENABLE_C_API=OFF -DCALC_ENABLE_GPU=OFF .
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: cmake -B build -DCALC_WARNINGS_AS_ERRORS=ON -DCALC_LINTER=ON -DCALC_FUZZING=1 -DCALC_ASSERTIONS=ON .
  linux-gpu:
    runs-on: ubuntu-latest
    steps:
      - run: cmake -B build -DCALC_ENABLE_GPU=ON -DCALC_ENABLE_C_API=ON -DCALC_WITH_ZSTD=ON .
  mac:
    runs-on: ${{ matrix.os }}
    strategy:
      matrix:
        os: [macos-14]
    steps:
      - run: cmake -B build -DCALC_ENABLE_METAL=ON -DCALC_ENABLE_PYTHON=ON .
  win:
    runs-on: ubuntu-latest
    steps:
      - shell: pwsh
        run: cmake -B build -G "Visual Studio 17 2022" -DCALC_ENABLE_PYTHON=ON .
"""
CUDA_ONLY_ACTION = """runs:
  using: composite
  steps:
    - shell: bash
      run: cmake -B build -DCALC_USE_CUDA=1 -DCALC_USE_ROCM=OFF .
"""


def test_the_ci_options_are_one_builds_not_the_union_of_alternative_jobs(tmp_path):
    # the class: a CI whose jobs are alternatives (a CPU job, a lint job, a GPU job, a macOS/Metal
    # job, a Windows job): each option once with its first value, another platform's steps left
    # out, a hardware backend or a lint/fuzz build never switched on
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": ALTERNATIVE_JOBS, "CMakeLists.txt": "",
                                ".github/actions/cuda/action.yml": CUDA_ONLY_ACTION})
    plan = Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="cmake", parser="ctest_log",
                setup_commands=["cmake -S /testbed -B /opt/build -DBUILD_TESTING=ON"])
    ctx = MoveContext(tree=tree, instance=None, plan=plan, touched=[], why="setup failed: cmake")
    moves = cfamily.ECOSYSTEM.next_moves(ctx)
    assert moves[0].request.options["cmake_flags"] == ["-DCALC_ENABLE_C_API=OFF", "-DCALC_ENABLE_GPU=OFF",
                                                       "-DCALC_ASSERTIONS=ON", "-DCALC_WITH_ZSTD=ON",
                                                       "-DCALC_USE_ROCM=OFF"]
    from agents.ecosystems.ci import ci_steps
    steps = ci_steps(tree)
    assert [(s.runs_on, s.foreign()) for s in steps] == [("ubuntu-latest", False), ("ubuntu-latest", False),
                                                         ("ubuntu-latest", False), ("macos-14", True),
                                                         ("ubuntu-latest", True)]


def test_cmake_find_modules_of_libraries_debian_names_otherwise_are_installed_before_the_configure(tmp_path):
    """S24 (genset A faiss): ``find_package(BLAS REQUIRED)`` / ``find_package(LAPACK REQUIRED)``
    (CMake's own Find modules) put their Debian packages in the plan, as the other table names
    do, so the configure does not stop on "Could NOT find BLAS" and spend a round per library."""
    from agents.ecosystems.cfamily.c_builds import analyze

    tree = make_tree(tmp_path, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.24)\nproject(calc CXX)\nenable_testing()\n"
                          "find_package(OpenMP REQUIRED)\nfind_package(MKL)\nif(NOT MKL_FOUND)\n"
                          "  find_package(BLAS REQUIRED)\n  find_package(LAPACK REQUIRED)\nendif()\n"
                          "add_subdirectory(tests)\n",
        "tests/CMakeLists.txt": "add_executable(t t.cpp)\nadd_test(NAME t COMMAND t)\n",
        "tests/t.cpp": "int main() { return 0; }\n"})
    b = analyze(tree, ["tests/t.cpp"], project="calc")
    assert "libblas-dev" in b.packages and "liblapack-dev" in b.packages
