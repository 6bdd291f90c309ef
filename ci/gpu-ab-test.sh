#!/usr/bin/env bash
# ci/gpu-ab.sh end to end with no GPU: its scripts copied into a throwaway repository whose `cmake` and `orthros` are
# stand-ins (cmake makes BUILD/orthros; orthros bench writes a decode result cut from a committed H100 file, its
# median 1.000 ms, 0.990 ms where the binary is the tree's and the switch ORTHROS_AB_TEST=1 or the base mode makes it
# so). Checks: a switch's rounds a1 b1 b2 a2, and a base=DIR run (ci/ab-base.sh's folder) in eight rounds, each with
# its table (b 1% faster beyond both spreads, the label), the base tree built from REF's bytes and stamped with REF's
# commit, the tree's own.
# A ctest test (label cpu; python3). Usage: ci/gpu-ab-test.sh [SOURCE_DIR]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # DESCRIPTION CONDITION...
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
repo=$tmp/repo
mkdir -p "$repo/ci" "$repo/bench/kernels" "$repo/src" "$tmp/bin" || exit 2
cp "$root/ci/gpu-ab.sh" "$root/ci/gpu-common.sh" "$root/ci/ab-base.sh" "$root/ci/paths.sh" "$repo/ci/" &&
    cp "$root/bench/kernels/decode_ab.py" "$root/bench/kernels/decode_summary.py" "$repo/bench/kernels/" || exit 2
python3 - "$root/data/results/h100-2026-12-06-lean/run2-79aa2a8/decode/llama3.2-1b-b1-default.json" \
    "$repo/template.json" <<'EOF' || exit 2
import json, sys
f = json.load(open(sys.argv[1]))
f["measurements"] = [m for m in f["measurements"] if m.get("ctx") == 4096]
json.dump(f, open(sys.argv[2], "w"))
EOF
# The stand-in orthros: `bench ... --ctx N --json FILE` writes the template at ctx N; its median is 0.990 ms where
# src/speed holds "fast" in the tree it was built from (the binary's folder's copy) or ORTHROS_AB_TEST=1, else 1.000.
cat >"$repo/src/orthros.in" <<'EOF'
#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
out, c = a[a.index("--json") + 1], a[a.index("--ctx") + 1].lower()
ctx = int(c[:-1]) * 1024 if c.endswith("k") else int(c)
here = os.path.dirname(os.path.abspath(__file__))
fast = open(os.path.join(here, "speed")).read().strip() == "fast" or os.environ.get("ORTHROS_AB_TEST") == "1"
f = json.load(open(os.path.join(here, "template.json")))
m = f["measurements"][0]
m["ctx"], m["stats"]["median"] = ctx, (0.990 if fast else 1.000) / 1e3
f["environment"]["device"]["kernels"] = "stand-in" + (", fast" if fast else "")
json.dump(f, open(out, "w"))
print("  orthros decode ctx %d batch 1: %.4f ms a step against its floor of 0.7 ms" % (ctx, m["stats"]["median"] * 1e3))
EOF
# The stand-in cmake: `-S SRC -B BUILD ...` makes BUILD/orthros from SRC's stand-in, its speed and the template;
# `--build ...` does nothing.
cat >"$tmp/bin/cmake" <<'EOF'
#!/usr/bin/env bash
src="" build=""
while [ $# -gt 0 ]; do
    case "$1" in -S) src=$2; shift ;; -B) build=$2; shift ;; --build) exit 0 ;; esac
    shift
done
mkdir -p "$build" && cp "$src/src/orthros.in" "$build/orthros" && cp "$src/src/speed" "$build/speed" &&
    cp "$src/template.json" "$build/template.json" && chmod +x "$build/orthros" &&
    echo "${ORTHROS_GIT_COMMIT:-unset}" >"$build/commit"
EOF
chmod +x "$tmp/bin/cmake"
cd "$repo" || exit 2
git init -q . && git config user.email t@t && git config user.name t || exit 2
echo slow >src/speed && git add -A && git commit -qm base || exit 2
ref=$(git rev-parse HEAD)
export PATH="$tmp/bin:$PATH"
# a switch: a1 and a2 unset, b1 and b2 with ORTHROS_AB_TEST=1
out=$(bash ci/gpu-ab.sh "$tmp/sw" ORTHROS_AB_TEST=1 llama3.2-1b:1:4k 2>&1)
rc=$?
row=$(grep '^llama3.2-1b-b1-4k ' "$tmp/sw/ab.txt" 2>/dev/null)
expect "a switch's four rounds ran (rc $rc)" [ "$rc" -eq 0 ]
expect "its table: 1.0000 0.9900 0.9900 1.0000, b 1% faster ($row)" \
    [ "$(echo "$row" | awk '{print $2, $3, $4, $5, $6, $NF}')" = "1.0000 0.9900 0.9900 1.0000 -1.00% faster" ]
expect "its label and kernels lines" grep -q "ORTHROS_AB_TEST=1 against the default" "$tmp/sw/ab.txt"
# the tree made faster than REF: base=DIR, eight rounds
echo fast >src/speed && git commit -qam tree || exit 2
bash ci/ab-base.sh "$ref" .ab-base >/dev/null || { echo "FAIL ci/ab-base.sh"; exit 1; }
out=$(ORTHROS_AB_ROUNDS=8 bash ci/gpu-ab.sh "$tmp/base" base=.ab-base llama3.2-1b:1:4k 2>&1)
rc=$?
row=$(grep '^llama3.2-1b-b1-4k ' "$tmp/base/ab.txt" 2>/dev/null)
expect "a base's eight rounds ran (rc $rc: $(echo "$out" | tail -2 | tr '\n' ' '))" [ "$rc" -eq 0 ]
expect "the base tree holds REF's bytes" grep -qx slow build-gpu-base/src/src/speed
expect "the tree's own build is the tree's" grep -qx fast build-gpu/speed
expect "the base built as REF's commit" grep -qx "${ref:0:7}" build-gpu-base/build/commit
expect "its table: a 1.0000 four times, b 0.9900 four times, faster ($row)" \
    [ "$(echo "$row" | awk '{print $2, $3, $4, $5, $6, $7, $8, $9, $10, $NF}')" = \
        "1.0000 0.9900 0.9900 1.0000 1.0000 0.9900 0.9900 1.0000 -1.00% faster" ]
expect "its label names the base" grep -q "against the base build ${ref:0:7}" "$tmp/base/ab.txt"
expect "the base's build log" [ -f "$tmp/base/build-base.log" ]
exit $fail
