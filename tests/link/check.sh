#!/usr/bin/env bash
# tests/link/check.sh VARIANT BUILD [CUDA_LIB]: builds my_program.cpp with the g++ command that README.md gives
# under "# CPU-only build" (VARIANT cpu) or "# CUDA build" (VARIANT cuda), with $src, $build and $cuda set to
# this source tree, the build directory BUILD and the CUDA libraries' folder; runs it and checks its answer.
# The commands are read from the README itself, so the README cannot drift from what is tested; the README's
# example code is checked to be my_program.cpp's, line for line.
set -euo pipefail
variant=${1:?"usage: check.sh cpu|cuda BUILD [CUDA_LIB]"}
build=$(cd "${2:?"usage: check.sh cpu|cuda BUILD [CUDA_LIB]"}" && pwd)
# shellcheck disable=SC2034  # read by the README's command, through eval
cuda=${3:-/usr/local/cuda/lib64}
src=$(cd "$(dirname "$0")/../.." && pwd)
readme=$src/README.md
program=$src/tests/link/my_program.cpp
fail() {
    echo "tests/link/check.sh: $*" >&2
    exit 1
}
case $variant in
    cpu) section="CPU-only build" ;;
    cuda) section="CUDA build" ;;
    *) fail "unknown variant '$variant': expected cpu or cuda" ;;
esac

# The first g++ command after the README's comment line "# $section", its continuation lines joined.
command=$(awk -v want="# $section" '
    /^# / { inside = index($0, want) == 1; next }
    inside && /^g\+\+ / { on = 1 }
    on { line = $0; more = sub(/\\$/, "", line); text = text line; if (!more) { print text; exit } }' "$readme")
[ -n "$command" ] || fail "README.md has no g++ command after a line '# $section'"

# The README's example (its first C++ block) is my_program.cpp's code, indentation aside.
strip() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$@"; }
example=$(awk '/^```cpp/ { on = 1; next } on && /^```/ { exit } on' "$readme" | strip | grep -v '^$' || true)
[ -n "$example" ] || fail "README.md has no C++ example"
code=$(strip "$program")
while IFS= read -r line; do
    grep -Fxq -- "$line" <<<"$code" || fail "README.md's example line '$line' is not in $program"
done <<<"$example"

work=$build/tests/link
rm -rf "$work"
mkdir -p "$work"
cp "$program" "$work/"
echo "in $work: $command"
(cd "$work" && eval "$command") || fail "README.md's command for the $variant build failed: $command"

# auto: the GPU when one is usable (a CUDA build on a machine with a GPU), else the CPU.
expected_context=cpu
if [ "$variant" = cuda ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU 0'; then expected_context=cuda:0; fi
output=$(cd "$src" && env -u HYBLA_BACKEND "$work/my_program") || fail "my_program failed: $output"
echo "$output"
expected="cuda compiled: $([ "$variant" = cuda ] && echo yes || echo no)
context: $expected_context
sums: A*A 1212, triangles*6 270, A*x 156, A*X 2496"
[ "$output" = "$expected" ] || fail "my_program printed the above; expected:
$expected"
echo "tests/link/check.sh: the README's $variant build command works"
