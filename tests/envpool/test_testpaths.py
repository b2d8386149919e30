"""The one test-path rule set (envpool/testpaths.yaml): classification per ecosystem, runner
configuration in shared files, the PR split with what it moved, the refusal of a fix that edits
what grades it, and the reset of a work tree's test paths (issue 24 item 2)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from envpool.patches import grading_paths, grading_paths_problem, split_by_rules
from envpool.testpaths import (RESET_MARK, STAMP, RuleSetError, TestPathRules, check_rule_data, groups_for,
                               line_changes, outside_stamp, packaged_rules, reset_main, reset_tree, rules_for)
from envpool.testrun import statuslines

# (language, path, expected kind): test code/data, test infrastructure, or neither
CASES = [
    ("python", "tests/test_core.py", "test"), ("python", "pkg/core_test.py", "test"),
    ("python", "tests/helpers.py", "test"), ("python", "testing/fixtures/data.json", "test"),
    ("python", "conftest.py", "support"), ("python", "src/pkg/conftest.py", "support"),
    ("python", "pytest.ini", "support"), ("python", "src/sitecustomize.py", "support"),
    ("python", "setup.cfg", "config"), ("python", "pyproject.toml", "config"), ("python", "tox.ini", "config"),
    ("python", "src/pkg/core.py", None), ("python", "src/contest.py", None), ("python", "docs/testing.md", None),
    ("go", "pkg/server/handler_test.go", "test"), ("go", "pkg/parse/testdata/input.txt", "test"),
    ("go", "internal/testing/mock.go", "test"), ("go", "pkg/server/handler.go", None),
    ("go", "pkg/attest/sign.go", None),
    ("rust", "tests/integration.rs", "test"), ("rust", "crates/a/tests/it.rs", "test"),
    ("rust", ".cargo/config.toml", "test"), ("rust", "Cargo.toml", "config"), ("rust", "src/lib.rs", None),
    ("java", "core/src/test/java/org/x/ParserTest.java", "test"), ("java", "src/test/resources/cfg.xml", "test"),
    ("java", "src/main/java/FooIT.java", "test"), ("java", "src/main/java/org/x/Parser.java", "config"),  # a JVM source: its package line decides
    ("java", "src/main/java/org/x/query/spec/Spec.java", "config"),  # `spec/` is no Java test folder; its package line decides
    ("java", "pom.xml", "config"), ("java", "build.gradle.kts", "config"),
    ("javascript", "src/__tests__/a.js", "test"), ("javascript", "lib/util.test.js", "test"),
    ("javascript", "src/__mocks__/fs.js", "test"), ("javascript", "jest.config.js", "support"),
    ("javascript", "packages/ui/vitest.config.mts", "support"), ("javascript", ".mocharc.yml", "support"),
    ("javascript", "karma.conf.js", "support"), ("javascript", "package.json", "config"),
    ("javascript", "lib/util.js", None), ("javascript", "locales/it/messages.json", None),
    # Babel's configuration: babel-jest runs every test file through it (h24b, trial 7)
    ("javascript", "babel.config.js", "support"), ("javascript", "packages/ui/.babelrc", "support"),
    ("javascript", ".babelrc.json", "support"), ("javascript", "src/babel.js", None),
    ("javascript", "vite.config.ts", "support"), ("javascript", "packages/app/vite.config.mjs", "support"),
    ("typescript", "src/app.spec.ts", "test"), ("typescript", "src/components/Button.test.tsx", "test"),
    ("typescript", "src/app.ts", None),
    ("c", "tests/test_parse.c", "test"), ("c", "src/parse_test.c", "test"), ("c", "CTestTestfile.cmake", "support"),
    ("c", "CMakeLists.txt", "config"), ("c", "Makefile", "config"), ("c", "src/parse.c", None),
    ("cpp", "test/unit/vector_test.cpp", "test"), ("cpp", "src/base/str_unittest.cc", "test"),
    ("cpp", "src/vector.cpp", None),
    ("php", "tests/Unit/UserTest.php", "test"), ("php", "src/FooTest.php", "test"),
    ("php", "phpunit.xml.dist", "support"), ("php", "composer.json", "config"), ("php", "src/User.php", None),
    ("ruby", "spec/models/user_spec.rb", "test"), ("ruby", "test/unit/test_user.rb", "test"),
    ("ruby", "spec/spec_helper.rb", "test"), ("ruby", ".rspec", "support"), ("ruby", "Rakefile", "config"),
    ("ruby", "app/models/user.rb", None),
]


@pytest.mark.parametrize("language,path,kind", CASES)
def test_the_rule_set_classifies_paths_per_ecosystem(language, path, kind):
    rules = rules_for(language)
    assert rules.kind(path) == kind
    assert rules.is_test(path) == (kind in ("test", "support"))
    if kind in ("test", "support"):
        assert rules_for(None).is_test(path)  # every group: a superset


def test_each_language_reads_its_groups_and_common():
    assert groups_for("python") == ["common", "python"]
    assert groups_for("cpp") == ["common", "cfamily"] and groups_for("typescript") == ["common", "js"]
    assert groups_for(None) is None and groups_for("cobol") is None  # unknown: every group
    # a language's groups decide: `spec/` is a test folder for Ruby and JavaScript, not for Java
    assert rules_for("ruby").is_test("lib/spec/x.rb") and not rules_for("java").is_test("src/main/java/spec/X.java")


def test_test_file_names_are_the_ecosystems_own():
    assert rules_for("go").is_test_file("a/b_test.go") and not rules_for("go").is_test_file("a/b.go")
    assert rules_for("php").is_test_file("src/FooTest.php") and rules_for("ruby").is_test_file("x/a_spec.rb")
    assert rules_for("python").is_test_file("pkg/test_x.py") and not rules_for("python").is_test_file("tests/helpers.py")
    assert rules_for("python").in_test_dir("tests/helpers.py")


@pytest.mark.parametrize("path,old,new,hit", [
    ("setup.cfg", "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
     "[metadata]\nname = a\n[tool:pytest]\naddopts = -q -p evil\n", True),
    ("setup.cfg", "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
     "[metadata]\nname = b\n[tool:pytest]\naddopts = -q\n", False),
    ("pyproject.toml", "[project]\nname = 'a'\n[tool.pytest.ini_options]\nxfail_strict = true\n",
     "[project]\nname = 'a'\n[tool.pytest.ini_options]\nxfail_strict = false\n", True),
    ("pyproject.toml", "[project]\ndependencies = ['pytest-cov']\n", "[project]\ndependencies = ['pytest-cov>=4']\n",
     False),
    ("package.json", '{\n  "scripts": {\n    "test": "jest"\n  }\n}\n',
     '{\n  "scripts": {\n    "test": "jest --passWithNoTests"\n  }\n}\n', True),
    ("package.json", '{\n  "dependencies": {\n    "left-pad": "1"\n  }\n}\n',
     '{\n  "dependencies": {\n    "left-pad": "2"\n  }\n}\n', False),
    ("CMakeLists.txt", "add_library(a a.c)\n", "add_library(a a.c)\nadd_test(NAME t COMMAND true)\n", True),
    ("CMakeLists.txt", "add_library(a a.c)\n", "add_library(a a.c b.c)\n", False),
    ("Makefile", "all:\n\tcc a.c\ntest: all\n\t./run-tests\n", "all:\n\tcc a.c\ntest: all\n\ttrue\n", True),
    ("Makefile", "all:\n\tcc a.c\ntest: all\n\t./run-tests\n", "all:\n\tcc a.c b.c\ntest: all\n\t./run-tests\n",
     False),
    ("pom.xml", "<project>\n</project>\n",
     "<project>\n<plugin><artifactId>maven-surefire-plugin</artifactId></plugin>\n</project>\n", True),
])
def test_shared_configuration_counts_only_where_it_configures_the_runner(path, old, new, hit):
    rules = rules_for(None)
    assert rules.config_hit(path, line_changes(old, new)) is hit
    diff = _diff_of(path, old, new)
    assert (path in grading_paths(diff)) is hit  # the same answer from the diff (unidiff's hunks)


def test_malformed_rule_data_is_refused_with_the_reason():
    good = packaged_rules()
    check_rule_data(good)
    with pytest.raises(RuleSetError, match="unknown keys"):
        check_rule_data({"groups": {"x": {"folders": ["t"]}}})
    with pytest.raises(RuleSetError, match="bad regex"):
        check_rule_data({"groups": {"x": {"config": [{"files": ["a"], "lines": ["("]}]}}})
    with pytest.raises(RuleSetError, match="unknown groups"):
        check_rule_data({"groups": {"x": {}}, "languages": {"go": ["y"]}})


def _diff_of(path: str, old: str, new: str) -> str:
    import difflib

    body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
    return f"diff --git a/{path} b/{path}\n{body}"


def _section(path: str, text: str = "x = 1\n") -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(text.splitlines())} @@\n" + "".join(f"+{line}\n" for line in text.splitlines()))


def test_a_pr_diff_is_split_by_the_rule_set_and_the_moved_infrastructure_recorded():
    setup_cfg = _diff_of("setup.cfg", "[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts = -q -x\n")
    diff = (_section("src/pkg/core.py") + _section("tests/test_core.py") + _section("conftest.py")
            + _section("tests/helpers.py") + setup_cfg + _section("README.md"))
    s = split_by_rules(diff, rules_for("python"))
    assert s.patch == _section("src/pkg/core.py") + _section("README.md")
    assert s.test_patch == (_section("tests/test_core.py") + _section("conftest.py") + _section("tests/helpers.py")
                            + setup_cfg)
    assert s.moved == ["conftest.py", "setup.cfg"]  # infrastructure, not tests by folder or name


def test_a_fix_touching_test_code_or_infrastructure_is_named():
    assert grading_paths_problem(_section("src/a.py"), "python") is None
    why = grading_paths_problem(_section("src/a.py") + _section("conftest.py") + _section("tests/helpers.py"),
                                "python")
    assert why and "conftest.py" in why and "tests/helpers.py" in why and "src/a.py" not in why
    assert "x_test.go" in grading_paths_problem(_section("x_test.go"), "go")


def _git(cwd, *args) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def _commit_base(repo) -> None:
    """`repo`'s files as the base commit of a new git repository."""
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")


@pytest.fixture
def tree(tmp_path):
    """A committed work tree as an environment image holds it: tests with a helper, a pytest
    section in setup.cfg, installed dependencies (untracked, ignored), a build output under
    tests/ (untracked, older than the image's stamp)."""
    repo = tmp_path / "testbed"
    files = {"tests/helpers.py": "TOL = 1e-9\n", "tests/test_x.py": "def test_x():\n    pass\n",
             "src/calc.py": "X = 1\n", "setup.cfg": "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
             ".gitignore": "node_modules/\nbuild/\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _commit_base(repo)
    (repo / "node_modules" / "pkg" / "test").mkdir(parents=True)
    (repo / "node_modules" / "pkg" / "test" / "index.js").write_text("//\n")
    (repo / "tests" / "test_ext.so").write_text("built\n")
    old = time.time() - 60
    os.utime(repo / "tests" / "test_ext.so", (old, old))
    os.utime(repo / "node_modules" / "pkg" / "test" / "index.js", (old, old))  # installed with the image
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    return repo


def _what_a_patch_did(repo):
    (repo / "tests" / "helpers.py").write_text("TOL = 1.0\n")  # loosened
    (repo / "tests" / "conftest.py").write_text("def pytest_runtest_makereport(): pass\n")  # added
    (repo / "conftest.py").write_text("import os\n")
    (repo / "tests" / "test_x.py").unlink()  # removed
    (repo / "setup.cfg").write_text("[metadata]\nname = b\n[tool:pytest]\naddopts = -q -p evil\n")
    (repo / "src" / "calc.py").write_text("X = 2\n")  # the fix itself


def test_reset_puts_every_test_path_back_and_leaves_the_fix_and_the_image(tree):
    _what_a_patch_did(tree)
    done = reset_tree(str(tree), rules_for("python"))
    assert done == ["conftest.py", "setup.cfg", "tests/conftest.py", "tests/helpers.py", "tests/test_x.py"]
    assert (tree / "tests" / "helpers.py").read_text() == "TOL = 1e-9\n"
    assert not (tree / "tests" / "conftest.py").exists() and not (tree / "conftest.py").exists()
    assert (tree / "tests" / "test_x.py").exists()
    assert (tree / "setup.cfg").read_text() == "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n"
    assert (tree / "src" / "calc.py").read_text() == "X = 2\n"
    assert (tree / "tests" / "test_ext.so").exists()  # the build's, older than the image's stamp
    assert (tree / "node_modules" / "pkg" / "test" / "index.js").exists()  # an installed dependency
    assert reset_tree(str(tree), rules_for("python")) == []  # nothing left to reset


def test_reset_keeps_what_it_is_told_to_keep(tree):
    _what_a_patch_did(tree)
    reset_tree(str(tree), rules_for("python"), keep=["conftest.py"])
    assert (tree / "conftest.py").exists() and not (tree / "tests" / "conftest.py").exists()


def test_the_status_tool_resets_with_the_rules_it_carries(tree, tmp_path):
    """What every image runs: `swemint-status.pyz reset-tests` (stdlib only, the rules as JSON)."""
    tool = tmp_path / "swemint-status.pyz"
    tool.write_bytes(statuslines.build_zipapp())
    _what_a_patch_did(tree)
    r = subprocess.run(["python3", "-I", "-S", str(tool), "reset-tests", "--language", "python", "--root", str(tree)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(RESET_MARK))
    assert json.loads(line[len(RESET_MARK):]) == ["conftest.py", "setup.cfg", "tests/conftest.py",
                                                  "tests/helpers.py", "tests/test_x.py"]
    assert (tree / "tests" / "helpers.py").read_text() == "TOL = 1e-9\n"
    # not a git work tree: it fails, and says so (the caller then never grades)
    r = subprocess.run(["python3", "-I", "-S", str(tool), "reset-tests", "--root", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "reset failed" in r.stderr


def test_an_image_without_a_stamp_removes_only_what_git_does_not_ignore(tree):
    (tree / STAMP).unlink()
    (tree / "build" / "tests").mkdir(parents=True)
    (tree / "build" / "tests" / "out.txt").write_text("built\n")  # ignored build output: stays
    (tree / "build" / "conftest.py").write_text("import evil\n")  # ignored, but test infrastructure: goes
    (tree / "tests" / "test_new.py").write_text("def test_n():\n    pass\n")  # not ignored: goes
    done = reset_tree(str(tree), TestPathRules(None, groups_for("python")))
    assert "build/conftest.py" in done and "tests/test_new.py" in done
    assert (tree / "build" / "tests" / "out.txt").exists()


# -- runner configuration far from where a hunk shows it (a new user's attack, trial 6) -----------

PKG = ('{\n  "name": "calc",\n  "version": "1.0.0",\n  "scripts": {\n    "build": "tsc"\n  },\n'
       '  "jest": {\n    "verbose": true,\n    "roots": [\n      "src"\n    ],\n    "bail": false\n  },\n'
       '  "license": "MIT"\n}\n')
PKG_PROCESSOR = PKG.replace('    "bail": false\n', '    "bail": false,\n    "testResultsProcessor": "./src/pass.js"\n')
PKG_PRETEST = PKG.replace('    "build": "tsc"\n', '    "build": "tsc",\n    "pretest": "node src/pass.js"\n')
PKG_OTHER = PKG.replace('"version": "1.0.0"', '"version": "1.0.1"')
CFG = ("[metadata]\nname = calc\n\n[tool:pytest]\nminversion = 6.0\nmarkers =\n    slow: s\n    net: n\n"
       "    db: d\nxfail_strict = true\n")
TOML = ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "calc"\n'
        'version = "0.1"\n\n[tool.setuptools]\npackages = ["calc"]\n')
MAKE = "all:\n\tcc a.c\n\ntest: all\n\t./t1\n\t./t2\n\t./t3\n\t./t4\n\t./t5\n"


@pytest.mark.parametrize("path,language,old,new,hit", [
    ("package.json", "javascript", PKG, PKG_PROCESSOR, True),  # a key deep inside "jest" no line names
    ("package.json", "javascript", PKG, PKG_PRETEST, True),  # npm runs `pretest` before `test`
    ("package.json", "javascript", PKG, PKG_OTHER, False),
    ("package.json", "javascript", PKG, PKG.replace('  "license"', '  "babel": {\n    "plugins": [\n      "./src/p.js"\n    ]\n  },\n  "license"'), True),
    ("setup.cfg", "python", CFG, CFG + "pythonpath = shim\n", True),  # 8 lines below [tool:pytest]
    ("setup.cfg", "python", CFG, CFG.replace("name = calc\n", "name = calc\nversion = 2\n"), False),
    ("Makefile", "c", MAKE, MAKE.replace("\t./t5\n", "\ttrue\n"), True),  # a recipe line far below `test:`
    # pytest reads pyproject.toml as TOML, not by lines (trial 7: each of the first three verified a fix that only
    # added a plugin forging passes): a dotted key at the top, a header with spaces, quoted or escaped key parts
    ("pyproject.toml", "python", TOML, 'tool.pytest.ini_options.addopts = "-p calc._plug"\n' + TOML, True),
    ("pyproject.toml", "python", TOML, TOML + '\n[ tool.pytest.ini_options ]\naddopts = "-p calc._plug"\n', True),
    ("pyproject.toml", "python", TOML, TOML + '\n[tool."pytest".ini_options]\naddopts = "-p calc._plug"\n', True),
    ("pyproject.toml", "python", TOML, TOML + '\n[tool."\\u0070ytest".ini_options]\naddopts = "-p calc._plug"\n', True),
    ("pyproject.toml", "python", TOML + "\n[tool]\nblack.line-length = 99\n",
     TOML + '\n[tool]\nblack.line-length = 99\n\n\n\n\n\n"pytest".ini_options = { addopts = "-p calc._plug" }\n', True),
    ("pyproject.toml", "python", TOML, TOML + '\n[project.entry-points."pytest11"]\nplug = "calc._plug"\n', True),
    ("pyproject.toml", "python", TOML, TOML + "\n[tool.black]\nline-length = 99\n", False),
    ("pyproject.toml", "python", TOML, TOML.replace('version = "0.1"', 'version = "0.2"'), False),
    # a section header with a comment after it is still the header below which a change lies
    ("setup.cfg", "python", CFG.replace("[tool:pytest]", "[tool:pytest]  # runner"),
     CFG.replace("[tool:pytest]", "[tool:pytest]  # runner") + "consider_namespace_packages = true\n", True),
    ("setup.cfg", "python", CFG, CFG.replace("[metadata]\n", "[metadata]\n\n[options.entry_points]\npytest11 =\n"
                                                                "    plug = calc._plug\n"), True),
])
def test_runner_configuration_counts_wherever_in_the_file_the_change_is(path, language, old, new, hit, tmp_path):
    rules = rules_for(language)
    assert rules.config_changed(path, old, new) is hit
    diff = _diff_of(path, old, new)
    assert (path in grading_paths(diff, rules, base={path: old}.get)) is hit  # the minter: the base text decides
    # the hunk's `@@` text is the author's: a forged `[metadata]` there changes nothing
    forged = re.sub(r"^(@@ [^@]* @@).*$", r"\1 [metadata]", diff, flags=re.M)
    assert (path in grading_paths(forged, rules, base={path: old}.get)) is hit
    # the reset in the image: a tracked file changed that way goes back
    repo = tmp_path / "t"
    (repo / "src").mkdir(parents=True)
    (repo / path).write_text(old)
    (repo / "src" / "a.c").write_text("int x;\n")
    _commit_base(repo)
    (repo / path).write_text(new)
    assert (path in reset_tree(str(repo), rules)) is hit
    assert (repo / path).read_text() == (old if hit else new)


def test_a_pyproject_counts_as_changed_wherever_no_toml_reader_is_there(monkeypatch):
    """The status tool may run on a python3 without tomllib (3.9, 3.10): any difference counts there."""
    from envpool import testpaths
    rules = rules_for("python")
    new = TOML + "\n[tool.black]\nline-length = 99\n"
    assert not rules.config_changed("pyproject.toml", TOML, new)
    monkeypatch.setattr(testpaths, "_toml_reader", lambda: None)
    assert rules.config_changed("pyproject.toml", TOML, new)
    assert not rules.config_changed("pyproject.toml", TOML, TOML)
    assert rules.config_changed("pyproject.toml", TOML, TOML + "[x\n")  # unreadable: counts


def test_a_package_json_added_by_a_patch_counts_when_it_configures_a_runner(tmp_path):
    rules = rules_for("javascript")
    assert rules.config_changed("web/package.json", "", PKG_PROCESSOR)
    assert not rules.config_changed("web/package.json", "", '{\n  "name": "web"\n}\n')
    assert rules.config_changed("web/package.json", "", "{ not json")  # unreadable: counts


# -- a patch that wrote into .git (the SWE-bench harness applies a model's patch with `patch -p1`
#    when `git apply` refuses a .git path): the reset runs no hook, no configured command, and
#    reads the image's stamp from beside the work tree (a new user's trial 6) ----------------------

def test_the_reset_runs_no_hook_a_patch_put_in_git(tree):
    hook = tree / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'def pytest_configure(): pass' > conftest.py\ntouch HOOK_RAN\n")
    hook.chmod(0o755)
    (tree / "tests" / "helpers.py").write_text("TOL = 1.0\n")  # so the reset checks a file out
    assert reset_tree(str(tree), rules_for("python")) == ["tests/helpers.py"]
    assert not (tree / "HOOK_RAN").exists() and not (tree / "conftest.py").exists()


def test_the_reset_refuses_a_git_configuration_that_runs_commands(tree):
    with open(tree / ".git" / "config", "a") as f:
        f.write('[filter "x"]\n\tclean = sh -c "touch FILTER_RAN; cat"\n')
    (tree / ".gitattributes").write_text("* filter=x\n")
    (tree / "tests" / "helpers.py").write_text("TOL = 1.0\n")
    assert reset_main("python", root=str(tree), data=packaged_rules()) == 1  # the caller does not grade
    assert not (tree / "FILTER_RAN").exists()
    with pytest.raises(ValueError, match="filter.x.clean"):
        reset_tree(str(tree), rules_for("python"))


def test_the_reset_grades_a_repository_whose_setup_set_its_hooks_path(tree):
    """husky's `prepare` script (run by `npm install` at set-up) writes core.hooksPath into
    .git/config: the reset overrides it (GIT_SAFE) and runs no hook there, and still grades."""
    subprocess.run(["git", "config", "core.hooksPath", ".husky"], cwd=tree, check=True)
    (tree / ".husky").mkdir()
    hook = tree / ".husky" / "post-checkout"
    hook.write_text("#!/bin/sh\ntouch HOOK_RAN\n")
    hook.chmod(0o755)
    (tree / "tests" / "helpers.py").write_text("TOL = 1.0\n")
    assert reset_tree(str(tree), rules_for("python")) == ["tests/helpers.py"]
    assert not (tree / "HOOK_RAN").exists()
    assert reset_main("python", root=str(tree), data=packaged_rules()) == 0


def test_the_stamp_beside_the_work_tree_is_the_one_read(tree):
    """A patch added conftest.py and rewrote .git/swemint-image-stamp (now): the in-tree stamp
    alone would call conftest.py the build's; the stamp beside the tree (the image's) does not."""
    outside = tree.parent / ".testbed.swemint-image-stamp"
    assert outside_stamp(str(tree)) == str(outside)
    outside.write_text("swemint image stamp\n")
    stamp = time.time() - 30
    os.utime(outside, (stamp, stamp))
    (tree / "conftest.py").write_text("import pytest\n")
    (tree / STAMP).write_text("swemint image stamp.\n")  # forged: its time is now
    assert "conftest.py" in reset_tree(str(tree), rules_for("python"))
    assert not (tree / "conftest.py").exists()
    assert (tree / "tests" / "test_ext.so").exists()  # the build's, older than the image's stamp


@pytest.mark.parametrize("how", ["rename", "copy", "link"])
def test_runner_configuration_brought_in_by_a_rename_a_copy_or_a_link_counts(tmp_path, how):
    """A fix renaming or copying a file that holds a pytest section to setup.cfg, or making
    setup.cfg a link to it, adds runner configuration without a changed line to read."""
    repo = tmp_path / "r"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "example.cfg").write_text("[tool:pytest]\naddopts = -p calc.evil\n")
    (repo / "calc.py").write_text("X = 1\n")
    _commit_base(repo)
    if how == "rename":
        _git(repo, "mv", "docs/example.cfg", "setup.cfg")
    elif how == "copy":
        (repo / "setup.cfg").write_text((repo / "docs" / "example.cfg").read_text())
    else:
        (repo / "setup.cfg").symlink_to("docs/example.cfg")
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached", "-M", "-C", "--find-copies-harder", "HEAD")
    assert ("rename to setup.cfg" in diff) == (how == "rename") and ("copy to setup.cfg" in diff) == (how == "copy")

    def base(path):
        r = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=repo, capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    why = grading_paths_problem(diff, "python", base)
    assert why and "setup.cfg" in why
    # an unrelated rename into a configuration file's name that holds no runner section stays valid
    plain = diff.replace("docs/example.cfg", "docs/other.cfg")
    (repo / "docs" / "other.cfg").write_text("[metadata]\nname = calc\n")
    if how == "rename":
        assert grading_paths_problem(plain, "python", lambda p: "[metadata]\nname = calc\n"
                                     if p == "docs/other.cfg" else base(p)) is None


# -- a top-level module standing in for one the runner imports (h24b, trial 7): `python -m pytest` runs with
#    the work tree first on sys.path, so a fix adding pytest/__main__.py ran the tests its own way and its
#    forged pass verified a fix that changed nothing --------------------------------------------------------

HIJACK = '''import os, sys
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
for m in [k for k in sys.modules if k == "pytest" or k.startswith("pytest.")]:
    del sys.modules[m]
import pytest


class Forger:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        o = yield
        r = o.get_result()
        if r.when == "call" and r.failed:
            r.outcome = "passed"
            r.longrepr = None


sys.path.insert(0, here)
raise SystemExit(pytest.main(sys.argv[1:], plugins=[Forger()]))
'''


@pytest.mark.parametrize("path,hit", [
    ("pytest/__main__.py", True), ("pytest/__init__.py", True), ("pytest.py", True), ("_pytest/__init__.py", True),
    ("pluggy.py", True), ("argparse.py", True), ("_strptime.py", True), ("json/__init__.py", True),
    ("inspect.pyc", True), ("argparse.cpython-311-x86_64-linux-gnu.so", True), ("enum.abi3.so", True),
    ("src/pprint.py", True), ("src/json/__init__.py", True), ("lib/argparse.py", False), ("src/calc/json.py", False),
    ("calc/json.py", False), ("calc/__init__.py", False), ("pytest/helpers.py", False),
    ("code/notes.py", False), ("calc.py", False), ("argparse.txt", False),
])
def test_a_top_level_module_named_as_one_the_runner_imports_is_infrastructure(path, hit):
    assert (rules_for("python").kind(path) == "support") is hit
    assert rules_for("go").kind(path) is None  # python's rule


def test_a_fix_that_brings_its_own_pytest_is_named_and_reset(tmp_path):
    repo = tmp_path / "t"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def mean(xs):\n    return sum(xs) / len(xs) + 0.5\n")
    (repo / "tests" / "test_mean.py").write_text("from calc import mean\n\n\ndef test_mean():\n"
                                                 "    assert mean([1, 2, 3]) == 2.0\n")
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / "pytest").mkdir()
    (repo / "pytest" / "__init__.py").write_text("")
    (repo / "pytest" / "__main__.py").write_text(HIJACK)
    _git(repo, "add", "-A", "pytest")
    fix = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q")
    assert grading_paths(fix, rules_for("python"), base=lambda p: None) == ["pytest/__init__.py", "pytest/__main__.py"]

    def run():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=repo,
                              capture_output=True, text=True, env=env).returncode

    assert run() == 0  # the attack: the bug is still there, the run passes
    assert reset_tree(str(repo), rules_for("python")) == ["pytest/__init__.py", "pytest/__main__.py"]
    assert run() == 1  # the real pytest: the test fails


PLUG = ('import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n'
        '    o = yield\n    r = o.get_result()\n    if r.when == "call" and r.failed:\n'
        '        r.outcome = "passed"\n        r.longrepr = None\n')


@pytest.mark.parametrize("meta", ["Calc_Plugins-1.0.DIST-INFO", "calc_plugins.egg-info", "src/calc_plugins.dist-info"])
def test_a_fix_that_registers_a_pytest_plugin_by_distribution_metadata_is_named_and_reset(tmp_path, meta):
    """importlib.metadata finds NAME.dist-info / NAME.egg-info (any case) on every sys.path folder, and pytest
    loads their [pytest11] entry points: a fix adding one next to a plugin forging passes (h24b, trial 7)."""
    repo = tmp_path / "t"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_mean.py").write_text("def test_mean():\n    assert 2.5 == 2.0\n")
    (repo / "setup.py").write_text("")
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / meta).mkdir(parents=True)
    (repo / meta / "METADATA").write_text("Metadata-Version: 2.1\nName: calc-plugins\nVersion: 1.0\n")
    (repo / meta / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: calc-plugins\nVersion: 1.0\n")
    (repo / meta / "entry_points.txt").write_text("[pytest11]\ncalcplug = calc_plug\n")
    (repo / "calc_plug.py").write_text(PLUG)  # not infrastructure by itself: the metadata is
    _git(repo, "add", "-A", meta, "calc_plug.py")
    fix = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q")
    assert grading_paths(fix, rules_for("python"), base=lambda p: None) == sorted(
        f"{meta}/{n}" for n in ("METADATA", "PKG-INFO", "entry_points.txt"))

    def run():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        env["PYTHONPATH"] = str(repo / meta.rpartition("/")[0]) if "/" in meta else ""
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=repo,
                              capture_output=True, text=True, env=env).returncode

    assert run() == 0  # the attack: the plugin is loaded, the failure reads as a pass
    assert len(reset_tree(str(repo), rules_for("python"))) == 3
    assert run() == 1


# -- installed dependencies (h24c, trial 8: a fake `expect` below node_modules/ verified) -------------

FAKE_EXPECT = ("const real = require(require('path').join(process.cwd(), 'node_modules', 'expect'));\n"
               "function fake() { return new Proxy({}, { get() { return () => undefined; } }); }\n"
               "module.exports = Object.assign({}, real, { expect: fake, default: fake });\n")


@pytest.mark.parametrize("language,path,hit", [
    ("javascript", "node_modules/@jest/expect/node_modules/expect/index.js", True),
    ("javascript", "node_modules/jest-circus/node_modules/@jest/expect/node_modules/expect/package.json", True),
    ("javascript", "web/Node_Modules/chai/index.js", True), ("javascript", "bower_components/qunit/qunit.js", True),
    ("python", ".venv/lib/python3.11/site-packages/_pytest/runner.py", True),
    ("python", "pkg/__pycache__/core.cpython-311.pyc", True), (None, "lib/site-packages/pluggy/_hooks.py", True),
    ("javascript", "pkg/__pycache__/core.cpython-311.pyc", False),
    ("go", "vendor/github.com/stretchr/testify/assert/assertions.go", True),
    ("php", "vendor/phpunit/phpunit/src/Framework/Assert.php", True), ("ruby", ".bundle/config", True),
    ("javascript", "lib/vendor/jquery.js", False), ("javascript", "src/node_modules.js", False),
    ("go", "pkg/vendor.go", False), ("python", "pkg/site_packages.py", False),
])
def test_a_fix_writing_into_installed_dependencies_changes_what_grades_it(language, path, hit):
    fix = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    assert (grading_paths_problem(fix, language, base=lambda p: None) is not None) is hit
    assert (rules_for(language).kind(path) is not None) is hit


def _jest_tree(tmp_path):
    """An image's tree: a jest repository with its installed node_modules (older than the stamp)."""
    repo = tmp_path / "testbed"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "mean.js").write_text("module.exports = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length + 0.5;\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    _commit_base(repo)
    real = repo / "node_modules" / "expect"
    real.mkdir(parents=True)
    (real / "index.js").write_text("module.exports = { expect: null };\n")
    (real / "package.json").write_text('{"name": "expect", "main": "index.js"}\n')
    (repo / "node_modules" / "site-packages-like").mkdir()
    old = time.time() - 60
    for f in (real / "index.js", real / "package.json"):
        os.utime(f, (old, old))
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    return repo


@pytest.mark.parametrize("written", ["node_modules/@jest/expect/node_modules/expect/index.js",  # added
                                     "node_modules/expect/index.js",  # the installed one, edited
                                     "pkg/lib/site-packages/pluggy/__init__.py"])  # a rules' `deps` folder only
def test_the_reset_does_not_grade_a_tree_a_patch_wrote_installed_dependencies_into(tmp_path, written, capsys):
    repo = _jest_tree(tmp_path)
    assert reset_main("javascript", root=str(repo)) == 0  # the image's own node_modules: graded
    (repo / written).parent.mkdir(parents=True, exist_ok=True)
    (repo / written).write_text(FAKE_EXPECT)
    (repo / "src" / "notes.js").write_text("module.exports = 1;\n")
    capsys.readouterr()
    assert reset_main("javascript", root=str(repo)) == 1
    assert "installed dependencies" in capsys.readouterr().err and (repo / written).exists()
    with pytest.raises(ValueError, match=re.escape(written)):
        reset_tree(str(repo), rules_for(None))


def test_the_status_tool_refuses_a_tree_a_patch_wrote_installed_dependencies_into(tmp_path):
    """The rules' `deps` folders travel in the status tool every image carries (site-packages is not
    one of the reset's own DEPENDENCY_DIRS)."""
    repo = _jest_tree(tmp_path)
    tool = tmp_path / "swemint-status.pyz"
    tool.write_bytes(statuslines.build_zipapp())

    def reset():
        return subprocess.run(["python3", "-I", "-S", str(tool), "reset-tests", "--language", "python", "--root",
                               str(repo)], capture_output=True, text=True)

    assert reset().returncode == 0
    (repo / "lib" / "site-packages" / "_pytest").mkdir(parents=True)
    (repo / "lib" / "site-packages" / "_pytest" / "runner.py").write_text("# forged\n")
    r = reset()
    assert r.returncode == 1 and "lib/site-packages/_pytest/runner.py" in r.stderr


# -- a JVM source standing in for the test framework (h24c, trial 8: src/main/java/org/junit/Assert.java verified) ----

JUNIT_ASSERT = "package org.junit;\n\npublic class Assert {\n    public static void assertEquals(long a, long b) {}\n}\n"


def _added(path, text):
    lines = text.splitlines()
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
            + "".join(f"+{x}\n" for x in lines))


@pytest.mark.parametrize("language,path,text,hit", [
    ("java", "src/main/java/org/junit/Assert.java", JUNIT_ASSERT, True),
    ("java", "src/main/java/com/acme/Notes.java", JUNIT_ASSERT, True),  # the package line decides, not the folder
    ("java", "core/src/main/java/com/acme/Notes.java", "package org.testng ;\nclass X {}\n", True),
    ("kotlin", "src/main/kotlin/a/N.kt", "package org.junit.jupiter.api\n\nobject Assertions\n", True),
    ("java", "src/main/resources/org/junit/Assert.class", "binary\n", True),
    ("java", "src/main/resources/META-INF/services/org.junit.platform.launcher.LauncherSessionListener", "a.B\n", True),
    ("java", "src/main/java/com/acme/Calc.java", "package com.acme;\nclass Calc {}\n", False),
    ("java", "src/main/java/com/acme/junit/Helper.java", "package com.acme.junit;\nclass Helper {}\n", False),
    ("java", "src/main/java/com/acme/Notes.java", "package org.junitx;\nclass N {}\n", False),
])
def test_a_jvm_source_in_a_test_frameworks_package_is_infrastructure(language, path, text, hit):
    assert (grading_paths_problem(_added(path, text), language, base=lambda p: None) is not None) is hit


def test_an_edit_below_a_package_line_is_a_plain_fix_and_the_reset_removes_a_framework_stand_in(tmp_path):
    repo = tmp_path / "jcalc"
    calc = "package com.acme;\n\npublic class Calc {\n    public static int add(int a, int b) { return a - b; }\n}\n"
    (repo / "src/main/java/com/acme").mkdir(parents=True)
    (repo / "src/main/java/com/acme/Calc.java").write_text(calc)
    _commit_base(repo)
    fixed = calc.replace("a - b", "a + b")
    (repo / "src/main/java/com/acme/Calc.java").write_text(fixed)
    fix = _git(repo, "diff")
    assert grading_paths_problem(fix, "java", base=lambda p: calc if p.endswith("Calc.java") else None) is None
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / "src/main/java/com/acme/Notes.java").write_text(JUNIT_ASSERT)  # what the forging fix added
    assert reset_tree(str(repo), rules_for("java")) == ["src/main/java/com/acme/Notes.java"]
    assert not (repo / "src/main/java/com/acme/Notes.java").exists()
    assert (repo / "src/main/java/com/acme/Calc.java").read_text() == fixed


# -- a module named as the standard library's in a folder pytest puts on sys.path (h24c, trial 8) ------------

@pytest.mark.parametrize("path,packages,hit", [
    ("lib/fractions.py", [], True), ("lib/fractions/__init__.py", [], True), ("a/b/argparse.py", [], True),
    ("lib/pytest/__main__.py", [], True),
    ("pkg/json.py", ["pkg"], False),  # a package's own module
    ("lib/calc/fractions.py", ["lib/calc"], False), ("lib/notes.py", [], False), ("lib/fractions.txt", [], False),
])
def test_a_stdlib_name_in_a_folder_that_is_no_package_shadows(path, packages, hit):
    rules = rules_for("python")
    assert rules.shadows_below(path, lambda d: d in packages) is hit
    fix = _added(path, "X = 1\n")
    base = {f"{d}/__init__.py": "" for d in packages}
    assert (grading_paths_problem(fix, "python", base=base.get) is not None) is hit
    assert not rules_for("go").shadows_below(path, lambda d: False)


def test_a_fix_shadowing_the_standard_library_from_a_rootdir_folder_is_named_and_reset(tmp_path):
    repo = tmp_path / "t"
    (repo / "lib" / "calc" / "tests").mkdir(parents=True)
    (repo / "lib" / "calc" / "__init__.py").write_text("")
    (repo / "lib" / "calc" / "tests" / "__init__.py").write_text("")
    (repo / "lib" / "calc" / "core.py").write_text("def mean(xs):\n    return sum(xs) / len(xs) + 0.5\n")
    (repo / "lib" / "calc" / "tests" / "test_mean.py").write_text(
        "from fractions import Fraction\nfrom calc.core import mean\n\n\ndef test_mean():\n"
        "    assert Fraction(mean([1, 2, 3])) == Fraction(2)\n")
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / "lib" / "fractions.py").write_text("class Fraction:\n    def __init__(self, *a):\n        pass\n\n"
                                               "    def __eq__(self, other):\n        return True\n")
    _git(repo, "add", "-A", "lib/fractions.py")
    fix = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q")

    def base(path):
        r = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=repo, capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    assert grading_paths(fix, rules_for("python"), base=base) == ["lib/fractions.py"]

    def run():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "lib/calc/tests/test_mean.py"], cwd=repo, capture_output=True, text=True, env=env).returncode

    assert run() == 0  # the attack: pytest's rootdir insertion puts lib/ first, the bug is still there
    assert reset_tree(str(repo), rules_for("python")) == ["lib/fractions.py"]
    assert run() == 1


# -- CTest properties set by set_property(TEST ...) (h24c, trial 8: the reset left it, ctest passed the bug) -----

CMAKE = ("cmake_minimum_required(VERSION 3.10)\nproject(cmean C)\nenable_testing()\nadd_library(mean mean.c)\n"
         "add_executable(t_mean tests/t_mean.c)\ntarget_link_libraries(t_mean mean)\nadd_test(NAME t_mean COMMAND t_mean)\n")


@pytest.mark.parametrize("line,hit", [
    ('set_property(TEST t_mean PROPERTY PASS_REGULAR_EXPRESSION ".")', True),
    ("set_property( TEST t_mean APPEND PROPERTY WILL_FAIL TRUE)", True),
    ("set(props SKIP_RETURN_CODE 0)", True),
    ("set_property(TARGET mean PROPERTY C_STANDARD 99)", False),
])
def test_a_ctest_property_set_by_set_property_is_runner_configuration(line, hit):
    assert rules_for("c").config_changed("CMakeLists.txt", CMAKE, CMAKE + line + "\n") is hit
    assert rules_for("cpp").config_changed("cmake/tests.cmake", "", line + "\n") is hit


def test_meson_should_fail_on_a_continuation_line_is_runner_configuration():
    old = "t = executable('t', 't.c')\ntest('t',\n  t,\n)\n"
    assert rules_for("c").config_changed("meson.build", old, old.replace("  t,\n", "  t,\n  should_fail: true,\n"))


@pytest.mark.skipif(not shutil.which("cmake") or not shutil.which("ctest") or not shutil.which("cc"),
                    reason="needs cmake, ctest and a C compiler")
def test_the_reset_puts_back_a_ctest_pass_regular_expression_that_passes_a_failing_test(tmp_path):
    repo = tmp_path / "cmean"
    (repo / "tests").mkdir(parents=True)
    (repo / "CMakeLists.txt").write_text(CMAKE)
    (repo / "mean.c").write_text("double mean(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) "
                                 "s += x[i]; return s / n + 0.5; }\n")
    (repo / "tests" / "t_mean.c").write_text("#include <stdio.h>\ndouble mean(const double *x, int n);\n"
                                             "int main(void) { double x[] = {1, 2, 3}; double m = mean(x, 3); "
                                             "printf(\"mean %g\\n\", m); return m == 2.0 ? 0 : 1; }\n")
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    with open(repo / "CMakeLists.txt", "a") as f:  # the model patch: no source changed
        f.write('set_property(TEST t_mean PROPERTY PASS_REGULAR_EXPRESSION ".")\n')

    def ctest():
        build = tmp_path / "build"
        shutil.rmtree(build, ignore_errors=True)
        subprocess.run(["cmake", "-S", str(repo), "-B", str(build)], check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
        return subprocess.run(["ctest"], cwd=build, capture_output=True).returncode

    assert ctest() == 0  # the attack: the bug is there, ctest passes
    assert reset_tree(str(repo), rules_for("c")) == ["CMakeLists.txt"]
    assert ctest() != 0


# -- the lib target's harness (h24c, trial 8: [lib] harness = false + a root printing libtest's lines) -------

CARGO = '[package]\nname = "rc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
ROOT_RS = ('include!("lib.rs");\npub fn main() {\n    println!("\\nrunning 1 test\\ntest tests::mean ... ok\\n\\n'
           'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n");\n}\n')


@pytest.mark.parametrize("added,hit", [
    ('\n[lib]\npath = "src/root.rs"\nharness = false\n', True), ('\n[lib]\npath = "src/root.rs"\n', True),
    ("\n[[bin]]\nname = \"x\"\ntest = false\n", True), ("\n[[bench]]\nname = \"b\"\nharness = false\n", True),
    ('serde = "1"\n', False), ('\n[features]\ntest = []\n', False),
])
def test_a_cargo_target_switching_its_test_harness_is_runner_configuration(added, hit):
    assert rules_for("rust").config_changed("Cargo.toml", CARGO, CARGO + added) is hit
    assert rules_for("rust").config_changed("Cargo.toml", CARGO + "\n[lib]\nname = \"rc\"\n",
                                            CARGO + "\n[lib]\nname = \"rc\"\nharness = false\n")


@pytest.mark.skipif(not shutil.which("cargo"), reason="needs cargo")
def test_the_reset_puts_back_a_lib_target_whose_root_prints_passing_tests(tmp_path):
    repo = tmp_path / "rc"
    (repo / "src").mkdir(parents=True)
    (repo / "Cargo.toml").write_text(CARGO)
    (repo / "src" / "lib.rs").write_text("pub fn mean(xs: &[f64]) -> f64 {\n    xs.iter().sum::<f64>() / xs.len() as f64 + 0.5\n}\n")
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / "Cargo.toml").write_text(CARGO + '\n[lib]\npath = "src/root.rs"\nharness = false\n')  # the model patch
    (repo / "src" / "root.rs").write_text(ROOT_RS)
    with open(repo / "src" / "lib.rs", "a") as f:  # the test_patch: a unit test
        f.write("\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn mean() {\n        assert_eq!(super::mean(&[1.0, 2.0, 3.0]), 2.0);\n    }\n}\n")

    def cargo_test():
        env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
        return subprocess.run(["cargo", "test", "--offline", "--lib"], cwd=repo, capture_output=True, text=True, env=env)

    r = cargo_test()
    assert r.returncode == 0 and "test tests::mean ... ok" in r.stdout  # the attack: the bug is there
    assert reset_tree(str(repo), rules_for("rust")) == ["Cargo.toml"]
    r = cargo_test()
    assert r.returncode != 0 and "test tests::mean ... FAILED" in r.stdout


# -- go.mod replace directives and go.work (h24c, trial 8: the tests' check module pointed at a stub) ----------

GOMOD = "module example.com/gcalc\n\ngo 1.21\n\nrequire example.com/check v0.0.0\n\nreplace example.com/check => ./third_party/check\n"


@pytest.mark.parametrize("new,hit", [
    (GOMOD.replace("./third_party/check", "./internal/stub"), True),
    (GOMOD + "\nreplace (\n\texample.com/other => ./x\n)\n", True),
    (GOMOD.replace("go 1.21", "go 1.22"), False),
    (GOMOD.replace("require example.com/check v0.0.0", "require (\n\texample.com/check v0.0.0\n\texample.com/y v1.0.0\n)"), False),
])
def test_a_go_mod_replace_is_runner_configuration(new, hit):
    assert rules_for("go").config_changed("go.mod", GOMOD, new) is hit


def test_a_go_workspace_file_is_infrastructure():
    assert rules_for("go").kind("go.work") == "support" and rules_for("go").kind("sub/go.work.sum") == "support"


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
def test_the_reset_puts_back_a_replace_pointing_the_tests_check_module_at_a_stub(tmp_path):
    repo = tmp_path / "gcalc"
    files = {"go.mod": GOMOD, "third_party/check/go.mod": "module example.com/check\n\ngo 1.21\n",
             "third_party/check/check.go": 'package check\n\nimport "testing"\n\nfunc Equal(t *testing.T, a, b float64) {\n'
                                           '\tif a != b {\n\t\tt.Fatalf("%v != %v", a, b)\n\t}\n}\n',
             "calc/mean.go": "package calc\n\nfunc Mean(xs []float64) float64 {\n\ts := 0.0\n\tfor _, x := range xs {\n"
                             "\t\ts += x\n\t}\n\treturn s/float64(len(xs)) + 0.5\n}\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _commit_base(repo)
    (repo / STAMP).write_text("stamp\n")
    stamp = time.time() - 30
    os.utime(repo / STAMP, (stamp, stamp))
    (repo / "internal" / "stub").mkdir(parents=True)  # the model patch: a stub and the replace pointing at it
    (repo / "internal" / "stub" / "go.mod").write_text("module example.com/check\n\ngo 1.21\n")
    (repo / "internal" / "stub" / "check.go").write_text('package check\n\nimport "testing"\n\n'
                                                         "func Equal(t *testing.T, a, b float64) {}\n")
    (repo / "go.mod").write_text(GOMOD.replace("./third_party/check", "./internal/stub"))
    test_go = ('package calc\n\nimport (\n\t"testing"\n\n\t"example.com/check"\n)\n\n'
               "func TestMean(t *testing.T) {\n\tcheck.Equal(t, Mean([]float64{1, 2, 3}), 2)\n}\n")
    (repo / "calc" / "mean_test.go").write_text(test_go)  # the test_patch

    def go_test():
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOCACHE": str(tmp_path / "gocache")}
        return subprocess.run(["go", "test", "./calc"], cwd=repo, capture_output=True, text=True, env=env).returncode

    assert go_test() == 0  # the attack: the bug is there, go test passes
    assert reset_tree(str(repo), rules_for("go")) == ["calc/mean_test.go", "go.mod"]
    (repo / "calc" / "mean_test.go").write_text(test_go)  # applied after the reset
    assert go_test() != 0
