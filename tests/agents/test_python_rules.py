"""Rule backend of the Python agents: analysis, interpreter choice, uv repairs, test selection."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agents.ecosystems.python.profile import analyze_python
from agents.gitrepo import GitTree
from agents.ecosystems.python.python_plan import choose_python, lifted_date
from agents.ecosystems.python.builder import PythonEnvBuilder, requirement_file_lines
from agents.ecosystems.python.selection import configure_python_tests
from envpool.errors import InstanceInputError
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec

AVAILABLE = ["3.9", "3.11", "3.13"]


def make_tree(tmp_path: Path, files: dict[str, str | bytes]) -> GitTree:
    work = tmp_path / "w"
    for rel, text in files.items():
        p = work / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "GIT_AUTHOR_DATE": "2021-03-04T05:06:07Z",
           "GIT_COMMITTER_DATE": "2021-03-04T05:06:07Z", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "base"], check=True, env=env)
    sha = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return GitTree(work / ".git", sha)


def utc(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


def test_profile_reads_python_requires_extras_requirements_and_scm(tmp_path):
    tree = make_tree(tmp_path, {
        "setup.py": "from setuptools import setup\nsetup(name='p', python_requires='>=3.7',"
                    " extras_require={'testing': ['hypothesis'], 'docs': ['sphinx']}, use_scm_version=True)\n",
        "setup.cfg": "[tool:pytest]\naddopts = -n auto\n",
        "requirements_test.txt": "-r requirements_min.txt\npytest~=7.1\nblack==22.3\n",
        "requirements_min.txt": "-e .\nastroid==2.11.6\n",
        "requirements_docs.txt": "sphinx\n",
        "testing/plugins_integration/requirements.txt": "pytest-twisted\n",
        "tox.ini": "[testenv]\ndeps =\n    mock\n    pytest-xdist\n",
        "ci/requirements/py38.yml": "dependencies:\n  - python=3.8\n  - numpy=1.17\n  - pytables\n  - pip:\n    - pint\n",
        "p/__init__.py": "", "tests/test_p.py": "def test_x():\n    pass\n",
    })
    p = analyze_python(tree)
    assert p.python_requires == ">=3.7"
    assert p.test_extras == ["testing"]
    assert p.uses_scm_version
    assert p.pytest_config_file == "setup.cfg"
    assert p.requirement_files[0] == "requirements_test.txt"
    assert "requirements_docs.txt" not in p.requirement_files
    # a nested requirements file serves a special tox env (pytest's plugin integration tests)
    assert "testing/plugins_integration/requirements.txt" not in p.requirement_files
    assert "mock" in p.tox_deps
    assert {"numpy", "tables", "pint"} <= set(p.conda_deps)
    # -r includes are followed, self references and dev-only tools dropped, pins kept
    assert requirement_file_lines(tree, "requirements_test.txt") == ["astroid==2.11.6", "pytest~=7.1"]


def test_requirement_file_lines_reads_lines_as_pip_does(tmp_path):
    """The instance tier's reader parses with the dependency tier's parser (reqfiles): continuation
    lines joined, `--requirement=path` followed (beside the including file), `-c` constraints,
    inline comments and a requirement's --hash options dropped (each line is one install argument)."""
    tree = make_tree(tmp_path, {
        "ci/req.txt": "numpy==1.26.4 \\\n    --hash=sha256:abc  # pinned\n--requirement=more.txt\n-c constraints.txt\n",
        "ci/more.txt": "attrs>=22\t# a tab before the comment\n",
        "ci/constraints.txt": "attrs==23.1.0\n",
    })
    assert requirement_file_lines(tree, "ci/req.txt") == ["numpy==1.26.4", "attrs>=22"]


@pytest.mark.parametrize("created, requires, classifiers, expect_version, expect_ideal", [
    ("2019-04-13", None, [], "3.9", "3.7"),        # era 3.7 not installable here -> nearest, recorded
    ("2022-06-11", ">=3.7", [], "3.9", "3.10"),    # prefer the older neighbour for a 3.10 era
    ("2023-06-29", ">=3.8", [], "3.11", "3.11"),
    ("2022-06-11", ">=3.10", [], "3.11", "3.10"),  # python_requires excludes 3.9
    ("2024-11-02", None, ["3.9", "3.10", "3.11"], "3.11", "3.11"),  # classifiers cap the era
])
def test_interpreter_fits_the_commits_era(tmp_path, created, requires, classifiers, expect_version, expect_ideal):
    from agents.ecosystems.python.profile import PythonProfile

    prof = PythonProfile(commit="x", python_requires=requires, classifier_pythons=classifiers)
    c = choose_python(prof, utc(created + "T00:00:00"), AVAILABLE)
    assert (c.version, c.ideal) == (expect_version, expect_ideal)
    assert bool(c.substitutions) == (expect_version != expect_ideal)
    assert c.exclude_newer.startswith(created)


def test_a_project_requiring_the_newest_python_gets_it_and_others_keep_their_era():
    """S16: requires-python ``>=3.14`` (above 3.13, where the search for an allowed interpreter
    used to stop): 3.14 when this host can give it; without it, the newest there is, as before.
    A 2026 project that allows 3.13 keeps the era's 3.13."""
    from agents.ecosystems.python.profile import PythonProfile

    new = PythonProfile(commit="x", python_requires=">=3.14")
    c = choose_python(new, utc("2026-05-20T00:00:00"), ["3.9", "3.11", "3.13", "3.14"])
    assert (c.version, c.ideal, c.substitutions) == ("3.14", "3.14", [])
    c = choose_python(new, utc("2026-05-20T00:00:00"), ["3.9", "3.11", "3.13"])
    assert c.version == "3.13"  # nothing allowed: the newest there is, as before
    c = choose_python(PythonProfile(commit="x", python_requires=">=3.10"), utc("2026-05-20T00:00:00"),
                      ["3.9", "3.11", "3.13", "3.14"])
    assert (c.version, c.ideal) == ("3.13", "3.13")


def test_very_old_commit_clamps_the_date_to_the_interpreters_release():
    from agents.ecosystems.python.profile import PythonProfile

    c = choose_python(PythonProfile(commit="x"), utc("2014-03-15T00:00:00"), AVAILABLE)
    assert c.version == "3.9"
    assert c.exclude_newer.startswith("2020-11")
    assert any("clamped" in s for s in c.substitutions)


def test_lifted_date_is_after_the_interpreters_wheels_appear():
    assert lifted_date("3.9", utc("2019-01-01T00:00:00")) == "2021-07-02T00:00:00Z"
    assert lifted_date("3.9", utc("2022-01-01T00:00:00")) > "2022-01-01"


UV_FILTERED = """  x No solution found when resolving dependencies:
  cause: Because there are no versions of atomicwrites and pytest==4.5.0 depends on atomicwrites>=1.0, we can conclude that pytest==4.5.0 cannot be used.
hint: `atomicwrites` was filtered by `exclude-newer` to only include packages uploaded before 2019-04-13T16:17:45Z. The latest version satisfying the requirement is v1.4.1, published at 2022-07-08T18:31:40.459Z. Consider using `exclude-newer-package` to override the cutoff for this package.
"""
UV_NO_WHEEL = """error: No solution found when resolving dependencies:
  cause: Because numpy>=1.15.0 has no usable wheels and you require numpy>=1.15, we can conclude that your requirements are unsatisfiable.

hint: Wheels are required for `numpy` because building from source is disabled for `numpy`
"""


def builder(tmp_path) -> PythonEnvBuilder:
    from agents.ecosystems.python.profile import PythonProfile

    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='p')\n"})
    prof = PythonProfile(commit=tree.commit)
    choice = choose_python(prof, utc("2019-04-13T16:17:45"), AVAILABLE)
    return PythonEnvBuilder(FakeSandbox(SandboxSpec(image="x")), tree, prof, choice, utc("2019-04-13T16:17:45"), None)


def test_repair_exempts_a_package_filtered_by_the_date_up_to_its_publication(tmp_path):
    b = builder(tmp_path)
    assert b._repair_uv(UV_FILTERED, set()) == "exempt atomicwrites"
    assert b.uv.package_dates["atomicwrites"] == "2022-07-09T18:31:40Z"
    assert "--exclude-newer-package atomicwrites=2022-07-09T18:31:40Z" in b.uv.flags()


def test_repair_moves_a_wheel_less_package_forward_only(tmp_path):
    b = builder(tmp_path)
    assert b._repair_uv(UV_NO_WHEEL, set()) == "lift numpy"
    assert b.uv.package_dates["numpy"] == b.lifted
    assert b.uv.exclude_newer.startswith("2019-04-13")  # the instance's own bound is unchanged
    assert b._repair_uv(UV_NO_WHEEL, {"lift numpy"}) is None  # bounded: never the same repair twice


UV_OWN_DISABLED = """  x Failed to build `astropy @ file:///testbed`
  `-> Building source distributions for `astropy` is disabled
"""


def test_the_project_under_test_is_never_wheels_only_its_dependencies_are(tmp_path):
    """astropy is in HEAVY_COMPILED (wheels only, as a dependency), but minting astropy itself
    builds /testbed from source: neither its distribution name nor its repository name is in
    `--only-binary`, and a repair never puts it back there."""
    from agents.ecosystems.python.profile import PythonProfile
    from agents.ecosystems.python.python_plan import own_names, wheels_only

    tree = make_tree(tmp_path, {"setup.cfg": "[metadata]\nname = astropy\n", "setup.py": "from setuptools import setup\nsetup()\n"})
    prof = analyze_python(tree)
    assert prof.project_name == "astropy"
    assert own_names(PythonProfile(commit="c", project_name="Py_Erfa"), "liberfa/pyerfa") == {"py-erfa", "pyerfa"}
    assert wheels_only(["numpy", "PyErfa", "astropy"], {"pyerfa", "astropy"}) == ["numpy"]
    choice = choose_python(prof, utc("2022-03-03T15:14:54"), AVAILABLE)
    b = PythonEnvBuilder(FakeSandbox(SandboxSpec(image="x")), tree, prof, choice, utc("2022-03-03T15:14:54"), None,
                         repo="astropy/astropy")
    flags = b.uv.flags()
    assert "--only-binary astropy" not in flags and "--only-binary numpy" in flags and "--only-binary pyerfa" in flags
    b.lift("astropy")
    assert "astropy" not in b.uv.no_build
    assert b._repair_uv(UV_OWN_DISABLED, set()) == "isolation"  # the project's build: never "lift astropy"
    assert "--only-binary astropy" not in b.uv.flags()


def test_repair_probe_upgrades_the_distribution_crashing_in_site_packages(tmp_path):
    b = builder(tmp_path)
    calls = []
    b.uv_install = lambda args, rule: calls.append(args)  # type: ignore[method-assign]
    out = ('  File "/opt/venv/lib/python3.9/site-packages/hypothesis/internal/compat.py", line 409\n'
           "TypeError: an integer is required (got type bytes)\n")
    assert b._repair_probe(out, set()) == "upgrade hypothesis"
    assert "--upgrade-package hypothesis" in calls[0]
    assert b._repair_probe("ModuleNotFoundError: No module named 'yaml'", set()) == "install pyyaml"


def test_tests_to_run_are_the_test_files_the_test_patch_adds_or_modifies():
    patch = """diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/tests/conftest.py b/tests/conftest.py
--- a/tests/conftest.py
+++ b/tests/conftest.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/tests/data/sample.json b/tests/data/sample.json
new file mode 100644
--- /dev/null
+++ b/tests/data/sample.json
@@ -0,0 +1 @@
+{}
diff --git a/testing/test_old.py b/testing/test_old.py
deleted file mode 100644
--- a/testing/test_old.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
"""
    assert configure_python_tests(patch).test_files == ["tests/test_a.py"]



def test_missing_base_commit_is_an_input_error_naming_the_instance(tmp_path):
    tree = make_tree(tmp_path, {"a.py": ""})
    with pytest.raises(InstanceInputError, match=r"\[acme__x-1\].*deadbeef"):
        GitTree(tree.git_dir, "deadbeef" * 5, instance_id="acme__x-1")


def test_sparse_archive_leaves_out_blobs_the_mirror_lacks(tmp_path):
    tree = make_tree(tmp_path, {"big.bin": b"x" * 1000, "small.py": "print(1)\n"})
    sha = subprocess.run(["git", "--git-dir", str(tree.git_dir), "rev-parse", f"{tree.commit}:big.bin"],
                         capture_output=True, text=True).stdout.strip()
    obj = tree.git_dir / "objects" / sha[:2] / sha[2:]
    obj.unlink()  # as a mirror without files >= 4 MiB
    import io
    import tarfile

    data = GitTree(tree.git_dir, tree.commit).archive()
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert "small.py" in names and "big.bin" not in names


def test_pytest_pins_too_old_for_the_interpreter_are_raised_to_a_floor():
    from agents.ecosystems.python.python_plan import relax_test_pins

    reqs, notes = relax_test_pins(["pytest==2.3.4", "pytest~=7.1", "pytest<5", "requests==2.0"], "3.9")
    assert reqs == ["pytest>=4.6", "pytest~=7.1", "pytest<5", "requests==2.0"]  # psf/requests pins 2.3.4
    assert len(notes) == 1 and "2.3.4" in notes[0]
    assert relax_test_pins(["pytest==6.2.5"], "3.11")[0] == ["pytest>=7.2"]


def test_modules_in_a_test_folder_run_even_when_not_named_test_star():
    # regression: astroid's tests are tests/unittest_*.py; a name-only rule ran nothing
    patch = ("diff --git a/tests/unittest_brain.py b/tests/unittest_brain.py\n--- a/tests/unittest_brain.py\n"
             "+++ b/tests/unittest_brain.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
             "diff --git a/tests/testdata/python3/data/module.py b/tests/testdata/python3/data/module.py\n"
             "--- a/tests/testdata/python3/data/module.py\n+++ b/tests/testdata/python3/data/module.py\n"
             "@@ -1 +1,2 @@\n x = 1\n+y = 2\n")
    assert configure_python_tests(patch).test_files == ["tests/unittest_brain.py"]


def test_conda_dask_maps_to_pip_dask_with_its_array_and_dataframe_parts():
    # regression: pip's `dask` lacks dask.dataframe, so xarray's test_dask.py skipped as a whole
    from agents.ecosystems.python.profile import PythonProfile
    from agents.ecosystems.python.python_plan import test_requirements

    assert test_requirements(PythonProfile(commit="x", conda_deps=["dask[array,dataframe]", "numpy"])) == \
        ["dask[array,dataframe]", "numpy"]


def test_environment_tags_differ_between_runs_and_never_remove_another_runs_image():
    # regression: two work directories committed the same tag and deleted each other's pooled image
    from agents.envimage import commit_image, image_tag_for
    from envpool.fake import FakeSandbox

    spec = {"base": "b", "commands": ["x"]}
    assert image_tag_for("o__r-1", spec, "wd-a") != image_tag_for("o__r-1", spec, "wd-b")
    assert image_tag_for("o__r-1", spec, "wd-a") == image_tag_for("o__r-1", spec, "wd-a")

    removed = []

    class Img:
        id, labels = "sha256:old", {"swemint.run": "wd-other"}

    class Images:
        def get(self, ref):
            return Img()

        def remove(self, ref, force=False):
            removed.append(ref)

    class Factory:
        client = type("C", (), {"images": Images()})()

    commit_image(FakeSandbox(SandboxSpec(image="x")), Factory(), "swemint/env", "t", {"swemint.run": "wd-a"})
    assert removed == []


def test_without_build_isolation_the_build_requirements_go_into_the_venv_first(tmp_path):
    """astropy 5.0 under isolation gets the newest setuptools (no `setuptools.dep_util`); the
    repair turns isolation off, and then its `[build-system] requires` (Cython, numpy,
    extension-helpers: uv no longer installs them) are installed into the venv -- once, with
    the shared flags (numpy wheels only), and without setuptools/wheel, which stay the venv's."""
    from agents.ecosystems.python.profile import PythonProfile

    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='astropy')\n"})
    prof = PythonProfile(commit=tree.commit, project_name="astropy",
                       build_requires=["setuptools", "wheel", "cython==0.29.22", "oldest-supported-numpy",
                                       "extension-helpers"])
    choice = choose_python(prof, utc("2022-03-03T15:14:54"), AVAILABLE)
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"--no-build-isolation", 0)
    sb.on(r"-e \.", (1, "  x Failed to build `astropy @ file:///testbed`\n"))
    b = PythonEnvBuilder(sb, tree, prof, choice, utc("2022-03-03T15:14:54"), None, repo="astropy/astropy")
    assert b.uv_install("-e . -C editable_mode=compat", "install:project").ok
    installs = [c for c in sb.commands if c.startswith("uv pip install")]
    assert len(installs) == 3 and "--no-build-isolation" not in installs[0]
    assert installs[1].endswith("cython==0.29.22 oldest-supported-numpy extension-helpers")
    assert "--only-binary numpy" in installs[1] and " setuptools " not in installs[1].split("--no-build-isolation")[-1]
    assert installs[2].endswith("-e . -C editable_mode=compat") and "--no-build-isolation" in installs[2]
    b.uv_install("pytest", "install:pytest")
    assert sum("extension-helpers" in c for c in sb.commands) == 1


def test_test_runs_keep_the_pretend_version_of_the_build():
    """astropy 5 computes its version with setuptools_scm at import: without the build's
    SETUPTOOLS_SCM_PRETEND_VERSION the tests saw 0.0.0 and pytest-astropy-header imported
    `astropy.tests.pytest_plugins` (astropy < 3), so no test ran."""
    from agents.ecosystems.python import run_environment
    from agents.ecosystems.python.python_plan import runtime_env

    env = run_environment({"SETUPTOOLS_SCM_PRETEND_VERSION": "5.0.0", "UV_HTTP_TIMEOUT": "120", **runtime_env()})
    assert env == {**runtime_env(), "SETUPTOOLS_SCM_PRETEND_VERSION": "5.0.0"}
    assert run_environment({"UV_LINK_MODE": "copy"}) == runtime_env()


ASTROPY2_BUILD = """error: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.get_requires_for_build_editable` failed (exit status: 1)

         [stderr]
         Traceback (most recent call last):
           File "/root/.cache/uv/builds-v0/.tmpdnOqcU/lib/python3.9/site-packages/setuptools/build_meta.py", line 320, in run_setup
             exec(code, locals())
           File "<string>", line 17, in <module>
           File "/testbed/astropy/__init__.py", line 116, in <module>
             _check_numpy()
           File "/testbed/astropy/__init__.py", line 110, in _check_numpy
             raise ImportError(msg)
         ImportError: Numpy version 1.10.0 or later must be installed to use Astropy
"""


def test_a_legacy_setup_py_that_imports_a_module_gets_it_in_the_venv_without_isolation(tmp_path):
    """astropy-6938 (astropy 2.x, no [build-system]): setup.py imports astropy, which checks
    numpy, so the build fails in the isolated env uv makes for it. The repair installs numpy into
    the venv (wheels only, as every dependency) and builds without isolation."""
    from agents.ecosystems.python.profile import PythonProfile

    tree = make_tree(tmp_path, {"setup.py": "import astropy\nfrom setuptools import setup\nsetup(name='astropy')\n"})
    prof = PythonProfile(commit=tree.commit, project_name="astropy")
    choice = choose_python(prof, utc("2018-02-13T15:14:54"), AVAILABLE)
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"--no-build-isolation", 0)
    sb.on(r"-e \.", (1, ASTROPY2_BUILD))
    b = PythonEnvBuilder(sb, tree, prof, choice, utc("2018-02-13T15:14:54"), None, repo="astropy/astropy")
    assert b.uv_install("-e . -C editable_mode=compat", "install:project").ok
    installs = [c for c in sb.commands if c.startswith("uv pip install")]
    assert len(installs) == 3
    assert installs[1].endswith(" numpy") and "--no-build-isolation" in installs[1] and "--only-binary numpy" in installs[1]
    assert installs[2].endswith("-e . -C editable_mode=compat") and "--no-build-isolation" in installs[2]
    assert b.steps[0].note == "repair: build-module numpy"
    # `No module named` names the import; the distribution is its PyPI name
    b2 = PythonEnvBuilder(FakeSandbox(SandboxSpec(image="x")), tree, prof, choice, utc("2018-02-13T15:14:54"), None,
                          repo="astropy/astropy")
    out = ASTROPY2_BUILD.replace("ImportError: Numpy version 1.10.0 or later must be installed to use Astropy",
                                 "ModuleNotFoundError: No module named 'yaml'")
    assert b2._repair_uv(out, set()) == "build-module pyyaml" and b2.build_modules == ["pyyaml"]
    assert b2._repair_uv(out, {"build-module pyyaml"}) is None


def test_an_interpreter_past_the_eras_gets_the_collections_abc_aliases(tmp_path):
    """astropy-6938 (2018, Python 3.7 era by our rule, 3.6 in SWE-bench) on 3.9, the oldest interpreter here: its conftest turns
    every DeprecationWarning into an error, and 3.9 warns on ``collections.MutableSequence``, so
    no test module imports. The venv gets a .pth giving `collections` the ABC aliases (no warning;
    on 3.10+ they are gone altogether); an era interpreter gets nothing."""
    import sys

    from agents.ecosystems.python.python_plan import ABC_SHIM, PythonChoice, needs_abc_shim

    assert needs_abc_shim(PythonChoice(ideal="3.6", version="3.9", exclude_newer="2018-01-01T00:00:00Z"))
    assert needs_abc_shim(PythonChoice(ideal="3.7", version="3.9", exclude_newer="2018-01-01T00:00:00Z"))
    assert needs_abc_shim(PythonChoice(ideal="3.9", version="3.11", exclude_newer="2021-01-01T00:00:00Z"))
    assert not needs_abc_shim(PythonChoice(ideal="3.8", version="3.9", exclude_newer="2020-01-01T00:00:00Z"))
    assert not needs_abc_shim(PythonChoice(ideal="3.11", version="3.11", exclude_newer="2024-01-01T00:00:00Z"))
    # as `site` runs it: the line of a .pth in a site dir (exec inside site.addpackage)
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "swemint-collections-abc.pth").write_text(ABC_SHIM + "\n")
    code = (f"import site; site.addsitedir({str(site_dir)!r})\nimport warnings; warnings.simplefilter('error')\n"
            "from collections import MutableSequence, Mapping\nimport collections.abc as a\n"
            "assert Mapping is a.Mapping\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and "Error processing" not in got.stderr, got.stderr
    bare = "import warnings; warnings.simplefilter('error')\nfrom collections import Mapping\n"
    assert subprocess.run([sys.executable, "-c", bare], capture_output=True, timeout=60).returncode != 0
    b = builder(tmp_path)
    b.choice = PythonChoice(ideal="3.6", version="3.9", exclude_newer="2018-01-01T00:00:00Z")
    b.build([])
    step = next(s for s in b.steps if s.rule == "era:collections-abc")
    assert "swemint-collections-abc.pth" in step.command and "collections.abc.__all__" in step.command


def test_an_interpreter_past_the_eras_gets_the_stdlib_distutils_after_the_installs(tmp_path):
    """astropy-6938 again: pytest-remotedata calls `LooseVersion`, and the venv's setuptools (>= 64
    for editable installs, far newer than 2018) ships a `distutils` that warns there -- an error
    under astropy's deprecations-as-exceptions. After every install step the venv gets a .pth,
    read before setuptools' own, that selects the standard library's `distutils` (3.9 still has
    it, silent)."""
    import os
    import sys

    from agents.ecosystems.python.python_plan import DISTUTILS_SHIM, PythonChoice, era_distutils

    assert era_distutils(PythonChoice(ideal="3.7", version="3.9", exclude_newer="2018-01-01T00:00:00Z"))
    assert not era_distutils(PythonChoice(ideal="3.8", version="3.9", exclude_newer="2020-01-01T00:00:00Z"))
    assert not era_distutils(PythonChoice(ideal="3.9", version="3.12", exclude_newer="2021-01-01T00:00:00Z"))
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "00-swemint-stdlib-distutils.pth").write_text(DISTUTILS_SHIM + "\n")
    code = (f"import site; site.addsitedir({str(site_dir)!r})\nimport os\n"
            "print(os.environ.get('SETUPTOOLS_USE_DISTUTILS'))\n")
    env = {k: v for k, v in os.environ.items() if k != "SETUPTOOLS_USE_DISTUTILS"}
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert got.stdout.strip() == "stdlib", got.stderr
    b = builder(tmp_path)
    b.choice = PythonChoice(ideal="3.7", version="3.9", exclude_newer="2018-01-01T00:00:00Z")
    b.build([])
    rules = [s.rule for s in b.steps]
    assert "era:stdlib-distutils" in rules
    assert all(rules.index("era:stdlib-distutils") > i for i, r in enumerate(rules) if r.startswith("install"))


VIRTUAL = ('[project]\nname = "algos"\nversion = "0.0.1"\nrequires-python = ">=3.11"\n'
           'dependencies = ["numpy>=2", "sympy"]\n\n[dependency-groups]\ntest = ["pytest>=8"]\n'
           'docs = ["sphinx"]\n')


def test_a_virtual_project_that_setuptools_refuses_gets_its_dependencies_and_the_checkout_on_sys_path(tmp_path):
    """S22: pyproject.toml with [project] and no [build-system] (uv's virtual project: `uv sync`
    installs the dependencies, not the project); pip/uv's editable install falls back to
    setuptools, which refuses a flat layout of many packages ("Multiple top-level packages
    discovered"). Before S22 the row ended "the project does not install"."""
    from agents.ecosystems.python.profile import analyze_python

    tree = make_tree(tmp_path, {"pyproject.toml": VIRTUAL, "graphs/__init__.py": "", "maths/__init__.py": "",
                                "graphs/tests/test_g.py": "def test_g():\n    pass\n"})
    prof = analyze_python(tree)
    assert prof.virtual_dependencies == ["numpy>=2", "sympy", "pytest>=8"] and prof.installable
    assert analyze_python(make_tree(tmp_path / "pkg", {"pyproject.toml": VIRTUAL + "\n[build-system]\n"
                                                       'requires = ["setuptools"]\n'})).virtual_dependencies is None
    choice = choose_python(prof, utc("2025-03-03T15:14:54"), AVAILABLE)
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"uv pip install .*( -e |\.$)", (1, "error: Multiple top-level packages discovered in a flat-layout: "
                                             "['graphs', 'maths']\n"))
    b = PythonEnvBuilder(sb, tree, prof, choice, utc("2025-03-03T15:14:54"), None, repo="acme/algos")
    res = b.build(["graphs/tests/test_g.py"])
    assert res.ok, res.reason
    deps = next(c for c in sb.commands if c.endswith("'numpy>=2' sympy 'pytest>=8'"))
    assert " -e " not in deps
    assert any("swemint-testbed.pth" in c for c in sb.commands)
    assert [s.rule for s in res.steps if s.rule == "virtual-project"] == ["virtual-project"]
    # a project with a build system that does not install still fails as before
    prof2 = analyze_python(make_tree(tmp_path / "b", {"pyproject.toml": VIRTUAL + '\n[build-system]\nrequires = ["setuptools"]\n'
                                                      'build-backend = "setuptools.build_meta"\n'}))
    b2 = PythonEnvBuilder(sb, tree, prof2, choice, utc("2025-03-03T15:14:54"), None, repo="acme/algos")
    assert not b2.build([]).ok
