"""Environment Setup agent, rule backend, planning half: interpreter and install steps for Python.

Choices follow what reproduced real SWE-bench instances on air-gapped hosts (shared domain
notes, "Lessons"): pick the interpreter by the commit's era (the date is a ceiling, the
interpreter a floor), resolve dependencies as of `created_at` with uv's `--exclude-newer`
while exempting the build toolchain (setuptools, wheel, setuptools-scm, pip), editable
installs in `compat` mode, and test dependencies from extras, requirement files, tox and
CI conda files, each best effort.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timedelta, timezone

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.python.profile import PythonProfile, req_name
from agents.gitrepo import GitTree
from agents.models import Instance

VENV = "/opt/venv"
PY = f"{VENV}/bin/python"
REPAIR_HINT = f"The virtualenv is {VENV} (activated; install with `uv pip install`)."
"""What an LLM repairing a Python environment is told (`Ecosystem.repair_hint`)."""


def runtime_env() -> dict[str, str]:
    """Environment of every command in a Python environment (setup steps and test runs)."""
    return {"VIRTUAL_ENV": VENV, "PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

# (day before which `version` is the era's interpreter: ~3 months after its release, once the
# compiled stack had wheels for it)
_ERA = [("2020-01-01", "3.7"), ("2021-01-01", "3.8"), ("2022-01-01", "3.9"), ("2023-01-01", "3.10"),
        ("2024-01-01", "3.11"), ("2025-01-01", "3.12"), ("9999-01-01", "3.13")]
PY_RELEASE = {"3.6": "2016-12-23", "3.7": "2018-06-27", "3.8": "2019-10-14", "3.9": "2020-10-05",
              "3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02", "3.13": "2024-10-07",
              "3.14": "2025-10-07"}
"""Release dates of CPython minor versions (python.org)."""

TOOLCHAIN_DATE = "2025-03-01T00:00:00Z"
"""Date bound for the build toolchain (setuptools, wheel, setuptools-scm, pip, packaging), exempt
from the instance's date: a 2019 bound gives setuptools 41, which crashes on 3.9."""
TOOLCHAIN_PACKAGES = ("setuptools", "wheel", "setuptools-scm", "setuptools_scm", "pip", "packaging")

HEAVY_COMPILED = ("numpy", "scipy", "pandas", "matplotlib", "scikit-learn", "h5py", "netcdf4",
                  "cftime", "numba", "llvmlite", "shapely", "pyproj", "tables", "lxml", "pillow",
                  "statsmodels", "bottleneck", "numexpr", "zarr", "pyarrow", "grpcio", "psycopg2",
                  "cryptography", "regex", "pyzmq", "gevent", "greenlet", "contourpy", "kiwisolver",
                  "pywavelets", "scikit-image", "astropy", "pyerfa", "cython")
"""Installed from wheels only (building numpy on 2 cores takes > 10 min): `--only-binary`.
Never the project under test itself (`own_names`): /testbed is built from source, with its
build requirements (Cython, numpy, ...) still from wheels."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def own_names(profile: PythonProfile, repo: str = "") -> set[str]:
    """Normalised names under which the project under test may appear in `--only-binary`: its
    distribution name (`PythonProfile.project_name`) and its repository's name (`astropy/astropy`
    -> `astropy`), e.g. {"astropy"}."""
    names = {profile.project_name or "", repo.rsplit("/", 1)[-1]}
    return {_norm(n) for n in names if n}


def wheels_only(packages: list[str] | tuple[str, ...], own: set[str]) -> list[str]:
    """`packages` without the project's own names (`own_names`): the dependencies that stay
    wheels-first."""
    return [p for p in packages if _norm(p) not in own]

SKIP_TEST_DEPS = {"pre-commit", "tox", "nox", "codecov", "coveralls", "twine", "black", "flake8",
                  "pylint", "mypy", "isort", "sphinx", "pyupgrade", "bandit", "check-manifest",
                  "pytest-sugar", "pytest-xdist", "pytest-cov", "pytest-profiling", "pytest-benchmark",
                  "pytest-randomly", "pytest-rerunfailures", "pytest-remotedata", "pytest-xvfb",
                  "pytest-github-actions-annotate-failures", "asv", "doc8", "types-requests",
                  "types-pkg-resources", "types-setuptools", "pydocstyle", "pytest-timeout", "nose",
                  "coverage", "pymedphys", "boto3", "virtualenv", "tbump", "towncrier"}
"""Dev-only tools that change the result shape or only add install time; never needed to run tests
(pytest-timeout is replaced by swemint's own per-test timeout; xdist and rerunfailures change
the result shape)."""


class PythonChoice(BaseModel):
    """The interpreter chosen for an instance and why.

    `ideal`: the version the commit's era and metadata call for; `version`: the one used;
    `substitutions`: human-readable notes when they differ; `exclude_newer`: ISO date bound.
    """

    model_config = ConfigDict(extra="forbid")
    ideal: str
    version: str
    substitutions: list[str] = Field(default_factory=list)
    exclude_newer: str


ABC_SHIM_PTH = "swemint-collections-abc.pth"
ABC_SHIM = ("import collections, collections.abc; collections.__dict__.update(zip(collections.abc.__all__, "
            "map(collections.abc.__dict__.get, collections.abc.__all__)))")
"""A .pth line giving `collections` the ABC aliases of Python <= 3.9 without the DeprecationWarning
3.7-3.9 emit for them (3.10 removed them). No comprehension or lambda: `site` runs the line with
`exec` inside a function, whose locals a nested scope cannot see."""


def needs_abc_shim(choice: "PythonChoice") -> bool:
    """Whether the venv gets `ABC_SHIM`: the interpreter used is newer than the era's, the era's
    is 3.7 or older (3.7 started to warn on ``collections.Mapping`` & co.: a project that turns
    DeprecationWarnings into errors, astropy 2.x, no longer imports on a newer one) or the used
    one is 3.10+ (which removed them). The
    era's interpreter is not available here, so the stdlib is given the era's names instead."""
    used, ideal = _v(choice.version), _v(choice.ideal)
    return (ideal < (3, 8) and used > ideal and used >= (3, 7)) or (ideal < (3, 10) <= used)


DISTUTILS_SHIM_PTH = "00-swemint-stdlib-distutils.pth"
DISTUTILS_SHIM = "import os; os.environ.setdefault('SETUPTOOLS_USE_DISTUTILS', 'stdlib')"
"""A .pth line (sorted before setuptools' ``distutils-precedence.pth``, which reads the variable
at start-up) making `import distutils` the standard library's, as in the era's environments."""


def era_distutils(choice: "PythonChoice") -> bool:
    """Whether test runs get the standard library's `distutils` (`DISTUTILS_SHIM`, written after
    every install step): an era that `needs_abc_shim` on an interpreter that still has it (<
    3.12). The venv's setuptools is newer than the era (PEP 660 editable installs need >= 64)
    and its `distutils` warns on `LooseVersion` -- an error for a project that turns
    DeprecationWarnings into errors (astropy 2.x, through pytest-remotedata)."""
    return needs_abc_shim(choice) and _v(choice.version) < (3, 12)


def _v(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split("."))


def _allowed(spec: str | None, version: str) -> bool:
    if not spec:
        return True
    try:
        return SpecifierSet(spec.replace(" ", "")).contains(f"{version}.0", prereleases=True)
    except InvalidSpecifier:
        return True


def choose_python(profile: PythonProfile, created: datetime | None, available: list[str]) -> PythonChoice:
    """Choose an interpreter that fits the commit's era, not simply the newest.

    The era's version is the newest whose wheels were broadly out at `created`; it is lowered
    to the newest classifier the project declares, then mapped to the nearest available version
    (prefer the older one; a newer one only when nothing older is available), while honouring
    python_requires. Substitutions are recorded.
    """
    when = created or datetime.now(timezone.utc)
    day = when.strftime("%Y-%m-%d")
    ideal = next(v for d, v in _ERA if day < d)
    cls = sorted({c for c in profile.classifier_pythons if c.startswith("3.")}, key=_v)
    if cls and _v(cls[-1]) < _v(ideal) and _v(cls[-1]) >= (3, 6):
        ideal = cls[-1]
    avail = sorted(available, key=_v)
    newest = max([_v(v) for v in avail] + [(3, 13)])
    while not _allowed(profile.python_requires, ideal) and _v(ideal) < newest:
        ideal = f"3.{_v(ideal)[1] + 1}"  # S16: up to the newest interpreter here (3.14), not 3.13
    ok = [v for v in avail if _allowed(profile.python_requires, v)] or avail
    older = [v for v in ok if _v(v) <= _v(ideal)]
    version = older[-1] if older else ok[0]
    subs = [] if version == ideal else [f"python {ideal} wanted (era/metadata), {version} used: "
                                         f"{ideal} is not available here"]
    bound = when
    rel = datetime.fromisoformat(PY_RELEASE.get(version, "2020-10-05")).replace(tzinfo=timezone.utc)
    if when + timedelta(days=730) < rel:
        # very old commit: its era's packages (pytest 2.x ...) predate the interpreter by years;
        # clamp the bound to about the interpreter's own release
        bound = rel + timedelta(days=30)
        subs.append(f"date bound clamped from {day} to {bound:%Y-%m-%d} (Python {version} release)")
    return PythonChoice(ideal=ideal, version=version, substitutions=subs,
                        exclude_newer=bound.strftime("%Y-%m-%dT%H:%M:%SZ"))


def lifted_date(version: str, created: datetime | None) -> str:
    """Date bound for a package whose period-correct release does not work on `version`.

    Six months after the interpreter's release, or the instance date when that is later.
    """
    rel = datetime.fromisoformat(PY_RELEASE.get(version, "2020-10-05")).replace(tzinfo=timezone.utc)
    lift = rel + timedelta(days=270)
    if created and created > lift:
        lift = created + timedelta(days=180)
    return lift.strftime("%Y-%m-%dT%H:%M:%SZ")


class UvOptions(BaseModel):
    """Options every `uv pip install` of an instance shares; mutated by the repair loop."""

    model_config = ConfigDict(extra="forbid")
    exclude_newer: str
    package_dates: dict[str, str] = Field(default_factory=dict)
    no_build: list[str] = Field(default_factory=lambda: list(HEAVY_COMPILED))
    no_build_isolation: bool = False

    def flags(self) -> str:
        """The shared command-line flags, shell-quoted."""
        parts = ["--python", PY, "--exclude-newer", self.exclude_newer]
        dates = {p: TOOLCHAIN_DATE for p in TOOLCHAIN_PACKAGES}
        dates.update(self.package_dates)
        for pkg, d in sorted(dates.items()):
            parts += ["--exclude-newer-package", f"{pkg}={d}"]
        for pkg in self.no_build:
            parts += ["--only-binary", pkg]
        if self.no_build_isolation:
            parts.append("--no-build-isolation")
        return " ".join(shlex.quote(p) for p in parts)


def toolchain_spec(created: datetime | None) -> str:
    """setuptools range for the venv: keep `pkg_resources` and `setup.py test` for old projects."""
    if created and created < datetime(2024, 6, 1, tzinfo=timezone.utc):
        return "'setuptools>=64,<70' 'wheel' 'setuptools-scm<8.2'"
    return "'setuptools>=70' 'wheel' 'setuptools-scm'"


def test_requirements(profile: PythonProfile) -> list[str]:
    """Extra test dependencies from tox deps and CI conda files (best effort, dev tools dropped)."""
    out: list[str] = []
    seen: set[str] = set()
    for req in profile.tox_deps + profile.conda_deps:
        name = req_name(req)
        if not name or "/" in req:
            continue
        key = name.lower().replace("_", "-")
        if key in SKIP_TEST_DEPS or key in seen:
            continue
        seen.add(key)
        # conda pins (`=1.2`) are not pip syntax: keep the name only; keep pip-style pins
        extras = req[req.index("["):req.index("]") + 1] if "[" in req and "]" in req else ""
        out.append(req if any(op in req for op in ("==", ">=", "<=", "~=", "<", ">")) and " " not in req
                   else name + extras)
    return out


def project_target(profile: PythonProfile) -> str:
    """The editable install target with test extras, e.g. `-e '.[testing]'`."""
    extras = f"[{','.join(profile.test_extras)}]" if profile.test_extras else ""
    return f"-e {shlex.quote('.' + extras)}"


def pretend_version(instance: Instance, tree: GitTree, profile_version: str | None) -> str | None:
    """A version for setuptools_scm when the mirror lacks tags: `version` (X.Y -> X.Y.0), else the
    nearest tag, else the version the packaging declares, else None."""
    v = instance.version or ""
    if re.fullmatch(r"\d+\.\d+(\.\d+)?", v):
        return v if v.count(".") == 2 else v + ".0"
    tag = tree.describe()
    if tag and re.search(r"\d+\.\d+", tag):
        return re.search(r"\d+(\.\d+)+", tag).group(0)  # type: ignore[union-attr]
    return profile_version


_PYTEST_RELEASES = ("4.6", "4.6.11", "5.0", "5.2", "5.4.3", "6.0", "6.1", "6.2", "6.2.5", "7.0", "7.1", "7.1.3",
                    "7.2", "7.3", "7.4", "8.0", "8.1", "8.2", "8.3", "8.4", "9.0")
PYTEST_FLOOR = {"3.9": "4.6", "3.10": "6.2.5", "3.11": "7.2", "3.12": "7.4", "3.13": "8.2"}
"""Oldest pytest that runs on each interpreter (older ones crash at start-up or lack `-o`)."""


def relax_test_pins(reqs: list[str], python: str) -> tuple[list[str], list[str]]:
    """Replace pins of pytest older than the interpreter supports by a floor (`pytest>=X`).

    The date bound still picks the era's release above the floor. Returns (requirements,
    notes); other requirements pass through unchanged.
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version

    floor = PYTEST_FLOOR.get(python)
    out, notes = [], []
    for raw in reqs:
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            out.append(raw)
            continue
        later = [v for v in _PYTEST_RELEASES if floor and Version(v) >= Version(floor)]
        if floor and req.name.lower() in ("pytest", "py.test") and req.specifier and \
                not any(req.specifier.contains(v, prereleases=True) for v in later):
            out.append(f"pytest>={floor}")
            notes.append(f"{raw} cannot run on Python {python}: using pytest>={floor}")
        else:
            out.append(raw)
    return out, notes
