"""Git submodules the mirror lacks, filled from PyPI source distributions.

A mirror holds a submodule only as its gitlink, laid out as an empty directory in /testbed, and
GitHub is not reachable from the build. A Python project that vendors a helper package that way
(astropy's `astropy_helpers`, imported by its setup.py through `ah_bootstrap`) then fails to
install. The rule: a submodule whose path is an empty gitlink and whose name -- the last component
of its url without `.git`, then the last component of its path, normalised per PEP 503 -- is a
distribution on PyPI gets that distribution's sdist at the newest release uploaded no later than
the plan's date cut (`--exclude-newer`), extracted so that the path holds the sdist's single root
folder's contents (a clone's checkout of the package's repository, as far as the sdist has it).

Two steps (`agents.ecosystems.python.builder.PythonEnvBuilder.fill_submodules`): `probe_command`
(not recorded in the script) asks PyPI's JSON API which sdists each name has, exit 0 even when
nothing is found; `choose_sdist` picks one on the host; `fill_command` (recorded: the setup script
and the Dockerfile replay it without swemint) downloads exactly that file, checks its sha256 and
extracts it. A name PyPI does not know leaves the directory empty, as before; a name of the
project under test itself (`plan.own_names`) is never asked for.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime, timezone

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

from agents.gitrepo import GitSubmodule, GitTree

TESTBED = "/testbed"
PROBE_PREFIX = "swemint-pypi-sdists "
"""Prefix of each line the probe prints (one JSON document per candidate name)."""

_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.I)
"""A valid distribution name (PEP 508)."""
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
"""Archive types `fill_command` extracts, in order of preference within one release."""


def normalise(name: str) -> str:
    """A distribution name normalised per PEP 503 (`Astropy_Helpers` -> `astropy-helpers`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def candidate_names(sub: GitSubmodule) -> list[str]:
    """PEP 503 names `sub` may be published under: its url's last component without `.git`
    (`https://github.com/astropy/astropy-helpers.git`, `git@host:o/six.git`), then its path's last
    component; only valid distribution names, each once."""
    out: list[str] = []
    url_name = re.split(r"[/:]", sub.url.strip().rstrip("/"))[-1] if sub.url.strip() else ""
    url_name = url_name[:-4] if url_name.endswith(".git") else url_name
    for raw in (url_name, sub.path.rstrip("/").rsplit("/", 1)[-1]):
        if raw and _NAME.match(raw) and normalise(raw) not in out:
            out.append(normalise(raw))
    return out


def empty_submodules(tree: GitTree) -> list[GitSubmodule]:
    """Submodules of `.gitmodules` whose path is a gitlink of the tree with no file under it
    (what the mirror lacks); a stale entry without a gitlink is not one."""
    return [s for s in tree.submodules()
            if s.path in tree.gitlinks and not any(f.startswith(s.path + "/") for f in tree.files)]


class Sdist(BaseModel):
    """The source distribution chosen for a submodule: `name` (PEP 503) and `version`, the
    file's `filename`, `url`, `sha256` and `uploaded` time (ISO 8601, as PyPI gives it)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    version: str
    filename: str
    url: str
    sha256: str
    uploaded: str


PROBE_SCRIPT = r"""import json, sys, urllib.error, urllib.request
for name in sys.argv[1:]:
    doc = {"name": name}
    try:
        with urllib.request.urlopen("https://pypi.org/pypi/%s/json" % name, timeout=60) as r:
            data = json.load(r)
        doc["releases"] = {v: [[f["filename"], f["url"], f["digests"]["sha256"], f["upload_time_iso_8601"],
                                bool(f.get("yanked"))] for f in files if f.get("packagetype") == "sdist"]
                           for v, files in data.get("releases", {}).items()}
    except urllib.error.HTTPError as e:
        doc["status"] = e.code
    except Exception as e:
        doc["error"] = repr(e)[:300]
    print("swemint-pypi-sdists " + json.dumps(doc), flush=True)
"""
"""Prints, per name given, PyPI's sdists of each release (filename, url, sha256, upload time,
yanked), `status` 404 when PyPI has no such project, `error` when it could not ask; exits 0."""

FILL_SCRIPT = r"""import hashlib, os, shutil, sys, tarfile, tempfile, urllib.request, zipfile
url, sha256, dest = sys.argv[1:4]
with urllib.request.urlopen(url, timeout=300) as r:
    data = r.read()
if hashlib.sha256(data).hexdigest() != sha256:
    sys.exit("sha256 mismatch: " + url)
tmp = tempfile.mkdtemp(prefix="swemint-sdist-")
try:
    archive, out = os.path.join(tmp, url.rsplit("/", 1)[-1]), os.path.join(tmp, "x")
    with open(archive, "wb") as f:
        f.write(data)
    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            if any(n.startswith("/") or ".." in n.split("/") for n in names):
                sys.exit("unsafe member in " + url)
            z.extractall(out)
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() or m.isdir()]
            if any(m.name.startswith("/") or ".." in m.name.split("/") for m in members):
                sys.exit("unsafe member in " + url)
            t.extractall(out, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    roots = os.listdir(out)
    top = os.path.join(out, roots[0]) if len(roots) == 1 and os.path.isdir(os.path.join(out, roots[0])) else out
    os.makedirs(dest, exist_ok=True)
    for n in os.listdir(top):
        shutil.move(os.path.join(top, n), os.path.join(dest, n))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("filled %s from %s" % (dest, url))
"""
"""Downloads one sdist, checks its sha256, extracts it and moves its single root folder's
contents (the whole archive when it has no single root folder) into the destination; regular
files and folders only, nothing outside the archive's own tree."""


def probe_command(python: str, names: list[str]) -> str:
    """The probe asking PyPI which sdists `names` have (`PROBE_SCRIPT`), run by `python`."""
    return " ".join([python, "-c", shlex.quote(PROBE_SCRIPT), *(shlex.quote(n) for n in names)])


def fill_command(python: str, sdist: Sdist, path: str, testbed: str = TESTBED) -> str:
    """The recorded step filling `<testbed>/<path>` with `sdist` (`FILL_SCRIPT`), every value quoted."""
    return " ".join([python, "-c", shlex.quote(FILL_SCRIPT), shlex.quote(sdist.url), shlex.quote(sdist.sha256),
                     shlex.quote(f"{testbed}/{path}")])


def probe_results(output: str) -> list[dict]:
    """The probe's JSON documents, in the order printed (lines that are not one are skipped)."""
    docs = []
    for line in output.splitlines():
        if line.startswith(PROBE_PREFIX):
            try:
                docs.append(json.loads(line[len(PROBE_PREFIX):]))
            except ValueError:
                continue
    return docs


def _when(iso: str) -> datetime | None:
    """`iso` (ISO 8601, `Z` or an offset; UTC when it has none) as an aware datetime, or None."""
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def choose_sdist(doc: dict, cut: str) -> Sdist | None:
    """The sdist of the newest release (highest version; final releases first, pre-releases only
    when there is nothing else) whose sdist was uploaded no later than `cut` (ISO 8601, the
    plan's `--exclude-newer`) and is not yanked; None when there is none, or PyPI had no such
    project (`doc`: one `probe_results` document)."""
    bound = _when(cut)
    best: tuple[tuple[bool, Version], str, list] | None = None
    for version, files in (doc.get("releases") or {}).items():
        try:
            v = Version(version)
        except InvalidVersion:
            continue
        ok = [f for f in files if _usable(f) and (bound is None or _when(f[3]) <= bound)]  # type: ignore[operator]
        key = (not v.is_prerelease, v)
        if ok and (best is None or key > best[0]):
            best = (key, version, ok)
    if best is None:
        return None
    f = min(best[2], key=lambda f: next(i for i, s in enumerate(SDIST_SUFFIXES) if f[0].endswith(s)))
    return Sdist(name=doc["name"], version=best[1], filename=f[0], url=f[1], sha256=f[2], uploaded=f[3])


def _usable(f) -> bool:
    """A probe file entry that is well formed, not yanked, an archive `FILL_SCRIPT` extracts,
    served over https and with a sha256 to check."""
    return (isinstance(f, list) and len(f) == 5 and not f[4] and isinstance(f[0], str)
            and f[0].endswith(SDIST_SUFFIXES) and isinstance(f[1], str) and f[1].startswith("https://")
            and isinstance(f[2], str) and re.fullmatch(r"[0-9a-f]{64}", f[2]) is not None
            and isinstance(f[3], str) and _when(f[3]) is not None)
