"""C/C++ projects: CMake (CTest / GoogleTest), Meson (``meson test``), autotools (``make check``)
and plain Makefiles.

Analysis (from the tree at base_commit, no checkout): the build system (a root CMakeLists.txt
with tests wins over configure.ac; configure.ac / configure.in; a plain Makefile), the CMake
floor (``cmake_minimum_required``), the C++ standard (gcc floor), Debian packages for
``find_package`` / ``pkg_check_modules`` / ``PKG_CHECK_MODULES`` / ``AC_CHECK_LIB`` names
(recipes in ``cfamily.yaml``), git submodules the mirror lacks (replaced by Debian
libraries where the recipe knows them, e.g. jq's oniguruma -> libonig-dev,
``--with-oniguruma=yes``), the ``FetchContent_Declare`` downloads (a configure that fails to
fetch one from an unreachable host is repaired with Debian's source of that upstream:
`agents.ecosystems.cfamily.fetchcontent`) and whether the tests are GoogleTest.

Toolchain: the Debian suite of the commit's era (the newest one released by ``created_at``, else
the oldest), raised to the gcc the C++ standard needs (`envpool.toolchains.cfamily_image`).

Setup compiles what the test runs use, so they (network none) only rebuild what the patches touched:
- CMake: configure into /opt/build with the File API codemodel query, build the targets owning
  the touched files (else every test target, a ``gtest_discover_tests`` target not built yet
  included; none known: every target, the whole suite: ``cmake_tests.py --build-only``);
  test command: ``recipes/cmake_tests.py`` (installed at
  /usr/local/libexec/swemint/cmake_tests.py, with the other ``c_setup.HELPER_FILES`` beside it) builds the targets
  owning the touched files and runs their CTest tests; parser ``gtest_log`` (``ctest -V``) for
  GoogleTest, else ``ctest_junit`` (cmake >= 3.21, every test's whole output kept) or
  ``ctest_log`` (``ctest -V``: every test's output); a CTest test printing a TAP stream is
  reported as its TAP tests (``uv_test::name``).
  Tests whose binary is a doctest binary run again with doctest's XML reporter, and their ids
  are its test cases and subcases (``envpool.testrun.polyglot.doctest_xml``); a Catch2 binary
  runs again with Catch2's XML reporter, its ids ``<ctest test>::<test case>[ > <section>]``
  (``envpool.testrun.polyglot.catch2_xml``); a Boost.Test binary (class S36) runs again with
  Boost.Test's JUnit logger, its ids ``suite/sub/case`` (``envpool.testrun.polyglot.boost_junit``),
  narrowed to the touched files' units when it is built from other test files too
  (``recipes/boost_suites.py``); setup installs libboost-test-dev and the Boost components
  ``find_package(Boost ...)`` names.
- Meson (class S35, `c_meson`, `c_meson_plan`): meson and ninja (PyPI's meson when the
  project's ``meson_version`` floor is newer than Debian's), the ``dependency()`` packages,
  ``meson setup /opt/build -Dwerror=false`` with the test options that are off; test command:
  ``recipes/meson_tests.py`` (installed beside the CMake helper) builds and runs the tests whose
  program owns the touched files (meson's introspection; none: the whole suite), parser
  ``meson_testlog`` (``meson-logs/testlog.json``, meson's own ids).
- autotools: ``autoreconf -fi`` (when no configure is committed), ``./configure``, ``make``,
  ``make check TESTS=`` (builds the check programs, runs nothing); test command ``make check``
  (every test script; ids = script paths, ``tests/shtest``), parser ``automake_log``.
- plain Makefile: ``make``; ``make -k check`` (or ``test``), parser ``automake_log`` (only
  harnesses printing ``PASS: x`` lines give results; otherwise the run is "no tests"). A
  Makefile beside another build system is a route only when it has a check/test target (json's
  maintainer Makefile is not).

Modules: `c_builds` (analysis), `c_compilers` (the gcc), `c_setup` (setup commands),
`c_meson` / `c_meson_plan` (Meson's analysis and commands, S35), `c_docs` and `make_failures`
(S37: a build failing only in its documentation, switched off or tolerated),
`c_moves` (next moves), `fetchcontent` and `debsources` (CMake FetchContent from Debian's
sources), `units` (a Makefile's test units), `pg_regress` (SQL suites run by PostgreSQL's
pg_regress: touched ``sql/<name>.sql`` / ``expected/<name>.out`` of a PGXS Makefile or a CMake
pg_regress target, the extension installed into Debian's PostgreSQL, pg_regress as an
unprivileged user), `cfamily_recipe` (the data file `cfamily.yaml`);
this package holds the Ecosystem and its repairs.
"""

from __future__ import annotations

import re
from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, Route
from agents.ecosystems.toolchain import constrained
from envpool.testrun.limits import per_test
from envpool.errors import EnvBuildError
from agents.ecosystems.debian import apt_install, era_time
from agents.ecosystems.drivers import ENV_FILE, driver_env_setup, driver_requirements, driver_tests, find_drivers, \
    make_build, driver_test_specs
import agents.ecosystems.cfamily.fetchcontent as fetchcontent
from envpool.images import DEBIAN_MIRROR, ImageConfig
from envpool.toolchains import version_key
from agents.ecosystems.cfamily.cfamily_recipe import RECIPES, recipes
from agents.ecosystems.cfamily.c_setup import (BUILD_DIR, HELPER, JOBS, JUNIT, _q, cmake_configure,
                                               configure_command, install_helpers, source_fetch)
from agents.ecosystems.cfamily.c_compilers import CXX_STD_GCC, SUITE_GCC, _gcc_major, era_gcc
from agents.ecosystems.cfamily.c_builds import CBuild, C_SUFFIXES, _add, analyze, systems
from agents.ecosystems.cfamily.c_moves import (CMAKE_FLAG, CONFIGURE_FLAG, GATE_LINE, _BOOST_DECL, _CASE_DECL, _GTEST_DECL,
                                               _ci_setup_moves, _cmake_option_moves, _configure_option_moves,
                                               _meson_option_moves, _units_moves)
from agents.ecosystems.cfamily import pg_regress
from agents.ecosystems.cfamily.c_docs import KEEP_GOING, docs_moves, keep_going
from agents.ecosystems.cfamily.c_meson import MESON_FLAG, MESON_HELPER


__all__ = ["CBuild", "CFamily", "ECOSYSTEM", "HELPER", "JUNIT", "RECIPES", "analyze", "era_gcc", "fetch_repair",
           "package_repair", "systems"]

_GTEST_CASE = re.compile(r"^[A-Za-z_][\w/]*\.[A-Za-z_][\w/]*$")
"""A GoogleTest id ``Suite.Test`` (parameterised: ``Prefix/Suite.Test/0``, ``Suite/0.Test``)."""


class CFamily(Ecosystem):
    """The C/C++ ecosystem (`agents.ecosystems.base.Ecosystem`)."""

    name = "cfamily"
    languages = ("c", "cpp")
    tools = ("gcc", "debian")
    parsers = ("ctest_junit", "ctest_log", "gtest_log", "automake_log", "script_status_log", "unit_report_log",
               "tcl_helper_log", "catch2_xml", "doctest_xml", "boost_junit", "meson_testlog")
    toolchain_module = "envpool.toolchains.cfamily_image"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """12 for a C/C++-labelled tree with a build file at the root, 10 without the label
        (CMakeLists.txt / configure.ac; a meson.build over C sources, S35), 6 for a root Makefile over C sources or for a C/C++
        tree whose own test driver is built by a Makefile below the root
        (`agents.ecosystems.drivers`), else 0."""
        lang = (language or "").lower()
        is_c = lang in ("c", "cpp", "c++", "cxx")
        if lang and not is_c and lang not in ("", "unknown"):
            return 0
        if tree.exists("CMakeLists.txt") or tree.exists("configure.ac") or tree.exists("configure.in"):
            return 12 if is_c else 10
        c_sources = is_c or sum(f.endswith(C_SUFFIXES) for f in tree.files[:5000]) >= 3
        if tree.exists("meson.build") and c_sources:  # S35: a Meson project (not a meson-python package's)
            return 12 if is_c else 10
        if any(tree.exists(m) for m in ("Makefile", "makefile", "GNUmakefile")) and c_sources:
            return 6
        if pg_regress.harnesses(tree):  # a PostgreSQL extension (PGXS), C sources or SQL only
            return 6
        if c_sources and any(make_build(tree, d) for d in find_drivers(tree, self.name)):
            return 6
        if c_sources and "meson" in systems(tree):  # S35: a Meson project below the root
            return 6
        return 0

    def routes(self, tree: GitTree, language: str | None) -> list[Route]:
        """The repository's own test drivers built by a Makefile (`driver:<id>`, first: they
        select single tests), then the build systems of the tree (`systems`); `make` when none
        is known."""
        drivers = [Route(name=d.route) for d in find_drivers(tree, self.name) if make_build(tree, d)]
        return drivers + ([Route(name=n) for n in systems(tree)] or [Route(name="make")])

    def language_of(self, tree: GitTree) -> str:
        """`cpp` when C++ sources outnumber C ones, else `c`."""
        cpp = sum(f.endswith((".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".c++")) for f in tree.files[:20000])
        c = sum(f.endswith(".c") for f in tree.files[:20000])
        return "cpp" if cpp > c else "c"

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a gcc image at least `requested` (LLM plans)."""
        from envpool.toolchains.cfamily_image import ensure_image

        return ensure_image(_gcc_major(requested), images), {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """The build-and-test plan (module doc). `request.route` picks the build system,
        `request.toolchain` constrains the gcc major (a suite name such as `bookworm` means its
        gcc). Raises InfraError when the toolchain image cannot be built, EnvBuildError when no
        gcc here meets the constraint."""
        from envpool.toolchains.cfamily_image import cmake_of_suite, ensure_image, DEBIAN_GCC

        req = request or PlanRequest()
        if req.route in (None, "pg_regress", "make", "cmake"):  # S12: SQL tests pg_regress runs
            suites = pg_regress.find_suites(tree, touched)
            owner = {"pgxs": "make", "cmake": "cmake"}
            if suites and req.route in (None, "pg_regress", *(owner[s.kind] for s in suites)):
                return pg_regress.pg_plan(tree, instance, touched, images, req, suites)
            if req.route == "pg_regress":
                raise EnvBuildError("cfamily: pg_regress: no touched file is a pg_regress test (sql/<name>.sql, "
                                    "expected/<name>.out) of a PGXS Makefile or a CMake pg_regress target",
                                    instance_id=instance.instance_id)
        b = analyze(tree, touched, instance.repo.rsplit("/", 1)[-1], system=req.route)
        _add(b.cmake_flags, [f for f in req.options.get("cmake_flags", []) if CMAKE_FLAG.fullmatch(f)])
        _add(b.configure_flags, [f for f in req.options.get("configure_flags", []) if CONFIGURE_FLAG.fullmatch(f)])
        _add(b.meson_flags, [f for f in req.options.get("meson_flags", []) if MESON_FLAG.fullmatch(f)])
        from agents.debindex import DEBIAN_NAME

        ci_asked = [p for p in req.options.get("ci_packages", []) if DEBIAN_NAME.fullmatch(p)]
        gcc = era_gcc(era_time(instance, tree))
        floor = CXX_STD_GCC.get(b.cxx_std or "")
        if floor and int(floor) > int(gcc):
            gcc = floor
        if req.toolchain or req.avoid:
            try:
                gcc = constrained(sorted(DEBIAN_GCC, key=int), gcc, _gcc_major(req.toolchain) if
                                  req.toolchain and req.toolchain in SUITE_GCC else req.toolchain, req.avoid)
            except ValueError as e:
                raise EnvBuildError(f"cfamily: {e}", instance_id=instance.instance_id) from e
        choice = ensure_image(gcc, images, cmake=b.cmake_min if b.system == "cmake" else None)
        cmake_version = choice.version.rsplit("cmake ", 1)[-1] if "cmake" in choice.version else \
            cmake_of_suite(DEBIAN_GCC[gcc])
        notes = list(b.notes)
        setup: list[str] = []
        if b.packages:
            setup.append(apt_install(b.packages))
        if b.missing_submodules:  # as a clone without `submodule update` has them (automake wants SUBDIRS)
            setup.append("mkdir -p " + " ".join(_q(p) for p in b.missing_submodules))
        setup += [source_fetch(path, pkg) for path, pkg in b.sources.items()]
        tests = [f for f in touched]
        # class T: a terminal type, as a developer's shell has (the test containers have none; C
        # programs that read getenv("TERM") without a NULL check crash in every test there);
        # `dumb`: no capabilities, so nothing colours or moves the cursor
        env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb"}
        if b.system == "cmake":
            setup.append(install_helpers())
            setup.append(f"mkdir -p {BUILD_DIR}/.cmake/api/v1/query && touch {BUILD_DIR}/.cmake/api/v1/query/codemodel-v2"
                         f" && {cmake_configure(build_type=b.build_type, flags=b.cmake_flags)}")
            # only the targets the test run will build (those owning the touched files, else the
            # test targets): a whole large project (json: hundreds of test binaries) outlasts the
            # setup step's time on a loaded host
            setup.append(f"python3 {HELPER} {BUILD_DIR} --build-only --jobs {JOBS} -- "
                         + " ".join(_q(t) for t in tests) + " || echo 'swemint: some targets do not build at base_commit'")
            junit = not b.gtest and version_key(cmake_version) >= (3, 21)
            args = f"--junit {JUNIT}" if junit else "--verbose"  # -V: a passing test's output (TAP) too
            # ctest's per-test limit (`envpool.testrun.limits`): a hanging test is that test's timeout
            test_command = (f"python3 {HELPER} {BUILD_DIR} {args} --jobs {JOBS} --timeout {per_test()} -- "
                            + " ".join(_q(t) for t in tests))
            parser = "gtest_log" if b.gtest else ("ctest_junit" if junit else "ctest_log")
            report = JUNIT if junit else None
        elif b.system == "meson":  # S35
            from agents.ecosystems.cfamily.c_meson import TESTLOG
            from agents.ecosystems.cfamily.c_meson_plan import meson_setup, meson_test_command

            more, said = meson_setup(b, DEBIAN_GCC[gcc], tests)
            setup += more
            notes += said
            test_command, parser, report = meson_test_command(tests), "meson_testlog", f"{BUILD_DIR}/{TESTLOG}"
        elif b.system == "autotools":
            if not b.configure_committed:
                setup.append("autoreconf -fi")
            setup.append(configure_command(b))
            setup.append(f"make -j{JOBS}")
            setup.append(f"make -j{JOBS} check TESTS=")
            test_command = f"make -j{JOBS} -k check"
            parser, report = "automake_log", None
            notes.append("make check runs every test script (ids: script paths as automake prints them)")
        elif b.system.startswith("driver:"):
            test_command, parser, alts, more, (needs, ci_packages) = self._driver_plan(tree, b, touched,
                                                                                       instance.instance_id)
            setup += more
            tests, report = list(alts[0].test_files), None
            notes.append(f"test driver {b.system[7:]}: {alts[0].test_command[:300]}")
            if needs or ci_packages:
                notes.append(f"the driver needs {', '.join(n.label for n in needs) or 'nothing named'}; its CI "
                             f"installs {', '.join(ci_packages) or 'nothing'}")
        else:
            setup.append(f"make -j{JOBS}")
            test_command = f"make -k {b.make_target}"
            parser, report = "automake_log", None
            notes.append(f"plain Makefile: 'make {b.make_target}' is parsed as automake PASS:/FAIL: "
                         "lines; a harness printing none gives no results")
        if req.options.get(KEEP_GOING) is True and b.system in ("autotools", "make"):  # S37's make -k route
            setup = keep_going(setup)
            notes.append("S37: built with make -k; a failure is tolerated only when every failure make reports "
                         "is the documentation's (make_failures)")
        plan = PolyPlan(ecosystem=self.name, toolchain=choice.version, image=choice.image, route=choice.route,
                        build=b.system, substitutions=list(choice.substitutions), setup_commands=setup, env=env,
                        test_command=test_command, parser=parser, report_path=report, test_files=tests,
                        notes=notes + [f"build system: {b.system}"])
        if b.fetchcontent:
            plan.state["fetchcontent"] = {"declarations": [d.model_dump() for d in b.fetchcontent],
                                          "mirror": images.debian_mirror}
            plan.notes.append("FetchContent downloads: "
                              + ", ".join(f"{d.name} ({d.url})" for d in b.fetchcontent)[:400])
        if b.system.startswith("driver:"):
            plan = plan.with_test(alts[0])
            plan.test_alternatives = alts[1:]
            plan.needs, plan.ci_packages = needs, ci_packages
        plan.ci_packages = list(dict.fromkeys([*plan.ci_packages, *ci_asked]))
        if b.system == "meson":
            plan.state["meson_folder"] = b.folder
        if b.pkgconfig_needs:  # S35: required meson dependencies no table knows, for Debian's index
            from agents.debindex import Need

            plan.needs = [*plan.needs, *(Need(kind="pkgconfig", name=n) for n in b.pkgconfig_needs
                                         if _plain_need(n))]
        return plan

    def _driver_plan(self, tree: GitTree, b: CBuild, touched: list[str], iid: str):
        """(test command, parser, ranked TestSpecs, setup commands, (needs, CI packages)) of a
        driver route: build with the Makefile that runs the driver (`drivers.make_build`), record
        the driver's environment from its make target, run it on the touched tests; what the
        driver needs (`drivers.driver_requirements`) goes into the plan. Raises EnvBuildError when the driver
        or its build is gone, or the test patch touches none of its tests."""
        driver = next((d for d in find_drivers(tree, self.name) if d.route == b.system), None)
        build = make_build(tree, driver) if driver else None
        if driver is None or build is None:
            raise EnvBuildError(f"cfamily: {b.system}: no such driver built by a Makefile here", instance_id=iid)
        build.flags = list(b.make_flags)
        tests = driver_tests(driver, touched)
        if not tests:
            raise EnvBuildError(f"cfamily: {b.system}: the test patch touches none of its tests "
                                f"({', '.join(touched[:5])})", instance_id=iid)
        make = " ".join(_q(w) for w in ["make", *(["-C", build.folder] if build.folder != "." else []),
                                          f"-j{JOBS}", *build.flags])
        log = "/tmp/swemint-build.log"
        prefix = (f"{make} > {log} 2>&1 || {{ tail -n 80 {log}; echo 'swemint: the build failed'; exit 2; }}; "
                  f"if [ -f {ENV_FILE} ]; then . {ENV_FILE}; fi; ")
        alts = driver_test_specs(driver, tests, prefix=prefix, files=tree.files)
        setup = [make, *driver_env_setup(build, driver)]
        return alts[0].test_command, driver.spec.parser, alts, setup, driver_requirements(tree, driver)

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): CMake plans build the test command's targets
        (the helper's ``--build-only``: no ctest), Meson plans (S35) the programs of the tests
        the Meson helper picks (its ``--build-only``); automake's ``make check`` builds its check
        programs with an empty ``TESTS=`` (no test script runs). None for a plain Makefile or a
        repository test driver, whose build and tests cannot be told apart."""
        cmd = plan.test_command
        helper = f"python3 {HELPER} {BUILD_DIR} "
        if plan.build == "pg_regress":  # the extension built and installed into the server's folders
            return plan.state.get("build_command")
        if plan.build == "cmake" and cmd.startswith(helper) and " -- " in cmd:
            whole = "--whole " if " --whole " in cmd.split(" -- ", 1)[0] + " " else ""  # S32's move: build it all
            return f"{helper}--build-only {whole}--jobs {JOBS} -- {cmd.split(' -- ', 1)[1]}; true"
        meson = f"python3 {MESON_HELPER} {BUILD_DIR} "
        if plan.build == "meson" and cmd.startswith(meson) and " -- " in cmd:  # S35
            whole = "--whole " if " --whole " in cmd.split(" -- ", 1)[0] + " " else ""
            return f"{meson}--build-only {whole}--jobs {JOBS} -- {cmd.split(' -- ', 1)[1]}; true"
        if plan.build == "autotools" and cmd == f"make -j{JOBS} -k check":
            return f"make -j{JOBS} -k check TESTS=; true"
        return None

    def targeted_plan(self, plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """`plan` running only the tests `ids` (a targeted rerun, `agents.adaptive`): the CMake
        helper's run with ``--only`` the CTest test names (an id's part before ``::``: a Catch2,
        doctest or TAP id names its CTest test), which the helper turns into ``ctest -R`` of the
        names anchored and escaped when every one is a CTest test (else its selection stays: a
        GoogleTest case inside a test binary is no CTest test); under the GoogleTest parser the
        cases themselves go into ``GTEST_FILTER`` (``Suite.Test`` ids, ``:``-separated; the
        helper adds its own exclusions to it), so the binaries run only them. Same build, the
        same per-test limit. A Meson plan (S35): the Meson helper's run with ``--only`` the ids (its
        log's names), which it runs by ``<project>:<name>``. None for automake, Makefiles, drivers and a test command not of
        the helper's form: the rerun is then full."""
        import json
        from agents.ecosystems.base import TestSpec
        from envpool.quoting import shell_word

        helper = f"python3 {HELPER} {BUILD_DIR} "
        cmd = plan.test_command
        meson = f"python3 {MESON_HELPER} {BUILD_DIR} "
        if ids and plan.build == "meson" and cmd.count(meson) == 1 and " -- " in cmd:  # S35: meson's own ids
            if any(not i or "\n" in i for i in ids):
                return None
            cmd = cmd.replace(meson, f"{meson}--only {shell_word(json.dumps(sorted(set(ids))))} ", 1)
            return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted",
                                           test_command=cmd, parser=plan.parser, report_path=plan.report_path,
                                           parser_options=dict(plan.parser_options), test_files=list(plan.test_files)))
        if not ids or plan.build != "cmake" or cmd.count(helper) != 1 or " -- " not in cmd:
            return None
        names = sorted({i.split("::", 1)[0] for i in ids})
        if any(not n or "\n" in n for n in names):
            return None
        env = ""
        if plan.parser == "gtest_log":
            cases = sorted(i for i in ids if _GTEST_CASE.match(i))
            env = f"GTEST_FILTER={shell_word(':'.join(cases))} " if cases else ""
        cmd = cmd.replace(helper, f"{env}{helper}--only {shell_word(json.dumps(names))} ", 1)
        return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted", test_command=cmd,
                                       parser=plan.parser, report_path=plan.report_path,
                                       parser_options=dict(plan.parser_options), test_files=list(plan.test_files)))

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """A FetchContent download that failed (an unreachable host): its upstream tarball from
        Debian's source package and the configure again with ``FETCHCONTENT_SOURCE_DIR_<NAME>``
        (`fetch_repair`). Else install the Debian package of a dependency the configure step
        reports missing (CMake ``Could NOT find X`` / ``By not providing "FindX.cmake"``,
        pkg-config ``No package 'x' found``, autoconf's ``library 'x' is required``); None
        otherwise."""
        fetched = fetch_repair(plan, command, output, tried=tried)
        if fetched and not _tried(fetched, tried):
            return fetched
        common = _fcommon_repair(plan, output)
        if common and not _tried(common, tried):
            return common
        newer = _meson_version_repair(plan, output)
        if newer and not _tried(newer, tried):
            return newer
        return package_repair(output, tried)


    # -- the loop's generic next moves (agents.moves), fed with C/C++ data --------------------
    def next_moves(self, ctx) -> list:
        """Moves for a stalled C/C++ round (`agents.moves`): `test_option` (CMake: the OFF options
        the helper printed because no CTest test is defined -- those the configure output or the
        CI's ``cmake -DX=ON`` names first, then those whose name or help says test/check; and
        after S38 the OFF options the helper says gate the folder of a source no target compiles);
        autotools: the ``--enable-X`` / ``--with-X`` switches of configure.ac that say test/check),
        `rediscover` (a googletest test the test_patch adds never ran: the touched targets built
        again from clean, their discovery after the test_patch), `whole_suite` (S32: the helper's
        selection was narrower than the suite -- every target built, every CTest test run; not
        after the helper said the touched test sources are compiled by no target, S38) and
        `status_units` (the run gave no per-test report: the scripts and make targets of the
        touched files graded by exit status, `agents.ecosystems.cfamily.units`); after a failed build,
        `docs_off` first when only the documentation failed (S37, `c_docs.docs_moves`: the
        project's docs switch, else autotools / make built with ``make -k``), then `ci_setup` (the CI's apt packages
        and its configure options: ``cmake -DX=<bool>``, ``./configure --enable/--disable/--with/
        --without-X``, ``meson -Dx=<bool|feature>``, composite actions included). Meson (S35):
        `test_option` (the test-gating options of meson_options.txt not set yet, the CI's first)
        after a round that ran no test, `whole_suite` (the Meson helper's ``--whole``) after one
        whose selection was narrower. Each names its evidence."""
        from agents.ecosystems.move_types import Move

        plan, out = ctx.plan, ctx.output or ""
        moves: list = []
        if ctx.why.startswith("setup failed"):  # S37 (a build failing only in its docs) before the CI's setup
            return docs_moves(ctx.tree, plan, out) + _ci_setup_moves(ctx.tree, plan)
        if plan.build == "cmake" and (re.search(r"no CTest tests are defined|building the 0 test targets", out)
                                      or GATE_LINE.search(out)):  # S38's file behind an OFF option
            moves += _cmake_option_moves(ctx.tree, plan, out, ctx.touched)
        if plan.build == "autotools" and ctx.why.startswith("no test ran"):
            moves += _configure_option_moves(ctx.tree, plan)
        if plan.build == "meson" and (ctx.why.startswith("no test ran") or "swemint-meson-tests: no test to run" in out):
            moves += _meson_option_moves(ctx.tree, plan)
        if plan.build == "meson" and MESON_HELPER in plan.test_command and "--whole" not in plan.test_command and \
                "the whole suite (" not in out and not _NO_TARGET_COMPILES.search(out):  # S35, as S32's move under CMake
            moves += _whole_suite_moves(plan, ctx.why, out, helper=MESON_HELPER)
        if plan.build == "cmake" and ctx.why.startswith("tests the test_patch adds never ran") and \
                HELPER in plan.test_command and "--rediscover" not in plan.test_command:
            spec = plan.test_spec().model_copy(update={"name": "rediscover", "test_command": plan.test_command.replace(
                f"python3 {HELPER} {BUILD_DIR} ", f"python3 {HELPER} {BUILD_DIR} --rediscover ", 1)})
            moves.append(Move(kind="rediscover", serves="tests discovered at build time", test=spec,
                              evidence=f"{ctx.why}: the touched targets built again from clean, so what their "
                                       "build registers is listed after the test_patch"))
        if plan.build == "cmake" and HELPER in plan.test_command and "--whole" not in plan.test_command and \
                not re.search(r"no CTest tests are defined|the whole suite \(", out) and not _NO_TARGET_COMPILES.search(out):
            moves += _whole_suite_moves(plan, ctx.why, out)
        if ctx.why.startswith("no test ran") and (plan.parser == "automake_log" or plan.build in ("make", "autotools")):
            moves += _units_moves(ctx.tree, plan, ctx.touched)
        if plan.build != "pg_regress":
            moves += _pg_regress_moves(ctx)
        return moves

    def added_tests(self, test_patch: str) -> list[str]:
        """The googletest tests (``TEST(Suite, Name)``, ``TEST_F``, ``TYPED_TEST``: ``Suite.Name``),
        Catch2 / doctest test cases (``TEST_CASE("name"``) and Boost.Test cases
        (``BOOST_AUTO_TEST_CASE(name)`` and its fixture, data and template forms: ``name``, the
        last part of its ids ``suite/name``; S36) a line the test_patch adds declares (not those a removed line declared too: a test moved or edited in place)."""
        from envpool.patches import added_lines, changed_lines

        def declared(lines: list[str]) -> list[str]:
            out = []
            for line in lines:
                m = _GTEST_DECL.match(line)
                name = f"{m.group(2)}.{m.group(3)}" if m else None
                if name is None and (m := _CASE_DECL.match(line) or _BOOST_DECL.match(line)):
                    name = m.group(1)
                if name and name not in out:
                    out.append(name)
            return out

        changed = changed_lines(test_patch)
        names: list[str] = []
        for path, lines in added_lines(test_patch).items():
            if path.endswith(C_SUFFIXES):
                removed = set(declared([x for x in changed.get(path, []) if x not in lines]))
                names += [n for n in declared(lines) if n not in removed and n not in names]
        return names


def _plain_need(name: str) -> bool:
    from agents.debindex import NAME_RE

    return bool(NAME_RE.fullmatch(name)) and ".." not in name


def _pg_regress_moves(ctx) -> list:
    """S12's move: the touched files are pg_regress tests (``sql/<name>.sql``,
    ``expected/<name>.out``) of a PGXS Makefile or a CMake pg_regress target
    (`pg_regress.find_suites`) that the round's plan did not run: an `owner_build` asking for the
    ``pg_regress`` route (the extension built and installed into Debian's PostgreSQL, pg_regress
    as an unprivileged user). Evidence: the files, the test names, the harness and the command."""
    from agents.ecosystems.move_types import Move

    suites = pg_regress.find_suites(ctx.tree, ctx.touched)
    if not suites:
        return []
    runs = "; ".join(f"{s.evidence} ({' '.join(s.run)[:120]})" for s in suites)
    return [Move(kind="owner_build", serves="SQL regression suites run by pg_regress", key="pg_regress",
                 evidence=f"{ctx.why[:160]}; {runs}"[:600], request=PlanRequest(route="pg_regress"))]


_NO_TARGET_COMPILES = re.compile(r"^swemint-(?:cmake|meson)-tests: .* compiled by no target of this (?:CMake|Meson) "
                                 r"build \(after the test_patch\)", re.M)
"""S38: the helper's line on touched compiled test sources no target compiles -- the whole suite
cannot run their tests either, so no `whole_suite` move follows (the loop's other candidates may)."""


_OWNERS_SAID = re.compile(r"swemint-cmake-tests: (no target owns the touched files[^\n]*|targets owning the touched "
                          r"files: [^\n]*)")


_MESON_SAID = re.compile(r"swemint-meson-tests: (targets owning the touched files: [^\n]*)")


def _whole_suite_moves(plan: PolyPlan, why: str, output: str, helper: str = HELPER) -> list:
    """S32's move: the CMake helper's run with ``--whole`` (every target built, every CTest test
    run) after a stalled round whose selection was narrower -- the targets owning the touched
    files, or the test targets when none owned them (a test file the test_patch adds that no
    target lists at the base commit, a touched CMakeLists.txt or data file: the test that reads
    it may be another target's). Evidence: why the round stalled and the helper's own line on
    what it selected. None when the helper already ran the whole suite or no test is defined.
    `helper`: the Meson helper for a Meson plan (S35: its tests picked by the targets owning the
    touched files)."""
    from agents.ecosystems.move_types import Move

    said = _OWNERS_SAID.findall(output) or _MESON_SAID.findall(output)
    spec = plan.test_spec().model_copy(update={"name": "whole_suite", "test_command": plan.test_command.replace(
        f"python3 {helper} {BUILD_DIR} ", f"python3 {helper} {BUILD_DIR} --whole ", 1)})
    return [Move(kind="whole_suite", serves="touched files no finer selection owns", test=spec,
                 evidence=f"{why[:200]}; the helper selected: {said[-1][:200] if said else 'nothing it named'}")]


_HEADER_MULTIDEF = re.compile(r"(?:\.h:\d+|\(\.bss\+0x[0-9a-f]+\)): multiple definition of [`'\u2018][\w$]+['\u2019]; "
                              r"\S+:(?:\S+\.h:\d+|\(\.bss\+0x[0-9a-f]+\)): first defined here")
"""A link error for a variable *defined* in a header that several objects include (``int stats;``
in util.h; with debug info ld names the header, without it the tentative definition's .bss): C
code written for -fcommon, the default before GCC 10 (a function defined twice, in .text, is not
this)."""


_MESON_TOO_OLD = re.compile(r"Meson version is [\d.]+\S* but project requires (?:>=?\s*)?'?([\d.]+)")


def _meson_version_repair(plan: PolyPlan, output: str) -> list[str] | None:
    """S35: a configure meson refuses because the project's ``meson_version`` is newer than the
    installed meson (``Meson version is 1.0.1 but project requires >= 1.3.0``; the analysis
    reads the floor, but a subproject or an expression may raise it): PyPI's ``meson>=X`` with the
    system's pip, then the plan's ``meson setup`` again. None for other plans and outputs."""
    m = _MESON_TOO_OLD.search(output)
    if plan.build != "meson" or not m:
        return None
    from agents.ecosystems.cfamily.c_meson import pypi_meson

    conf = next((c for c in plan.setup_commands if " && meson setup " in c), None)
    return [apt_install(["python3-pip"]), pypi_meson(m.group(1)), *([conf] if conf else [])]


def _fcommon_repair(plan: PolyPlan, output: str) -> list[str] | None:
    """S27: a build whose link fails on variables defined in headers (`_HEADER_MULTIDEF`; GCC >= 10
    defaults to -fno-common) is configured again with ``-fcommon`` and rebuilt from clean: autotools
    (``CFLAGS`` exported to the plan's configure command, then ``make clean``) and CMake
    (``-DCMAKE_C_FLAGS=-fcommon`` on the plan's configure); None for other builds and outputs."""
    if not _HEADER_MULTIDEF.search(output):
        return None
    if plan.build == "autotools":
        conf = next((c for c in plan.setup_commands if "./configure" in c), None)
        if conf is not None:
            return [f"export CFLAGS='-g -O2 -fcommon'; {conf} && make clean"]
    if plan.build == "cmake":
        conf = next((c for c in plan.setup_commands if "cmake -S " in c and "-DCMAKE_C_FLAGS" not in c), None)
        if conf is not None:
            return [conf + " -DCMAKE_C_FLAGS=-fcommon"]
    return None


def package_repair(output: str, tried: set[str]) -> list[str] | None:
    """The install of the Debian packages of the dependencies a failed configure `output`
    reports missing (CMake ``Could NOT find X`` / ``By not providing "FindX.cmake"``,
    pkg-config ``No package 'x' found``, autoconf's ``library 'x' is required``, meson's
    ``Dependency "x" not found`` / ``Run-time dependency x found: NO`` (S35), the autotools
    themselves), from the recipes' tables; None when none is named or it was `tried`. Also
    for a library another ecosystem's plan builds (`c_library`)."""
    rec = recipes()
    pkgs: list[str] = []
    for name in re.findall(r"Could NOT find (\w+)|Could not find a package configuration file provided by \"?(\w+)",
                            output):
        _add(pkgs, rec["find_package"].get((name[0] or name[1]).lower()))
    for mod in re.findall(r"No package '([\w.+-]+)' found", output):
        _add(pkgs, rec["pkg_config"].get(mod.lower()))
    # S35: meson's `Dependency "x" not found` error and its `Run-time dependency x found: NO` lines
    # (optional ones too: meson stops at the first required one, so each round would find one)
    meson_own = (rec.get("meson") or {}).get("dependencies") or {}
    for mod in re.findall(r"Dependency \"([\w.+-]+)\" not found|(?:Run-time|Build-time) dependency ([\w.+-]+) found: NO",
                          output):
        name = (mod[0] or mod[1]).lower()
        _add(pkgs, meson_own.get(name) if name in meson_own else rec["pkg_config"].get(name))
    for lib in re.findall(r"(?:library|lib)\s*'?([\w.+-]+)'? (?:is required|not found)", output):
        _add(pkgs, rec["libs"].get(lib.lower()))
    if re.search(r"(autoreconf|aclocal|libtoolize|autopoint): (command )?not found", output):
        _add(pkgs, ["autoconf", "automake", "libtool", "autopoint"])
    if not pkgs:
        return None
    fix = [apt_install(pkgs)]
    return None if _tried(fix, tried) else fix


def _tried(fix: list[str], tried: set[str]) -> bool:
    """Whether Execution applied `fix` already (its keys are the commands plus the env as JSON)."""
    key = "\n".join(fix)
    return key in tried or key + "{}" in tried


def fetch_config() -> fetchcontent.FetchContentConfig:
    """`cfamily.yaml` ``fetchcontent``, validated."""
    return fetchcontent.FetchContentConfig.model_validate(recipes().get("fetchcontent") or {})


def fetch_repair(plan: PolyPlan | None, command: str, output: str, sources=None,
                 tried: set[str] | None = None) -> list[str] | None:
    """The FetchContent repair of a failed configure `command` (`fetchcontent.repair_commands`
    with the plan's declarations and Debian's Sources on the plan's mirror; `sources`: a
    `DebianSources` to use instead; `tried`: the repairs of this build), or None."""
    if not fetchcontent.failed_fetches(output):
        return None
    from agents.ecosystems.cfamily.debsources import DebianSources

    cfg = fetch_config()
    state = (plan.state.get("fetchcontent") if plan is not None else None) or {}
    sources = sources or DebianSources(cfg.sources, state.get("mirror") or DEBIAN_MIRROR)
    got = fetchcontent.repair_commands(state, command, output, sources, cfg, tried or set())
    return got[0] if got else None


ECOSYSTEM = CFamily()

