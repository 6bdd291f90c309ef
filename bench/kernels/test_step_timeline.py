#!/usr/bin/env python3
"""step_timeline.py against a table the H200 wrote (data/results/h200-2026-12-04-timeline/, the 1B step at 4K: 81
stamped launches, 16 layers) and against stamps tables made here: two layers of five launches and a head with known
boundaries and bodies (the means and the sum checked to the ns), a launch that read no clock skipped with the next
measured from the last stamped end, the longest graph picked, the phases a kernel marks (their means past the wait),
and malformed files refused. Standard library only."""
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "step_timeline.py")
RUN = os.path.join(ROOT, "data", "results", "h200-2026-12-04-timeline", "timeline-5fad679")
HEAD = "# slot kind blocks start_first start_last wait_first wait_last end_first end_last\n"


def run(*args):
    rc, out, err = checks.run(TOOL, *args)
    return rc, out + err


def table(graph, launches, first_slot=0):
    """launches: (kind, early, dep, body, spread) ns each, or (kind,) for one that read no clock; the first block ends
    a tenth of the body before the last."""
    lines = ["# graph %d: %d launches, replay 16; ns from the first block's start of the step\n"
             % (graph, len(launches)), HEAD]
    end = None
    for i, l in enumerate(launches):
        if len(l) == 1:
            lines.append("%d %s 0 - - - - - -\n" % (first_slot + i, l[0]))
            continue
        kind, early, dep, body, spread = l
        before = 0 if end is None else end
        start = before + early if end is not None else 0
        wait = before + dep
        lines.append("%d %s 264 %d %d %d %d %d %d\n" % (first_slot + i, kind, start, start + 100, wait, wait + spread,
                                                        wait + body - body // 10, wait + body))
        end = wait + body
    return "".join(lines)


rc, out = run(os.path.join(RUN, "llama3.2-1b-b1-4k.stamps"))
check(rc == 0, "the H200 table is read (rc %d)" % rc)
check("span 858.2 us, 81 launches, 16 layers" in out, "81 launches, 16 layers, 858.2 us")
check(any(l.split()[:3] == ["gate_up", "16", "18.50"] for l in out.splitlines()), "gate/up: 18.50 us a layer")
check("a layer: 46.00 us (step), of which dep 2.06 us" in out, "a layer: 46.00 us, 2.06 of it the boundaries")

layer = [("qkv", -500, 800, 4000, 50), ("attn", -3000, 1200, 6000, 0), ("o", -1000, 900, 3000, 10),
         ("gate_up", -800, 700, 15000, 20), ("down", -900, 600, 8000, 30)]
step = [layer[0][:1] + (0, 0, 4000, 50)] + layer[1:] + layer + [("head", -700, 500, 110000, 0)]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "s.txt")
    with open(path, "w") as f:
        f.write(table(0, step[:4]) + table(1, step, first_slot=4))
    rc, out = run(path)
    check(rc == 0, "a two-graph file is read (rc %d)" % rc)
    check("(the file's table 1 of 2)" in out and "11 launches" in out and "2 layers" in out,
          "the longer graph is the step's")
    span = 4000 + sum(d + b for _, _, d, b, _ in layer[1:]) + sum(d + b for _, _, d, b, _ in layer) + 500 + 110000
    check("stamped span %.1f us" % (span / 1e3) in out, "the span: the last end from the first start (%d ns)" % span)
    check("launches' steps add up to %.1f us" % (span / 1e3) in out, "the steps add up to the span")
    # qkv: the first has dep 0 body 4000 (step 4000), the second dep 800 body 4000: mean step 4400, dep 400
    check(any(l.split()[:6] == ["qkv", "2", "4.40", "0.40", "4.00", "-0.25"] for l in out.splitlines()),
          "qkv: the means of the two layers' launches, early counted from the step's start for the first")
    attn = ["attn", "2", "7.20", "1.20", "6.00", "-3.00", "0.00", "0.60"]
    check(any(l.split()[:8] == attn for l in out.splitlines()),
          "attn: step = dep + body, early negative (launched before q/k/v ended), the tail")
    check(any(l.split()[:3] == ["head", "1", "110.50"] for l in out.splitlines()), "the head alone")
    per_layer = (span - 110500) / 2 / 1e3
    check("a layer: %.2f us" % per_layer in out, "a layer: the launches but the head over the layers")
    rc, out = run(path, "--graph", "0", "--floor-us", "attn=2.5")
    check(rc == 0 and "(the file's table 0 of 2)" in out and "4 launches" in out, "--graph picks a graph")
    check(any(l.split()[:1] == ["attn"] and l.split()[-2:] == ["2.50", "4.70"] for l in out.splitlines()),
          "--floor-us: the floor and the step's excess over it beside the kind")
    # a launch that read no clock: skipped, the next measured from the last stamped end
    with open(path, "w") as f:
        f.write(table(0, [("qkv", 0, 0, 4000, 0), ("attn",), ("o", -100, 900, 3000, 0)]))
    rc, out = run(path)
    check(rc == 0 and "1 more read no clock" in out and "span 7.9 us" in out,
          "an unstamped launch is counted and skipped")
    for bad, why in (("# graph 0: 1\n" + HEAD + "0 qkv 8 1 2 3\n", "not a stamps row"),
                     ("# graph 0: 1\n" + HEAD + "0 qkv 8 5 6 3 4 8 9\n", "stamps out of order"),
                     ("# graph 0: 1\n" + HEAD + "0 qkv 8 0 1 2 3 9 8\n", "stamps out of order"),
                     ("# graph 0: 1\n" + HEAD + "0 qkv 8 0 1 2 3 4 x\n", "not a stamps row"),
                     ("# graph 0: 1\n" + HEAD + "0 qkv 0 0 1 2 3 4 5\n", "not a stamps row"),
                     ("# graph 0: 1\n" + HEAD + "0 qkv 3 - - - - - -\n", "not a stamps row"),
                     ("0 qkv 8 0 1 2 3 4 5\n", "not a stamps row"),
                     ("nothing\n", "not a stamps row"),
                     ("", "no stamps table")):
        with open(path, "w") as f:
            f.write(bad)
        rc, out = run(path)
        check(rc != 0 and why in out, "refused: %s (%r)" % (why, bad[-30:]))
    rc, out = run("--help")
    check(rc == 0 and "dep    from the end of the launch before it" in out, "--help prints the columns")
    rc, out = run(path, "--graph", "x")
    check(rc != 0 and "--graph takes a number" in out, "--graph x refused")
    rc, out = run(os.path.join(tmp, "missing.txt"))
    check(rc != 0 and "cannot read" in out, "a missing file refused")
# phases (a stamped build's rows since 2026-12-05: per phase first, last, mean): two attention launches with three
# phases each, a GEMV launch without any, an unstamped one; the old rows' files above still read
PHEAD = HEAD.rstrip("\n") + " p0_first p0_last p0_mean p1_first p1_last p1_mean p2_first p2_last p2_mean\n"
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "p.txt")
    rows = ["# graph 0: 5 launches, replay 16; ns\n", PHEAD,
            # qkv: wait 0, end 4000; no phases
            "0 qkv 200 0 10 0 20 3900 4000 - - - - - - - - -\n",
            # attn: wait 4200 (first) .. 4300, end 9000; phases past the first wait: p0 mean 500 last 1000, p1 mean
            # 1500 last 2000, p2 mean 2500 last 3000
            "1 attn 72 4100 4150 4200 4300 8800 9000 4400 5200 4700 5300 6200 5700 6400 7200 6700\n",
            "2 o 100 8500 8600 9100 9200 10000 10100 - - - - - - - - -\n",
            "3 gate_up 0 - - - - - - - - - - - - - - -\n",
            # attn again: wait 20000, end 26000; p0 mean 700 last 1200 (means 600 / 1100), p1 absent, p2 mean 3100
            # last 4000 (means 2800 / 3500)
            "4 attn 72 19900 19950 20000 20100 25800 26000 20300 21200 20700 - - - 21500 24000 23100\n"]
    with open(path, "w") as f:
        f.write("".join(rows))
    rc, out = run(path)
    check(rc == 0, "a table with phase columns is read (rc %d): %s" % (rc, out[-200:]))
    line = [l.split() for l in out.splitlines() if l.split()[:2] == ["attn", "2"] and "/" in l]
    check(line and line[0][2:] == ["0.60", "/", "1.10", "1.50", "/", "2.00", "2.80", "/", "3.50", "5.40"],
          "attn's phases: p0 over both launches, p1 over the one that marked it, p2, the end (%r)" % line)
    check(not any(l.split()[:1] == ["qkv"] and "/" in l for l in out.splitlines()),
          "a kind without phases has no phase row")
    check(any(l.split()[:2] == ["attn", "2"] and "/" not in l for l in out.splitlines()),
          "the launch table is as before")
    for bad, why in (
            # a phase before the wait
            (PHEAD + "1 attn 72 4100 4150 4200 4300 8800 9000 4000 5200 4700 - - - - - -\n", "stamps out of order"),
            # a mean past the last
            (PHEAD + "1 attn 72 4100 4150 4200 4300 8800 9000 4400 5200 5300 - - - - - -\n", "stamps out of order"),
            # two of three phase fields
            (PHEAD + "1 attn 72 4100 4150 4200 4300 8800 9000 4400 5200 - - - - - -\n", "not a stamps row"),
            # phases on a launch that read no clock
            (PHEAD + "3 gate_up 0 - - - - - - 1 2 1 - - - - - -\n", "not a stamps row")):
        with open(path, "w") as f:
            f.write("# graph 0: 1\n" + bad)
        rc, out = run(path)
        check(rc != 0 and why in out, "refused: %s (%r)" % (why, bad[-40:]))
# six phases (a stamped build since 2026-12-06: the merge's steps p3-p5 after the sums): read, a column each; a row
# of seven phase fields (two of three for the last) refused
PHEAD6 = PHEAD.rstrip("\n") + " p3_first p3_last p3_mean p4_first p4_last p4_mean p5_first p5_last p5_mean\n"
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "p6.txt")
    # attn: wait 4200, end 9000; p3 mean 3500 last 4000, p4 mean 4000 last 4500, p5 mean 4200 last 4700 past the wait
    row = "1 attn 72 4100 4150 4200 4300 8800 9000 4400 5200 4700 5300 6200 5700 6400 7200 6700"
    with open(path, "w") as f:
        f.write("# graph 0: 1 launch\n" + PHEAD6 + row + " 7400 8200 7700 7900 8700 8200 8100 8900 8400\n")
    rc, out = run(path)
    line = [l.split() for l in out.splitlines() if l.split()[:2] == ["attn", "1"] and "/" in l]
    check(rc == 0 and "p5 mean/last" in out and line and line[0][2:] == [
        "0.50", "/", "1.00", "1.50", "/", "2.00", "2.50", "/", "3.00", "3.50", "/", "4.00", "4.00", "/", "4.50",
        "4.20", "/", "4.70", "4.80"], "six phases: a column each, then the end (%r)" % line)
    with open(path, "w") as f:
        f.write("# graph 0: 1 launch\n" + PHEAD6 + row + " 7400 8200 7700 7900 8700 8200 8100 8900\n")
    rc, out = run(path)
    check(rc != 0 and "not a stamps row" in out, "a phase of two fields refused")
checks.finish()
