#!/usr/bin/env python3
"""A decode switch against the default, in the rounds ci/gpu-ab.sh runs (a1 b1 b2 a2: a with the switch unset, b with
it set): reads OUTDIR/<shape>-<round>.json (orthros bench --phase decode result files, one decode cell each) and
prints a line a shape: the four medians (ms a step), b's mean against a's mean in %, and each side's spread (its two
rounds apart, in % of their mean). The verdict is "faster" or "slower" only where the difference is larger than both
spreads, else "within the spread"; a shape short of a round is refused by name. The kernels line of each side is
printed once (the backend names most switches there, so it shows whether the switch took). Tested by
test_decode_ab.py. Standard library only.
usage: python3 bench/kernels/decode_ab.py OUTDIR VAR=VALUE"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_summary import decode_cells, load  # noqa: E402

ROUNDS = ("a1", "b1", "b2", "a2")
FILE = re.compile(r"^(?P<shape>[a-z0-9.]+(?:-[a-z0-9.]+)*)-(?P<round>a1|a2|b1|b2)\.json$")


def fail(msg):
    print("decode_ab: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3 or sys.argv[1].startswith("-") or "=" not in sys.argv[2]:
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    out, switch = sys.argv[1], sys.argv[2]
    if not re.fullmatch(r"ORTHROS_[A-Z0-9_]+=[0-9]{1,4}", switch):
        fail("not a switch VAR=VALUE: %r" % switch[:80])
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
    for shape in sorted(shapes):
        got = shapes[shape]
        missing = [r for r in ROUNDS if r not in got]
        if missing:
            fail("%s: no round %s" % (shape, ", ".join(missing)))
        ms = {}
        for r in ROUNDS:
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
        a, b = (ms["a1"] + ms["a2"]) / 2, (ms["b1"] + ms["b2"]) / 2
        diff = 100.0 * (b - a) / a
        sa, sb = 100.0 * abs(ms["a1"] - ms["a2"]) / a, 100.0 * abs(ms["b1"] - ms["b2"]) / b
        verdict = "within the spread" if abs(diff) <= max(sa, sb) else ("faster" if diff < 0 else "slower")
        rows.append((shape, ms, diff, sa, sb, verdict))
    print("%s against the default, ms a step in the order a1 b1 b2 a2 (a: unset, b: set)" % switch)
    print("  a kernels: %s" % kernels["a"])
    print("  b kernels: %s" % kernels["b"])
    print("%-22s %9s %9s %9s %9s %9s %8s %8s  %s" % ("shape", "a1", "b1", "b2", "a2", "b vs a", "a spread",
                                                   "b spread", "verdict"))
    for shape, ms, diff, sa, sb, verdict in rows:
        print("%-22s %9.4f %9.4f %9.4f %9.4f %+8.2f%% %7.2f%% %7.2f%%  %s" % (
            shape, ms["a1"], ms["b1"], ms["b2"], ms["a2"], diff, sa, sb, verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
