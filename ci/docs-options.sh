#!/usr/bin/env bash
# Docs that match the code: every option that `orthros COMMAND --help` lists (every command of `orthros help`, every
# eval of `orthros eval --help`) is named in README.md or docs/*.md. Fails listing the options no page names.
# Usage: ci/docs-options.sh SOURCE_DIR ORTHROS_BINARY   (the ctest docs_options)
set -euo pipefail
src=${1:?usage: ci/docs-options.sh SOURCE_DIR ORTHROS_BINARY}
bin=${2:?usage: ci/docs-options.sh SOURCE_DIR ORTHROS_BINARY}
# The commands: the indented names under "commands:" (and the evals' names under eval's usage line).
mapfile -t cmds < <("$bin" help 2>&1 | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}')
mapfile -t evals < <("$bin" eval --help 2>&1 | awk '/^  [a-z]+ /{print $1}')
[ "${#cmds[@]}" -ge 10 ] || { echo "docs-options: read ${#cmds[@]} commands from 'orthros help'" >&2; exit 1; }
[ "${#evals[@]}" -ge 5 ] || { echo "docs-options: read ${#evals[@]} evals from 'orthros eval --help'" >&2; exit 1; }
docs=("$src/README.md" "$src"/docs/*.md)
missing=() n=0
check() { # the words before --help
  local opt
  # the options are the help's indented lines that start with a dash (descriptions that mention one do not count)
  while read -r opt; do
    [ "$opt" = "--help" ] && continue
    n=$((n + 1))
    grep -qE -- "(^|[^a-z0-9-])${opt}([^a-z0-9-]|\$)" "${docs[@]}" || missing+=("orthros $* $opt")
  done < <("$bin" "$@" --help 2>&1 | sed -nE 's/^  (-{1,2}[a-z][a-z0-9-]*).*/\1/p')
}
for c in "${cmds[@]}"; do
  [ "$c" = eval ] && continue
  check "$c"
done
for e in "${evals[@]}"; do check eval "$e"; done
[ "$n" -ge 100 ] || { echo "docs-options: only $n options read from the commands' help" >&2; exit 1; }
if [ "${#missing[@]}" -gt 0 ]; then
  printf '%s\n' "${missing[@]}" >&2
  echo "docs-options: ${#missing[@]} of $n options of the commands' --help are named on no page (README.md, docs/)" >&2
  exit 1
fi
echo "docs-options: all $n options of ${#cmds[@]} commands and ${#evals[@]} evals are named in the docs"
