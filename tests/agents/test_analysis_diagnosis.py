"""Repository Analysis (profile and ranked candidates for every language), the diagnosis rules the
loop acts on, toolchain constraints, and the pool's offer of similar repositories."""

from __future__ import annotations

import pytest

from agents.analysis import analyze, declared_dependencies
from agents.diagnosis import diagnose, unreachable_source
from agents.ecosystems.toolchain import allowed, constrained, satisfies
from agents.models import Instance
from tests.agents.ecosystems.conftest import make_tree


def inst(tree, language=None) -> Instance:
    return Instance(instance_id="a__b-1", repo="a/b", base_commit=tree.commit, patch="p", test_patch="t",
                    language=language)


def test_profile_names_ecosystems_manifests_runners_ci_and_ranked_candidates(tmp_path):
    tree = make_tree(tmp_path, {
        "go.mod": "module example.com/x\n\ngo 1.21\n\nrequire (\n\tgithub.com/stretchr/testify v1.8.0\n)\n",
        "x_test.go": "package x\n", "Makefile": "test:\n\tgo test ./...\n",
        ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - uses: actions/setup-go@v4\n"
                                    "        with:\n          go-version: [1.21, 1.22]\n"})
    p = analyze(tree, inst(tree))
    assert p.language == "go" and not p.language_given
    assert [c.label for c in p.candidates] == ["go:go"]  # no Python last resort beside a claiming ecosystem
    assert {"go.mod", "Makefile"} <= set(p.manifests) and "go-modules" in p.build_systems
    assert "go-test" in p.runners and p.ci == [".github/workflows/ci.yml"]
    assert p.toolchain_hints["go"] == ["1.21", "1.22"] and p.dependencies == ["github.com/stretchr/testify"]


def test_a_row_language_restricts_the_candidates(tmp_path):
    tree = make_tree(tmp_path, {"setup.py": "", "package.json": '{"name": "x"}', "t/a.test.js": ""})
    assert [c.ecosystem for c in analyze(tree, inst(tree, "javascript")).available()] == ["node"]
    assert [c.ecosystem for c in analyze(tree, inst(tree)).available()][0] == "python"
    p = analyze(tree, inst(tree, "kotlin"))  # -> java: no build file it knows
    assert p.language == "java" and not p.available() and "java" in p.no_route


def test_an_unknown_layout_has_no_candidate_and_says_so(tmp_path):
    tree = make_tree(tmp_path, {"calc.c": "int main(){}", "build.sh": "cc calc.c"})
    p = analyze(tree, inst(tree, "c"))
    assert p.available() == [] and "no build any route knows" in p.no_route


def test_declared_dependencies_of_every_manifest(tmp_path):
    tree = make_tree(tmp_path, {
        "package.json": '{"dependencies": {"react": "^18"}, "devDependencies": {"jest": "29"}}',
        "Cargo.toml": '[package]\nname="x"\n[dependencies]\nserde = "1"\n[dev-dependencies]\ntokio = "1"\n',
        "pyproject.toml": '[project]\nname="x"\ndependencies=["requests>=2", "numpy"]\n',
        "requirements.txt": "pytest==7\n-r other.txt\n",
        "pom.xml": "<dependency><groupId>junit</groupId><artifactId>junit</artifactId></dependency>",
        "composer.json": '{"require": {"php": ">=8", "nesbot/carbon": "^2"}}',
        "Gemfile": "gem 'rake'\ngem \"rspec\", '~> 3'\n"})
    assert declared_dependencies(tree) == sorted(["react", "jest", "serde", "tokio", "requests", "numpy", "pytest",
                                                  "junit", "nesbot/carbon", "rake", "rspec"])


@pytest.mark.parametrize("text,eco,tool,kind,want", [
    ("make: tclsh: No such file or directory", "cfamily", None, "missing_system", ["command tclsh"]),
    ("You need tcl 8.5 or newer in order to run the Redis test", "cfamily", None, "missing_system",
     ["command tclsh"]),
    ("/bin/sh: 1: xxd: not found", "cfamily", None, "missing_system", ["command xxd"]),
    ("src/jv.c:12:10: fatal error: oniguruma.h: No such file or directory", "cfamily", None, "missing_system",
     ["header oniguruma.h"]),
    ("x.c:1:10: fatal error: openssl/ssl.h: No such file or directory", "rust", None, "missing_system",
     ["header openssl/ssl.h"]),
    ("./jq: error while loading shared libraries: libonig.so.5: cannot open shared object file: No such file",
     "cfamily", None, "missing_system", ["library libonig.so.5"]),
    ("/usr/bin/ld: cannot find -lonig: No such file or directory", "cfamily", None, "missing_system",
     ["link onig"]),
    ("Package libxml-2.0 was not found in the pkg-config search path.", "python", None, "missing_system",
     ["pkgconfig libxml-2.0"]),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'xmllint'", "python", None, "missing_system",
     ["command xmllint"]),
    ("Error: spawn chromium ENOENT", "node", None, "missing_system", ["command chromium"]),
    ("calc.go:3:2: package io/fs is not in GOROOT (/usr/local/go/src/io/fs)", "go", "go 1.15.15",
     "toolchain_too_old", ">=1.16"),
    ("go: module x requires go >= 1.21 (running go 1.19.8; GOTOOLCHAIN=local)", "go", "go 1.19.8",
     "toolchain_too_old", ">=1.21"),
    ("./cobra_test.go:259:9: undefined: os.WriteFile", "go", "go 1.15.15", "toolchain_too_old", ">=1.16"),
    ("./a_test.go:9:4: t.Setenv undefined (type *testing.T has no field or method Setenv)", "go", "go 1.16.15",
     "toolchain_too_old", ">=1.17"),
    # several names: the newest floor, so one re-plan does it
    ("./a.go:3: undefined: io.ReadAll\n./b.go:7: undefined: strings.Cut\n./c.go:1: undefined: os.ReadFile",
     "go", "go 1.15.15", "toolchain_too_old", ">=1.18"),
    ("package `foo v1.2.0` cannot be built because it requires rustc 1.70 or newer", "rust", "rust 1.63",
     "toolchain_too_old", ">=1.70"),
    # cargo since 1.7x: the package list below the error line (a rust-version past the rustc)
    ("error: rustc 1.97.0 is not supported by the following packages:\n  uv@0.9.0 requires rustc 1.98\n"
     "  uv-cli@0.9.0 requires rustc 1.98\n", "rust", "rust 1.97", "toolchain_too_old", ">=1.98"),
    ("error: failed to parse manifest\nCaused by:\n  feature `edition2024` is required", "rust", "rust 1.78",
     "toolchain_too_old", ">1.78"),
    # E0658: a feature a later release stabilised (the class of a pin past the newest rustc here)
    ("   Compiling demo v0.1.0 (/testbed)\nerror[E0658]: use of unstable library feature `unsigned_is_multiple_of`\n"
     " --> src/lib.rs:1:40\n\nerror: could not compile `demo` (lib) due to 1 previous error\n", "rust", "rust 1.85",
     "toolchain_too_old", ">1.85"),
    # nushell's libmimalloc-sys on bullseye's gcc 10: a newer Rust image (newer suite, newer gcc)
    ("warning: libmimalloc-sys@0.1.37: c_src/mimalloc/include/mimalloc/prim.h:240:21: error: "
     "'__builtin_thread_pointer' is not supported on this target", "rust", "rust 1.78", "toolchain_too_old", ">1.78"),
    ("has been compiled by a more recent version of the Java Runtime (class file version 55.0)", "java", "jdk 8",
     "toolchain_too_old", ">=11"),
    # square/javapoet: error-prone's bundled javac 9 reads the JDK's own modules: the JDK is too new
    ("[ERROR]   bad class file: /modules/java.base/java/io/IOException.class\n[ERROR]     class file has wrong "
     "version 55.0, should be 53.0", "java", "jdk 11", "toolchain_too_new", "<10"),
    ("error: bad class file: /root/.m2/r/x.jar(Foo.class)\n    class file has wrong version 61.0, should be 55.0",
     "java", "jdk 11", "toolchain_too_old", ">=17"),
    ("E   ModuleNotFoundError: No module named 'yaml'", "python", "3.9", "missing_module", ["yaml"]),
])
def test_diagnoses_the_loop_acts_on(text, eco, tool, kind, want):
    d = diagnose(text, eco, tool)
    assert d is not None and d.kind == kind
    if kind == "missing_system":  # a need for Debian's index, never a package from a table
        assert [n.label for n in d.needs] == want and d.packages == []
    else:
        assert (d.packages if isinstance(want, list) else d.toolchain) == want


def test_skip_reasons_name_the_interpreter_they_need_and_nothing_else_does():
    assert diagnose("Skipped: requires python3.11", "python", "3.9", scope="skip").toolchain == ">=3.11"
    assert diagnose("Skipped: Python 3.10+ only", "python", "3.9", scope="skip").toolchain == ">=3.10"
    assert diagnose("Skipped: requires python3.11", "python", "3.9") is None  # not a skip reason
    assert diagnose("Skipped: requires network", "python", "3.9", scope="skip") is None
    assert diagnose("error: file not found", "cfamily") is None


TRYBUILD_MISMATCH = (
    "     Running tests/compiletest.rs (target/debug/deps/compiletest-0123)\n\nrunning 1 test\n"
    "test tests/ui/gated.rs ... mismatch\n\nEXPECTED:\n\u2508\u2508\u2508\n"
    "error[E0658]: use of unstable library feature `demo_gate`\n --> tests/ui/gated.rs:3:5\n\u2508\u2508\u2508\n\n"
    "ACTUAL OUTPUT:\n\u2508\u2508\u2508\nerror[E0658]: use of unstable library feature 'demo_gate'\n"
    " --> tests/ui/gated.rs:3:5\n\u2508\u2508\u2508\n\ntest ui ... FAILED\n\nfailures:\n\n---- ui stdout ----\n"
    "thread 'ui' panicked at 1 of 1 tests failed\n\nfailures:\n    ui\n\n"
    "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.50s\n")
"""A compile-fail (trybuild) test's report: the E0658 it prints is the test's expected or actual
compiler output, not the build's."""


def test_an_e0658_a_compile_fail_test_prints_is_no_toolchain_diagnosis():
    """E0658 names the toolchain only where cargo itself failed to compile (its `could not compile`
    follows before any test binary's report): a trybuild/compile-fail test prints the compiler's
    E0658 as its expected or actual output, on any toolchain; a later crate's compile failure
    in the same text does not make it the build's."""
    assert diagnose(TRYBUILD_MISMATCH, "rust", "rust 1.85") is None
    later = TRYBUILD_MISMATCH + ("   Compiling demo v0.1.0 (/testbed)\nerror[E0425]: cannot find function `new_api`\n"
                                 "error: could not compile `demo` (test \"basic\") due to 1 previous error\n")
    assert diagnose(later, "rust", "rust 1.85") is None
    built = later + ("   Compiling demo v0.1.0 (/testbed)\nerror[E0658]: use of unstable library feature `x`\n"
                     "error: could not compile `demo` (lib) due to 1 previous error\n")
    d = diagnose(built, "rust", "rust 1.85")
    assert d is not None and d.rule == "rust-unstable-feature" and d.detail.endswith("feature `x`")
    verbose = ("   Compiling demo v0.1.0 (/testbed)\nerror[E0658]: use of unstable library feature `x`\n"
               "     Running `rustc --crate-name other --edition=2021 src/lib.rs`\n"
               "error: could not compile `demo` (lib) due to 1 previous error\n")  # cargo -v: a rustc run
    assert diagnose(verbose, "rust", "rust 1.85").rule == "rust-unstable-feature"
    doc = ("   Doc-tests demo\n\nrunning 1 test\ntest src/lib.rs - f (line 3) ... FAILED\n\n"
           "---- src/lib.rs - f (line 3) stdout ----\nerror[E0658]: use of unstable library feature `x`\n")
    assert diagnose(doc, "rust", "rust 1.85") is None


def test_toolchain_constraints():
    assert satisfies("1.19.8", ">=1.16") and not satisfies("1.15.15", ">=1.16") and satisfies("3.11.4", "<3.12")
    assert satisfies("1.21.13", ">1.19.8") and not satisfies("1.19.8", ">1.19.8") and satisfies("11.0.2", "11")
    assert allowed(["3.9", "3.11", "3.13"], ">=3.10", ["3.11"]) == ["3.13"]
    assert constrained(["1.15.15", "1.19.8", "1.21.13"], "1.15", ">=1.16") == "1.19.8"
    assert constrained(["1.15.15", "1.19.8"], "1.19", "<1.16") == "1.15.15"
    assert constrained(["1.15.15"], "1.15", None) == "1.15"
    with pytest.raises(ValueError, match=">=1.30"):
        constrained(["1.15.15"], "1.15", ">=1.30")


def test_an_undefined_name_of_the_projects_own_packages_is_not_the_toolchains():
    assert diagnose("./x_test.go:3:9: undefined: cobra.NewThing", "go", "go 1.15.15") is None
    assert diagnose("./x_test.go:3:9: undefined: os.Frobnicate", "go", "go 1.15.15") is None  # not in the table
    assert diagnose("./x_test.go:3:9: undefined: os.WriteFile", "python", "3.9") is None  # Go's rule only


@pytest.mark.parametrize("text, want", [
    ("ruby:ruby: RubyGems (rubygems.org) is unreachable and fastlane/fastlane has no vendored dependencies: "
     "bundle install cannot run", "RubyGems (rubygems.org)"),
    ("rust:rust: cargo dependencies from git repositories cannot be fetched here (GitHub is unreachable): "
     "hyper-util (https://github.com/hyperium/hyper-util)", "GitHub"),
    ("java:gradle: Gradle build (wrapper 7.6.2): the wrapper cannot download its Gradle distribution here "
     "(that server is unreachable)", "Gradle distribution server (services.gradle.org)"),
    ("BUILD FAILED\n\tat x\njava.net.UnknownHostException: projectlombok.org\n", "projectlombok.org"),
    ("curl: (6) Could not resolve host: static.rust-lang.org", "static.rust-lang.org"),
    ("npm ERR! request to https://x failed, reason: getaddrinfo ENOTFOUND cdn.example.com", "cdn.example.com"),
    ("go: git.example.org/m@v1: Get \"https://git.example.org\": dial tcp: lookup git.example.org on 10.0.0.1:53: "
     "no such host", "git.example.org"),
    ("no test fails before and passes after the patch", None),
    # a registry this host reaches: the build's own fault, never network-bound
    ("npm ERR! request to https://x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org", None),
    ("dial tcp: lookup proxy.golang.org: no such host\njava.net.UnknownHostException: projectlombok.org",
     "projectlombok.org"),
    ("error: could not compile `nu` (exit 101)", None),
])
def test_a_failure_that_names_an_unreachable_source(text, want):
    got = unreachable_source(text)
    assert (got.split(": ", 1)[0] if got else None) == want


def test_the_refusals_the_ecosystems_raise_are_read_as_unreachable():
    """The message agents.ecosystems.debian.from_debian raises (Ruby, PHP) is the text read."""
    from agents.ecosystems.debian import from_debian
    from envpool.errors import EnvBuildError

    with pytest.raises(EnvBuildError) as e:
        from_debian("bookworm", lambda suite: ([], ["surely-not-a-gem"], [], []), registry="RubyGems (rubygems.org)",
                    installer="bundle install", noun="gems", repo="acme/widget", instance_id="acme__widget-1")
    assert unreachable_source(e.value.message).startswith("RubyGems (rubygems.org): ")
