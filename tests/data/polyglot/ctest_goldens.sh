# Sourced by regenerate_doctest.sh and regenerate_catch2.sh: what both do around their own test
# files. Sets OUT (this folder), HELPER (recipes/cmake_tests.py) and W (a temporary folder,
# removed at exit), and enters $W/src, where the caller writes its CMake project.
OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HELPER="$OUT/../../../agents/ecosystems/recipes/cmake_tests.py"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/src" && cd "$W/src"

# helper_runs FILE...: configure the CMake project in $W/src into $W/build (with the File API
# query the helper reads) and build it; then run the helper on it for the touched FILEs with
# --junit ($W/ctest.xml: ctest's JUnit file, the helper's sections appended) and with --verbose
# ($W/ctest.log: ctest -V's console, then the sections).
helper_runs() {
  local B="$W/build"
  mkdir -p "$B/.cmake/api/v1/query" && touch "$B/.cmake/api/v1/query/codemodel-v2"
  cmake -S . -B "$B" > /dev/null && nice -n 19 cmake --build "$B" -j2 > /dev/null
  python3 "$HELPER" "$B" --junit "$W/ctest.xml" -- "$@" > /dev/null || true
  python3 "$HELPER" "$B" --verbose -- "$@" > "$W/ctest.log" 2>&1 || true
}

# golden TAG FILE NAME: FILE written as $OUT/NAME with the temporary paths rewritten: the
# source folder to /testbed, the build folder to /opt/build, and the helper's report folders
# /tmp/swemint-TAG-* to /tmp/swemint-TAG-x.
golden() {
  sed "s#$W/src#/testbed#g; s#$W/build#/opt/build#g; s#/tmp/swemint-$1-[A-Za-z0-9_]*#/tmp/swemint-$1-x#g" \
    "$2" > "$OUT/$3"
}
