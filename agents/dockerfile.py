"""Dockerfile generation: rebuild an instance's environment without swemint.

The Dockerfile starts from the toolchain image (an official image where one was used; our
debootstrapped one otherwise, whose recipe is in `envpool.images`), clones the repository at
`base_commit` and replays the setup commands that succeeded, in order.
"""

from __future__ import annotations

import base64
import json
import shlex


def docker_env_value(value: str) -> str:
    """`value` as a Dockerfile ENV value that Docker takes literally (JSON-quoted, `$` escaped:
    ENV substitutes variables), as the sandbox's exec API passes it."""
    return json.dumps(value).replace("$", "\\$")


def comment(text: str) -> str:
    """`text` on one line, safe after `# ` in a script (a newline would end the comment)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def render_dockerfile(*, base_image: str, repo: str, base_commit: str, commands: list[str],
                      env: dict[str, str], clone_url: str = "https://github.com/{repo}.git",
                      workdir: str = "/testbed", files: dict[str, bytes] | None = None) -> str:
    """Return Dockerfile text (str). `commands` run in `workdir` with `env` set (PATH included);
    `files` (absolute path -> content) are written into the image, inline, so the Dockerfile
    needs no build context (e.g. swemint's pytest report plugin)."""
    lines = [f"# swemint environment for {comment(repo)} @ {comment(base_commit)}",
             f"FROM {base_image}",
             "SHELL [\"/bin/bash\", \"-c\"]"]
    for k, v in sorted(env.items()):
        lines.append(f"ENV {k}={docker_env_value(v)}")
    url = clone_url.format(repo=repo)
    lines.append(f"RUN git clone {shlex.quote(url)} {workdir} && cd {workdir} && git checkout --detach "
                 f"{shlex.quote(base_commit)}")
    lines.append(f"WORKDIR {workdir}")
    for path, data in (files or {}).items():
        b64 = base64.b64encode(data).decode()
        lines.append(f"RUN mkdir -p $(dirname {path}) && echo {b64} | base64 -d > {path}")
    for c in commands:
        lines.append("RUN " + c.replace("\n", " \\\n    "))
    return "\n".join(lines) + "\n"


def render_setup_script(commands: list[str], env: dict[str, str], failed: list[tuple[str, int]] | None = None) -> str:
    """The setup script (bash) as run: exports (values quoted: literal, as the sandbox passed
    them), then each successful command; failed attempts are kept as one-line comments with
    their exit codes so the record is complete."""
    out = ["#!/usr/bin/env bash", "set -euxo pipefail", "cd /testbed"]
    out += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    for cmd, code in failed or []:
        out.append(f"# failed (exit {code}), repaired or skipped: {comment(cmd)}")
    out += commands
    return "\n".join(out) + "\n"
