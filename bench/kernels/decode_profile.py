#!/usr/bin/env python3
"""Where a captured decode step's time goes (ci/gpu-decode-profile.sh; docs/kernels.md, "Whole-model decode"): reads
the raw table that `ncu --csv --page raw --metrics gpu__time_duration.sum --print-units base` writes of the kernel
nodes of replayed step graphs (each kernel timed alone, in launch order), finds the step (the shortest period with
which the kernel names repeat exactly) and the layer (the shortest period with which they repeat within a step),
and prints per kernel of a layer its mean time over layers and steps, the kernels outside the layers (the
embedding, the head), and their sum; given the plain bench's file of the same shape, the step's time beside it (the
difference: the boundaries between kernels and whatever a kernel alone does not show). Standard library only.
usage: python3 bench/kernels/decode_profile.py NCU.csv[.gz] [BENCH.json]"""
import csv
import gzip
import json
import sys


def short(name, width=58):
    """A kernel's name without its parameter list, its template arguments kept (they tell the gemv epilogues
    apart), at most width characters."""
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    s = name[:cut].replace("void ", "").strip()
    return s if len(s) <= width else s[: width - 3] + "..."


def read_ncu(path):
    """(name, ns) of every kernel row, in order."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit("decode_profile.py: cannot read %s: %s" % (path, e))
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise SystemExit("decode_profile.py: no ncu table (a header starting with \"ID\") in %s" % path)
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    try:
        c_name, c_t = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    except ValueError:
        raise SystemExit("decode_profile.py: %s lacks Kernel Name or gpu__time_duration.sum" % path)
    out, scale = [], 1.0
    for r in rows[1:]:
        if len(r) <= max(c_name, c_t):
            continue
        v = r[c_t].replace(",", "")
        try:
            out.append((r[c_name], float(v) * scale))
        except ValueError:  # the units row
            scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
                     "second": 1e9, "s": 1e9}.get(v.strip(), 1.0)
    return out


def exact_period(names, least):
    """The smallest p >= least with names[i] == names[i + p] for every i, with at least two periods; else 0."""
    n = len(names)
    for p in range(least, n // 2 + 1):
        if all(names[i] == names[i + p] for i in range(n - p)):
            return p
    return 0


def bench_ms(path):
    """The plain bench's median ms a decode step (the first decode cell), or None."""
    try:
        with open(path) as f:
            d = json.load(f)
        for m in d.get("measurements", []):
            if m.get("phase") == "decode" and "stats" in m:
                floor = m.get("floor_s")
                return m["stats"]["median"] * 1e3, floor * 1e3 if floor else None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    rows = read_ncu(argv[1])
    names = [short(n) for n, _ in rows]
    step = exact_period(names, 8)
    if not step:
        # the table may end inside a step: drop the tail until a period shows
        for cut in range(1, len(names) // 3):
            step = exact_period(names[: len(names) - cut], 8)
            if step:
                names, rows = names[: len(names) - cut], rows[: len(rows) - cut]
                break
    if not step:
        raise SystemExit("decode_profile.py: %d kernels with no repeating step in %s" % (len(rows), argv[1]))
    steps = len(rows) // step
    dur = [sum(rows[s * step + i][1] for s in range(steps)) / steps / 1e3 for i in range(step)]
    sn = names[:step]
    # the layer: the shortest period p such that a run of at least 4 periods repeats exactly
    best = None
    for p in range(2, step // 4 + 1):
        for first in range(0, step - 4 * p + 1):
            layers = 1
            while first + (layers + 1) * p <= step and sn[first + layers * p: first + (layers + 1) * p] == sn[first: first + p]:
                layers += 1
            if layers >= 4 and (best is None or layers * p > best[1] * best[0]):
                best = (p, layers, first)
        if best:
            break
    print("%s: %d kernels timed alone, %d steps of %d kernels" % (argv[1].rsplit("/", 1)[-1], len(rows), steps, step))
    total = sum(dur)
    outside = list(range(step))
    if best:
        p, layers, first = best
        print("\nper layer (%d kernels, %d layers; mean over layers and steps), us:" % (p, layers))
        lay = 0.0
        for j in range(p):
            d = sum(dur[first + l * p + j] for l in range(layers)) / layers
            lay += d
            print("  %-58s %8.2f" % (sn[first + j], d))
        print("  %-58s %8.2f   x %d layers: %.1f us" % ("a layer", lay, layers, lay * layers))
        outside = list(range(first)) + list(range(first + layers * p, step))
    if outside:
        print("\noutside the layers, us:")
        for i in outside:
            print("  %3d %-54s %8.2f" % (i, sn[i], dur[i]))
    print("\nthe kernels of a step, each alone: %.1f us" % total)
    if len(argv) >= 3:
        b = bench_ms(argv[2])
        if b:
            ms, floor = b
            print("the step in the plain bench: %.1f us; the rest (boundaries, and what a kernel alone does not show): "
                  "%.1f us, %.2f us a kernel%s" % (ms * 1e3, ms * 1e3 - total, (ms * 1e3 - total) / step,
                                                  "; the floor %.1f us" % (floor * 1e3) if floor else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
