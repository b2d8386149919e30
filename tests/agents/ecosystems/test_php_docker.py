"""A tiny Composer project the test writes, minted end to end in Docker by the PHP ecosystem's
Debian route (Packagist is unreachable): bookworm's PHP 8.2, phpunit and composer from Debian,
the project's own autoloader from ``composer dump-autoload``. Its tests extend a base class of
the `autoload-dev` namespace (``Tests\\`` -> tests/), as Carbon's do: bookworm's Composer 2.5
dumps no-dev when nothing was installed, so without ``--dev`` the class is not found and no
test runs (briannesbitt/carbon-2813)."""

from __future__ import annotations

import json

import pytest

from agents.ecosystems.php import ECOSYSTEM as PHP

pytestmark = [pytest.mark.docker, pytest.mark.slow]

COMPOSER = {"name": "acme/calc", "require": {"php": ">=8.0"},
            "autoload": {"psr-4": {"Acme\\": "src/"}}, "autoload-dev": {"psr-4": {"Tests\\": "tests/"}}}
PHPUNIT_XML = ('<?xml version="1.0"?>\n<phpunit bootstrap="vendor/autoload.php">\n<testsuites><testsuite name="all">'
               '<directory>tests</directory></testsuite></testsuites>\n</phpunit>\n')
CALC_BUG = "<?php\nnamespace Acme;\n\nclass Calc\n{\n    public static function add(int $a, int $b): int\n" \
           "    {\n        return $a - $b;\n    }\n}\n"
BASE = "<?php\nnamespace Tests;\n\nuse PHPUnit\\Framework\\TestCase;\n\nabstract class AbstractTestCase extends TestCase\n{\n}\n"
OLD_TEST = ("<?php\nnamespace Tests;\n\nuse Acme\\Calc;\n\nclass CalcTest extends AbstractTestCase\n{\n"
            "    public function testZero(): void\n    {\n        $this->assertSame(0, Calc::add(0, 0));\n    }\n}\n")
NEW_TEST = OLD_TEST.replace("    }\n}\n", "    }\n\n    public function testAdd(): void\n    {\n"
                                          "        $this->assertSame(5, Calc::add(2, 3));\n    }\n}\n")


def test_tests_of_the_autoload_dev_namespace_run_on_bookworm(mint_with):
    files = {"composer.json": json.dumps(COMPOSER), "phpunit.xml.dist": PHPUNIT_XML, "src/Calc.php": CALC_BUG,
             "tests/AbstractTestCase.php": BASE, "tests/CalcTest.php": OLD_TEST}
    res = mint_with(PHP, files, "php-autoload-dev", language="php", created_at="2024-03-01 10:00:00",
                    tests={"tests/CalcTest.php": NEW_TEST}, fix={"src/Calc.php": CALC_BUG.replace("$a - $b", "$a + $b")})
    assert res.outcome == "verified", res.reason
    assert res.interpreter == "php 8.2"
    assert [t.rsplit("::", 1)[-1] for t in res.FAIL_TO_PASS] == ["testAdd"]
    assert [t.rsplit("::", 1)[-1] for t in res.PASS_TO_PASS] == ["testZero"]
