"""The loop of the one minter (agents.flow) with the fake sandbox: a diagnosis or an attribution
goes back to the agent that can fix it, every round is in the row and the trajectory, and the
row reports the round that verified. The Docker-backed twins are in test_loop_docker.py."""

from __future__ import annotations

import json
from pathlib import Path

from agents.mint_config import MintConfig
from agents.ecosystems.base import Ecosystem, Plan, PlanRequest, TestSpec
from agents.ecosystems.toolchain import constrained
from agents.minter import mint_instance
from agents.models import EnvRecord, StepRecord
from envpool.errors import EnvBuildError
from envpool.fake import FakeImage, FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_repo

PATCH = "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-package calc // bug\n" \
        "+package calc // fixed\n"
TEST_PATCH = "diff --git a/calc_test.go b/calc_test.go\n--- a/calc_test.go\n+++ b/calc_test.go\n@@ -1 +1 @@\n" \
             "-package calc // old test\n+package calc // new test\n"


def events(results: dict[str, str], build_error: str | None = None) -> str:
    """`go test -json` events: one `run` + end per test, or a package that fails to build."""
    lines = []
    if build_error:
        lines.append({"Action": "output", "Package": "example.com/calc", "Output": build_error + "\n"})
        lines.append({"Action": "fail", "Package": "example.com/calc"})
    for test, action in results.items():
        lines.append({"Action": "run", "Package": "example.com/calc", "Test": test})
        lines.append({"Action": action, "Package": "example.com/calc", "Test": test, "Elapsed": 0.01})
    if not build_error:
        lines.append({"Action": "fail" if "fail" in results.values() else "pass", "Package": "example.com/calc"})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def patched(sb) -> bool:
    return any("after_patch" in c for c in sb.commands)


class Toy(Ecosystem):
    """A Go-like ecosystem with two toolchains and scripted test output."""

    name = "go"
    languages = ("go",)

    def __init__(self, versions=("1.15", "1.19"), alternatives=()):
        self.versions = list(versions)
        self.alternatives = list(alternatives)
        self.requests: list[PlanRequest] = []

    def detect(self, tree, language):
        return 10

    def plan(self, tree, instance, touched, images, request=None):
        req = request or PlanRequest()
        self.requests.append(req)
        try:
            v = constrained(self.versions, self.versions[0], req.toolchain, req.avoid)
        except ValueError as e:
            raise EnvBuildError(str(e), instance_id=instance.instance_id) from e
        return Plan(ecosystem="go", toolchain=f"go {v}", image=f"toy:{v}", setup_commands=["fetch-deps"],
                    test_command="go test -json ./...", parser="go_test_json", test_files=["calc_test.go"],
                    test_alternatives=list(self.alternatives))

    def repair(self, plan, command, output, tried):
        return None


def instance_on(tmp_path, language="go"):
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n", "calc_test.go": "package calc // old\n"})
    return make_instance(sha, language, "2021-06-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc",
                         patch=PATCH, test_patch=TEST_PATCH), git_dir


def config(tmp_path) -> MintConfig:
    return MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False})


def steps(res) -> list[StepRecord]:
    return [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]


def test_a_std_package_newer_than_the_toolchain_replans_with_a_newer_one(tmp_path, monkeypatch):
    """The Go failure a new user saw: the fix imports io/fs, the go.mod's Go (1.15) lacks it on
    the after side; Verification attributes it to the toolchain and round 2 builds on Go >= 1.16."""
    eco = Toy()
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")

    def fetch(cmd, sb):  # the toolchain the environment was built on stays in its image
        sb.put_file("/opt/go-version", sb.spec.image.split(":")[1])
        return 0, "ok"

    def tests(cmd, sb):
        if not patched(sb):
            return 1, events({"TestAdd": "fail", "TestOld": "pass"})
        if sb.files.get("/opt/go-version") == b"1.15":
            return 1, events({}, "calc.go:3:2: package io/fs is not in GOROOT (/usr/local/go/src/io/fs)")
        return 0, events({"TestAdd": "pass", "TestOld": "pass"})

    f.on(r"^fetch-deps", fetch)
    f.on(r"go test -json", tests)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and len(res.rounds) == 2
    assert res.rounds[0].toolchain == "go 1.15" and res.rounds[0].attribution.startswith("toolchain")
    assert res.rounds[0].feedback == "replan" and res.rounds[1].toolchain == "go 1.19"
    assert res.interpreter == "go 1.19" and res.FAIL_TO_PASS == ["example.com/calc::TestAdd"]
    assert eco.requests[-1].toolchain == ">=1.16" and eco.requests[-1].avoid == ["1.15"]
    assert [s.rule for s in steps(res) if s.agent == "flow"] == ["round#1", "round#2"]


def test_the_first_test_configuration_finds_nothing_the_second_verifies_round_2(tmp_path, monkeypatch):
    eco = Toy(alternatives=[TestSpec(name="packages", test_command="go test -json -count=1 ./...",
                                     parser="go_test_json", test_files=["calc_test.go"])])
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json -count=1", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    f.on(r"go test -json \./", (0, events({})))  # T1 selects no test
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and [r.test for r in res.rounds] == ["touched", "packages"]
    assert res.rounds[0].outcome == "tests_not_run" and res.rounds[0].feedback == "retest"
    assert sum(1 for s in f.specs if s.network == "bridge") == 1  # one build, two verifications
    assert "go test -json -count=1" in res.test_command


def debian_toy(monkeypatch, path: str, package: str):
    """(Toy ecosystem, fake factory) where installing Debian `package` creates `path`."""
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")

    def apt(cmd, sb):
        sb.put_file(path, b"installed")
        return 0, f"installed {package}"

    f.on(rf"apt-get install .*\b{package}\b", apt)
    return eco, f


def test_a_missing_system_tool_is_installed_from_debian_and_the_instance_verifies(tmp_path, monkeypatch):
    """The C failure a new user saw ("You need tcl 8.5 or newer"): the test target needs tclsh;
    Verification names the Debian package, Execution amends the image, round 2 verifies."""
    eco, f = debian_toy(monkeypatch, "/usr/bin/tclsh", "tcl")

    def tests(cmd, sb):
        if "/usr/bin/tclsh" not in sb.files:
            return 2, "You need tcl 8.5 or newer in order to run the test suite\n"
        return (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"}))

    f.on(r"apt-file search --regexp .*tclsh", (0, "tcl8.6-dbg: /usr/bin/tclsh\ntcl: /usr/bin/tclsh\n"))
    f.on(r"go test -json", tests)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and res.rounds[0].attribution.startswith("environment")
    # the package is Debian's index's answer, recorded with its query
    q = [s for s in steps(res) if s.rule == "debian-index"]
    assert len(q) == 1 and q[0].command == "apt-file search --regexp '^/(usr/)?s?bin/tclsh$'"
    assert "tcl: /usr/bin/tclsh" in q[0].output_excerpt and "command tclsh -> tcl " in q[0].note
    assert res.rounds[0].feedback == "amend" and res.rounds[1].source == "amended"
    assert "apt-get install" in res.setup_script and "tcl" in res.setup_script and "RUN " in res.dockerfile
    # the loop's fix is a learnable lesson: a failed feedback step, then its repaired twin
    fb = [s for s in steps(res) if s.rule == "feedback:toy/calc"]
    assert [s.exit_code for s in fb] == [1, 0] and '"apt"' in fb[1].note
    from agents.memory.learn import candidates

    lessons, _ = candidates(steps(res), "go", inst.instance_id)
    assert any(a.kind == "apt" and a.packages == ["tcl"] for e, _ in lessons for a in e.actions)
    # learned as an `apt` action (no shell text from the output) under a generalised signature
    import re

    [lesson] = [e for e, _ in lessons if any(a.kind == "apt" for a in e.actions)]
    assert {a.kind for a in lesson.actions} == {"apt"} and not lesson.negative
    assert re.search(lesson.error_signature, "You need tcl 8.6 or newer in order to run the test suite", re.I)


def test_a_build_that_gives_up_on_a_missing_header_is_replanned_with_its_debian_package(tmp_path, monkeypatch):
    """Execution gives up (no repair rounds) on "fatal error: zlib.h"; planning asks Debian's
    index for the header, the next build installs the answer first, and round 2 verifies."""
    eco, f = debian_toy(monkeypatch, "/usr/include/zlib.h", "zlib1g-dev")
    f.on(r"apt-file search --regexp .*zlib", (0, "libpoco-dev: /usr/include/Poco/zlib.h\nzlib1g-dev: /usr/include/zlib.h\n"))
    f.on(r"^fetch-deps$", lambda cmd, sb: (0, "ok") if "/usr/include/zlib.h" in sb.files else
         (1, "cgo: x.c:1:10: fatal error: zlib.h: No such file or directory\ncompilation terminated.\n"))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, repair={"rounds": 0})
    res = mint_instance(inst, git_dir, cfg, factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and res.rounds[0].feedback == "replan: apt zlib1g-dev (missing-header)"
    assert eco.requests[-1].apt == ["zlib1g-dev"] and "zlib1g-dev" in res.setup_script
    q = [s for s in steps(res) if s.rule == "debian-index"]
    assert q and q[0].command == "apt-file search --regexp '^/usr/include/(.+/)?zlib\\.h$'"


def test_a_reused_environment_that_does_not_verify_falls_back_to_a_full_build(tmp_path, monkeypatch):
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.images["swemint/env:toy__calc-0"] = FakeImage(id="sha256:c0", ref="swemint/env:toy__calc-0", labels={},
                                                    files={"/opt/old-deps": b"v0"})

    def tests(cmd, sb):
        if not patched(sb):
            return 1, events({"TestAdd": "fail", "TestOld": "pass"})
        if "/opt/old-deps" in sb.files:  # the candidate's stale dependency: collects, does not verify
            return 1, events({"TestAdd": "fail", "TestOld": "pass"})
        return 0, events({"TestAdd": "pass", "TestOld": "pass"})

    f.on(r"go test -json", tests)
    inst, git_dir = instance_on(tmp_path)
    cand = EnvRecord(instance_id="toy__calc-0", repo="toy/calc", base_commit="0" * 40, language="go",
                     interpreter="go 1.19", image_tag="swemint/env:toy__calc-0")
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f, candidates=[cand])
    assert res.outcome == "verified", res.reason
    assert [r.source for r in res.rounds] == ["reused", "built"] and res.rounds[0].feedback == "rebuild"
    assert res.reused_from is None and res.round == 2
    assert any(s.rule == "reuse:rejected" for s in steps(res))
    # the rejected reused image is gone, the candidate's stays
    assert "swemint/env:toy__calc-0" in f.images


def test_a_result_of_the_task_itself_is_final_even_in_a_reused_environment(tmp_path, monkeypatch):
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", (0, events({"TestAdd": "pass"})))  # passes before the fix too
    inst, git_dir = instance_on(tmp_path)
    cand = EnvRecord(instance_id="toy__calc-0", repo="toy/calc", base_commit="0" * 40, language="go",
                     interpreter="go 1.19", image_tag="cand:1")
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f, candidates=[cand])
    assert res.outcome == "no_fail_to_pass" and len(res.rounds) == 1
    assert res.rounds[0].attribution.startswith("task") and res.reused_from == "toy__calc-0"


def test_a_java_row_with_only_an_ant_build_is_env_failed_never_python(tmp_path):
    git_dir, sha = make_repo(tmp_path, {"build.xml": "<project name='x' default='test'/>",
                                        "src/Calc.java": "class Calc {}", "test/CalcTest.java": "class CalcTest {}",
                                        "setup.py": "from setuptools import setup\nsetup()\n"})
    inst = make_instance(sha, "java", instance_id="acme__ant-1", repo="acme/ant",
                         patch="diff --git a/src/Calc.java b/src/Calc.java\n",
                         test_patch="diff --git a/test/CalcTest.java b/test/CalcTest.java\n")
    f = FakeSandboxFactory(run_id="t")
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "env_failed"
    assert "Ant build (build.xml): no target runs tests" in res.reason and res.language == "java"
    assert f.specs == []  # nothing was built, pytest least of all
    assert not any(s.agent == "execution" for s in steps(res))


def test_a_c_row_with_a_plain_makefile_is_the_c_ecosystems(tmp_path):
    from agents.analysis import analyze
    from agents.gitrepo import GitTree

    git_dir, sha = make_repo(tmp_path, {"Makefile": "all:\n\tcc -o calc calc.c\ntest: all\n\t./run.sh\n",
                                        "calc.c": "int main(){return 0;}\n", "setup.py": ""})
    inst = make_instance(sha, "c")
    profile = analyze(GitTree(git_dir, sha), inst)
    assert [c.label for c in profile.available()] == ["cfamily:make"] and profile.language == "c"


def test_no_toolchain_fits_the_attribution_then_the_verdict_is_final(tmp_path, monkeypatch):
    eco = Toy(versions=("1.15",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (1, events({}, "package io/fs is not in GOROOT")) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome in ("tests_not_run", "no_fail_to_pass") and len(res.rounds) == 1
    assert any(s.rule == "replan" and "no plan" in s.note for s in steps(res))


def test_hybrid_asks_the_llm_for_an_attribution_the_rules_cannot_make(tmp_path, monkeypatch):
    """Every touched test is skipped after the fix for a reason no rule knows; under `hybrid` the
    model attributes it (the image lacks tcl), Execution amends, round 2 verifies; tokens are
    counted under `verification`."""
    from agents.llm import FakeLLM, LLMConfig

    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")

    def apt(cmd, sb):
        sb.put_file("/usr/bin/tclsh", b"#!tcl")
        return 0, "installed"

    def tests(cmd, sb):
        if "/usr/bin/tclsh" not in sb.files:
            return 0, events({"TestAdd": "skip"})
        return (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"}))

    f.on(r"apt-get install .*\btcl\b", apt)
    f.on(r"go test -json", tests)
    llm = FakeLLM([{"kind": "environment", "detail": "the suite skips without tclsh", "packages": ["tcl"],
                    "install": "system"}])
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, policy="hybrid",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f, llm=llm)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and res.rounds[0].feedback == "amend"
    assert any(s.rule == "llm:attribution" and s.tokens > 0 for s in steps(res))
    assert set(res.llm_usage["by_agent"]) == {"verification"}


def test_hybrid_asks_the_llm_for_a_test_configuration_when_the_rules_have_none_left(tmp_path, monkeypatch):
    from agents.llm import FakeLLM, LLMConfig

    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json -run TestAdd", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    f.on(r"go test -json \./", (0, events({})))
    llm = FakeLLM([{"test_files": ["calc_test.go"], "test_command": "go test -json -run TestAdd ./...",
                    "parser": "go_test_json", "reason": "the package's own tests"}])
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, policy="hybrid",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f, llm=llm)
    assert res.outcome == "verified", res.reason
    assert [r.test for r in res.rounds] == ["touched", "llm"] and res.round == 2
    assert set(res.llm_usage["by_agent"]) == {"testconfig"}


def test_an_invalid_llm_answer_is_no_answer(tmp_path, monkeypatch):
    """The model names an ecosystem nobody registered (twice: the gateway's repair round too):
    the plan is refused by the agent's pydantic model and the row says what the rules found."""
    from agents.llm import FakeLLM, LLMConfig

    git_dir, sha = make_repo(tmp_path, {"calc.c": "int main(){}", "build.sh": "cc calc.c"})
    inst = make_instance(sha, "c", instance_id="acme__c-1", repo="acme/c", patch=PATCH, test_patch=TEST_PATCH)
    bad = {"ecosystem": "cobol", "parser": "automake_log", "test_command": "sh t.sh"}
    llm = FakeLLM([bad, bad])
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, policy="hybrid",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    res = mint_instance(inst, git_dir, cfg, factory=FakeSandboxFactory(run_id="t"), llm=llm)
    assert res.outcome == "env_failed" and "no build any route knows" in res.reason
    assert any(s.rule == "llm:plan" and "no answer" in s.note for s in steps(res))


def test_hybrid_repairs_a_setup_step_of_any_ecosystem_with_the_llm(tmp_path, monkeypatch):
    """The Execution agent's LLM tool loop outside Python: the rules and the memory have nothing
    for `fetch-deps`; the model runs a command that fixes it; the step is retried and passes."""
    from agents.llm import FakeLLM, LLMConfig, tool_reply

    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    state = {"fixed": False}

    def fetch(cmd, sb):
        return (0, "ok") if state["fixed"] else (1, "fetch-deps: proxy.example refused the connection")

    def fix(cmd, sb):
        state["fixed"] = True
        return 0, "GOPROXY set"

    f.on(r"^fetch-deps", fetch)
    f.on(r"^go env -w GOPROXY", fix)
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    llm = FakeLLM([tool_reply("go env -w GOPROXY=https://proxy.golang.org"), "Set the proxy."])
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, policy="hybrid",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f, llm=llm)
    assert res.outcome == "verified", res.reason
    assert "go env -w GOPROXY=https://proxy.golang.org" in res.setup_script
    assert [s.rule for s in steps(res) if s.rule.startswith("llm")] == ["llm:execution", "llm:repair", "llm"]
    assert set(res.llm_usage["by_agent"]) == {"execution"}


class ToyWithToolchain(Toy):
    def toolchain(self, requested, images):
        from envpool.toolchains import ToolchainChoice

        v = requested or self.versions[0]
        return ToolchainChoice(language="go", requested=requested, version=v, image=f"toy:{v}"), {}


def test_under_the_llm_policy_the_model_leads_the_plan(tmp_path, monkeypatch):
    """`llm`: the model sees the rules' plan and replaces it (another toolchain and test command)."""
    from agents.llm import FakeLLM, LLMConfig

    eco = ToyWithToolchain(versions=("1.15", "1.19"))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json -v", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    llm = FakeLLM([{"ecosystem": "go", "toolchain": "1.19", "setup_commands": ["fetch-deps"],
                    "test_command": "go test -json -v ./...", "parser": "go_test_json",
                    "test_files": ["calc_test.go"], "reason": "verbose"}])
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}, policy="llm",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f, llm=llm)
    assert res.outcome == "verified", res.reason
    assert res.interpreter == "go 1.19" and "go test -json -v" in res.test_command
    prompt = json.dumps(llm.requests[0][0])
    assert "The rules' plan" in prompt and "go 1.15" in prompt


def test_an_environment_of_another_repository_is_never_adapted(tmp_path, monkeypatch):
    """Its instance tier holds what that repository's build wrote (issue 24): even a candidate
    declaring every dependency of this one is refused, and the instance is built in full."""
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    gomod = "module example.com/calc\n\ngo 1.19\n\nrequire (\n\tgithub.com/a/x v1\n\tgithub.com/b/y v1\n)\n"
    git_dir, sha = make_repo(tmp_path, {"go.mod": gomod, "calc.go": "package calc // bug\n",
                                        "calc_test.go": "package calc // old\n"})
    inst = make_instance(sha, "go", instance_id="toy__calc-1", repo="toy/calc", patch=PATCH, test_patch=TEST_PATCH)
    other = EnvRecord(instance_id="other__lib-3", repo="other/lib", base_commit="0" * 40, language="go",
                      interpreter="go 1.19", image_tag="swemint/env:other-3",
                      dependencies="github.com/a/x\ngithub.com/b/y\ngithub.com/c/z")
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f, candidates=[other])
    assert res.outcome == "verified", res.reason
    assert (res.reused_from, res.reuse_kind) == (None, None)
    assert [r.source for r in res.rounds] == ["built"]
    fallback = [s for s in steps(res) if s.rule == "fallback"]
    assert fallback and "another repository (other/lib)" in fallback[0].note
    assert "swemint/env:other-3" not in [s.image for s in f.specs]


def test_a_candidate_on_another_toolchain_is_not_adapted(tmp_path, monkeypatch):
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    cand = EnvRecord(instance_id="toy__calc-0", repo="toy/calc", base_commit="0" * 40, language="go",
                     interpreter="go 1.15", image_tag="swemint/env:toy-0")
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f, candidates=[cand])
    assert res.outcome == "verified" and res.reused_from is None
    assert any(s.rule == "fallback" and "toolchain go 1.15 != go 1.19" in s.note for s in steps(res))


def test_a_replan_whose_build_fails_leaves_the_last_verdict_with_the_reason(tmp_path, monkeypatch):
    eco = Toy()
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps", lambda cmd, sb: (1, "no such toolchain") if sb.spec.image == "toy:1.19" else (0, "ok"))
    f.on(r"go test -json", lambda cmd, sb: (1, events({}, "package io/fs is not in GOROOT")) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert [r.outcome for r in res.rounds] == ["tests_not_run", "replan"] and res.round == 1
    assert res.outcome == "tests_not_run" and "round 2: go setup step failed" in res.reason


def test_a_file_the_mirror_lacks_that_the_run_names_is_said_in_the_reason(tmp_path, monkeypatch):
    """astropy-14995: the fetched snapshot has no blob for a large data file; pytest's configure
    hook tries to download it and no test runs. The checkout leaves the file out and the row's
    reason names it, so the cause is the mirror's, not the task's."""
    import subprocess

    force_ecosystem(monkeypatch, Toy())
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n", "calc_test.go": "package calc // old\n",
                                        "data/eopc04.1962-now": "big table\n", "data/other.dat": "never named\n"})
    for path in ("data/eopc04.1962-now", "data/other.dat"):
        blob = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", f"{sha}:{path}"],
                              capture_output=True, text=True, check=True).stdout.strip()
        (git_dir / "objects" / blob[:2] / blob[2:]).unlink()  # a partial mirror: the blob is gone
    inst = make_instance(sha, "go", "2021-06-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc",
                         patch=PATCH, test_patch=TEST_PATCH)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps", lambda cmd, sb: (0, "ok"))
    f.on(r"go test -json", lambda cmd, sb: (1, "URLError: Unable to open any source: data/eopc04.1962-now\n"))
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome != "verified"
    assert "the mirror lacks 1 file(s) this run names: data/eopc04.1962-now" in res.reason
    assert "other.dat" not in res.reason


def test_a_setup_step_that_runs_out_of_time_ends_timeout_not_env_failed(tmp_path, monkeypatch):
    """hashicorp/terraform-34580 on a 2-core host at load 13: compiling the test binary outlasted
    the setup step's time in every round. That says nothing of the plan, so the row is `timeout`
    (a rerun retries it), not a final `env_failed`; a step that fails on its own stays env_failed."""
    from envpool.sandbox import ExecResult

    force_ecosystem(monkeypatch, Toy())
    inst, git_dir = instance_on(tmp_path)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps", lambda cmd, sb: ExecResult(command=cmd, exit_code=0, output="compiling", duration=10_000.0))
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "timeout", res.reason
    assert "timed out" in res.reason
    f2 = FakeSandboxFactory(run_id="t")
    f2.on(r"^fetch-deps", lambda cmd, sb: (1, "no such module"))
    res2 = mint_instance(inst, git_dir, config(tmp_path / "2"), factory=f2)
    assert res2.outcome == "env_failed", res2.reason


def test_a_setup_step_refused_by_an_unreachable_host_names_it_in_the_row(tmp_path, monkeypatch):
    """projectlombok/lombok: its Ant build downloads jars from projectlombok.org, which this host
    cannot reach. The env_failed row names that source (`unreachable`), so a measurement can set
    it apart as network-bound; a step that fails for another reason names none."""
    force_ecosystem(monkeypatch, Toy())
    inst, git_dir = instance_on(tmp_path)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps", lambda cmd, sb: (1, "BUILD FAILED\njava.net.UnknownHostException: projectlombok.org\n"))
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "env_failed", res.reason
    assert res.unreachable == "projectlombok.org: java.net.UnknownHostException: projectlombok.org"
    f2 = FakeSandboxFactory(run_id="t")
    f2.on(r"^fetch-deps", lambda cmd, sb: (1, "no such module"))
    res2 = mint_instance(inst, git_dir, config(tmp_path / "2"), factory=f2)
    assert res2.outcome == "env_failed" and res2.unreachable is None


def test_a_tool_only_pypi_has_that_the_ci_pip_installs_is_installed_and_the_instance_verifies(tmp_path, monkeypatch):
    """The class: a non-Python project's test tool that Debian does not package and the CI takes
    from PyPI (``pip install --user cram`` in .travis.yml): Debian's index has no answer for the
    command, the loop amends the image with Debian's pip and ``pip install <tool>``, round 2
    verifies. A command the CI does not pip-install gets no such guess."""
    eco = Toy(versions=("1.19",))
    force_ecosystem(monkeypatch, eco)
    f = FakeSandboxFactory(run_id="t")

    def pip(cmd, sb):
        sb.put_file("/usr/local/bin/cram", b"installed")
        return 0, "Successfully installed cram-0.7"

    def tests(cmd, sb):
        if "/usr/local/bin/cram" not in sb.files:
            return 2, "/bin/bash: line 1: cram: command not found\n"
        return (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"}))

    f.on(r"apt-file search --regexp .*cram", (1, ""))
    f.on(r"PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir cram", pip)
    f.on(r"go test -json", tests)
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n", "calc_test.go": "package calc // old\n",
                                        ".travis.yml": "install:\n  - pip install --user cram\nscript:\n  - make test\n"})
    inst = make_instance(sha, "go", "2021-06-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc",
                         patch=PATCH, test_patch=TEST_PATCH)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.round == 2 and res.rounds[0].feedback == "amend" and res.rounds[1].source == "amended"
    assert "python3-pip" in res.setup_script and "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir cram" in \
        res.setup_script


def test_a_polyglot_root_whose_first_candidate_selects_no_test_plans_the_next_before_any_build(tmp_path, monkeypatch):
    """S20: pyproject.toml beside go.mod at the root (Python's detect, 20, wins); the test_patch
    touches only a Go test, which Python's rules do not select. The row ended `tests_not_run` in
    2 s with no replan; now the next candidate (Go) plans, builds and verifies."""
    import agents.ecosystems as registry
    from agents.ecosystems.python import ECOSYSTEM as PYTHON

    eco = Toy()
    monkeypatch.setattr(registry, "ecosystems", lambda: [PYTHON, eco])
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n", "calc_test.go": "package calc // old\n",
                                        "pyproject.toml": "[project]\nname = 'calc'\n"})
    inst = make_instance(sha, None, "2021-06-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc",
                         patch=PATCH, test_patch=TEST_PATCH)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/calc::TestAdd"] and res.rounds[0].candidate.startswith("go:")
    skip = [s for s in steps(res) if s.rule == "plan:python:uv" and "next candidate" in s.note]
    assert skip and "select no test of the test patch (calc_test.go)" in skip[0].note
    assert all("python" not in (s.image or "") for s in f.specs)  # no Python build was made


def test_an_amended_image_the_last_round_asks_for_runs_past_the_round_budget(tmp_path, monkeypatch):
    """Class R (genset A silver_searcher-1384/-1387: round 4 of 4 found the tests' tool missing
    and asked for an amended image, which the budget left unrun): the amend round costs no build
    and runs past `loop.max_rounds` (`loop.amend_rounds` times); with `amend_rounds: 0` the row
    ends as before, after the last round."""
    def tests(cmd, sb):
        if "/usr/bin/tclsh" not in sb.files:
            return 2, "You need tcl 8.5 or newer in order to run the test suite\n"
        return (0, events({"TestAdd": "pass"})) if patched(sb) else (1, events({"TestAdd": "fail"}))

    for extra, outcome, rounds in ((1, "verified", 2), (0, None, 1)):
        eco, f = debian_toy(monkeypatch, "/usr/bin/tclsh", "tcl")
        f.on(r"apt-file search --regexp .*tclsh", (0, "tcl: /usr/bin/tclsh\n"))
        f.on(r"go test -json", tests)
        inst, git_dir = instance_on(tmp_path / str(extra))
        cfg = MintConfig(workdir=tmp_path / str(extra) / "w", run_id="t", memory={"enabled": False},
                         loop={"max_rounds": 1, "amend_rounds": extra})
        res = mint_instance(inst, git_dir, cfg, factory=f)
        assert len(res.rounds) == rounds, res.reason
        if outcome:
            assert res.outcome == outcome and res.round == 2 and res.rounds[1].source == "amended"
            assert any(s.rule == "round-budget" for s in steps(res))
        else:
            assert res.outcome != "verified" and res.rounds[0].feedback == "amend"


def test_a_failed_build_gets_its_own_moves_before_a_next_candidate_that_selects_no_test(tmp_path, monkeypatch):
    """S28 (genset A faiss-5495: CMake's configure failed on CUDA's nvcc; the next candidate,
    Python, ran the touched C++ test's folder, failed to install, and the CMake build's `ci_setup`
    move -- the CI's -DFAISS_ENABLE_GPU=OFF -- never came): the Python candidate selects no test
    of a test patch that touches only a file of a nested CMake build (tests/CMakeLists.txt), so it
    is not built, and the failed candidate's own setup move shapes round 2, which verifies."""
    import agents.ecosystems as registry
    from agents.ecosystems.move_types import Move
    from agents.ecosystems.python import ECOSYSTEM as PYTHON
    from agents.ecosystems.python.selection import test_folders

    class Ci(Toy):
        def detect(self, tree, language):
            return 30

        def plan(self, tree, instance, touched, images, request=None):
            plan = super().plan(tree, instance, touched, images, request)
            ci = bool((request or PlanRequest()).options.get("ci"))
            return plan.model_copy(update={"setup_commands": ["fetch-deps --ci" if ci else "fetch-deps"]})

        def next_moves(self, ctx):
            if not ctx.why.startswith("setup failed"):
                return []
            return [Move(kind="ci_setup", serves="a build that needs what the project's CI provides",
                         evidence="the CI configures with GPU off", request=PlanRequest(options={"ci": True}))]

    eco = Ci()
    monkeypatch.setattr(registry, "ecosystems", lambda: [PYTHON, eco])
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps$", (1, "Failed to find nvcc.\n"))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    test_patch = TEST_PATCH.replace("calc_test.go", "tests/calc_test.go")
    files = {"calc.go": "package calc // bug\n", "tests/calc_test.go": "package calc // old\n",
             "tests/CMakeLists.txt": "add_test(NAME t COMMAND t)\n", "tests/test_calc.py": "def test_x(): pass\n",
             "pyproject.toml": "[project]\nname = 'calc'\n"}
    git_dir, sha = make_repo(tmp_path, files)
    from agents.gitrepo import GitTree

    tree = GitTree(git_dir, sha)
    assert test_folders(tree, test_patch) == []  # a nested CMake build's file selects no pytest folder
    inst = make_instance(sha, None, "2021-06-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc",
                         patch=PATCH, test_patch=test_patch)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert [r.candidate.split(":")[0] for r in res.rounds] == ["go", "go"] and res.rounds[1].move == "ci_setup"
    assert any(s.rule == "give-way" and "selects no test" in s.note for s in steps(res))
    assert all("python" not in (s.image or "") for s in f.specs)  # no Python build was made


def test_a_round_that_ran_no_test_with_no_move_left_plans_the_next_candidate(tmp_path, monkeypatch):
    """S29 (genset A ollama-17853: no Go plan -- every touched package builds only for other
    platforms --, the root's CMake build ran no test and the row ended, the Node project that owns
    the touched .ts test never tried): a round whose verdict is tests_not_run and that has no next
    move plans the next candidate that selects a test; it verifies in round 2."""
    import agents.ecosystems as registry

    class Silent(Toy):
        name = "cfamily"
        languages = ("c",)

        def detect(self, tree, language):
            return 30

        def plan(self, tree, instance, touched, images, request=None):
            plan = super().plan(tree, instance, touched, images, request)
            return plan.model_copy(update={"ecosystem": "cfamily", "toolchain": "gcc 14", "image": "toy:gcc",
                                           "test_command": "ctest-ish", "setup_commands": ["cmake-ish"]})

    first, second = Silent(), Toy()
    monkeypatch.setattr(registry, "ecosystems", lambda: [first, second])
    f = FakeSandboxFactory(run_id="t")
    f.on(r"ctest-ish", (0, ""))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path, language=None)
    res = mint_instance(inst, git_dir, config(tmp_path), factory=f)
    assert res.outcome == "verified", res.reason
    assert [r.candidate.split(":")[0] for r in res.rounds] == ["cfamily", "go"]
    assert res.rounds[0].outcome == "tests_not_run" and res.rounds[0].feedback.startswith("next candidate: go")
    assert any(s.rule == "next-candidate" for s in steps(res))
