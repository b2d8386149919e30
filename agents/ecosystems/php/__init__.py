"""PHP projects (composer.json) with Packagist unreachable: a vendored tree or Debian.

Routes, decided in `plan` before any container is built:
- **vendored**: ``vendor/autoload.php`` committed -> used as it is (PHPUnit from
  ``vendor/bin/phpunit`` when committed, else Debian's);
- **debian**: every ``require`` package and every ``require-dev`` package that is not a
  development tool (``recipes/rubyphp.yaml`` ``tooling``, never installed) has a Debian package
  (``php-<vendor>-<name>``, ``php-<name>`` or an alias) in one suite (the era's suite first,
  then newer, then older). ``composer dump-autoload`` (offline) writes the project's own
  autoloader, and ``vendor/autoload.php`` is made to load every installed Debian package's
  ``autoload.php`` first;
- otherwise EnvBuildError("Packagist (repo.packagist.org) is unreachable and <repo> has no
  vendored dependencies: composer install cannot run; ...").

Tests: PHPUnit on each ``*Test.php`` the test patch touches, one run per file (PHPUnit 9 takes
one path), JUnit reports concatenated into one file (parser ``phpunit_junit``; ids
``Ns\\ClassTest::testName``, compared with SWE-bench's testdox ids by `gold.gold_match`).

Modules: `composer_deps` (requirements and their Debian packages); this package holds the
Ecosystem (its data: `recipes/rubyphp.yaml`, shared with Ruby through `agents.ecosystems.debian`).
"""

from __future__ import annotations

import shlex
from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, shell_args
from agents.ecosystems.debian import era_suite, era_time, from_debian, rubyphp_recipes, suites_from, suites_of_request
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.testpaths import TestPathRules
from envpool.toolchains import apt_script, layer_image
from agents.ecosystems.php.composer_deps import _provided, _resolve, composer_dependencies, patch_requires


__all__ = ["DEBIAN_AUTOLOAD", "ECOSYSTEM", "JUNIT", "Php", "_provided", "composer_dependencies", "patch_requires"]

_RULES = TestPathRules(None, ["php"])
"""The PHP group of the one test-path rule set (`envpool.testpaths`): PHPUnit test files by name."""

JUNIT = "/tmp/swemint-phpunit.xml"


DEBIAN_AUTOLOAD = "vendor/swemint-debian-autoload.php"


class Php(Ecosystem):
    """The PHP ecosystem (`agents.ecosystems.base.Ecosystem`)."""

    name = "php"
    languages = ("php",)
    takes_test_args = True
    parsers = ("phpunit_junit",)
    toolchain_module = "envpool.toolchains"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """12 for a PHP-labelled tree with composer.json at the root, 10 without the label, 0
        otherwise (or when another language is named)."""
        lang = (language or "").lower()
        if lang and lang != "php":
            return 0
        if tree.exists("composer.json"):
            return 12 if lang == "php" else 10
        return 0

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """See the module doc. Raises EnvBuildError (before any image is built) when Packagist
        would be needed or the test patch touches no PHPUnit test file."""
        rec = rubyphp_recipes()["php"]
        only = suites_of_request("php", rec["interpreters"], request, instance.instance_id)
        tests = [f for f in touched if _RULES.is_test_file(f)]  # *Test.php, the rule set's PHP names
        if not tests:
            raise EnvBuildError(f"the test patch of {instance.instance_id} touches no PHPUnit *Test.php file "
                                f"({', '.join(touched[:5])})", instance_id=instance.instance_id)
        vendored = tree.exists("vendor/autoload.php")
        era = era_suite(era_time(instance, tree))
        notes: list[str] = []
        subs: list[str] = []
        if vendored:
            suite, pkgs = next(x for x in suites_from(era) if only is None or x in only), []
            notes.append("vendored dependencies: vendor/autoload.php is used as committed")
        else:
            require, dev = composer_dependencies(tree)
            if added := patch_requires(tree, instance.patch, require):
                require = {**require, **added}
                notes.append(f"dependencies the fix adds to composer.json: {', '.join(sorted(added))}")
            suite, pkgs, found_subs, found_notes = from_debian(
                era, lambda s: _resolve(require, dev, s), registry="Packagist (repo.packagist.org)",
                installer="composer install", noun="packages", repo=instance.repo, instance_id=instance.instance_id,
                only=only)
            subs += found_subs
            notes += found_notes
        php = rec["interpreters"][suite]
        image = layer_image("php", php, suite, apt_script([*rec["base"], "git", "ca-certificates", "unzip"]),
                            images)
        setup: list[str] = []
        if pkgs:
            setup.append("export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && apt-get install -y -qq "
                         f"--no-install-recommends {' '.join(pkgs)} >/dev/null && rm -rf /var/lib/apt/lists/*")
        if not vendored:
            loaders = " ".join(shlex.quote(p) for p in pkgs)
            # Composer >= 2.4 dumps in the last install's dev mode, and with no install that is
            # no-dev (autoload-dev, e.g. `Tests\\` -> tests/, left out: Carbon-2813's "Class
            # Tests\AbstractTestCase not found" on bookworm's 2.5); 2.0 (bullseye) has no --dev
            # and dumps dev by default
            setup.append("export COMPOSER_ALLOW_SUPERUSER=1 COMPOSER_DISABLE_NETWORK=1; "
                         "composer dump-autoload --dev --no-interaction || composer dump-autoload --no-interaction")
            setup.append(
                f"(echo '<?php'; for p in {loaders or 'none'}; do dpkg -L $p 2>/dev/null | "
                "grep -E '/autoload[.]php$' | sort | head -n 20 | sed \"s/.*/require_once '&';/\"; done) "
                f"> {DEBIAN_AUTOLOAD} && sed -i \"1a require_once __DIR__ . '/swemint-debian-autoload.php';\" "
                f"vendor/autoload.php && php -l {DEBIAN_AUTOLOAD} && head -n 3 vendor/autoload.php")
        phpunit = "vendor/bin/phpunit" if tree.exists("vendor/bin/phpunit") else "phpunit"
        extra = "".join(f"{a} " for a in shell_args((request or PlanRequest()).test_args))
        runs = " ; ".join(f"{phpunit} {extra}--log-junit {JUNIT}.{i} {shlex.quote(t)}" for i, t in enumerate(tests))
        test_command = f"rm -f {JUNIT}*; {runs} ; cat {JUNIT}.* > {JUNIT} 2>/dev/null"
        return PolyPlan(ecosystem=self.name, toolchain=f"php {php}", image=image, route="debootstrap",
                        substitutions=subs, setup_commands=setup, env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
                        test_command=test_command, parser="phpunit_junit", report_path=JUNIT,
                        test_files=tests, notes=notes)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """No automatic repairs: a missing package cannot be fetched here."""
        return None


ECOSYSTEM = Php()

