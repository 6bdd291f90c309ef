#!/usr/bin/env python3
"""A decode switch, or a base build, against the default in the rounds ci/gpu-ab.sh runs (a1 b1 b2 a2, or with
ORTHROS_AB_ROUNDS=8 a1 b1 b2 a2 a3 b3 b4 a4; a: the switch unset or the base build, b: the switch set or the tree):
reads OUTDIR/<shape>-<round>.json (orthros bench --phase decode result files, one decode cell each) and prints a line
a shape: the medians (ms a step) in the order run, b's mean against a's mean in %, and each side's spread (its
largest round less its smallest, in % of its mean). The verdict is "faster" or "slower" only where the difference is
larger than both spreads, else "within the spread"; a shape short of a round, or whose sides have not the same
rounds, is refused by name. The kernels line of each side is printed once (the backend names most switches there,
so it shows whether the switch took). Tested by test_decode_ab.py. Standard library only.
usage: python3 bench/kernels/decode_ab.py OUTDIR VAR=VALUE|base=SHA"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_summary import decode_cells, load  # noqa: E402

ROUNDS = {4: ("a1", "b1", "b2", "a2"), 8: ("a1", "b1", "b2", "a2", "a3", "b3", "b4", "a4")}
FILE = re.compile(r"^(?P<shape>[a-z0-9.]+(?:-[a-z0-9.]+)*)-(?P<round>[ab][1-4])\.json$")


def fail(msg):
    print("decode_ab: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3 or sys.argv[1].startswith("-") or "=" not in sys.argv[2]:
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    out, switch = sys.argv[1], sys.argv[2]
    base = re.fullmatch(r"base=([0-9a-f]{7,40})", switch)
    if not base and not re.fullmatch(r"ORTHROS_[A-Z0-9_]+=[0-9]{1,10}", switch):
        fail("not a switch VAR=VALUE nor base=SHA: %r" % switch[:80])
    try:
        names = sorted(os.listdir(out))
    except OSError as e:
        fail("cannot read %s: %s" % (out, e))
    shapes = {}
    for n in names:
        m = FILE.match(n)
        if m:
            shapes.setdefault(m["shape"], {})[m["round"]] = os.path.join(out, n)
    if not shapes:
        fail("%s: no <shape>-<round>.json files (ci/gpu-ab.sh writes them)" % out)
    kernels = {"a": None, "b": None}
    rows = []
    order = None
    for shape in sorted(shapes):
        got = shapes[shape]
        want = ROUNDS[8] if any(r in got for r in ("a3", "a4", "b3", "b4")) else ROUNDS[4]
        missing = [r for r in want if r not in got]
        if missing:
            fail("%s: no round %s" % (shape, ", ".join(missing)))
        if order is not None and want != order:
            fail("%s: %d rounds where the other shapes have %d" % (shape, len(want), len(order)))
        order = want
        ms = {}
        for r in want:
            f = load(got[r])
            if f is None:
                sys.exit(1)
            try:
                k, _card, cells = decode_cells(f)
            except ValueError as e:
                fail("%s: %s" % (got[r], e))
            if len(cells) != 1:
                fail("%s: %d decode cells, not one" % (got[r], len(cells)))
            ms[r] = cells[0][2]
            if kernels[r[0]] is None:
                kernels[r[0]] = k
        sides = {k: [ms[r] for r in want if r[0] == k] for k in "ab"}
        a, b = (sum(sides[k]) / len(sides[k]) for k in "ab")
        diff = 100.0 * (b - a) / a
        sa, sb = (100.0 * (max(sides[k]) - min(sides[k])) / m for k, m in (("a", a), ("b", b)))
        verdict = "within the spread" if abs(diff) <= max(sa, sb) else ("faster" if diff < 0 else "slower")
        rows.append((shape, ms, diff, sa, sb, verdict))
    if base:
        print("the tree (b) against the base build %s (a), ms a step in the order %s" % (base.group(1),
                                                                                     " ".join(order)))
    else:
        print("%s against the default, ms a step in the order %s (a: unset, b: set)" % (switch, " ".join(order)))
    print("  a kernels: %s" % kernels["a"])
    print("  b kernels: %s" % kernels["b"])
    print(("%-22s" + " %9s" * (len(order) + 1) + " %8s %8s  %s") % (("shape",) + order + ("b vs a", "a spread",
                                                                                         "b spread", "verdict")))
    for shape, ms, diff, sa, sb, verdict in rows:
        print(("%-22s" + " %9.4f" * len(order) + " %+8.2f%% %7.2f%% %7.2f%%  %s") % (
            (shape,) + tuple(ms[r] for r in order) + (diff, sa, sb, verdict)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
