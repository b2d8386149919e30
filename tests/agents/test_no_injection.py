"""No injection (issue 11, item 6): values from a repository or its output that enter the row's
setup script and Dockerfile are quoted, and YAML from repositories is parsed within bounds.

Each case failed before the change: an environment value `$(cmd)` ran in the published setup
script (it was exported in double quotes), a failed command with a newline left its comment and
became a line of the script, and a YAML alias bomb in a CI file cost the host exponential time.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from agents.dockerfile import render_dockerfile, render_setup_script
from agents.untrusted_yaml import YamlTooLarge, load_untrusted_yaml
from pipeline.instances import parse_row
from envpool.errors import InstanceInputError


def test_setup_script_exports_and_comments_cannot_run_text(tmp_path):
    script = render_setup_script(["echo ran"], {"X": "$(touch pwned)", "Y": "a'b \"c\" `d`"},
                                 [("false\ntouch pwned2", 1)])
    (tmp_path / "setup.sh").write_text(script.replace("cd /testbed", f"cd {tmp_path}"))
    r = subprocess.run(["bash", "-c", f"bash {tmp_path}/setup.sh && echo \"$X\""], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    env_line = [ln for ln in script.splitlines() if ln.startswith("export X=")][0]
    assert env_line == "export X='$(touch pwned)'"


def test_dockerfile_env_and_commit_are_literal():
    text = render_dockerfile(base_image="b", repo="o/r", base_commit="abc123", commands=[], env={"X": "$HOME;x"})
    assert 'ENV X="\\$HOME;x"' in text and "commit -qm 'base abc123'" in text


def test_a_base_commit_that_is_not_a_commit_id_is_an_input_error():
    row = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc'; touch /tmp/x; '", "patch": "p",
           "test_patch": "t"}
    with pytest.raises(InstanceInputError, match="base_commit"):
        parse_row(row, "line 1")


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))


def test_a_yaml_alias_bomb_is_refused_fast():
    t0 = time.monotonic()
    with pytest.raises(YamlTooLarge, match="alias"):
        load_untrusted_yaml(BOMB)
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(YamlTooLarge, match="bytes"):
        load_untrusted_yaml("x: " + "y" * (2 * 1024 * 1024))
    assert load_untrusted_yaml("a: &x [1]\nb: *x\nc: {d: 2}\n") == {"a": [1], "b": [1], "c": {"d": 2}}


def test_ecosystems_survive_an_alias_bomb_in_ci_files(tmp_path):
    """The analysers that read repository YAML (Python conda files, Node and Java CI files, Go's
    glide.lock, yarn's .yarnrc.yml) return within a second and treat the file as unreadable."""
    from agents.ecosystems.python.profile import _conda_deps
    from agents.ecosystems.java import _ci_jdks
    from agents.ecosystems.node.version import ci_node_versions
    from tests.agents.ecosystems.conftest import make_tree

    tree = make_tree(tmp_path, {".github/workflows/ci.yml": BOMB, "ci/environment.yml": BOMB, "README": ""})
    t0 = time.monotonic()
    assert _conda_deps(tree) == []
    assert _ci_jdks(tree) == []
    assert ci_node_versions(tree) == []
    assert time.monotonic() - t0 < 2.0
    assert json.dumps(load_untrusted_yaml("a: 1"))


# -- issue 24 (instance fields are data): tags, RUN lines, environment names, repository folders --

def test_image_tags_of_two_instances_never_coincide():
    from agents.envimage import image_tag_for

    spec = {"base": "python:3.11", "commands": ["pip install -e ."]}
    pairs = [("Octo__proj-1", "octo__proj-1"), ("x" * 100 + "-1", "x" * 100 + "-2")]
    for a, b in pairs:  # same spec, same run: the second commit used to replace (and remove) the first's image
        ta, tb = image_tag_for(a, spec, "run"), image_tag_for(b, spec, "run")
        assert ta != tb and all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", t) for t in (ta, tb))
    assert image_tag_for("octo__proj-1", spec, "run").startswith("octo__proj-1-")  # SWE-bench ids unchanged


def test_a_run_line_never_swallows_the_next_dockerfile_line(tmp_path):
    from agents.dockerfile import run_line

    for cmd in ("echo a \\", "echo a\rtouch PWNED", "printf '%s' x\x0btouch PWNED"):
        line = run_line(cmd, build_env=False)
        assert "\n" not in line and "\r" not in line and not line.endswith("\\"), line
        r = subprocess.run(["bash", "-c", line.removeprefix("RUN ")], capture_output=True, cwd=tmp_path)
        assert not (tmp_path / "PWNED").exists(), r
    assert run_line("pip install -e .") == "RUN . /opt/swemint/build-env.sh && pip install -e ."


def test_an_environment_name_that_is_not_a_name_is_refused_everywhere_it_is_written():
    for bad in ("A;touch PWNED", "A\nRUN touch /PWNED", "A B"):
        with pytest.raises(ValueError, match="environment variable name"):
            render_setup_script([], {bad: "1"})
        with pytest.raises(ValueError, match="environment variable name"):
            render_dockerfile(base_image="b", repo="o/r", base_commit="abc123", commands=[], env={bad: "1"})


def test_a_go_module_folder_from_the_repository_is_one_word(tmp_path):
    from agents.ecosystems.golang import _cd

    assert _cd("sub/mod") == "cd /testbed/sub/mod" and _cd("") == "cd /testbed"  # plans unchanged
    (tmp_path / "x;touch PWNED").mkdir()
    line = _cd("x;touch PWNED").replace("/testbed", str(tmp_path))
    r = subprocess.run(["bash", "-c", f"{line} && pwd"], capture_output=True, text=True, cwd=tmp_path)
    assert r.stdout.strip().endswith("x;touch PWNED") and not (tmp_path / "PWNED").exists()
