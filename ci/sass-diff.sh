#!/usr/bin/env bash
# Which kernels of this tree compile to the same SASS as at another commit (the proof that a refactor left a kernel's
# code as it was, docs/kernels.md "The window merge and the parameter struct").
#   ci/sass-diff.sh BASE [FILE.cu ...]     (default files: the linear attention kernels)
# Builds each file at BASE (from git, into a temporary directory) and in the work tree, with nvcc for sm_90a
# (ARCH=sm_XX to change), then for every kernel of the work tree prints IDENTICAL and the BASE kernel it equals, or
# DIFFERENT. SASS is compared instruction by instruction with the addresses, encodings and branch targets removed;
# kernel names may differ (a template parameter added, a parameter type renamed). Needs nvcc, cuobjdump (CUOBJDUMP=
# to point at one) and python3; runs no GPU code. Exit 0 when every kernel matched one at BASE, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: ci/sass-diff.sh BASE [FILE.cu ...]" >&2; exit 2; }
base=$1
shift
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(attn_linear_prefill.cu attn_linear_decode.cu linear_featurize.cu)
git rev-parse --verify --quiet "$base^{commit}" >/dev/null || { echo "sass-diff: no commit $base" >&2; exit 2; }
arch=${ARCH:-sm_90a}
cuobjdump=${CUOBJDUMP:-cuobjdump}
command -v "$cuobjdump" >/dev/null || { echo "sass-diff: no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git archive "$base" kernels base | tar -x -C "$tmp/base"
status=0
for f in "${files[@]}"; do
    case "$f" in */*|*[!A-Za-z0-9_.]*) echo "sass-diff: $f: a file name of kernels/, no path" >&2; exit 2 ;; esac
    for side in base head; do
        root=$([ $side = base ] && echo "$tmp/base" || echo .)
        [ -f "$root/kernels/$f" ] || { echo "sass-diff: $f: not in $side" >&2; exit 2; }
        nvcc -std=c++17 -O3 --expt-relaxed-constexpr -I"$root/kernels" -I"$root/base" \
            -gencode "arch=compute_${arch#sm_},code=$arch" -cubin -o "$tmp/$side.cubin" "$root/kernels/$f"
        "$cuobjdump" -sass "$tmp/$side.cubin" >"$tmp/$side.sass"
    done
    echo "== kernels/$f ($base -> work tree, $arch)"
    python3 - "$tmp/base.sass" "$tmp/head.sass" <<'EOF' || status=1
import re, sys

def kernels(path):
    out, cur = {}, None
    for line in open(path):
        m = re.match(r'\s*Function : (\S+)', line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        m = re.match(r'\s+/\*[0-9a-f]{4}\*/\s+(.*?);', line)
        if m and cur:
            ins = m.group(1).strip()
            if re.search(r'\b(BRA|BSSY|CALL\.\w+|CALL)\b', ins):
                ins = re.sub(r'0x[0-9a-f]+\s*$', 'TARGET', ins)
            out[cur].append(ins)
    return {k: tuple(v) for k, v in out.items()}

base, head = kernels(sys.argv[1]), kernels(sys.argv[2])
by_code = {}
for name, code in base.items():
    by_code.setdefault(code, name)
bad = 0
for name, code in sorted(head.items()):
    twin = by_code.get(code)
    if twin:
        print(f'IDENTICAL  {name}  ({len(code)} instructions; at base {twin})')
    else:
        bad += 1
        print(f'DIFFERENT  {name}  ({len(code)} instructions)')
sys.exit(1 if bad else 0)
EOF
done
exit $status
