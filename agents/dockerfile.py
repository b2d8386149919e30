"""Dockerfile generation: rebuild an instance's environment without swemint.

The Dockerfile starts `FROM` an official image (`debian:<suite>-slim`, or the official toolchain
image where a registry gave one) and spells out every step that made the toolchain image
(`envpool.images.recipe`: our Debian base packages, the toolchain script), then lays out
/testbed exactly as the minter does -- `base_commit`'s tree as one commit of its own, no history,
so no later commit (the fix) is reachable -- replays the setup commands that succeeded, in order,
keeps tracked edits in their own commit, and adds `python3` where the image has none (for the
status tool, `envpool.evalscript`).

The steps come in the tiers the environment was built in (`agents.tiers`): the toolchain, then --
when the environment stands on a dependency layer -- `# tier: dependencies` (only the manifests
and lockfiles the layer was given are taken from the tree, the layer's commands run, /testbed is
emptied again), then `# tier: instance` (the checkout and the setup). A row whose environment
was reused from another instance of its repository (`render_reused_dockerfile`) is that
instance's Dockerfile, its tree read from `trees/<commit>.tar.gz`, followed by this commit's
tree laid over it as the reuse did and the increments: the steps that made the published image.

It needs a build context (`build_context`): `testbed.tar.gz` (the tree of `base_commit`, `git
archive` of the mirror; GitHub is not cloned), `trees/<commit>.tar.gz` for each earlier tree a
reused row's Dockerfile names (`earlier_trees`), `swemint/` (the grading tools, `ca.pem`: the CA
bundle the build trusts, and `build-env.sh`, sourced by every build step, which points the usual
CA variables at it only during the build). `swemint export --format swebench-task-repo` and
`swemint rebuild` write it; `DOCKER_BUILDKIT=0 docker build -t TAG DIR` builds it.
"""

from __future__ import annotations

import base64
import io
import re
import tarfile

from envpool import images
from envpool.docker_sandbox import CA_ENV_VARS, CA_PATH_IN_CONTAINER
from envpool.evalscript import ENSURE_PYTHON3, grading_tools
from envpool.quoting import ansi_c_quote, comment, docker_env_value, env_assignment, env_name, shell_word, shell_words

CONTEXT_TREE = "testbed.tar.gz"
"""The build context's tarball of `base_commit`'s tree."""
BUILD_ENV = "/opt/swemint/build-env.sh"
GIT_ID = "-c user.name=swemint -c user.email=swemint@localhost"
EARLIER_TREE = re.compile(r"^COPY trees/([0-9a-f]{7,64})\.tar\.gz ", re.M)
"""A reused row's Dockerfile line copying an earlier instance's tree (`render_reused_dockerfile`)."""


def run_line(command: str, build_env: bool = True) -> str:
    """A RUN line: `command` after sourcing build-env.sh. A multi-line command, one holding a
    control character other than a tab, or one ending in a backslash (Docker would join the next
    line to it) runs as `bash -c $'...'` (`envpool.quoting.ansi_c_quote`: the legacy builder has
    no heredocs, and joining lines would change it)."""
    prefix = f". {BUILD_ENV} && " if build_env else ""
    one = command.strip()
    control = any(c != "\t" and (ord(c) < 0x20 or ord(c) == 0x7f) for c in one)
    if "\n" in command.strip("\n") or one.endswith("\\") or control:
        return f"RUN {prefix}bash -c {ansi_c_quote(command)}"
    return f"RUN {prefix}{one}"


def render_dockerfile(*, base_image: str, repo: str, base_commit: str, commands: list[str],
                      env: dict[str, str], workdir: str = "/testbed",
                      files: dict[str, bytes] | None = None, restore: list[str] | None = None,
                      dependency=None, **_ignored) -> str:
    """Return Dockerfile text (str) for the environment built from toolchain image `base_image`
    by `commands` (run in `workdir` with `env` set, PATH included). The toolchain is spelled out
    from `envpool.images.recipe(base_image)` when this process resolved it; otherwise the
    Dockerfile starts `FROM base_image` and says so. `dependency`: the dependency tier the
    environment stands on (an `agents.tiers.DependencyTier`: `dependency_steps`), between the
    toolchain and the instance tier.
    `files` (absolute path -> content) other than the grading tools (which come from the build
    context) are written inline. `restore`: tracked files set back to base_commit before the
    setup edits are committed."""
    rec = images.recipe(base_image)
    lines = [f"# swemint environment for {comment(repo)} @ {comment(base_commit)}",
             "# Build context: this file, testbed.tar.gz (the tree of base_commit, no history) and swemint/",
             "# (grading tools, ca.pem, build-env.sh), as `swemint export --format swebench-task-repo` writes it:",
             "#   DOCKER_BUILDKIT=0 docker build -t IMAGE DIR"]
    if rec.stand_in:
        lines.append(f"# Without a registry, {rec.from_image} is our debootstrapped {rec.stand_in} tagged under its name.")
    if not rec.complete:
        lines.append(f"# The steps that made {rec.from_image} are not known to this build; it is used as is.")
    lines += [f"FROM {rec.from_image}", 'SHELL ["/bin/bash", "-c"]', "COPY swemint/ /opt/swemint/"]
    lines += [run_line(step) for step in rec.steps]
    if dependency is not None:
        lines += dependency_steps(dependency, workdir)
        lines.append("# tier: instance (the checkout of base_commit and the repository's own setup)")
    lines += [f"ENV {env_name(k)}={docker_env_value(v)}" for k, v in sorted(env.items())]
    lines += [f"COPY {CONTEXT_TREE} /tmp/{CONTEXT_TREE}",
              f"RUN mkdir -p {workdir} && tar -xzf /tmp/{CONTEXT_TREE} -C {workdir} && rm /tmp/{CONTEXT_TREE} && "
              f"cd {workdir} && git init -q && git add -A && "
              f"git {GIT_ID} commit -qm {shell_word('base ' + base_commit)} --no-verify",
              f"WORKDIR {workdir}"]
    tools = set(grading_tools())
    for path, data in (files or {}).items():
        if path not in tools:
            lines.append(f"RUN mkdir -p {shell_word(path.rsplit('/', 1)[0] or '/')} && "
                         f"echo {base64.b64encode(data).decode()} | base64 -d > {shell_word(path)}")
    lines += [run_line(c) for c in commands]
    if restore:  # edited files a row's patch changes go back to base_commit (envimage.restore_conflicting_edits)
        lines.append(f"RUN cd {workdir} && git checkout HEAD -- {shell_words(restore)}")
    lines.append(f"RUN cd {workdir} && if [ -n \"$(git status --porcelain --untracked-files=no)\" ]; then "
                 f"git {GIT_ID} commit -qam 'swemint: environment setup edits' --no-verify; fi")
    lines.append(run_line(ENSURE_PYTHON3))
    return "\n".join(lines) + "\n"


def dependency_steps(tier, workdir: str = "/testbed") -> list[str]:
    """Dockerfile lines of a dependency tier (an `agents.tiers.DependencyTier`: its `name`,
    `key`, `files`, `stubs`, `commands`, `env`): only the manifests and lockfiles
    it was given are taken from the tree (and its stub paths created empty), its commands run in
    `workdir` with its environment exported (not ENV: the instance tier runs with its own), and
    `workdir` is emptied again, as the tier's own sandbox was before its commit."""
    out = [f"# tier: dependencies ({comment(tier.name)}; key {tier.key}): no code of the repository is present "
           "or runs here, only the files named below; the image under this key is shared by every environment "
           "with the same key",
           f"WORKDIR {workdir}"]
    given = getattr(tier, "content", None) or {}
    taken = [f for f in tier.files if f not in given]
    if taken:
        out += [f"COPY {CONTEXT_TREE} /tmp/swemint-manifests.tar.gz",
                f"RUN tar -xzf /tmp/swemint-manifests.tar.gz -C {workdir} -- "
                + shell_words(taken) + " && rm -f /tmp/swemint-manifests.tar.gz"]
    for path, text in sorted(given.items()):  # the manifest as the tier was given it
        full = f"{workdir}/{path}"
        out.append(f"RUN mkdir -p {shell_word(full.rsplit('/', 1)[0])} && echo "
                   f"{base64.b64encode(text.encode()).decode()} | base64 -d > {shell_word(full)}")
    if tier.stubs:
        out.append(f"RUN cd {workdir} && for f in {shell_words(tier.stubs)}; do "
                   'mkdir -p "$(dirname "$f")" && : > "$f"; done')
    prefix = ("export " + " ".join(env_assignment(k, v) for k, v in sorted(tier.env.items())) + "; ") \
        if tier.env else ""
    out += [run_line(prefix + c) for c in tier.commands]
    out.append(f"RUN find {workdir} -mindepth 1 -delete")
    return out


def layout_command(tar_path: str, base_commit: str, *, replace: bool = False, keep_ignored: bool = False,
                   workdir: str = "/testbed") -> str:
    """Shell laying out the tree in `tar_path` (tar, gzip or not) at `workdir` as one commit `base
    <base_commit>` with no history, as `agents.envimage.lay_out_repository` does. `replace`:
    the previous tree goes first. `keep_ignored` (a reused environment): the previous tree's
    top-level folders its git ignores (`target/`, `node_modules/`) stay, still ignored, and
    only the files that differ between the previous tree and this one are written
    (`changed_files_update`, issue 26): an unchanged source keeps its time, older than the
    artifacts built from it, so make, cargo and Maven rebuild what the change reaches and
    nothing else; a changed or new file gets the current time. Where that update cannot run (no
    previous commit, a new tracked file where an ignored one is), every file of the new tree is
    written and gets the current time (no kept artifact looks newer than a changed source).
    Every file written gets the same time, one whole second: a tracked generated file and its
    source that both changed (bison's `parser.c` beside `parser.y`) stay equal for make, so the
    build does not regenerate the committed output with another generator version -- which
    then no longer takes the row's patch (seen on jq through reuse: "patch failed: src/parser.c").
    Ends printing HEAD."""
    tar = shell_word(tar_path)
    init = (f"git init -q && {{exclude}}git add -A && git {GIT_ID} commit -qm {shell_word('base ' + base_commit)} "
            "--no-verify && git rev-parse HEAD")
    if not (replace and keep_ignored):
        clear = f"cd / && find {workdir} -mindepth 1 -delete && " if replace else ""
        return f"{clear}mkdir -p {workdir} && cd {workdir} && tar -xf {tar} && rm {tar} && " + init.format(exclude="")
    keep = (f"cd {workdir} && keep=$(git ls-files --others --ignored --exclude-standard --directory 2>/dev/null "
            "| grep -E '^[^/]+/$' | tr '\\n' ' ') ; ")
    full = (f"cd / && for f in {workdir}/* {workdir}/.[!.]* {workdir}/..?*; do "
            f"[ -e \"$f\" ] || continue; n=${{f#{workdir}/}}; case \" $keep \" in *\" $n/ \"*) ;; *) rm -rf \"$f\";; "
            f"esac; done && mkdir -p {workdir} && cd {workdir} && tar -xf {tar} && "
            f"t=$(date +%s) && tar -tf {tar} | grep -v '/$' | tr '\\n' '\\0' | xargs -0 -r touch -c -d \"@$t\" -- && "
            f"rm {tar}")
    exclude = "for k in $keep; do echo \"/$k\" >> .git/info/exclude; done && "
    return (f"{keep}if {changed_files_update(tar, workdir)}; then rm -rf .git; else {full}; fi && "
            f"cd {workdir} && " + init.format(exclude=exclude))


LAYOUT_SCRATCH = "/tmp/swemint-layout"
"""Where `changed_files_update` unpacks the new tree and keeps its index (removed after)."""


def changed_files_update(tar: str, workdir: str = "/testbed") -> str:
    """Shell condition (run in `workdir`, `$keep` set to its kept top-level folders) that turns
    the previous tree at `workdir` into the one in `tar` writing only the files that differ:
    the new tree is unpacked apart and written as a tree object into the previous repository
    (`git add -A -f` with its own index: ignored files of the tree count too), the work tree is
    reset to the previous HEAD and cleaned of everything untracked but `$keep`, and a two-tree
    `git read-tree -m -u` updates exactly the paths whose content or mode differs (deleting
    the removed ones), then gives every path it wrote one time (the current whole second,
    `layout_command`). Prints how many paths differed; false (nothing half-done that the full
    layout after it does not redo) when any step fails."""
    g = f"git --git-dir={workdir}/.git"
    scratch = LAYOUT_SCRATCH
    return (f"{{ old=$({g} rev-parse -q --verify 'HEAD^{{tree}}' 2>/dev/null) && [ -n \"$old\" ] && "
            f"rm -rf {scratch} && mkdir -p {scratch}/tree && tar -xf {tar} -C {scratch}/tree && "
            f"GIT_INDEX_FILE={scratch}/index {g} --work-tree={scratch}/tree -C {scratch}/tree add -A -f . && "
            f"new=$(GIT_INDEX_FILE={scratch}/index {g} write-tree) && "
            "{ git update-index -q --refresh >/dev/null; true; } && "  # stat info of a committed image is stale
            f"git reset -q --hard HEAD && git clean -ffdqx $(for k in $keep; do printf -- '-e /%s ' \"$k\"; done) && "
            "git read-tree -m -u \"$old\" \"$new\" && t=$(date +%s) && "
            "git diff --name-only -z \"$old\" \"$new\" | xargs -0 -r touch -c -d \"@$t\" -- && "
            "echo \"swemint: reuse: $(git diff --name-only \"$old\" \"$new\" | wc -l) path(s) differ; only they "
            f"were written\" && rm -rf {scratch} {tar}; }}")


def render_reused_dockerfile(*, candidate_dockerfile: str, candidate_commit: str, reused_from: str, repo: str,
                             base_commit: str, commands: list[str], env: dict[str, str], keep_ignored: bool,
                             workdir: str = "/testbed") -> str:
    """The Dockerfile of an environment reused from another instance of the same repository:
    that instance's Dockerfile (`candidate_dockerfile`, whose own tree becomes
    `trees/<candidate_commit>.tar.gz`), then this commit's tree laid over its /testbed as the
    reuse did (`layout_command` with `replace`, `keep_ignored`), `env` and the increments
    `commands` (edits they make to tracked files stay uncommitted, as in the reuse's sandbox):
    every step that made the published image, in order. A chain of reuses nests (each earlier
    tree keeps its `trees/` name)."""
    earlier = candidate_dockerfile.rstrip("\n").replace(f"COPY {CONTEXT_TREE} ", f"COPY trees/{candidate_commit}.tar.gz ")
    lines = [f"# swemint environment for {comment(repo)} @ {comment(base_commit)}: the environment of "
             f"{comment(reused_from)} (same repository; its steps first, on its own tree "
             f"trees/{comment(candidate_commit)}.tar.gz), then this commit's tree and the increments",
             earlier,
             f"# tier: instance of {comment(base_commit)} on the environment of {comment(reused_from)}: /testbed "
             "replaced by this commit's tree" + (" (the top-level folders the earlier tree's git ignores kept)"
                                                 if keep_ignored else ""),
             f"WORKDIR {workdir}",
             f"COPY {CONTEXT_TREE} /tmp/{CONTEXT_TREE}",
             f"RUN {layout_command('/tmp/' + CONTEXT_TREE, base_commit, replace=True, keep_ignored=keep_ignored, workdir=workdir)}"]
    lines += [f"ENV {env_name(k)}={docker_env_value(v)}" for k, v in sorted(env.items())]
    lines += [run_line(c) for c in commands]
    lines.append(run_line(ENSURE_PYTHON3))
    return "\n".join(lines) + "\n"


def earlier_trees(dockerfile: str) -> list[str]:
    """The commits whose trees a reused row's Dockerfile copies from `trees/` (earliest first)."""
    return list(dict.fromkeys(EARLIER_TREE.findall(dockerfile or "")))


def build_env_script() -> str:
    """`build-env.sh`: the CA variables pointed at /opt/swemint/ca.pem when it is non-empty."""
    exports = " ".join(f"{k}={CA_PATH_IN_CONTAINER}" for k in CA_ENV_VARS)
    return ("# sourced by every RUN of a swemint Dockerfile: trust the build host's CA bundle\n"
            f"if [ -s {CA_PATH_IN_CONTAINER} ]; then export {exports}; fi\n")


def build_context(tree_tar: bytes, ca_bundle: bytes | None = None,
                  earlier: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Relative path -> content of a Dockerfile's build context (the Dockerfile not included):
    `testbed.tar.gz` from `tree_tar` (an uncompressed tar of the tree, e.g.
    `agents.gitrepo.GitTree.archive()`), `trees/<commit>.tar.gz` for each of `earlier` (commit ->
    uncompressed tar: the trees a reused row's Dockerfile names, `earlier_trees`), the grading
    tools under `swemint/`, `swemint/ca.pem` (`ca_bundle`, empty when None) and
    `swemint/build-env.sh`. Deterministic for equal input."""
    out = {CONTEXT_TREE: _gzip(tree_tar)}
    for commit, tar in sorted((earlier or {}).items()):
        out[f"trees/{commit}.tar.gz"] = _gzip(tar)
    for path, data in grading_tools().items():
        out["swemint/" + path.removeprefix("/opt/swemint/")] = data
    out["swemint/ca.pem"] = ca_bundle or b""
    out["swemint/build-env.sh"] = build_env_script().encode()
    return out


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def tar_of(files: dict[str, bytes]) -> bytes:
    """An uncompressed tar of `files` (relative path -> content), e.g. a build context."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o755 if name.endswith((".sh", ".pyz")) else 0o644
            tf.addfile(info, io.BytesIO(files[name]))
    return buf.getvalue()


def render_setup_script(commands: list[str], env: dict[str, str], failed: list[tuple[str, int]] | None = None) -> str:
    """The setup script (bash) as run: exports (values quoted: literal, as the sandbox passed
    them), then each successful command; failed attempts are kept as one-line comments with
    their exit codes so the record is complete."""
    out = ["#!/usr/bin/env bash", "set -euxo pipefail", "cd /testbed"]
    out += [f"export {env_assignment(k, v)}" for k, v in sorted(env.items())]
    for cmd, code in failed or []:
        out.append(f"# failed (exit {code}), repaired or skipped: {comment(cmd)}")
    out += commands
    return "\n".join(out) + "\n"
