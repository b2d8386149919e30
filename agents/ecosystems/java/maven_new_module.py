"""A Maven module that the patch creates (issue 25: the class of rows that add a whole module --
its ``pom.xml`` is in `patch`, its tests in `test_patch`, the aggregator's ``<modules>`` gains it).

At base_commit the nearest pom.xml above the touched tests is the aggregator's, so the plan ran
the whole reactor (java-design-patterns: 205 modules) and never the new module. Here the owner of
a touched test is read from the tree *after* the patches (`new_module_owners`): when it is a
pom.xml that the patch or test_patch adds, the module is that folder, and the runs select it
with ``-pl <module> -am``. Before the fix the module does not exist (Maven stops: "Could not find
the selected project in the reactor", `MODULE_MISSING`: the run reports the unit as failed to
build), so its tests are absent before and every test of it that passes after is FAIL_TO_PASS --
SWE-bench's rule for tests the patches add.

The environment is built at base_commit, where the module cannot be selected, so its
dependencies and Maven's plugins are fetched in a scratch copy of the checkout with only the
patches' pom.xml sections applied (`prefetch_command`; never their code or tests: the setup
script is published with the row -- the same rule as Go's go.mod and Rust's Cargo.toml
prefetch), with one empty test class in the new module so that Surefire resolves its provider
(it does only when a test class is there), then proved offline there too.
"""

from __future__ import annotations

import base64
import posixpath
import shlex

from agents.ecosystems.owners import owner_build
from agents.gitrepo import GitTree
from envpool.patches import paths_after, sections_by_path

__all__ = ["MAX_INLINE_POMS", "MODULE_MISSING", "WARM_UP_CLASS", "new_module_owners", "pom_sections", "prefetch_command"]

MAX_INLINE_POMS = 90_000
"""Base64 bytes of the patches' pom.xml sections a setup command carries at most."""
WARM_UP_CLASS = "SwemintWarmUpTest"
"""The empty test class written into the new module of the scratch copy."""
SCRATCH = "/tmp/swemint-prefetch"
MODULE_MISSING = r"^\[ERROR\] Could not find the selected project in the reactor"
"""Maven's console line when ``-pl`` names a module the reactor lacks (a POSIX extended regex):
on the before side of a new module, the test command reports its unit as failed to build, so the
run is graded (its tests absent) instead of reporting nothing."""


def _added_poms(tree: GitTree, *patches: str) -> set[str]:
    return {p for patch in patches for p in paths_after(patch or "")
            if posixpath.basename(p) == "pom.xml" and not tree.exists(p)}


def new_module_owners(tree: GitTree, tests: list[str], patch: str, test_patch: str) -> dict[str, str]:
    """{touched test path: module folder} for the touched tests whose nearest pom.xml after the
    patches is one the patch or test_patch adds (a module new in the patches); {} when none is.
    Reads file names and the diffs' headers only."""
    added = _added_poms(tree, patch, test_patch)
    if not added:
        return {}
    files = list(tree.files) + sorted(added)
    out: dict[str, str] = {}
    for path in tests:
        owner = owner_build(files, path, {"maven": ("pom.xml",)})
        if owner is not None and posixpath.join(owner[1], "pom.xml") in added:
            out[path] = owner[1]
    return out


def pom_sections(patch: str, test_patch: str) -> str:
    """The file sections of the two diffs whose path is a pom.xml (what the patches declare to
    Maven: modules, dependencies, plugins), in order."""
    return "".join(section for diff in (test_patch, patch)
                   for path, section in sections_by_path(diff or "").items() if posixpath.basename(path) == "pom.xml")


def prefetch_command(poms: str, module: str, root: str, mvn_online: str, mvn_offline: str) -> str | None:
    """The setup step fetching what the new `module` needs (module docstring): copy /testbed to
    a scratch folder, apply `poms` (`pom_sections`), write the empty `WARM_UP_CLASS` into the
    module, run `mvn_online` then `mvn_offline` (Maven commands without their ``-Dtest``; both
    get ``-Dtest=WARM_UP_CLASS`` appended) from the reactor's `root`, remove the scratch copy; its
    exit is the offline run's. None when the sections are more than `MAX_INLINE_POMS`."""
    b64 = base64.b64encode(poms.encode()).decode()
    if not poms or len(b64) > MAX_INLINE_POMS:
        return None
    test_dir = posixpath.join(SCRATCH, module, "src/test/java")
    cd = shlex.quote(posixpath.join(SCRATCH, root) if root else SCRATCH)
    sel = f"-Dtest={WARM_UP_CLASS}"
    return (f"rm -rf {SCRATCH} && cp -a /testbed {SCRATCH} && cd {SCRATCH} && "
            f"echo {b64} | base64 -d | git apply --reject --whitespace=nowarn - ; "
            f"mkdir -p {shlex.quote(test_dir)} && printf 'public class {WARM_UP_CLASS} {{}}\\n' > "
            f"{shlex.quote(posixpath.join(test_dir, WARM_UP_CLASS + '.java'))} && cd {cd} && "
            f"{{ {mvn_online} {sel}; {mvn_offline} {sel}; }}; rc=$?; cd / && rm -rf {SCRATCH}; exit $rc")
