"""Roles of the one test-path rule set (envpool/testpaths.yaml `roles`, issues 24/28): ordered
include/exclude entries, the first match deciding; each key of a matcher must match; roles are
checked with the rest of the data, named in errors, and never widen a group's test paths."""

from __future__ import annotations

import subprocess

import pytest

from envpool.testpaths import RuleSetError, TestPathRules, check_rule_data, packaged_rules, role, rules_for

DATA = {"groups": {"g": {"dirs": ["tests"], "roles": {
    "run": [
        {"exclude": {"names": ["conftest.py"]}},
        {"include": {"names": ["test_*.py"]}},
        {"exclude": {"dirs": ["data"]}},
        {"include": {"dirs": ["tests"], "suffixes": [".py"]}},
    ],
    "cls": [{"include": {"stems": ["*Test"], "paths": ["**/src/test*/java/**"]}}],
    "specs": [{"include": {"paths": ["**/test/**", "**/*.test.*"]}}],
}}}}


@pytest.mark.parametrize("path,inside", [
    ("tests/test_a.py", True), ("tests/data/test_a.py", True),  # a name match comes before the data exclusion
    ("tests/data/a.py", False), ("TESTS/a.py", True),  # dirs: case-insensitive, as in the groups
    ("tests/conftest.py", False), ("tests/a.txt", False),  # the first entry excludes; suffixes must match too
    ("src/a.py", False), ("test_a.txt", False),
])
def test_the_first_matching_entry_decides(path, inside):
    assert role("g", "run", DATA).matches(path) is inside


def test_every_key_of_a_matcher_must_match():
    cls = role("g", "cls", DATA)
    assert cls.matches("m/src/test/java/a/FooTest.java") and cls.matches("src/testFixtures/java/FooTest.kt")
    assert not cls.matches("src/main/java/FooTest.java")  # the path glob fails
    assert not cls.matches("src/test/java/Foo.java")  # the stem glob fails
    assert cls.select(["src/test/java/FooTest.java", "a.py", "x/src/test/java/BarTest.java"]) == \
        ["src/test/java/FooTest.java", "x/src/test/java/BarTest.java"]


def test_a_paths_only_role_is_a_git_pathspec_with_the_same_meaning(tmp_path):
    specs = role("g", "specs", DATA)
    assert specs.pathspec_globs() == ["**/test/**", "**/*.test.*"]
    with pytest.raises(ValueError, match="g.run"):
        role("g", "run", DATA).pathspec_globs()
    files = ["test/a.js", "pkg/test/b.js", "src/c.test.js", "src/c.js", "latest/d.js"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    listed = subprocess.run(["git", "ls-files", "--", *(f":(glob){g}" for g in specs.pathspec_globs())],
                            cwd=tmp_path, check=True, capture_output=True, text=True).stdout.split()
    assert sorted(listed) == sorted(specs.select(files)) == ["pkg/test/b.js", "src/c.test.js", "test/a.js"]


def test_malformed_roles_are_refused_with_the_group_and_role():
    check_rule_data(DATA)
    for bad, why in [
        ({"run": {"include": {"names": ["x"]}}}, "non-empty list"),
        ({"run": []}, "non-empty list"),
        ({"run": [{"keep": {"names": ["x"]}}]}, "include"),
        ({"run": [{"include": {"names": ["x"]}, "exclude": {"names": ["y"]}}]}, "include"),
        ({"run": [{"include": {"folders": ["x"]}}]}, "keys"),
        ({"run": [{"include": {}}]}, "keys"),
        ({"run": [{"include": {"names": "x"}}]}, "names must be"),
        ({"run": [{"include": {"stems": [""]}}]}, "stems must be"),
    ]:
        with pytest.raises(RuleSetError, match=why) as e:
            check_rule_data({"groups": {"g": {"roles": bad}}})
        assert "group 'g' role 'run'" in str(e.value) or "group 'g'" in str(e.value)
    with pytest.raises(KeyError, match="no role 'nope' in group 'g'"):
        role("g", "nope", DATA)
    with pytest.raises(KeyError, match="group 'zz'"):
        role("zz", "run")


def test_roles_do_not_widen_the_test_paths():
    # a role holds paths the groups do not call tests (pytest is handed tests.py's sibling
    # testing.py by name), and the groups' classification ignores roles entirely
    assert role("python", "run").matches("pkg/testing.py") and not rules_for("python").is_test("pkg/testing.py")
    assert role("lua", "run").matches("src/parser_spec.lua")
    assert not TestPathRules(packaged_rules(), ["lua"]).is_test("src/parser_spec.lua")  # the lua group: roles only
    without = {"groups": {k: {kind: v for kind, v in g.items() if kind != "roles"}
                          for k, g in packaged_rules()["groups"].items()}}
    for path in ["tests/test_a.py", "pkg/testing.py", "src/test/java/FooTest.java", "spec/a_spec.rb",
                 "t/run-tests.sh", "src/parser_spec.lua", "src/a.test.ts"]:
        assert TestPathRules(without).is_test(path) == rules_for(None).is_test(path)


def test_every_packaged_role_compiles_and_the_status_tool_data_carries_them():
    import json

    data = packaged_rules()
    named = [(g, r) for g, group in data["groups"].items() for r in group.get("roles", {})]
    assert {("python", "run"), ("python", "collect"), ("ruby", "run"), ("ruby", "rspec"), ("java", "source"),
            ("java", "class"), ("java", "integration"), ("js", "run"), ("js", "not_built"), ("cfamily", "script"),
            ("lua", "run")} <= set(named)
    for g, r in named:
        role(g, r).matches("a/b.c")
    check_rule_data(json.loads(json.dumps(data)))  # YAML anchors resolve: the JSON the status tool packs checks too
