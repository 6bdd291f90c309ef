#!/usr/bin/env python3
"""pm_sampling.py's summary against series made here: a step of 1000 samples one every 500 ns whose DRAM throughput is
known (80% of peak but for three gaps at 5% of 2, 3.5 and 1 us), the bands, the stretches below 50% (count, total,
the longest first, where they start), the timeline's digits, the metric chosen when several are present, --metric
and --below; a step with its kernels' timestamps (the samples cut to their span, --layers' windows a launch of a
layer and outside them, with --peak-tbps their MB); and malformed files and options refused. Standard library only."""
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "pm_sampling.py")
DRAM = "pmsampling:dram__throughput.avg.pct_of_peak_sustained_elapsed"
HEAD = "result,metric,index,t,value\n"
STARTS, ENDS = "profiler__timestamp_workload_start_0", "profiler__timestamp_workload_end_0"


def run(*args):
    rc, out, err = checks.run(TOOL, *args)
    return rc, out + err


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return path


def step(result=0, metric=DRAM, t0=1_000_000):
    """1000 samples, 500 ns apart from t0, 80 but at samples 100-103 (2 us), 400-406 (3.5 us) and 900-901 (1 us): 5."""
    gaps = set(range(100, 104)) | set(range(400, 407)) | set(range(900, 902))
    return "".join("%d,%s,%d,%d,%g\n" % (result, metric, i, t0 + 500 * i, 5 if i in gaps else 80) for i in range(1000))


with tempfile.TemporaryDirectory() as tmp:
    good = write(tmp, "good.csv", HEAD + step() + step(0, "pmsampling:sm__throughput.avg.pct_of_peak_sustained_elapsed"))
    rc, out = run("summary", good, "--cols", "50")
    check(rc == 0, "a good file is read (rc %d: %s)" % (rc, out[-300:]))
    check("result 0: " + DRAM in out, "the DRAM series is the one summarised")
    check("1000 samples over 500.0 us, one every 0.500 us; mean 79.0% of peak" in out,
          "samples, span, interval and mean (79.0 = (987 x 80 + 13 x 5) / 1000)")
    check("0-25%: 1.3%" in out and "75-90%: 98.7%" in out and ">= 90%: 0.0%" in out, "the bands")
    check("below 50%: 3 stretches, 6.5 us in all (1.3% of the span), mean 2.17 us" in out, "the stretches below 50%")
    lines = out.splitlines()
    longest = [l.strip() for l in lines if l.strip().endswith(" us") and " from " in l]
    check(longest == ["3.50 us from 200.0 us", "2.00 us from 50.0 us", "1.00 us from 450.0 us"],
          "the stretches, longest first, with where they start: %s" % longest)
    tl = lines[lines.index(next(l for l in lines if l.strip().startswith("timeline"))) + 1].strip()
    # 20 samples a column: the gaps' columns 5, 20 and 45 hold 4, 7 and 2 of them (65, 53.75 and 72.5% of peak)
    check(len(tl) == 50 and tl[5] == "6" and tl[20] == "5" and tl[45] == "7" and tl.count("8") == 47,
          "the timeline's digits: %s" % tl)
    rc, out = run("summary", good, "--below", "90", "--cols", "0")
    check(rc == 0 and "below 90%: 1 stretches, 500.0 us in all (100.0% of the span)" in out and "timeline" not in out,
          "--below 90: the whole step one stretch; --cols 0: no timeline")
    rc, out = run("summary", good, "--metric", "pmsampling:sm__throughput.avg.pct_of_peak_sustained_elapsed")
    check(rc == 0 and "result 0: pmsampling:sm__throughput" in out, "--metric picks another series")
    two = write(tmp, "two.csv", HEAD + step(1, t0=5) + step(0, "pmsampling:dram__bytes.avg.pct_of_peak_sustained_elapsed"))
    rc, out = run("summary", two)
    check(rc == 0 and out.index("result 0: pmsampling:dram__bytes") < out.index("result 1: " + DRAM),
          "two results, each with its own DRAM series, in order")
    # kernels: one before, 2 layers of 2 launches, one after; ends 10 us apart from t0 (the first 4 us long), the
    # samples every 1 us from t0 - 5 us (cut: before the first start) to t0 + 70 us (cut: past the last end), value
    # 10 in the layers' first launches' windows, 90 in their second's, 50 in the others'
    t0 = 1_000_000
    ends = [t0 + 4000, t0 + 14000, t0 + 24000, t0 + 34000, t0 + 44000, t0 + 54000]
    text = HEAD + "".join("0,%s,%d,%d,%d\n" % (STARTS, i, t0 + (0 if i == 0 else ends[i - 1] - 500), i)
                          for i in range(6))
    text += "".join("0,%s,%d,%d,%d\n" % (ENDS, i, e, i) for i, e in enumerate(ends))
    for i in range(-5, 71):
        t = t0 + 1000 * i
        k = next((j for j, e in enumerate(ends) if t <= e), 6)
        text += "0,%s,%d,%d,%g\n" % (DRAM, i + 5, t, 10 if k in (1, 3) else 90 if k in (2, 4) else 50)
    timed = write(tmp, "timed.csv", text)
    rc, out = run("summary", timed, "--layers", "2:2:1", "--cols", "0")
    check(rc == 0 and "cut to its 6 kernels' span (54.0 us)" in out and "55 samples over 55.0 us" in out,
          "the samples cut to the kernels' span: %s" % out.splitlines()[:2])
    rows = {l.split()[0] + " " + l.split()[1]: l.split()[2:] for l in out.splitlines()
            if l.strip().startswith(("before", "layer", "after"))}
    check(rows.get("before 0") == ["4.00", "50.0", "50.0"] and rows.get("layer 1") == ["of", "2", "10.00", "10.0", "10.0"]
          and rows.get("layer 2") == ["of", "2", "10.00", "90.0", "90.0"] and rows.get("after 0") == ["10.00", "50.0", "50.0"],
          "per launch of a layer: the window, its mean, its first sample: %s" % rows)
    rc, out = run("summary", timed, "--layers", "2:2:1", "--cols", "0", "--peak-tbps", "2")
    rows = {l.split()[0] + " " + l.split()[1]: l.split()[2:] for l in out.splitlines()
            if l.strip().startswith(("before", "layer", "after"))}
    check(rc == 0 and "read MB" in out and rows.get("before 0") == ["4.00", "50.0", "50.0", "4.00"]
          and rows.get("layer 1") == ["of", "2", "10.00", "10.0", "10.0", "2.00"]
          and rows.get("layer 2") == ["of", "2", "10.00", "90.0", "90.0", "18.00"],
          "--peak-tbps 2: each window's MB read, mean x window x peak (4 us at 50%%: 4 MB; 10 us at 10, 90%%: 2, 18): %s"
          % rows)
    rc, out = run("summary", timed, "--peak-tbps", "2")
    check(rc != 0 and "give --layers too" in out, "--peak-tbps without --layers is refused")
    rc, out = run("summary", timed, "--layers", "3:2:1")
    check(rc != 0 and "7 launches, the file has 6" in out, "--layers asking more launches than ran is refused")
    rc, out = run("summary", good, "--layers", "1:1:0")
    check(rc != 0 and "needs the kernels' timestamps" in out, "--layers without the kernels' timestamps is refused")
    bad = {
        "no header": step(),
        "other columns": "a,b,c,d,e\n" + step(),
        "four fields": HEAD + "0,%s,1,500\n" % DRAM,
        "a word for a value": HEAD + "0,%s,1,500,high\n" % DRAM,
        "a NaN": HEAD + "0,%s,1,500,nan\n" % DRAM,
        "no DRAM series": HEAD + "0,pmsampling:sm__throughput.avg.pct_of_peak_sustained_elapsed,0,1,50\n",
        "not text": HEAD + "0,\xff,0,1,2\n",
    }
    for what, text in bad.items():
        path = os.path.join(tmp, "bad.csv")
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)
        rc, out = run("summary", path)
        check(rc != 0 and "pm_sampling.py:" in out and "Traceback" not in out, "refused: %s (%s)" % (what, out.strip()))
    for args in (["summary", good, "--below", "0"], ["summary", good, "--cols", "-1"], ["summary", good, "--bogus", "1"],
                 ["summary", good, "--layers", "2:5"], ["summary", good, "--layers", "0:5:1"],
                 ["summary", good, "--layers", "1:1:0", "--peak-tbps", "0"], ["summary", good, "--peak-tbps", "x"],
                 ["summary", good, "--below"], ["summary", os.path.join(tmp, "none.csv")], ["dump", good], []):
        rc, out = run(*args)
        check(rc != 0 and "pm_sampling.py:" in out and "Traceback" not in out, "refused: %s" % " ".join(args[2:] or args))
checks.finish()
