"""Read a repository at a commit straight from a (bare) git directory on the host.

No checkout is made: files are read with `git show COMMIT:PATH`, the tree with `git ls-tree`,
and the whole tree is streamed with `git archive` (a tar) into the build container.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path, PurePosixPath

from envpool.errors import InstanceInputError


@dataclass(frozen=True)
class GitSubmodule:
    """One `[submodule "name"]` section of `.gitmodules`: its `name`, `path` (relative to the
    root) and `url` ("" when the section has none)."""

    name: str
    path: str
    url: str = ""


_SECTION = re.compile(r'^\[\s*submodule\s+"((?:[^"\\]|\\.)*)"\s*\]')


def parse_gitmodules(text: str) -> list[GitSubmodule]:
    """The submodules a `.gitmodules` text declares (git-config syntax: `[submodule "name"]`
    sections, `key = value` lines, keys case-insensitive, `#` / `;` comments, double-quoted
    values), in file order; a section without a `path` is left out, as git ignores it."""
    out: list[GitSubmodule] = []
    name: str | None = None
    keys: dict[str, str] = {}

    def close() -> None:
        if name is not None and keys.get("path"):
            out.append(GitSubmodule(name=name, path=keys["path"].strip("/"), url=keys.get("url", "")))

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            close()
            m = _SECTION.match(line)
            name, keys = (m.group(1).replace('\\"', '"'), {}) if m else (None, {})
            continue
        if name is None or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        value = re.sub(r'\s[#;].*$', "", value) if not value.startswith('"') else value
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        keys[key.lower()] = value.strip()
    close()
    return out


class GitTree:
    """The tree of `commit` in the git directory `git_dir` (bare or not).

    Raises InstanceInputError (with `instance_id`) when the commit does not exist.
    """

    def __init__(self, git_dir: Path, commit: str, instance_id: str | None = None):
        self.git_dir = Path(git_dir)
        self.commit = commit
        self.instance_id = instance_id
        self.missing_blobs: list[str] = []
        r = self._git("cat-file", "-e", f"{commit}^{{commit}}", check=False)
        if r.returncode != 0:
            raise InstanceInputError(f"base_commit {commit} not found in {git_dir}",
                                     instance_id=instance_id)

    def _git(self, *args: str, check: bool = True, text: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True,
                           text=text)
        if check and r.returncode != 0:
            err = r.stderr if text else r.stderr.decode(errors="replace")
            raise InstanceInputError(f"git {' '.join(args[:2])} failed: {err.strip()[:500]}",
                                     instance_id=self.instance_id)
        return r

    @cached_property
    def files(self) -> list[str]:
        """Every file path in the tree (POSIX, relative to the root)."""
        out = self._git("ls-tree", "-r", "--name-only", "-z", self.commit).stdout
        return [p for p in out.split("\0") if p]

    @cached_property
    def file_set(self) -> frozenset[str]:
        """`files` as a set."""
        return frozenset(self.files)

    @cached_property
    def gitlinks(self) -> frozenset[str]:
        """Paths of the tree's submodule entries (gitlinks, mode 160000): a mirror holds none of
        their content, and /testbed gets each as an empty directory (`archive`)."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", self.commit).stdout
        return frozenset(rec.split("\t", 1)[1] for rec in out.split("\0")
                         if rec and rec.split("\t", 1)[0].split()[1:2] == ["commit"])

    @cached_property
    def sizes(self) -> dict[str, int]:
        """Every blob's size in bytes by path (``git ls-tree -l``; submodule entries left out)."""
        out = self._git("ls-tree", "-r", "-l", "-z", self.commit).stdout
        sizes: dict[str, int] = {}
        for rec in out.split("\0"):
            meta, _, path = rec.partition("\t")
            words = meta.split()
            if path and len(words) == 4 and words[1] == "blob" and words[3].isdigit():
                sizes[path] = int(words[3])
        return sizes

    def submodules(self) -> list[GitSubmodule]:
        """The submodules `.gitmodules` declares (`parse_gitmodules`); [] without one."""
        return parse_gitmodules(self.read(".gitmodules") or "")

    def exists(self, path: str) -> bool:
        """True when `path` is a file in the tree."""
        return path in self.file_set

    def read(self, path: str, limit: int = 2_000_000) -> str | None:
        """Text of `path` (UTF-8, errors replaced), None when absent or larger than `limit` bytes."""
        if path not in self.file_set:
            return None
        r = self._git("show", f"{self.commit}:{path}", check=False, text=False)
        if r.returncode != 0 or len(r.stdout) > limit:
            return None
        return r.stdout.decode("utf-8", errors="replace")

    def read_bytes(self, path: str, limit: int = 16_000_000) -> bytes | None:
        """Content of `path` as stored (bytes), None when absent or larger than `limit` bytes."""
        if path not in self.file_set:
            return None
        r = self._git("show", f"{self.commit}:{path}", check=False, text=False)
        if r.returncode != 0 or len(r.stdout) > limit:
            return None
        return r.stdout

    def archive(self) -> bytes:
        """The whole tree as an uncompressed tar (bytes).

        Mirrors may lack large blobs (files of 4 MiB or more, LFS content): when `git archive`
        fails, the tar is built blob by blob and missing blobs are left out (their paths are in
        `missing_blobs`), like a sparse checkout. A tree whose .gitattributes use `export-ignore`
        or `export-subst` is always built blob by blob, so the archive is the commit's tree.
        """
        if any(PurePosixPath(f).name == ".gitattributes" and "export-" in (self.read(f) or "")
               for f in self.files):
            # `export-ignore` / `export-subst` would make git archive drop or rewrite files
            # (Carbon's tests/ is export-ignore): build the tar blob by blob instead
            return self._sparse_archive()
        r = self._git("archive", "--format=tar", self.commit, check=False, text=False)
        if r.returncode == 0:
            return r.stdout
        return self._sparse_archive()

    def _sparse_archive(self) -> bytes:
        entries = []
        gitlinks = []  # submodules: an empty directory, as git archive writes them
        out = self._git("ls-tree", "-r", "-z", "--full-tree", self.commit).stdout
        for rec in out.split("\0"):
            if not rec:
                continue
            meta, path = rec.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                entries.append((mode, sha, path))
            elif kind == "commit":
                gitlinks.append(path)
        shas = "".join(f"{sha}\n" for _, sha, _ in entries).encode()
        proc = subprocess.run(["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                              input=shas, capture_output=True)
        data = proc.stdout
        bio = io.BytesIO()
        self.missing_blobs = []
        pos = 0
        now = int(self.commit_time.timestamp())
        with tarfile.open(fileobj=bio, mode="w") as tar:
            for path in gitlinks:
                info = tarfile.TarInfo(path)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                tar.addfile(info)
            for mode, _sha, path in entries:
                nl = data.index(b"\n", pos)
                header = data[pos:nl].decode()
                pos = nl + 1
                if header.endswith("missing"):
                    self.missing_blobs.append(path)
                    continue
                size = int(header.split()[2])
                content = data[pos:pos + size]
                pos += size + 1
                info = tarfile.TarInfo(path)
                info.mtime = now
                if mode == "120000":
                    info.type = tarfile.SYMTYPE
                    info.linkname = content.decode(errors="replace")
                    tar.addfile(info)
                else:
                    info.size = size
                    info.mode = 0o755 if mode == "100755" else 0o644
                    tar.addfile(info, io.BytesIO(content))
        return bio.getvalue()

    @cached_property
    def commit_time(self) -> datetime:
        """Committer time of the commit, UTC."""
        ts = self._git("show", "-s", "--format=%ct", self.commit).stdout.strip()
        return datetime.fromtimestamp(int(ts), tz=timezone.utc)

    def describe(self) -> str | None:
        """`git describe --tags` of the commit, or None when the mirror has no tags."""
        r = self._git("describe", "--tags", "--abbrev=0", self.commit, check=False)
        return r.stdout.strip() or None if r.returncode == 0 else None
