"""The rule set's `tooling` and the split of a fix into its core and its tooling hunks
(`envpool.testpaths.TestPathRules.is_tooling`, `lists_only`; `envpool.patches.tooling_split`):
the verification's tooling check runs the core (issue 24: the fix may not touch what grades it,
whatever route its tooling takes)."""

from __future__ import annotations

import subprocess

import pytest

from envpool.patches import files_in_patch, tooling_split
from envpool.testpaths import RuleSetError, check_rule_data, lists_only, rules_for


def _mod(path: str, old: list[str], new: list[str], start: int = 1, header: str | None = None) -> str:
    """A git diff section changing lines `old` into `new` at line `start` of `path` (no context)."""
    head = header or f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
    return (head + f"@@ -{start},{len(old)} +{start},{len(new)} @@\n"
            + "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new))


def _add(path: str, lines: list[str]) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines))


CODE = _mod("src/calc.py", ["    return a - b"], ["    return a + b"], start=3)


@pytest.mark.parametrize("path,language", [
    (".babelrc", "javascript"), (".swcrc", None), (".mocharc.yml", "javascript"), (".gitattributes", "python"),
    (".cargo/config.toml", "rust"), (".github/workflows/ci.yml", "go"), ("pkg/.config/pytest/x.ini", "python"),
    ("webpack.config.js", "javascript"), ("app/vitest.config.mts", "typescript"), ("karma.conf.js", None),
    ("Makefile", "python"), ("lib/GNUmakefile", "c"), ("rules.mk", "c"), ("Makefile.am", "c"),
    ("configure.ac", "c"), ("CMakeLists.txt", "cpp"), ("cmake/Flags.cmake", "c"), ("meson.build", "c"),
    ("BUILD.bazel", "go"), ("tools/defs.bzl", "java"), ("pom.xml", "java"), ("app/build.gradle.kts", "kotlin"),
    ("gradle.properties", "java"), ("Cargo.toml", "rust"), ("crates/x/build.rs", "rust"), ("go.mod", "go"),
    ("go.work", "go"), ("package.json", "javascript"), ("tsconfig.build.json", "typescript"),
    ("jsconfig.json", "javascript"), ("setup.py", "python"), ("setup.cfg", "python"), ("pyproject.toml", "python"),
    ("tox.ini", "python"), ("noxfile.py", "python"), ("Gemfile", "ruby"), ("Rakefile", "ruby"),
    ("x.gemspec", "ruby"), ("composer.json", "php"), ("phpunit.xml.dist", "php"), ("phpstan.neon.dist", "php"),
    ("pyproject.toml", None),
])
def test_tooling_paths(path, language):
    """The class across ecosystems: dotfiles and dot-folders, `*.config.*`, the build systems,
    the manifests (under the row's language; no language: every group)."""
    assert rules_for(language).is_tooling(path), path


@pytest.mark.parametrize("path,language", [
    ("src/calc.py", "python"), ("docs/usage.rst", "python"), ("README.md", None), ("templates/page.html", "python"),
    ("src/parse.y", "c"), ("src/lex.l", "c"), ("data/fixture.json", "javascript"), ("lib/configure_app.py", "python"),
    ("src/config.py", "python"), ("lib/config/index.js", "javascript"), ("package.json", "python"),
    ("src/main.rs", "rust"),
])
def test_not_tooling(path, language):
    """Docs, templates, grammars, fixtures and code (a module named config) are not tooling; a
    language's manifests belong to its group (package.json is not a Python row's tooling)."""
    assert not rules_for(language).is_tooling(path), path


def test_the_rule_set_checks_the_tooling_key():
    with pytest.raises(RuleSetError, match="tooling"):
        check_rule_data({"groups": {"common": {"tooling": {"names": "Makefile"}}}})
    with pytest.raises(RuleSetError, match="tooling"):
        check_rule_data({"groups": {"common": {"tooling": {"files": ["x"]}}}})
    check_rule_data({"groups": {"common": {"tooling": {"names": ["Makefile"], "dirs": [".*"]}}}})


def test_no_tooling_leaves_the_patch_as_it_is():
    patch = CODE + _mod("docs/usage.rst", ["old"], ["new"])
    split = tooling_split(patch, "python")
    assert split.paths == [] and split.kept == [] and split.core == patch


def test_a_dotfile_goes_whole():
    patch = CODE + _add(".babelrc", ['{"plugins": ["./tools/rewrite-expect"]}'])
    split = tooling_split(patch, "javascript")
    assert split.paths == [".babelrc"] and split.core == CODE


def test_pyproject_hunks_go_and_code_stays():
    """A harmless version bump and an (unlisted) plugin route in pyproject.toml: both hunks are
    tooling, the code is the core."""
    toml = ("diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n+++ b/pyproject.toml\n"
            "@@ -2,1 +2,1 @@\n-version = \"1.0\"\n+version = \"1.1\"\n"
            "@@ -9,0 +10,1 @@\n+entry-points.\"x\".y = \"calc.plugin\"\n")
    split = tooling_split(CODE + toml, "python")
    assert split.paths == ["pyproject.toml"] and split.core == CODE


def test_package_json_and_tsconfig():
    patch = (_mod("package.json", ['  "version": "1.0.0",'], ['  "version": "1.0.1",'], start=3)
             + _mod("src/index.js", ["module.exports = 1;"], ["module.exports = 2;"])
             + _mod("tsconfig.json", ['  "strict": false'], ['  "strict": true'], start=4))
    split = tooling_split(patch, "javascript")
    assert split.paths == ["package.json", "tsconfig.json"]
    assert files_in_patch(split.core) == ["src/index.js"]


def test_a_source_list_hunk_stays_and_the_rest_goes(tmp_path):
    """Makefile: the hunk adding the new source file to SRCS stays in the core (the fix still
    builds), the one adding a flag goes; the kept hunk's new-side start moves by what the dropped
    one added, and the core applies."""
    base = ["CFLAGS = -O2", "", "SRCS = \\", "\tmain.c \\", "\tutil.c", "", "all: prog", "\tcc $(SRCS)"]
    make = ("diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n"
            "@@ -1,2 +1,3 @@\n CFLAGS = -O2\n+CFLAGS += -DFORCE_PASS\n \n"
            "@@ -4,3 +5,4 @@\n \tmain.c \\\n-\tutil.c\n+\tutil.c \\\n+\tsrc/new.c\n \n")
    patch = make + _add("src/new.c", ["int helper(void) { return 1; }"])
    split = tooling_split(patch, "c")
    assert split.paths == ["Makefile"] and split.kept == []
    assert "FORCE_PASS" not in split.core and "+\tsrc/new.c" in split.core
    assert "@@ -4,3 +4,4 @@" in split.core
    (tmp_path / "Makefile").write_text("\n".join(base) + "\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=tmp_path, input=split.core, text=True, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=split.core, text=True, check=True)
    assert "src/new.c" in (tmp_path / "Makefile").read_text() and "FORCE" not in (tmp_path / "Makefile").read_text()
    # a patch whose every tooling hunk lists its own files: kept, no core run needed
    only = _mod("CMakeLists.txt", ["  util.c"], ["  util.c", "  new.c"], start=3) + _add("new.c", ["int x;"])
    split = tooling_split(only, "c")
    assert split.paths == [] and split.kept == ["CMakeLists.txt"] and split.core == only


@pytest.mark.parametrize("added,removed,ok", [
    (["\tsrc/new.c \\"], [], True),
    (['    "new.cc",'], [], True),                    # Bazel srcs by file name
    (["  'new.c',"], [], True),                      # meson
    (["    new"], [], True),                         # by stem (a target)
    (["  ${CMAKE_CURRENT_SOURCE_DIR}/src/new.c"], [], True),
    (["SRCS = a.c new.c"], ["SRCS = a.c"], True),    # an entry added to a one-line list
    (["\trenamed.c \\"], ["\told.c \\"], True),      # a rename
    (["SRCS += new.c"], [], False),                  # a word and `+=` besides the name
    (["addopts = -p new"], [], False),
    (["new.c"], ["# new.c"], False),                 # uncommented: a `#` removed
    (["  other.c"], [], False),                      # a file the patch does not add
    ([], [], False),
    (["  $(shell ./new.sh)"], [], False),
])
def test_lists_only(added, removed, ok):
    assert lists_only(added, removed, ["src/new.c", "new.cc", "renamed.c"], ["old.c"]) is ok


def test_c_quoted_paths():
    """Git quotes a path with special bytes (`"a/.b\\141belrc"`): decoded, it is a dotfile."""
    quoted = ('diff --git "a/.b\\141belrc" "b/.b\\141belrc"\n--- "a/.b\\141belrc"\n+++ "b/.b\\141belrc"\n'
              '@@ -1 +1 @@\n-{}\n+{"plugins": ["x"]}\n')
    split = tooling_split(CODE + quoted, "javascript")
    assert split.paths == [".babelrc"] and split.core == CODE
    tab = ('diff --git "a/conf/\\tMakefile" "b/conf/\\tMakefile"\n--- "a/conf/\\tMakefile"\n'
           '+++ "b/conf/\\tMakefile"\n@@ -1 +1 @@\n-a\n+b\n')
    assert tooling_split(tab, "c").paths == []  # "\tMakefile" is not named Makefile
    nested = ('diff --git "a/.con\\146ig/x" "b/.con\\146ig/x"\n--- "a/.con\\146ig/x"\n+++ "b/.con\\146ig/x"\n'
              '@@ -1 +1 @@\n-a\n+b\n')
    assert tooling_split(CODE + nested, "python").paths == [".config/x"]


def test_only_tooling_leaves_an_empty_core_and_a_rename_goes_whole():
    patch = _add(".config/pytest.ini", ["[pytest]", "addopts = -p evil"])
    assert tooling_split(patch, "python") == ([".config/pytest.ini"], "", [])
    rename = ("diff --git a/setup.cfg b/setup.cfg.bak\nsimilarity index 100%\nrename from setup.cfg\n"
              "rename to setup.cfg.bak\n")
    split = tooling_split(CODE + rename, "python")
    assert split.paths == ["setup.cfg"] and split.core == CODE


@pytest.mark.parametrize("line,build_file,entries", [
    ("    <module>extra</module>", "pom.xml", ["extra"]), ("add_subdirectory(libs/extra)", "CMakeLists.txt", ["libs/extra"]),
    ("subdir('extra')", "sub/meson.build", ["extra"]), ("include 'core', ':extra:sub'", "settings.gradle", ["core", "extra/sub"]),
    ('include(":extra")', "settings.gradle.kts", ["extra"]), ("use ./extra", "go.work", ["./extra"]),
    ("    <argLine>-javaagent:x.jar</argLine>", "pom.xml", None), ("include_directories(extra)", "CMakeLists.txt", None),
    ("add_subdirectory(extra) # and", "CMakeLists.txt", None),
    ("<module>extra</module><skipTests>true</skipTests>", "pom.xml", None),
    ('include("src/notes.txt")', "CMakeLists.txt", None),      # CMake include() is no Gradle include
    ("use ./crates/calc", ".gitignore", None), ("subdir('lib')", ".gitignore", None),  # the wrong kind of file
    ("<module>extra</module>", "build.gradle", None),
])
def test_module_entries(line, build_file, entries):
    """Only a whole line of a parent build file of the matching kind registers a module folder
    (pom.xml, CMakeLists.txt, meson.build, settings.gradle, go.work); any other element, a second
    statement or the same text in another kind of file does not."""
    from envpool.testpaths import module_entries

    assert module_entries(line, build_file) == entries


SRC = _add("extra/src/main/java/com/acme/Extra.java", ["package com.acme;", "class Extra {}"])
REG = _mod("pom.xml", ["    <module>core</module>"], ["    <module>core</module>", "    <module>extra</module>"])


def test_a_module_the_fix_creates_is_named_and_its_build_files_still_go_from_the_core():
    """Class: a fix that creates a module (java-design-patterns-3564's shape) -- `new_modules`
    names the folder (a build file the patch adds there + a registration in the parent build of
    the matching kind); the core still drops both (a new module's build file can act on its
    siblings: reactor resolution, CMake target commands, configure-time code), the verification
    excuses only that module's own tests (tests/agents/test_tooling_check.py)."""
    from envpool.patches import new_modules

    patch = REG + _add("extra/pom.xml", ["<project/>"]) + SRC
    assert new_modules(patch) == ["extra"]
    split = tooling_split(patch, "java")
    assert split.paths == ["pom.xml", "extra/pom.xml"] and "<module>extra" not in split.core and "Extra.java" in split.core
    assert new_modules(REG + SRC) == []                                    # registered, but no build file there
    assert new_modules(_add("extra/pom.xml", ["<project/>"]) + SRC) == []  # a build file nothing registers
    stray = _mod(".gitignore", ["target/"], ["target/", "use ./extra"]) + _add("extra/go.mod", ["module x"])
    assert new_modules(stray) == []                                        # a registration in the wrong file
    out = _mod("CMakeLists.txt", ["add_subdirectory(core)"], ["add_subdirectory(core)", "add_subdirectory(../x)"])
    assert new_modules(out + _add("../x/CMakeLists.txt", ["add_test(x true)"])) == []
    one_line = _mod("pom.xml", ["<project><modules><module>core</module></modules></project>"],
                    ["<project><modules><module>core</module><module>extra</module></modules></project>"])
    assert new_modules(one_line + _add("extra/pom.xml", ["<project/>"]) + SRC) == ["extra"]  # a one-line pom
    cm = _mod("CMakeLists.txt", ["enable_testing()"], ["enable_testing()", "add_subdirectory(extra)"])
    assert new_modules(cm + _add("extra/CMakeLists.txt", ["add_library(extra extra.c)"])) == ["extra"]


@pytest.mark.parametrize("test_id,ok", [
    ("com.acme.ExtraTest#twice", True), ("com.acme.ExtraTest.twice", True), ("extra/tests/test_x.py::test_a", True),
    ("extra/tests/test_x.py::C::test[1]", True), ("com.acme.CoreTest#twice", False), ("ExtraTestX#a", False),
    ("tests/test_x.py::test_a", False), ("TestAdd", False),
])
def test_names_test_file(test_id, ok):
    from envpool.patches import names_test_file

    files = ["extra/src/test/java/com/acme/ExtraTest.java", "extra/tests/test_x.py"]
    assert names_test_file(test_id, files) is ok


@pytest.mark.parametrize("name,language,harm", [
    ("cmake1", "c", "NDEBUG"), ("cmake2", "c", 'include("src/notes.txt")'), ("rust1", "rust", "build.rs"),
    ("mvn1", "java", "<module>extra"), ("gradle1", "java", "rootProject"), ("meson1", "c", "run_command"),
    ("js1", "javascript", '"main"'), ("rm1", "java", "-    <module>core</module>"),
])
def test_the_module_routes_of_trial_9_keep_nothing_in_the_core(name, language, harm):
    """Trial 9 (an attacker against 1867662's keep rule): a new module's build file acting on an
    existing target (CMake target_compile_definitions), CMake include() of a non-tooling file read
    as a Gradle include, a stray registration in .gitignore vouching for a new build.rs, a reactor
    module shadowing a test library, Gradle allprojects, meson run_command, a package.json main
    switch, a removed registration -- each kept its harmful hunk in the core; now each is a
    tooling path the core drops."""
    patches = {
        "cmake1": _mod("CMakeLists.txt", ["add_test(NAME test_calc COMMAND test_calc)"],
                       ["add_test(NAME test_calc COMMAND test_calc)", "add_subdirectory(extra)"], 7)
                  + _add("extra/CMakeLists.txt", ["add_library(extra extra.c)", "target_compile_definitions(test_calc PRIVATE NDEBUG)"])
                  + _add("extra/extra.c", ["int extra_helper(void) { return 0; }"]),
        "cmake2": _mod("CMakeLists.txt", ["enable_testing()"], ["enable_testing()", 'include("src/notes.txt")'], 6)
                  + _add("src/notes.txt", ["target_compile_definitions(test_calc PRIVATE NDEBUG)"]),
        "rust1": _mod(".gitignore", ["/target"], ["/target", "use ./crates/calc"])
                 + _add("crates/calc/build.rs", ["fn main() { /* rewrite tests */ }"]),
        "mvn1": REG + _add("extra/pom.xml", ["<artifactId>truth</artifactId>"]) + SRC,
        "gradle1": _mod("settings.gradle", ["include 'core'"], ["include 'core'", "include 'extra'"])
                   + _add("extra/build.gradle", ["rootProject.allprojects { test { ignoreFailures = true } }"])
                   + _add("extra/src/main/java/X.java", ["class X {}"]),
        "meson1": _mod("meson.build", ["project('c', 'c')"], ["project('c', 'c')", "subdir('extra')"])
                  + _add("extra/meson.build", ["run_command('sh', '-c', 'sed -i s/x/y/ ../tests/t.c')"])
                  + _add("extra/x.c", ["int x;"]),
        "js1": _mod(".gitignore", ["node_modules"], ["node_modules", "subdir('lib')"])
               + _add("lib/package.json", ['{"main": "alt.js"}']) + _add("lib/alt.js", ["module.exports = 1"]),
        "rm1": _mod("pom.xml", ["    <module>core</module>"], [], 5)
               + "diff --git a/core/src/main/java/A.java b/core/src/main/java/A.java\ndeleted file mode 100644\n"
                 "--- a/core/src/main/java/A.java\n+++ /dev/null\n@@ -1 +0,0 @@\n-class A {}\n",
    }
    split = tooling_split(patches[name], language)
    assert split.paths and harm not in split.core, (split.paths, split.core)
