"""The Python ecosystem's profile of a repository at a commit (`PythonProfile`; the Repository
Analysis agent's own, language-blind profile is `agents.analysis.RepoProfile`).

Reads packaging and CI files without running anything: python_requires and classifiers,
setup.py / setup.cfg / pyproject.toml / requirements files / tox.ini / CI workflows / conda
environment files, the test framework and its plugins, compiled extensions, setuptools_scm.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from pathlib import PurePosixPath

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.plans import RepoFacts
from agents.gitrepo import GitTree
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.testpaths import role

TEST_EXTRA_NAMES = ("test", "tests", "testing", "test-all", "tests-all", "dev", "develop", "all",
                    "full", "optional")
"""Extras that usually hold test dependencies, in order of preference."""

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_CONDA_TO_PIP = {"dask": "dask[array,dataframe]",  # conda's dask is every part; pip's is the core only
                 "pytables": "tables", "matplotlib-base": "matplotlib", "pytorch": "torch",
                 "python-dateutil": "python-dateutil", "netcdf4": "netCDF4", "py-cpuinfo": "py-cpuinfo",
                 "numba": "numba", "pyyaml": "pyyaml", "msgpack-python": "msgpack"}
_CONDA_SKIP = {"python", "pip", "setuptools", "wheel", "c-compiler", "cxx-compiler", "compilers",
               "hdf5", "libnetcdf", "nodejs", "gdal", "geos", "proj", "make", "cmake", "git",
               "cdms2", "pynio", "iris", "esmpy", "mkl", "blas", "libblas", "openblas", "tk",
               "pseudonetcdf", "cartopy", "pydap", "rasterio", "cfgrib", "eccodes", "sparse",
               "pint", "nomkl", "ncurses", "readline", "sqlite", "openssl", "zlib", "libgfortran"}


class PythonProfile(BaseModel):
    """What a Python repository needs, read from its files at `commit`.

    Version strings are as written by the project (PEP 440 specifiers). Lists of requirements
    are PEP 508 strings.
    """

    model_config = ConfigDict(extra="forbid")
    commit: str
    project_name: str | None = None
    """The project's own distribution name (pyproject ``[project] name``, setup.cfg
    ``[metadata] name``, setup.py ``name=``), None when none is written as a literal."""
    language: str = "python"
    python_requires: str | None = None
    classifier_pythons: list[str] = Field(default_factory=list)
    build_backend: str | None = None
    build_requires: list[str] = Field(default_factory=list)
    has_setup_py: bool = False
    has_pyproject: bool = False
    installable: bool = False
    extras: list[str] = Field(default_factory=list)
    test_extras: list[str] = Field(default_factory=list)
    requirement_files: list[str] = Field(default_factory=list)
    tox_deps: list[str] = Field(default_factory=list)
    conda_deps: list[str] = Field(default_factory=list)
    ci_pip_packages: list[str] = Field(default_factory=list)
    test_framework: str = "pytest"
    pytest_plugins: list[str] = Field(default_factory=list)
    pytest_config_file: str | None = None
    uses_scm_version: bool = False
    compiled: bool = False
    package_version: str | None = None
    virtual_dependencies: list[str] | None = None
    """A pyproject.toml ``[project]`` with no ``[build-system]`` (and no setup.py / setup.cfg):
    a virtual project in uv's sense, whose dependencies ``uv sync`` installs but not the project
    itself: its ``dependencies`` and its ``test`` / ``dev`` dependency groups (PEP 735, plain
    requirement strings). None for any other project (rule S22)."""
    notes: list[str] = Field(default_factory=list)


def req_name(req: str) -> str | None:
    """The distribution name of a PEP 508 requirement string (None for options/urls)."""
    req = req.strip()
    if not req or req.startswith(("-", "#", "git+", "http:", "https:", ".")):
        return None
    m = _REQ_NAME.match(req)
    return m.group(1) if m else None


def _setup_py_info(text: str) -> dict:
    """python_requires, extras_require keys and a version from setup.py via ast (best effort)."""
    info: dict = {"extras": [], "python_requires": None, "version": None, "ext": False, "name": None}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        m = re.search(r"python_requires\s*=\s*['\"]([^'\"]+)", text)
        info["python_requires"] = m.group(1) if m else None
        return info
    assigns: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigns[node.targets[0].id] = node.value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                val = kw.value
                if isinstance(val, ast.Name) and val.id in assigns:
                    val = assigns[val.id]
                if kw.arg == "python_requires" and isinstance(val, ast.Constant):
                    info["python_requires"] = str(val.value)
                elif kw.arg == "extras_require" and isinstance(val, ast.Dict):
                    info["extras"] += [k.value for k in val.keys if isinstance(k, ast.Constant)]
                elif kw.arg == "version" and isinstance(val, ast.Constant):
                    info["version"] = str(val.value)
                elif kw.arg == "name" and isinstance(val, ast.Constant) and isinstance(val.value, str):
                    info["name"] = info["name"] or val.value
                elif kw.arg in ("ext_modules", "cffi_modules"):
                    info["ext"] = True
    if re.search(r"extras_require\s*\[\s*['\"]([\w-]+)", text):
        info["extras"] += re.findall(r"extras_require\s*\[\s*['\"]([\w-]+)", text)
    return info


def _read_ini(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(text)
    except configparser.Error:
        pass
    return cp


def _lines(value: str) -> list[str]:
    return [x.strip() for x in value.replace(";", "\n").splitlines() if x.strip()]


def analyze_python(tree: GitTree) -> PythonProfile:
    """Profile the Python repository `tree` (a GitTree at the instance's base_commit)."""
    p = PythonProfile(commit=tree.commit)
    files = tree.file_set
    setup_py = tree.read("setup.py")
    setup_cfg = tree.read("setup.cfg")
    pyproject = tree.read("pyproject.toml")
    p.has_setup_py = setup_py is not None
    p.has_pyproject = pyproject is not None
    extras: list[str] = []
    if setup_py:
        info = _setup_py_info(setup_py)
        p.python_requires = info["python_requires"]
        extras += info["extras"]
        p.package_version = info["version"]
        p.project_name = info["name"]
        p.compiled |= info["ext"]
        p.uses_scm_version |= "use_scm_version" in setup_py or "setuptools_scm" in setup_py
        p.classifier_pythons += re.findall(r"Programming Language :: Python :: (\d\.\d+)", setup_py)
    if setup_cfg:
        cp = _read_ini(setup_cfg)
        if cp.has_option("options", "python_requires"):
            p.python_requires = p.python_requires or cp.get("options", "python_requires").strip()
        if cp.has_section("options.extras_require"):
            extras += list(cp.options("options.extras_require"))
        if cp.has_option("metadata", "name") and not p.project_name:
            p.project_name = cp.get("metadata", "name").strip() or None
        if cp.has_option("metadata", "version"):
            v = cp.get("metadata", "version").strip()
            if not v.startswith(("attr:", "file:")):
                p.package_version = p.package_version or v
        p.classifier_pythons += re.findall(r"Programming Language :: Python :: (\d\.\d+)", setup_cfg)
        p.uses_scm_version |= "setuptools_scm" in setup_cfg or "use_scm_version" in setup_cfg
        if cp.has_section("tool:pytest"):
            p.pytest_config_file = p.pytest_config_file or "setup.cfg"
    if pyproject:
        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError:
            data = {}
            p.notes.append("pyproject.toml does not parse")
        bs = data.get("build-system", {})
        p.build_backend = bs.get("build-backend")
        p.build_requires = [str(x) for x in bs.get("requires", [])]
        proj = data.get("project", {})
        p.python_requires = proj.get("requires-python") or p.python_requires
        if isinstance(proj.get("name"), str):
            p.project_name = proj["name"]
        extras += list(proj.get("optional-dependencies", {}) or {})
        p.package_version = proj.get("version") or p.package_version
        p.classifier_pythons += re.findall(r"Python :: (\d\.\d+)", " ".join(proj.get("classifiers", [])))
        poetry = data.get("tool", {}).get("poetry", {})
        if poetry:
            extras += list(poetry.get("extras", {}) or {})
            py = (poetry.get("dependencies") or {}).get("python")
            if isinstance(py, str):
                p.python_requires = p.python_requires or py.replace("^", ">=")
        tool = data.get("tool", {})
        p.uses_scm_version |= "setuptools_scm" in tool or any("setuptools_scm" in r or "setuptools-scm" in r
                                                               for r in p.build_requires)
        if "pytest" in tool and "ini_options" in tool["pytest"]:
            p.pytest_config_file = p.pytest_config_file or "pyproject.toml"
        p.compiled |= any(re.match(r"(cython|scikit-build|maturin|pybind11|meson)", r, re.I)
                          for r in p.build_requires)
        if isinstance(proj, dict) and proj and not bs and not setup_py and not setup_cfg:
            groups = data.get("dependency-groups")
            groups = groups if isinstance(groups, dict) else {}
            deps = proj.get("dependencies")
            reqs = (list(deps) if isinstance(deps, list) else []) + [
                r for g in ("test", "tests", "testing", "dev") if isinstance(groups.get(g), list) for r in groups[g]]
            p.virtual_dependencies = list(dict.fromkeys(str(r) for r in reqs if isinstance(r, str)))
    p.installable = bool(setup_py or (pyproject and (p.build_backend or "project" in (pyproject or ""))))
    p.extras = sorted(set(e.strip() for e in extras if e))
    norm = {e.lower().replace("_", "-"): e for e in p.extras}
    p.test_extras = [norm[n] for n in TEST_EXTRA_NAMES if n in norm][:2]
    p.compiled |= any(f.endswith((".pyx", ".c", ".cpp")) and not f.startswith(("doc", "test", "bench"))
                      for f in files if f.count("/") <= 3)
    # requirement files: test ones first
    # top-level files, or files in a requirements/CI folder; a nested one (e.g. pytest's
    # testing/plugins_integration/requirements.txt) belongs to a special tox environment
    reqs = [f for f in files if re.search(r"(^|/)[^/]*requirements[^/]*\.(txt|in)$", f)
            and ("/" not in f or f.split("/")[0] in ("requirements", "reqs", "ci", ".ci", "requirements.d"))
            and f.count("/") <= 2]
    def _rank(f: str) -> tuple[int, str]:
        n = f.lower()
        if "test" in n:
            return (0, f)
        if n.endswith("requirements.txt") and "/" not in n:
            return (1, f)
        if "dev" in n:
            return (2, f)
        return (3, f)
    p.requirement_files = [f for f in sorted(reqs, key=_rank)
                           if not re.search(r"(doc|lint|pre.?commit|release|benchmark|mypy|typing|upstream|min)", f.lower())
                           or "test" in f.lower() and "pre" not in f.lower() and "min" not in f.lower()]
    # tox.ini deps and pytest section
    tox = tree.read("tox.ini")
    if tox:
        cp = _read_ini(tox)
        for sec in ("testenv",):
            if cp.has_option(sec, "deps"):
                for d in _lines(cp.get(sec, "deps")):
                    if not d.startswith(("-", "{")) and ":" not in d.split(" ")[0]:
                        p.tox_deps.append(d.split("#")[0].strip())
        if cp.has_section("pytest") or cp.has_section("tool:pytest"):
            p.pytest_config_file = p.pytest_config_file or "tox.ini"
    if "pytest.ini" in files:
        p.pytest_config_file = "pytest.ini"
    # conda environment files (CI)
    p.conda_deps = _conda_deps(tree)
    # CI workflows: pip install lines
    for f in files:
        if f.startswith(".github/workflows/") and f.endswith((".yml", ".yaml")) or f in ("azure-pipelines.yml", ".travis.yml"):
            text = tree.read(f) or ""
            for m in re.finditer(r"pip install ([^\n&|;]+)", text):
                for tok in m.group(1).split():
                    tok = tok.strip("'\"")
                    if tok.startswith("-") or "$" in tok or "{" in tok or tok in (".", "-e"):
                        continue
                    name = req_name(tok)
                    if name and name.lower() not in ("pip", "setuptools", "wheel", "tox", "codecov", "coveralls",
                                                     "twine", "build", "pre-commit", "nox"):
                        p.ci_pip_packages.append(tok)
    p.ci_pip_packages = sorted(set(p.ci_pip_packages))[:40]
    # pytest plugins mentioned anywhere in the requirement sources
    allreq = " ".join(p.tox_deps + p.ci_pip_packages + p.build_requires)
    for f in p.requirement_files[:4]:
        allreq += " " + (tree.read(f) or "")
    p.pytest_plugins = sorted(set(re.findall(r"\b(pytest-[a-z0-9-]+)", allreq.lower())))
    if not any(map(role("python", "collect").matches, files)):  # pytest's default python_files
        p.notes.append("no pytest-style test files found")
    return p


def _conda_deps(tree: GitTree) -> list[str]:
    cands = [f for f in tree.files if f.endswith((".yml", ".yaml")) and
             ("ci/" in f or "requirements" in f or PurePosixPath(f).name.startswith("environment"))
             and not f.startswith(".github/") and "doc" not in f.lower()]
    best: list[str] = []
    for f in cands:
        n = f.lower()
        if any(w in n for w in ("min", "bare", "doc", "upstream", "nightly", "dev", "windows", "macos", "mypy",
                                "-but-", "without", "-no-")):  # e.g. xarray's py38-all-but-dask.yml
            continue
        try:
            data = load_untrusted_yaml(tree.read(f) or "")
        except yaml.YAMLError:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("dependencies"), list):
            continue
        deps: list[str] = []
        for d in data["dependencies"]:
            if isinstance(d, dict) and isinstance(d.get("pip"), list):
                deps += [str(x) for x in d["pip"] if not str(x).startswith(("-", "git+", "http"))]
            elif isinstance(d, str):
                name = re.split(r"[=<>!\s]", d.strip(), maxsplit=1)[0].split("::")[-1]
                if not name or name.lower() in _CONDA_SKIP:
                    continue
                deps.append(_CONDA_TO_PIP.get(name.lower(), name))
        if len(deps) > len(best):
            best = deps
    return best


_XY = re.compile(r"\d+\.\d+")


def package_version_of(tree: GitTree) -> str | None:
    """The version the packaging declares at `tree`'s commit (setup.py / setup.cfg / pyproject,
    `analyze_python`) when it starts `X.Y`; else the first `__version__ = "X.Y..."` of a
    top-level module (`__init__.py`, `_version.py`, `version.py`, `__about__.py` at most two
    folders deep, tests excluded, the first 20 by path); None when neither says."""
    found = analyze_python(tree).package_version if tree.file_set & {"setup.py", "setup.cfg", "pyproject.toml"} \
        else None
    if found and _XY.match(found):
        return found
    for path in sorted(f for f in tree.files if f.count("/") <= 2 and
                       f.endswith(("__init__.py", "_version.py", "version.py", "__about__.py"))
                       and "test" not in f)[:20]:
        m = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", tree.read(path) or "", re.M)
        if m and _XY.match(m.group(1)):
            return m.group(1)
    return None


def memory_facts(profile: PythonProfile) -> RepoFacts:
    """The facts of `profile` the experience memory's context holds (`Ecosystem.context_facts`):
    the test framework and pytest plugins, the packaging and requirement files and pytest's
    configuration file, the dependencies tox / conda / CI / build requirements declare (name ->
    specifier), the flags `compiled`, `scm_version`, `not_installable`, `python_capped`, and the
    project's own distribution name (`own`: `project_name`, when written as a literal)."""
    from packaging.requirements import InvalidRequirement, Requirement

    declared: dict[str, str] = {}
    for req in profile.tox_deps + profile.conda_deps + profile.ci_pip_packages + profile.build_requires:
        try:
            r = Requirement(req)
        except InvalidRequirement:
            continue
        declared.setdefault(r.name, str(r.specifier))
    files = [f for f, present in (("setup.py", profile.has_setup_py), ("pyproject.toml", profile.has_pyproject))
             if present]
    files += profile.requirement_files + ([profile.pytest_config_file] if profile.pytest_config_file else [])
    flags = [f for f, on in (("compiled", profile.compiled), ("scm_version", profile.uses_scm_version),
                             ("not_installable", not profile.installable)) if on]
    if profile.python_requires and "<" in profile.python_requires:
        flags.append("python_capped")
    return RepoFacts(frameworks=[profile.test_framework] + profile.pytest_plugins, files=files, declared=declared,
                     flags=flags, own=[profile.project_name] if profile.project_name else [])
