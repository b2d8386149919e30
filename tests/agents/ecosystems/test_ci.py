"""The one CI reader (`agents.ecosystems.ci.ci_steps`): workflow steps with env and matrix, Travis
lines, and hostile files skipped."""

from __future__ import annotations

from agents.ecosystems.ci import ci_steps
from agents.ecosystems.java.maven_ci import ci_run_texts
from tests.agents.ecosystems.conftest import make_tree

WORKFLOW = """
env: {TOP: "1"}
jobs:
  test:
    env: {JOB: "2"}
    strategy:
      matrix:
        jdk: ["17", "21"]
        os: [{name: x}]
    steps:
      - uses: actions/checkout@v4
      - run: mvn -P${{ matrix.jdk }}-ci test -Dx=${{ matrix.os }}
        env: {STEP: "3", JOB: "4"}
"""


def test_steps_carry_env_and_matrix_and_travis_lines_follow(tmp_path):
    tree = make_tree(tmp_path / "r", {".github/workflows/ci.yml": WORKFLOW,
                                      ".github/workflows/bad.yml": "a: [unclosed",
                                      ".travis.yml": "script:\n  - make check\n  - ./mvnw verify\ninstall: npm ci\n",
                                      "README": "x\n"})
    steps = ci_steps(tree)
    assert [s.path for s in steps] == [".github/workflows/ci.yml", ".travis.yml", ".travis.yml", ".travis.yml"]
    first = steps[0]
    assert first.env == {"TOP": "1", "JOB": "4", "STEP": "3"} and first.matrix == {"jdk": "17"}
    assert "${{ matrix.jdk }}" in first.run  # kept as written
    assert first.resolved() == "mvn -P17-ci test -Dx=$"  # a non-scalar matrix value is no value
    assert [s.run for s in steps[1:]] == ["npm ci", "make check", "./mvnw verify"]
    assert ci_run_texts(tree)[0] == (".github/workflows/ci.yml", "mvn -P17-ci test -Dx=$")


def test_the_tools_the_ci_installs_from_pypi(tmp_path):
    from agents.ecosystems.ci import ci_pip_tools, pip_tool_commands
    from tests.agents.ecosystems.conftest import make_tree

    wf = ("jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
          "      - run: python -m pip install -U 'lit>=15' -r requirements.txt meson==1.2 ./local\n"
          "      - run: pipx install $TOOL; pip3 install --user -e . codespell\n")
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": wf, ".travis.yml": "install:\n  - pip install --user cram\n"})
    assert ci_pip_tools(tree) == ["lit", "meson", "codespell", "cram"]
    names, cmds = pip_tool_commands(tree, ["cram", "bash", "Meson"])
    assert names == ["cram", "meson"] and cmds[-1] == "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir cram meson"
    assert "python3-pip" in cmds[0]
    assert pip_tool_commands(tree, ["valgrind"]) == ([], [])
