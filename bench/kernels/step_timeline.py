#!/usr/bin/env python3
"""The captured decode step's timeline (ci/gpu-step-timeline.sh; docs/kernels.md, "The step's timeline"): reads the
tables that a stamped build writes with ORTHROS_STEP_STAMPS=FILE (kernels/step_stamps.h: per launch of one replayed
step graph, the blocks that recorded and, ns from the step's first block, the first and the last block's start, past
its dependency wait and end, a block's end being its last warp's) and prints, per kind of launch (qkv, attn, o,
gate_up, down, head) the mean over the step's layers of:
  step   its end less the end of the launch before it: what it adds to the step (the column sums to the step);
  dep    from the end of the launch before it to its first block past its wait: the boundary (the dependency's
         release as this kernel sees it; for a plain launch its first block's start);
  body   from there to its last warp's end;
  early  its first block's start less the end of the launch before it (negative: launched that long before);
  spread its last block past the wait less its first (blocks dispatched late: no room on their SMs);
  tail   its last block's end less its first's (the blocks' uneven work, and the last round's latency).
The first launch's "before" is the step's start (its own first block). Launches that read no clock (kernels other
than v3's GEMV and v8's attention) are counted and left out, with the launch after them measured from the last stamped
end. Tables whose rows go on with phases (a stamped build since 2026-12-05: per phase its kernel marks, the first
block's, the last block's and the blocks' mean) add a table of the phases past the wait, mean us over the launches of
a kind: for v8, p0 its first stage of keys and values landed, p1 its last stage landed, p2 its sums done (the
cluster's merge follows, then the end); since 2026-12-06 the merge's steps too, as thread 0 sees them: p3 the block's
warps' partials merged, p4 past the cluster's first barrier, p5 the block's share of the head merged and stored (the
second barrier follows, then the end). Files of three phases and of six read alike. Standard library only.
usage: python3 bench/kernels/step_timeline.py STAMPS.txt [--graph N] [--floor-us KIND=US ...]"""
import sys

FIELDS = ("start_first", "start_last", "wait_first", "wait_last", "end_first", "end_last")
MAX_PHASES = 16  # kernels/step_stamps.h's ORTHROS_STAMP_PHASES (3 until 2026-12-06, 6 since): first, last, mean
ORDER = ("qkv", "attn", "o", "gate_up", "down", "mlp", "gemv", "head")


def read(path):
    """The graphs' tables: a list of (header, rows), rows (slot, kind, dict of FIELDS or None); a dict has "phases",
    a list of the row's phases' (first, last, mean) or None, where the row has phase columns."""
    try:
        with open(path, encoding="ascii") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit("step_timeline.py: cannot read %s: %s" % (path, e))
    graphs = []
    for n, line in enumerate(lines, 1):
        if line.startswith("# graph "):
            graphs.append((line[2:], []))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        nx = len(parts) - 3 - len(FIELDS)
        if not graphs or nx < 0 or nx % 3 or nx > 3 * MAX_PHASES:
            raise SystemExit("step_timeline.py: %s:%d: not a stamps row: %r" % (path, n, line[:80]))
        main, extra = parts[3:3 + len(FIELDS)], parts[3 + len(FIELDS):]
        try:
            slot, blocks = int(parts[0]), int(parts[2])
            vals = None if main == ["-"] * len(FIELDS) else [int(v) for v in main]
            ph = [None if extra[3 * k:3 * k + 3] == ["-"] * 3 else tuple(int(x) for x in extra[3 * k:3 * k + 3])
                  for k in range(len(extra) // 3)]
        except ValueError:
            raise SystemExit("step_timeline.py: %s:%d: not a stamps row: %r" % (path, n, line[:80]))
        if (vals is None) != (blocks == 0) or blocks < 0 or (vals is None and any(ph)):
            raise SystemExit("step_timeline.py: %s:%d: not a stamps row: %r" % (path, n, line[:80]))
        if vals is not None:
            v = dict(zip(FIELDS, vals))
            if (min(vals) < 0 or v["start_first"] > v["start_last"] or v["wait_first"] > v["wait_last"]
                    or v["wait_first"] < v["start_first"] or v["end_first"] < v["wait_first"]
                    or v["end_first"] > v["end_last"] or v["end_last"] < v["wait_last"]
                    or any(p and not (v["wait_first"] <= p[0] <= p[2] <= p[1] <= v["end_last"]) for p in ph)):
                raise SystemExit("step_timeline.py: %s:%d: stamps out of order: %r" % (path, n, line[:80]))
            v["phases"] = ph if extra else None
        graphs[-1][1].append((slot, parts[1], None if vals is None else v))
    if not graphs or not any(rows for _, rows in graphs):
        raise SystemExit("step_timeline.py: %s: no stamps table (ORTHROS_STEP_STAMPS of a stamped build writes one)"
                         % path)
    return graphs


def analyse(rows):
    """Per launch (kind, step, dep, body, early, spread, tail) in ns, the launches without stamps, the step's span."""
    out, unstamped, prev_end = [], 0, None
    for _, kind, v in rows:
        if v is None:
            unstamped += 1
            continue
        before = v["start_first"] if prev_end is None else prev_end
        out.append((kind, v["end_last"] - before, v["wait_first"] - before, v["end_last"] - v["wait_first"],
                    v["start_first"] - before, v["wait_last"] - v["wait_first"], v["end_last"] - v["end_first"]))
        prev_end = v["end_last"]
    return out, unstamped, (prev_end or 0)


def main(argv):
    args, graph, floors = [], None, {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a == "--graph" and i + 1 < len(argv):
            try:
                graph = int(argv[i + 1])
            except ValueError:
                raise SystemExit("step_timeline.py: --graph takes a number")
            i += 2
        elif a == "--floor-us" and i + 1 < len(argv):
            k, _, us = argv[i + 1].partition("=")
            try:
                floors[k] = float(us)
            except ValueError:
                raise SystemExit("step_timeline.py: --floor-us takes KIND=US")
            i += 2
        elif a.startswith("-"):
            raise SystemExit(__doc__.strip().splitlines()[-1])
        else:
            args.append(a)
            i += 1
    if len(args) != 1:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    graphs = read(args[0])
    # the graph with the most launches (the step; a bucket's first captures may be shorter) unless one is named
    pick = graph if graph is not None else max(range(len(graphs)), key=lambda g: len(graphs[g][1]))
    if not 0 <= pick < len(graphs):
        raise SystemExit("step_timeline.py: no graph %d (the file has %d)" % (pick, len(graphs)))
    header, rows = graphs[pick]
    launches, unstamped, span = analyse(rows)
    if not launches:
        raise SystemExit("step_timeline.py: graph %d has no stamped launch" % pick)
    layers = sum(1 for l in launches if l[0] == "qkv")
    print("%s (the file's table %d of %d); the step's stamped span %.1f us, %d launches%s, %d layers"
          % (header, pick, len(graphs), span / 1e3, len(launches),
             " (%d more read no clock)" % unstamped if unstamped else "", layers))
    kinds = [k for k in ORDER if any(l[0] == k for l in launches)]
    kinds += sorted({l[0] for l in launches} - set(kinds))
    print("\nper launch of a kind, mean us (n: launches; the columns: --help)")
    print("%-8s %4s %8s %8s %8s %8s %8s %8s%s" % ("kind", "n", "step", "dep", "body", "early", "spread", "tail",
                                               "    floor  step-floor" if floors else ""))
    total = 0.0
    for k in kinds:
        ls = [l for l in launches if l[0] == k]
        mean = [sum(l[j] for l in ls) / len(ls) / 1e3 for j in range(1, 7)]
        total += sum(l[1] for l in ls) / 1e3
        extra = ""
        if k in floors:
            extra = "   %6.2f  %10.2f" % (floors[k], mean[0] - floors[k])
        print("%-8s %4d %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f%s" % ((k, len(ls)) + tuple(mean) + (extra,)))
    phased = [(kind, v) for _, kind, v in rows if v is not None and v["phases"] and any(v["phases"])]
    if phased:
        print("\nphases past the wait, mean us over the launches of a kind (mean: over its blocks; last: its last"
              " block's; end: its last warp's)")
        nph = max(len(v["phases"]) for _, v in phased)
        print("%-8s %4s" % ("kind", "n") + "".join(" %15s" % ("p%d mean/last" % k) for k in range(nph))
              + " %8s" % "end")
        for k in [k for k in kinds if any(pk == k for pk, _ in phased)]:
            vs = [v for pk, v in phased if pk == k]
            cols = []
            for j in range(nph):
                got = [v for v in vs if j < len(v["phases"]) and v["phases"][j]]
                if not got:
                    cols.append(" %15s" % "-")
                    continue
                mean = sum(v["phases"][j][2] - v["wait_first"] for v in got) / len(got) / 1e3
                last = sum(v["phases"][j][1] - v["wait_first"] for v in got) / len(got) / 1e3
                cols.append(" %15s" % ("%.2f / %.2f" % (mean, last)))
            end = sum(v["end_last"] - v["wait_first"] for v in vs) / len(vs) / 1e3
            print("%-8s %4d" % (k, len(vs)) + "".join(cols) + " %8.2f" % end)
    if layers:
        per = [l for l in launches if l[0] != "head"]
        print("\na layer: %.2f us (step), of which dep %.2f us (the boundaries) and body %.2f us"
              % (sum(l[1] for l in per) / layers / 1e3, sum(l[2] for l in per) / layers / 1e3,
                 sum(l[3] for l in per) / layers / 1e3))
    print("the launches' steps add up to %.1f us" % total)


if __name__ == "__main__":
    main(sys.argv[1:])
