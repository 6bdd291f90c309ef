#!/usr/bin/env bash
# The GPU test program's sections and ci/gpu.sh's memcheck step, without a GPU (a ctest test, label cpu):
# 1. `test_cuda_ops --sections` names exactly the sections its source runs (section("...") calls), and
#    ORTHROS_TEST_ONLY with a name that is no section is refused (exit 2) before the device is looked for;
# 2. memcheck_sections (ci/gpu-common.sh) against a stand-in test program and sanitizer: a clean section, one with a
#    memory error (the sanitizer's exit 9), one past the budget (cut), the ones after it (not reached), the default
#    kernels' sections first, and the statuses and OUTDIR/memcheck.txt it leaves; refused budgets and section lists.
# Usage: ci/memcheck-sections.sh SOURCE_DIR TEST_CUDA_OPS
set -u
root=${1:?usage: ci/memcheck-sections.sh SOURCE_DIR TEST_CUDA_OPS}
bin=${2:?usage: ci/memcheck-sections.sh SOURCE_DIR TEST_CUDA_OPS}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# 1. the program's list against its source
listed=$("$bin" --sections | sort) || bad "test_cuda_ops --sections failed"
called=$(grep -o 'section("[a-z0-9]*")' "$root/kernels/tests/test_cuda_ops.c" | sed 's/section("\(.*\)")/\1/' | sort -u)
if [ -n "$listed" ] && [ "$listed" = "$called" ]; then
    ok "--sections lists the $(echo "$listed" | wc -l) sections the source runs"
else
    bad "--sections and the source differ: $(diff <(echo "$listed") <(echo "$called") | tr '\n' ' ')"
fi
out=$(ORTHROS_TEST_ONLY=decode8,nosuch "$bin" 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q 'no section "nosuch"'; then
    ok "ORTHROS_TEST_ONLY=decode8,nosuch refused (exit 2)"
else
    bad "ORTHROS_TEST_ONLY=decode8,nosuch: exit $rc, said: $out"
fi

# 2. memcheck_sections with stand-ins: the program lists five sections; the sanitizer runs it but for "leaky" (a
# memory error) and "slow" (sleeps past any budget given here)
mkdir -p "$tmp/bin"
cat >"$tmp/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
case "$ORTHROS_TEST_ONLY" in leaky) echo "========= Invalid __global__ read of size 4"; exit 9 ;; slow) exec sleep 60 ;; esac
exec "${@: -1}"
EOF
cat >"$tmp/tests" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = --sections ] && { printf 'ops\nleaky\nwindowpass\nslow\nmlp\nhead8\n'; exit 0; }
echo "== section $ORTHROS_TEST_ONLY at 0.0 s"
exit 0
EOF
chmod +x "$tmp/bin/compute-sanitizer" "$tmp/tests"
# run_case NAME EXPECTED_STATUS_PATTERN [VAR=VALUE...]: memcheck_sections in a fresh shell, its status matched
run_case() {
    local name=$1 want=$2
    shift 2
    local got
    # shellcheck disable=SC2016 # (expanded by the inner shell)
    got=$(env "$@" PATH="$tmp/bin:$PATH" OUT="$tmp/out-$name" TESTBIN="$tmp/tests" bash -c \
        '. "$1/ci/gpu-common.sh" && memcheck_sections && echo "${status[memcheck]}"' _ "$root" 2>/dev/null | tail -1)
    # shellcheck disable=SC2254
    case "$got" in $want) ok "$name: $got" ;; *) bad "$name: status \"$got\", wanted $want" ;; esac
}
run_case all-clean 'rc=0 *: 3 of 3 sections clean' ORTHROS_MEMCHECK_SECTIONS=ops,mlp,head8
run_case error-and-cut 'rc=1 *: failed: leaky(rc=9); 2 of 5 sections clean, cut at the budget: slow, not reached: mlp (OUTDIR/memcheck.txt)' \
    ORTHROS_MEMCHECK_BUDGET=15
run_case cut 'incomplete *: 1 of 3 sections clean, cut at the budget: slow, not reached: mlp' \
    ORTHROS_MEMCHECK_BUDGET=15 ORTHROS_MEMCHECK_SECTIONS=ops,slow,mlp
run_case bad-budget 'refused (ORTHROS_MEMCHECK_BUDGET is not seconds)' ORTHROS_MEMCHECK_BUDGET='5;ls'
run_case bad-list 'refused (ORTHROS_MEMCHECK_SECTIONS: section names, comma-separated)' \
    'ORTHROS_MEMCHECK_SECTIONS=ops;touch x'
want=$'ops rc=0 Ns\nhead8 rc=0 Ns\nleaky rc=9 Ns\nslow rc=124 Ns\nmlp not reached'
got=$(sed 's/ [0-9]*s$/ Ns/' "$tmp/out-error-and-cut/memcheck.txt" 2>/dev/null) # (the seconds vary)
if [ "$got" = "$want" ]; then ok "memcheck.txt: a line a section, the default kernels' sections first"; else bad "memcheck.txt: $(echo "$got" | tr '\n' ';')"; fi
if grep -q "Invalid __global__ read" "$tmp/out-error-and-cut/memcheck.log" 2>/dev/null; then
    ok "memcheck.log keeps the sanitizer's output"
else
    bad "memcheck.log lacks the sanitizer's output"
fi
exit $fail
