#!/usr/bin/env bash
# env_documented (ctest, cpu): the environment variables the programs read, every "ORTHROS_..." string literal in
# the C and CUDA sources outside the tests (base/ bench/ cli/ compare/ engine/ evals/ export/ harness/ kernels/ plots/
# ranks/), and the rows of the Environment table in docs/reference.md name the same set: a variable added without
# its row, or a row left after its variable went, fails, naming it.
# Usage: ci/env-doc.sh [SOURCE_DIR]
set -u -o pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "env-doc: no source folder $root" >&2; exit 2; }
src=$(find base bench cli compare engine evals export harness kernels plots ranks -type f \
          \( -name '*.c' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' \) -not -path '*/tests/*' -print0 |
      xargs -0 grep -ohE '"ORTHROS_[A-Z0-9_]+"' | tr -d '"' | sort -u)
doc=$(awk '/^## Environment$/ { on = 1; next } /^## / { on = 0 } on' docs/reference.md |
      grep -oE '^\| `ORTHROS_[A-Z0-9_]+`' | grep -oE 'ORTHROS_[A-Z0-9_]+' | sort -u)
if [ -z "$src" ] || [ -z "$doc" ]; then
    echo "FAIL env-doc: found no variables in the sources ($(echo "$src" | grep -c .)) or no rows in" \
         "docs/reference.md's Environment section ($(echo "$doc" | grep -c .))"
    exit 1
fi
fail=0
for v in $(comm -23 <(echo "$src") <(echo "$doc")); do
    echo "FAIL $v: read by the programs, no row in docs/reference.md's Environment table"; fail=1
done
for v in $(comm -13 <(echo "$src") <(echo "$doc")); do
    echo "FAIL $v: a row in docs/reference.md's Environment table, read nowhere in the sources"; fail=1
done
[ $fail -eq 0 ] && echo "ok   env-doc: $(echo "$src" | grep -c .) variables, each with its row"
exit $fail
