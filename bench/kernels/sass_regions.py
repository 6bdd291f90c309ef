#!/usr/bin/env python3
"""Where a kernel's instructions and its warps' time go, from Nsight Compute's source counters
(ci/gpu-kernel-source.sh; docs/kernels.md, "Where the instructions go"): reads what `ncu --import R --page source
--csv --print-source sass` writes of a report taken with the source counters (`--set full`), one SASS line a row
with its executed instructions (warp level) and its warp-stall samples, and prints for each kernel of the file its
SASS length, the instructions a warp executes, the samples, and its runs: consecutive instructions that each warp
executes the same number of times (within 2%; a loop's body, a straight-line prologue, a branch taken by some warps),
each with its length, the times a warp runs it, its instructions a warp, its share of the samples and the three
stall reasons that took most of them. The warps of the launch: the executions of the kernel's first instruction
(every warp runs it once). Samples weigh time (the warp-stall sampler counts warps resident at each interval, issued
or waiting), instructions the issue work. A kernel that appears twice in the file with the same rows (ncu prints a
kernel's source once for each view) is printed once. Standard library only.
usage: python3 bench/kernels/sass_regions.py SOURCE.csv[.gz|.xz] [--min-share PCT] [--kernel I] [--regions CUTS]
  --min-share P   list the runs with at least P% of the kernel's samples or at least 20 instructions (default 0.5)
  --kernel I      only the I-th kernel of the file (from 0, as listed)
  --regions CUTS  also sum the SASS in regions: CUTS is FIRST:NAME,FIRST:NAME,... with the first instruction index
                  of each region in increasing order starting at 0 (a region ends where the next begins), NAME in
                  letters, digits and _ (data/results/h200-2026-12-04-sass/NOTES.md's tables)"""
import csv
import gzip
import lzma
import sys

COLUMNS = ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)")


def read_sections(path):
    """[(kernel name, rows)] of the file, each row a dict of COLUMNS and the stall_* columns, duplicates dropped."""
    try:
        opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
        with opener(path, "rt", newline="") as f:
            lines = f.read().splitlines()
    except (OSError, EOFError, lzma.LZMAError, UnicodeDecodeError) as e:
        raise SystemExit("sass_regions.py: cannot read %s: %s" % (path, e))
    starts = [i for i, l in enumerate(lines) if l.startswith('"Kernel Name"')]
    if not starts:
        raise SystemExit("sass_regions.py: no ncu source page (a \"Kernel Name\" line) in %s" % path)
    out, seen = [], set()
    for k, s in enumerate(starts):
        block = lines[s: starts[k + 1] if k + 1 < len(starts) else len(lines)]
        head = next(csv.reader([block[0]]))
        name = head[1] if len(head) > 1 else "?"
        rows = list(csv.reader(block[1:]))
        if not rows:
            continue
        header = rows[0]
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise SystemExit("sass_regions.py: kernel %d of %s lacks %s (a report without the source counters? take "
                             "it with --set full)" % (k, path, ", ".join(missing)))
        ix = {c: header.index(c) for c in COLUMNS}
        stalls = [(h, i) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
        body = []
        for r in rows[1:]:
            if len(r) < len(header):
                continue
            try:
                body.append({"src": r[ix["Source"]].strip(), "exec": int(r[ix["Instructions Executed"]] or 0),
                             "samples": int(r[ix["Warp Stall Sampling (All Samples)"]] or 0),
                             "stalls": {h: int(r[i] or 0) for h, i in stalls if r[i] not in ("", "0")}})
            except ValueError:
                raise SystemExit("sass_regions.py: kernel %d of %s: a row that is not numbers where counts "
                                 "belong: %s" % (k, path, ",".join(r[:6])))
        key = (name, tuple((b["src"], b["exec"], b["samples"]) for b in body))
        if key in seen:
            continue
        seen.add(key)
        out.append((name, body))
    return out


def runs(body):
    """[(first, count, executions of its first row)] of consecutive executed rows whose executions agree within 2%."""
    out = []
    for i, b in enumerate(body):
        e = b["exec"]
        if e == 0:
            continue
        if out and out[-1][0] + out[-1][1] == i and abs(body[out[-1][0]]["exec"] - e) <= 0.02 * e:
            out[-1][1] += 1
        else:
            out.append([i, 1])
    return [(f, n, body[f]["exec"]) for f, n in out]


def span(body, first, end):
    """(instructions executed, stall samples) of body[first:end]."""
    seg = body[first:end]
    return sum(b["exec"] for b in seg), sum(b["samples"] for b in seg)


def report(name, body, min_share):
    warps = body[0]["exec"] if body else 0
    if warps <= 0:
        print("%s: its first instruction never ran (no warps)" % name)
        return
    total_e, total_s = span(body, 0, len(body))
    print("%s\n  %d SASS instructions, %d warps, %.1f instructions a warp, %d stall samples" %
          (name, len(body), warps, total_e / warps, total_s))
    print("  %5s %5s %7s %9s %14s  %-44s %s" % ("first", "n", "x/warp", "inst/warp", "samples", "first instruction",
                                              "stalls"))
    for f, n, e in runs(body):
        seg = body[f: f + n]
        ex, s = span(body, f, f + n)
        share = 100.0 * s / total_s if total_s else 0.0
        if share < min_share and n < 20:
            continue
        agg = {}
        for b in seg:
            for h, v in b["stalls"].items():
                agg[h] = agg.get(h, 0) + v
        top = sorted(agg.items(), key=lambda kv: -kv[1])[:3]
        print("  %5d %5d %7.2f %9.1f %6d (%4.1f%%)  %-44s %s" %
              (f, n, e / warps, ex / warps, s, share, seg[0]["src"][:44],
               " ".join("%s %d" % (h.replace("stall_", ""), v) for h, v in top)))


def parse_regions(text):
    """[(first, name)] from FIRST:NAME,...; SystemExit where it is not that."""
    out = []
    for part in text.split(","):
        first, sep, name = part.partition(":")
        if not sep or not first.isdigit() or not name or not all(c.isalnum() or c == "_" for c in name):
            raise SystemExit("sass_regions.py: --regions takes FIRST:NAME,... (%s)" % part)
        out.append((int(first), name))
    if out[0][0] != 0 or any(b[0] <= a[0] for a, b in zip(out, out[1:])):
        raise SystemExit("sass_regions.py: --regions: the first region starts at 0 and each after the one before")
    return out


def report_regions(body, regions):
    warps = body[0]["exec"] if body else 0
    total_s = span(body, 0, len(body))[1] or 1
    print("  %-16s %11s %9s %14s" % ("region", "SASS", "inst/warp", "samples"))
    for k, (first, name) in enumerate(regions):
        end = regions[k + 1][0] if k + 1 < len(regions) else len(body)
        ex, s = span(body, first, end)
        print("  %-16s %5d-%-5d %9.1f %6d (%4.1f%%)" % (name, first, end, ex / max(warps, 1), s, 100.0 * s / total_s))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    path, min_share, only, regions = None, 0.5, None, None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--regions":
            if i + 1 >= len(argv):
                raise SystemExit("sass_regions.py: --regions needs a value")
            regions = parse_regions(argv[i + 1])
            i += 2
        elif a in ("--min-share", "--kernel"):
            if i + 1 >= len(argv):
                raise SystemExit("sass_regions.py: %s needs a value" % a)
            try:
                v = float(argv[i + 1]) if a == "--min-share" else int(argv[i + 1])
            except ValueError:
                raise SystemExit("sass_regions.py: %s %s is not a number" % (a, argv[i + 1]))
            if v < 0:
                raise SystemExit("sass_regions.py: %s %s is negative" % (a, argv[i + 1]))
            if a == "--min-share":
                min_share = v
            else:
                only = v
            i += 2
        elif a.startswith("-"):
            raise SystemExit("sass_regions.py: unknown option %s" % a)
        elif path is None:
            path = a
            i += 1
        else:
            raise SystemExit("sass_regions.py: one SOURCE.csv only (%s)" % a)
    if path is None:
        raise SystemExit("sass_regions.py: no SOURCE.csv given")
    sections = read_sections(path)
    if only is not None and only >= len(sections):
        raise SystemExit("sass_regions.py: --kernel %d: the file holds %d kernels" % (only, len(sections)))
    for k, (name, body) in enumerate(sections):
        if only is None or k == only:
            print("[%d] " % k, end="")
            report(name, body, min_share)
            if regions:
                if regions[-1][0] >= len(body):
                    raise SystemExit("sass_regions.py: --regions: %d is past the kernel's %d instructions" %
                                     (regions[-1][0], len(body)))
                report_regions(body, regions)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
