"""The Python ecosystem's builder (`PythonEnvBuilder`, the Environment Setup and Execution agents'
rule backend for Python): run the plan, repair, record.

Every command runs in the build sandbox (bridge network, host CA mounted) and is recorded as a
`StepRecord`; the successful ones become the setup script and the Dockerfile. An interpreter
newer than the commit's era past Python 3.7 or 3.10 gets `collections`' old ABC aliases back in
the venv (`plan.needs_abc_shim`: astropy 2.x turns their DeprecationWarning into an error), and
then, after every install, the standard library's `distutils` (`plan.era_distutils`). Before the project
installs, each git submodule the mirror lacks (an empty gitlink) whose name is a PyPI
distribution gets that distribution's sdist as of the date cut (`submodules`). Repairs are
rules keyed on uv's and pytest's error text (bounded rounds):

- no wheel for the interpreter / failed build of a dependency -> move only that package's date
  bound forward (`--exclude-newer-package`), wheels only;
- a package filtered out by the date (deleted and re-uploaded releases) -> exempt it;
- the project's own build fails under isolation (old pinned setuptools) -> `--no-build-isolation`,
  with its `[build-system] requires` (bar setuptools/wheel) installed into the venv first;
- a legacy setup.py imports a module the isolated build lacks (`No module named 'numpy'`,
  astropy 2.x's "Numpy version ... must be installed") -> that distribution into the venv and
  `--no-build-isolation`;
- optional groups that do not resolve -> per package, skipping the ones that fail;
- `--collect-only` probe: a crash inside `site-packages/<mod>` -> upgrade that distribution with a
  lifted date; `No module named X` -> install X.

When no rule applies, the optional `helper` (agents.repair.RepairHelper: the experience memory,
then the LLM tool loop under the `hybrid` policy) gets the failed step's output; under the `llm`
policy (`rule_repairs=False`) the rules are skipped and the helper repairs every failure. The
builder is the helper's executor for memory actions (`apply_action`): `uv_lift` -> the package's
date bound lifted, wheels only; `uv_option` `no_build_isolation` -> `--no-build-isolation`;
`pin` / `install` -> `uv pip install`; `env` -> the build environment; `shell` -> a recorded
command; `apt` -> `apt-get install` (recorded). `toolchain` and `test_arg` change the plan, not a
running build: the flow applies them (`agents.execution`), the builder skips them.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timedelta
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.python.profile import PythonProfile, req_name
from agents.ecosystems.python.reqfiles import include_of, logical_lines
from agents.ecosystems.debian import apt_install
from agents.gitrepo import GitTree
from agents.models import StepRecord
from agents.ecosystems.python.python_plan import (REPAIR_HINT, ABC_SHIM, ABC_SHIM_PTH, DISTUTILS_SHIM, DISTUTILS_SHIM_PTH, HEAVY_COMPILED, PY,
                                           era_distutils, needs_abc_shim, PYTEST_FLOOR, SKIP_TEST_DEPS, TOOLCHAIN_PACKAGES, VENV,
                                           PythonChoice,
                                           UvOptions, lifted_date, own_names, project_target, relax_test_pins,
                                           runtime_env, test_requirements, toolchain_spec, wheels_only)
from agents.ecosystems.python.submodules import (candidate_names, choose_sdist, empty_submodules, fill_command,
                                                 probe_command, probe_results)
from envpool.sandbox import ExecResult, Sandbox

VENV_COMMAND = f"uv venv {VENV} --python /usr/bin/python3 -q || uv venv {VENV} --python python3 -q"
"""The virtualenv every Python environment starts with."""
RESOLVED_COMMAND = (f"uv pip freeze --python {PY} && for f in $({PY} -c 'import sysconfig;"
                    "print(sysconfig.get_paths()[\"purelib\"])')/*.pth; do [ -e \"$f\" ] && "
                    "echo \"== ${f##*/}\" && cat \"$f\"; done; true")
"""Prints the venv's resolved set (`uv pip freeze`) and its .pth files: the key of Python's
dependency tier (`agents.tiers`), equal for equal virtualenvs."""
REQUIREMENT_FILES = 3
"""Requirement files of the profile the builder reads (the first ones: test files first)."""
MAX_REPAIRS = 6
"""Attempts of one `uv pip install` (each failed one repaired by a rule, the memory or the LLM)."""
PROBE_ROUNDS = 4
"""Attempts of one probe (`pytest --version`, `--collect-only`)."""
IMPORT_TO_DIST = {"yaml": "pyyaml", "PIL": "pillow", "cv2": "opencv-python-headless", "sklearn": "scikit-learn",
                  "skimage": "scikit-image", "dateutil": "python-dateutil", "bs4": "beautifulsoup4",
                  "Crypto": "pycryptodome", "OpenSSL": "pyopenssl", "attr": "attrs", "jwt": "pyjwt",
                  "magic": "python-magic", "serial": "pyserial", "git": "gitpython", "google.protobuf": "protobuf",
                  "pkg_resources": "setuptools", "_pytest": "pytest", "mpl_toolkits": "matplotlib",
                  "netCDF4": "netCDF4", "tables": "tables", "hypothesis": "hypothesis", "zmq": "pyzmq"}
"""Import name -> distribution name, where they differ (the rest map to themselves)."""

_PKG = r"([A-Za-z0-9][A-Za-z0-9._-]*)"
_BUILD_IMPORT = re.compile(r"No module named '([\w.]+)'|ImportError: (\w+) version [\d.]+ or (?:later|newer|higher)"
                           r" (?:must|is required|needs)", re.I)
"""A module a setup.py imports at build time: `No module named 'numpy'`, or a project's own check
(astropy 2.x: ``ImportError: Numpy version 1.10.0 or later must be installed to use Astropy``)."""


class SetupResult(BaseModel):
    """Outcome of building a Python environment in a sandbox.

    `ok`: the project is installed and pytest runs. `steps`: every command with its exit code.
    `script`: the successful commands as a bash script. `reason`: why it failed, when it did.
    """

    model_config = ConfigDict(extra="forbid")
    ok: bool
    reason: str = ""
    steps: list[StepRecord] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    uv: UvOptions | None = None
    installed_packages: str = ""


def requirement_file_lines(tree: GitTree, path: str, depth: int = 0) -> list[str]:
    """Requirements from a requirements file at the commit, following `-r` includes (host side;
    lines as pip reads them: `agents.ecosystems.python.reqfiles`, the dependency tier's parser too).

    Editable/self references (`-e .`, `.`), URLs, other options (`-c` constraints included), a
    requirement's own options (`--hash=...`: each line becomes one argument of `uv pip install`) and
    dev-only tools (SKIP_TEST_DEPS) are dropped; an include is looked up from the tree's root,
    then beside the including file, at most 3 deep.
    """
    text = tree.read(path) or ""
    base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    out: list[str] = []
    for line in logical_lines(text):
        inc = include_of(line)
        if inc is not None and inc[0] == "r" and inc[1] and depth < 3:
            out += requirement_file_lines(tree, inc[1] if tree.exists(inc[1]) else base + inc[1], depth + 1)
            continue
        if line.startswith(("-", ".", "git+", "http")) or "://" in line or line.startswith("/"):
            continue
        line = line.partition(" --")[0]  # per-requirement options (--hash=...): each line is one argument
        name = req_name(line)
        if not name or name.lower().replace("_", "-") in SKIP_TEST_DEPS:
            continue
        out.append(line.split(";")[0].strip() if ";" in line and "python_version" not in line else line)
    return out


class PythonEnvBuilder:
    """Builds the environment for one instance inside `sandbox` (repo already at /testbed).

    Args:
        sandbox: the build sandbox (bridge network).
        tree: the repository at base_commit (host side).
        profile: PythonProfile from the analysis agent.
        choice: PythonChoice (interpreter and date bound).
        created: instance created_at (UTC) or None.
        version: package version to pretend for setuptools_scm (e.g. "4.5.0") or None.
        step_timeout: seconds per command.
        on_step: callback receiving each StepRecord (the trajectory).
        helper: optional `agents.repair.RepairHelper` consulted when no rule repairs a failure:
            `helper(builder, command, output, tried) -> fix key | None`.
        rule_repairs: apply the built-in rules (False under the `llm` policy).
        install_rounds / probe_rounds: attempts of one install / one probe (`mint.repair`).
        repo: the instance's `owner/name`; with the profile's distribution name it names the
            project under test, which is never made wheels-only (`plan.own_names`): its own
            compiled extensions build from source in /testbed (the image has gcc and the
            interpreter's headers), while its dependencies stay wheels-first.
    """

    repair_hint = REPAIR_HINT
    """What the LLM repairing this builder's environment is told (`agents.repair.RepairHelper`)."""

    def __init__(self, sandbox: Sandbox, tree: GitTree, profile: PythonProfile, choice: PythonChoice,
                 created: datetime | None, version: str | None, step_timeout: float = 900,
                 on_step: Callable[[StepRecord], None] | None = None, helper=None, rule_repairs: bool = True,
                 install_rounds: int = MAX_REPAIRS, probe_rounds: int = PROBE_ROUNDS, repo: str = ""):
        self.install_rounds = install_rounds
        self.probe_rounds = probe_rounds
        self.pytest_floor = False
        self.helper = helper
        self.rule_repairs = rule_repairs
        self.sb = sandbox
        self.tree = tree
        self.profile = profile
        self.choice = choice
        self.created = created
        self.step_timeout = step_timeout
        self.on_step = on_step
        self.build_requires_done = False
        self.build_modules: list[str] = []  # distributions the project's setup.py imports (`_repair_uv`)
        self.own = own_names(profile, repo)
        self.uv = UvOptions(exclude_newer=choice.exclude_newer)
        self.uv.no_build = wheels_only(self.uv.no_build, self.own)
        self.steps: list[StepRecord] = []
        self.commands: list[str] = []
        self.env = {**runtime_env(), "UV_LINK_MODE": "copy", "UV_NO_PROGRESS": "1", "UV_HTTP_TIMEOUT": "120",
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        if version:
            self.env["SETUPTOOLS_SCM_PRETEND_VERSION"] = version
        self.lifted = lifted_date(choice.version, created)
        if created and created.strftime("%Y-%m-%dT%H:%M:%SZ") < self.lifted:
            # the interpreter is newer than the commit's era: the period-correct releases of the
            # compiled stack have no wheels for it, so their bound starts where its wheels exist
            for pkg in HEAVY_COMPILED:
                self.uv.package_dates[pkg] = self.lifted

    # -- running ------------------------------------------------------------------------
    def run(self, command: str, rule: str, record: bool = True, timeout: float | None = None) -> ExecResult:
        """Run one command, record it in the trajectory; successful ones go into the script."""
        r = self.sb.exec(command, timeout=timeout or self.step_timeout, env=self.env, log_label=rule)
        step = StepRecord(agent="execution", rule=rule, command=command, exit_code=r.exit_code,
                          output_excerpt=r.output[-2000:], duration=round(r.duration, 2))
        self.steps.append(step)
        if self.on_step:
            self.on_step(step)
        if r.ok and record:
            self.commands.append(command)
        return r

    def uv_install(self, args: str, rule: str) -> ExecResult:
        """`uv pip install` with the shared flags; repairs from the error text, bounded."""
        r = None
        tried: set[str] = set()
        for _ in range(self.install_rounds):
            if self.uv.no_build_isolation and not self.build_requires_done:
                self.install_build_requires()
            cmd = f"uv pip install {self.uv.flags()} {args}"
            r = self.run(cmd, rule)
            if r.ok:
                return r
            failed = self.steps[-1]
            fix = self._repair_uv(r.output, tried) if self.rule_repairs else None
            fix = fix or self._help(cmd, r.output, tried)
            if not fix:
                return r
            tried.add(fix)
            failed.note = f"repair: {fix}"
        return r  # type: ignore[return-value]

    def install_build_requires(self) -> None:
        """Once ``--no-build-isolation`` is on, the project's build-system requirements
        (``[build-system] requires``: Cython, numpy / oldest-supported-numpy, extension-helpers,
        ...) go into the venv, under the same flags (compiled ones from wheels), since pip/uv no
        longer install them for the build; the toolchain packages (setuptools, wheel, ...) stay
        the venv's own date-bounded ones (astropy 5.0's build needs setuptools < 70's
        `setuptools.dep_util`). With them the distributions a legacy setup.py was found to import
        (`build_modules`). Best effort: a failure is recorded, the next install reports."""
        self.build_requires_done = True
        reqs = [r for r in [*self.profile.build_requires, *self.build_modules]
                if (req_name(r) or "").lower().replace("_", "-") not in {t.replace("_", "-") for t in TOOLCHAIN_PACKAGES}]
        if reqs:
            self.uv_install(" ".join(shlex.quote(r) for r in reqs), "install:build-requires")

    def _help(self, command: str, output: str, tried: set[str]) -> str | None:
        """The helper's repair (memory, LLM) for a failure no rule fixed; None without a helper."""
        return self.helper(self, command, output, tried) if self.helper is not None else None

    def record(self, step: StepRecord) -> None:
        """Keep a step the helper made (memory, LLM) and pass it to the trajectory."""
        self.steps.append(step)
        if self.on_step:
            self.on_step(step)

    # -- the helper's executor (memory actions) ------------------------------------------------
    def memory_variables(self) -> dict[str, str]:
        """Facts that bind `${name}` placeholders of memory actions."""
        return {"project_version": self.env.get("SETUPTOOLS_SCM_PRETEND_VERSION", ""),
                "python_version": self.choice.version, "commit_date": self.choice.exclude_newer[:10],
                "ca_bundle": "/opt/swemint/ca.pem", "venv": "/opt/venv"}

    def repeats_rule(self, actions, tried: set[str]) -> bool:
        """True when every action only redoes a repair the rules already made in this step
        (`tried` keys: `lift|exempt|upgrade <pkg>`, `isolation`): applying it cannot help."""
        return repeats_rule(actions, tried)

    def apply_action(self, action, rule: str) -> bool:
        """Apply one memory action (see the module docstring); True when it took effect."""
        kind = action.kind
        if kind == "uv_lift":
            self.lift(action.package)
            return True
        if kind == "uv_option":
            if action.option == "no_build_isolation" and not self.uv.no_build_isolation:
                self.uv.no_build_isolation = True
                return True
            return False
        if kind == "pin":
            return self.uv_install(shlex.quote(action.requirement), rule).ok
        if kind == "install":
            return self.uv_install(" ".join(shlex.quote(p) for p in action.packages), rule).ok
        if kind == "env":
            self.env[action.name] = action.value
            return True
        if kind == "shell":
            return self.run(action.command, rule).ok
        if kind == "apt":
            return self.run(apt_install(action.packages), rule).ok
        return False

    def lift(self, package: str) -> None:
        """Move `package`'s date bound to where wheels for the interpreter exist; wheels only."""
        pkg = package.lower()
        self.uv.package_dates[pkg] = self.lifted
        if pkg not in self.uv.no_build and wheels_only([pkg], self.own):
            self.uv.no_build.append(pkg)

    def _repair_uv(self, out: str, tried: set[str]) -> str | None:
        text = re.sub(r"\x1b\[[0-9;]*m", "", out)
        # date-filtered releases (deleted and re-uploaded later): exempt the package up to the
        # publication date uv names in its hint
        for m in re.finditer(r"`" + _PKG + r"` was filtered by `?exclude-newer[^\n]*", text):
            pkg = m.group(1).lower()
            key = f"exempt {pkg}"
            if key not in tried:
                when = re.search(r"published at (\d{4}-\d\d-\d\dT[\d:]+)", m.group(0))
                if when:
                    d = datetime.fromisoformat(when.group(1)) + timedelta(days=1)
                    self.uv.package_dates[pkg] = max(d.strftime("%Y-%m-%dT%H:%M:%SZ"), self.lifted)
                else:
                    self.uv.package_dates[pkg] = self.lifted
                return key
        # no wheel for this interpreter, or the dependency fails to build: move its bound forward
        pats = [r"Wheels are required for `" + _PKG + r"`",
                _PKG + r"[<>=!~]*[^\s]* has no usable wheels",
                r"Failed to build `" + _PKG + r"\s*[=@]",
                r"Failed to download and build `" + _PKG,
                r"Because (?:only )?" + _PKG + r"[=<>!~]*[^\s]* has no wheels",
                _PKG + r"==[^\s]+ has no wheels with a matching",
                r"Because (?:only )?" + _PKG + r"[=<>!~]*[^\s]* (?:is|are) available and[^\n]*requires-python",
                r"Failed to prepare distributions[^\n]*\n[^\n]*`" + _PKG]
        for pat in pats:
            m = re.search(pat, text)
            if m:
                pkg = m.group(1).lower()
                if pkg in ("testbed",) or not wheels_only([pkg], self.own) or "/testbed" in text[m.start():m.start() + 200]:
                    if "isolation" not in tried and not self.uv.no_build_isolation:
                        self.uv.no_build_isolation = True
                        return "isolation"
                    return None
                key = f"lift {pkg}"
                if key in tried:
                    continue
                self.uv.package_dates[pkg] = self.lifted
                if pkg not in self.uv.no_build:
                    self.uv.no_build.append(pkg)
                return key
        # a legacy setup.py (no [build-system]) that imports a module the isolated build env lacks
        # (astropy 2.x: `import astropy` checks numpy): that module into the venv, no isolation
        if "build backend returned an error" in text and "/testbed/" in text:
            m = _BUILD_IMPORT.search(text)
            if m:
                mod = (m.group(1) or m.group(2)).split(".")[0]
                dist = IMPORT_TO_DIST.get(mod, mod).lower()
                key = f"build-module {dist}"
                if key not in tried and dist not in self.own:
                    self.uv.no_build_isolation = True
                    self.build_modules.append(dist)
                    self.build_requires_done = False
                    return key
        if re.search(r"Failed to build `?[^\n]*(?:@ file:///testbed|\(/testbed\))", text) or \
                "Failed to build the project" in text or "editable" in text and "Failed" in text:
            if "isolation" not in tried:
                self.uv.no_build_isolation = True
                return "isolation"
        return None

    def install_optional(self, reqs: list[str], rule: str) -> list[str]:
        """Install `reqs` together, else one by one; returns those that could not be installed."""
        if not reqs:
            return []
        r = self.uv_install(" ".join(shlex.quote(x) for x in reqs), rule)
        if r.ok:
            return []
        failed = []
        for req in reqs:
            if not self.uv_install(shlex.quote(req), rule + ":single").ok:
                failed.append(req)
        return failed

    # -- the plan -------------------------------------------------------------------------
    def base_commands(self) -> list[str]:
        """The first commands of `build`, which need nothing of the repository: the virtualenv,
        the date-bounded toolchain packages (`toolchain_spec`, under this builder's uv flags) and
        the era's `collections` ABC shim. They make Python's dependency tier (`agents.tiers`);
        `build(base_ready=True)` then starts after them. [] when the first install would not be
        this command alone (`--no-build-isolation` installs the project's build requirements
        before it)."""
        if self.uv.no_build_isolation and not self.build_requires_done:
            return []
        out = [VENV_COMMAND, f"uv pip install {self.uv.flags()} {toolchain_spec(self.created)} pip"]
        if needs_abc_shim(self.choice):
            out.append(self.pth_command(ABC_SHIM_PTH, ABC_SHIM))
        return out

    def build(self, test_files: list[str], base_ready: bool = False) -> SetupResult:
        """Run the whole setup; `test_files` are probed with `--collect-only` at the end.
        `base_ready`: the sandbox stands on Python's dependency tier, whose `base_commands`
        already ran: the setup starts after them."""
        p = self.profile
        if not base_ready:
            r = self.run(VENV_COMMAND, "venv")
            if not r.ok:
                return self._fail(f"could not create a virtualenv: {r.output[-300:]}")
            # no `--seed`: pip/setuptools/wheel come from the date-bounded toolchain step, so the
            # environment (and its Dockerfile) does not drift with the registry
            self.uv_install(toolchain_spec(self.created) + " pip", "toolchain")
            if needs_abc_shim(self.choice):
                self.write_pth(ABC_SHIM_PTH, ABC_SHIM, "era:collections-abc")
        self.fill_submodules()
        file_reqs: list[str] = []
        for f in p.requirement_files[:REQUIREMENT_FILES]:
            file_reqs += requirement_file_lines(self.tree, f)
        file_reqs, relaxed = relax_test_pins(list(dict.fromkeys(file_reqs)), self.choice.version)
        for note in relaxed:
            self.steps.append(StepRecord(agent="setup", rule="relax-test-pins", note=note))
        pytest_req = [] if any((req_name(x) or "").lower() == "pytest" for x in file_reqs) else [self.pytest_spec()]
        installed_project = False
        if p.installable:
            target = project_target(p) + " -C editable_mode=compat"
            extra = " ".join(shlex.quote(x) for x in file_reqs + pytest_req)
            r = self.uv_install(f"{target} {extra}", "install:project+tests")
            if r.ok:
                installed_project = True
                file_reqs = []
            else:
                for attempt, tgt in (("install:project", target),
                                     ("install:project-no-extras", "-e . -C editable_mode=compat"),
                                     ("install:project-non-editable", ".")):
                    if self.uv_install(tgt, attempt).ok:
                        installed_project = True
                        break
                if not installed_project and p.virtual_dependencies is None:
                    return self._fail(f"the project does not install: {self.steps[-1].output_excerpt[-600:]}")
                if not installed_project:  # S22: a virtual project (no [build-system]): its dependencies
                    self.steps.append(StepRecord(agent="setup", rule="virtual-project", note=(
                        "pyproject.toml has [project] but no [build-system]: a virtual project (uv sync installs "
                        "its dependencies, not the project); the checkout goes on sys.path")))
                    failed_virtual = self.install_optional(p.virtual_dependencies, "install:virtual-project-deps")
                    if failed_virtual:
                        self.steps.append(StepRecord(agent="setup", rule="virtual-project",
                                                     note="not installed: " + ", ".join(failed_virtual)[:1000]))
                    self.write_pth("swemint-testbed.pth", "/testbed", "pth")
        else:
            # not a package: put the checkout on sys.path
            self.write_pth("swemint-testbed.pth", "/testbed", "pth")
        failed = self.install_optional(file_reqs + ([] if installed_project else pytest_req), "install:test-requirements")
        failed += self.install_optional(test_requirements(p), "install:ci-deps")
        if not self.check(f"{PY} -m pytest --version", "check:pytest"):
            self.uv_install("pytest", "install:pytest")
            if not self.check(f"{PY} -m pytest --version", "check:pytest"):
                return self._fail("pytest cannot run in the environment: "
                                  + self.steps[-1].output_excerpt[-600:])
        files = [f for f in test_files if self.tree.exists(f)]
        if files:
            self.check(f"cd /testbed && {PY} -m pytest --collect-only -q -p no:cacheprovider "
                       + " ".join(shlex.quote(f) for f in files), "probe:collect", ok_codes=(0, 5))
        if era_distutils(self.choice):  # after every install step: the tests' interpreter only
            self.write_pth(DISTUTILS_SHIM_PTH, DISTUTILS_SHIM, "era:stdlib-distutils")
        freeze = self.run(f"uv pip freeze --python {PY}", "freeze", record=False)
        return SetupResult(ok=True, steps=self.steps, commands=self.commands, env=self.env, uv=self.uv,
                           installed_packages="".join(line + "\n" for line in freeze.output.splitlines()
                                                      if line and not line.startswith("Using ")) if freeze.ok else "",
                           reason=("optional packages not installed: " + ", ".join(failed)) if failed else "")

    @staticmethod
    def pth_command(name: str, line: str) -> str:
        """The command writing `line` as the .pth file `name` in the venv's site-packages."""
        return (f"echo {shlex.quote(line)} > $({PY} -c 'import sysconfig;print(sysconfig.get_paths()"
                f"[\"purelib\"])')/{shlex.quote(name)}")

    def write_pth(self, name: str, line: str, rule: str) -> ExecResult:
        """A recorded step writing `line` as the .pth file `name` in the venv's site-packages
        (read at every start of its interpreter: a path, or an ``import`` line)."""
        return self.run(self.pth_command(name, line), rule)

    def fill_submodules(self) -> list[str]:
        """Fill each git submodule the mirror lacks whose name is a PyPI distribution with that
        distribution's sdist at the newest release up to the date cut (`submodules` module): a
        probe (`probe:submodule-pypi`, not in the script), then the recorded step
        `submodule:pypi-sdist`. A submodule PyPI has no sdist for stays empty, as before, and
        nothing fails. Returns the paths filled."""
        filled: list[str] = []
        cut = self.uv.exclude_newer
        for sub in empty_submodules(self.tree):
            names = [n for n in candidate_names(sub) if n not in self.own]
            if not names:
                continue
            probe = self.run(probe_command(PY, names), "probe:submodule-pypi", record=False, timeout=300)
            docs = {d.get("name"): d for d in probe_results(probe.output)}
            sdist = next((s for n in names if (s := choose_sdist(docs.get(n) or {"name": n}, cut))), None)
            if sdist is None:
                self.steps[-1].note = f"{sub.path}: PyPI has no sdist of {' / '.join(names)} up to {cut}: left empty"
                continue
            r = self.run(fill_command(PY, sdist, sub.path), "submodule:pypi-sdist")
            self.steps[-1].note = (f"{sub.path} (git submodule {sub.url or sub.name}, empty in the mirror): "
                                   f"{sdist.filename} from PyPI ({sdist.name} {sdist.version}, uploaded "
                                   f"{sdist.uploaded}, date cut {cut})")
            if r.ok:
                filled.append(sub.path)
        return filled

    def check(self, cmd: str, rule: str, rounds: int | None = None, ok_codes: tuple[int, ...] = (0,)) -> bool:
        """Run a probe command (not recorded in the script); on failure repair a crash inside
        site-packages or a missing module and retry, at most `rounds` (default `probe_rounds`) times."""
        rounds = self.probe_rounds if rounds is None else rounds
        tried: set[str] = set()
        for _ in range(rounds):
            r = self.run(cmd, rule, record=False, timeout=600)
            if r.exit_code in ok_codes and not r.timed_out:
                return True
            failed = self.steps[-1]
            fix = self._repair_probe(r.output, tried) if self.rule_repairs else None
            fix = fix or self._help(cmd, r.output, tried)
            if not fix:
                return False
            tried.add(fix)
            failed.note = f"repair: {fix}"
        return False

    def _repair_probe(self, out: str, tried: set[str]) -> str | None:
        m = re.search(r"No module named '([A-Za-z0-9_.]+)'", out)
        if m:
            mod = m.group(1)
            top = mod.split(".")[0]
            own = self.tree.exists(f"{top}/__init__.py") or self.tree.exists(f"src/{top}/__init__.py")
            if not own:
                dist = IMPORT_TO_DIST.get(mod) or IMPORT_TO_DIST.get(top) or top.replace("_", "-")
                key = f"install {dist}"
                if key not in tried:
                    self.uv_install(shlex.quote(dist), "repair:missing-module")
                    return key
        crash = re.findall(r"site-packages/([A-Za-z0-9_]+)", out)
        for mod in reversed(crash):
            if mod in ("_pytest", "pluggy", "pytest") and any(f.startswith(("src/_pytest", "_pytest")) for f in self.tree.files[:1]):
                continue
            dist = IMPORT_TO_DIST.get(mod, mod.replace("_", "-"))
            key = f"upgrade {dist}"
            if key in tried or dist in ("py", "importlib"):
                continue
            self.uv.package_dates[dist.lower()] = self.lifted
            self.uv_install(f"--upgrade-package {shlex.quote(dist)} {shlex.quote(dist)}", "repair:upgrade-crashing")
            return key
        return None

    def apply_options(self, options: dict) -> None:
        """Options a plan request carries: `uv_lift` (package names) and `no_build_isolation`
        (bool) from memory before planning; `pytest_floor` (bool) when the loop asked for a newer
        interpreter than the commit's era: the implicit pytest then starts at the oldest release
        that runs on it (`PYTEST_FLOOR`), its date bound lifted."""
        for pkg in options.get("uv_lift", []):
            self.lift(pkg)
        if options.get("no_build_isolation"):
            self.uv.no_build_isolation = True
        self.pytest_floor = bool(options.get("pytest_floor"))

    def pytest_spec(self) -> str:
        """The implicit pytest requirement: `pytest`, or `pytest>=<floor>` with pytest's date bound
        lifted under the `pytest_floor` option."""
        floor = PYTEST_FLOOR.get(self.choice.version) if self.pytest_floor else None
        if not floor:
            return "pytest"
        self.uv.package_dates["pytest"] = self.lifted
        return f"pytest>={floor}"

    def _fail(self, reason: str) -> SetupResult:
        return SetupResult(ok=False, reason=reason, steps=self.steps, commands=self.commands, env=self.env,
                           uv=self.uv)


def repeats_rule(actions, tried: set[str]) -> bool:
    """True when every action only redoes a repair the rules already made in this step
    (`tried` keys: `lift|exempt|upgrade <pkg>`, `isolation`): applying it cannot help."""
    def done(a) -> bool:
        if a.kind == "uv_lift":
            return any(f"{verb} {a.package.lower()}" in tried for verb in ("lift", "exempt", "upgrade"))
        if a.kind == "uv_option":
            return a.option == "no_build_isolation" and "isolation" in tried
        return False
    return bool(actions) and all(done(a) for a in actions)

