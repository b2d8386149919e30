"""EnvPatch: adapt a reused environment to another commit of the same repository (MEnvAgent,
arXiv 2601.22859, "environment reuse": run the test configuration in the candidate; when it
fails, derive incremental commands from the diagnosis, apply them, verify again, within a bound).

The sandbox runs the candidate's image with the repository already replaced by this instance's
tree (`agents.layout.lay_out_repository`). Steps, all through a `PythonEnvBuilder` on that
sandbox (so the same rules, memory and LLM repairs apply, and every command is a trajectory step):

0. the git submodules the mirror lacks are filled from PyPI as in a full build
   (`PythonEnvBuilder.fill_submodules`): the replaced /testbed has them empty again;
1. sync the dependencies: `uv pip install` of the project (editable, compat mode, with its test
   extras, then without them) with the instance's date bound. uv keeps every installed package
   that still satisfies the requirements, so only what this commit declares differently is
   installed (a release that added `six`, dropped `py`, ...); when neither resolves, the project
   alone, `--no-deps` (dependencies unchanged). Requirement files are left to step 3: one
   uninstallable test pin (requests' `invoke==0.2.0`) would fail the whole sync;
2. probe: `pytest --collect-only` on the test files with the test_patch applied, then reverted
   (the before side of the verification, whose imports are what matters);
3. on failure, at most `rounds` times: the builder's probe rules (missing module -> install,
   crash in site-packages -> upgrade), else the helper (memory, LLM), else `uv pip install` of
   the project and its requirement files (test pins relaxed as in a full build); probe again.

Before the sync, a reused environment missed every dependency a newer or older commit declares
and only the missing modules the probe named got installed, one per round: pytest 4.5/4.6 on
an 8.0 environment needed six, atomicwrites, py, packaging and importlib-metadata, more than
the rounds allow, and fell back to a full build.

`commands` (the successful recorded commands) are the increments on top of the candidate.
"""

from __future__ import annotations

import shlex

from agents.models import StepRecord
from agents.ecosystems.python.python_plan import PY, project_target, relax_test_pins
from agents.ecosystems.python.builder import PythonEnvBuilder, requirement_file_lines
from envpool.errors import PatchApplyError
from envpool.patches import apply_patch, files_in_patch


class EnvPatch:
    """Incremental repair of a reused environment (see module docstring).

    Args:
        builder: the `PythonEnvBuilder` of this instance (its tree, profile, era, repairs and
            trajectory) on a sandbox started from the candidate's image, repository replaced
            (bridge network), with the candidate's interpreter as its choice.
        rounds: repair rounds after the first probe (each followed by a probe).
    """

    def __init__(self, builder: PythonEnvBuilder, *, rounds: int = 2):
        self.sb = builder.sb
        self.tree = builder.tree
        self.profile = builder.profile
        self.rounds = rounds
        self.builder = builder
        self.reason = ""
        self.synced = False
        """True when step 1 installed the project with its dependencies."""

    @property
    def commands(self) -> list[str]:
        """The increments: successful recorded commands, in order."""
        return self.builder.commands

    def reinstall(self) -> bool:
        """Sync the project and its declared dependencies (step 1), else re-install the project
        alone with `--no-deps`; True when one worked (`synced` says whether deps were synced)."""
        if not self.profile.installable:
            return True  # the candidate's .pth already puts /testbed on sys.path
        plain = "-e . -C editable_mode=compat"
        tries = [("reuse:sync", project_target(self.profile) + " -C editable_mode=compat")]
        if tries[0][1] != plain:
            tries.append(("reuse:sync-no-extras", plain))
        for rule, args in tries:
            if self.builder.uv_install(args, rule).ok:
                self.synced = True
                return True
        r = self.builder.uv_install("--no-deps " + plain, "reuse:reinstall")
        if not r.ok:
            self.reason = f"the project does not re-install in the candidate: {r.output[-400:]}"
        return r.ok

    def probe(self, test_files: list[str], test_patch: str) -> tuple[bool, str, str]:
        """Collect `test_files` with `test_patch` applied, then revert it. Returns (ok, command,
        output); exit 0 and 5 (nothing collected) count as ok."""
        applied = False
        try:
            apply_patch(self.sb, test_patch, label="reuse:test_patch")
            applied = True
        except PatchApplyError:
            pass  # the before run will report it; probe the tree as it is
        files = [f for f in test_files if applied or self.tree.exists(f)]
        cmd = (f"cd /testbed && {PY} -m pytest --collect-only -q -p no:cacheprovider "
               + " ".join(shlex.quote(f) for f in files))
        r = self.builder.run(cmd, "reuse:probe", record=False, timeout=600)
        if applied:
            added = " ".join(shlex.quote(f) for f in files_in_patch(test_patch))
            self.sb.exec(f"cd /testbed && git checkout -q -- . && git clean -fdq -- {added}", timeout=120,
                         log_label="reuse:revert")
        return r.exit_code in (0, 5) and not r.timed_out, cmd, r.output

    def _requirements(self) -> str:
        """`uv pip install` arguments of the project (editable, test extras) and its requirement
        files, test pins relaxed for the interpreter as the full build does; "" when none."""
        reqs: list[str] = []
        for f in self.profile.requirement_files[:3]:
            reqs += requirement_file_lines(self.tree, f)
        reqs, _ = relax_test_pins(list(dict.fromkeys(reqs)), self.builder.choice.version)
        target = project_target(self.profile) + " -C editable_mode=compat" if self.profile.installable else ""
        return " ".join([target] + [shlex.quote(x) for x in reqs]).strip()

    def run(self, test_files: list[str], test_patch: str) -> bool:
        """Fill the submodules the mirror lacks (the candidate's /testbed was replaced by this
        tree), re-install, probe, repair within `rounds`; True when the probe passes (`reason`
        otherwise)."""
        self.builder.fill_submodules()
        if not self.reinstall():
            return False
        tried: set[str] = set()
        for n in range(self.rounds + 1):
            ok, cmd, out = self.probe(test_files, test_patch)
            if ok:
                return True
            failed = self.builder.steps[-1]
            if n == self.rounds:
                break
            fix = self.builder._repair_probe(out, tried) if self.builder.rule_repairs else None
            fix = fix or self.builder._help(cmd, out, tried)
            if not fix and "requirements" not in tried and (args := self._requirements()):
                self.builder.uv_install(args, "envpatch:requirements")
                fix = "requirements"
            if not fix:
                break
            tried.add(fix)
            failed.note = f"repair: {fix}"
            self.builder.steps.append(StepRecord(agent="envpatch", rule=f"round#{n + 1}", note=fix))
        self.reason = f"the probe still fails after {len(tried)} repair(s): {out[-400:]}"
        return False
