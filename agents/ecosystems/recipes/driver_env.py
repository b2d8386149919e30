#!/usr/bin/env python3
"""Read ``make -n <target>`` on stdin; print, as shell ``export`` lines, the ``NAME=value`` words
that precede the driver (argv[1]) on the first line that runs it: the environment the project's
own test target gives its driver (e.g. ``MICROPY_MICROPYTHON=../ports/unix/build-standard/x``).
Names must be shell identifiers; values are printed quoted. Stdlib only (runs in the image)."""

import re
import shlex
import sys


def main() -> int:
    name = sys.argv[1]
    word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
    for line in sys.stdin:
        if not word.search(line):
            continue
        for part in re.split(r"&&|\|\||;", line):
            if not word.search(part):
                continue
            try:
                words = shlex.split(part)
            except ValueError:
                return 0
            for w in words:
                m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", w, re.S)
                if not m:
                    break
                print(f"export {m.group(1)}={shlex.quote(m.group(2))}")
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
