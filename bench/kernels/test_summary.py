#!/usr/bin/env python3
"""summary.py on kernel benchmarks it summarised on the H200: data/results/h200-2026-12-01-v7-defaults (every kernel
version against PyTorch's flash and cuDNN; the summary committed beside it, reproduced line for line) and the decode
attention sweep of v7 against v8 (h200-2026-12-02-decode-cluster/default-d76ecee/bench_cluster.json); then files that
are not bench_kernels' (or anchors.py's) output refused with the reason and nothing else printed. Standard library
only."""
import json
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "summary.py")
V7 = os.path.join(ROOT, "data", "results", "h200-2026-12-01-v7-defaults")
SWEEP = os.path.join(ROOT, "data", "results", "h200-2026-12-02-decode-cluster", "default-d76ecee", "bench_cluster.json")


def run(*args):
    return checks.run(TOOL, *args)


rc, out, err = run(os.path.join(V7, "bench_kernels.json"), os.path.join(V7, "anchors.json"))
check(rc == 0 and not err, "the v7 run is summarised (rc %d)" % rc)
with open(os.path.join(V7, "summary.txt")) as f:
    check(out == f.read(), "the summary committed beside it, reproduced line for line")

rc, out, err = run(SWEEP)
check(rc == 0 and "decode attention v7 against v8, the clusters" in out, "the v7 / v8 sweep has its table")
lines = out.splitlines()
check("  d64 B1 4K: v7 0.013, v8 0.011 (ran v8, splits=9) = 1.14x" in lines, "d 64 batch 1 4K: 9-block clusters")
check("  d64 B1 1K: v7 0.014, v8 0.012 (ran v7, splits=32) = 1.17x" in lines, "d 64 batch 1 1K: the call ran v7")
check("  d128 B16 128K: v7 1.851, v8 1.846 (ran v8, splits=1) = 1.00x" in lines, "d 128 batch 16 128K")
check(sum(1 for x in lines if x.startswith("  d") and "ran v" in x) == 28, "28 shapes, both head dims")

with tempfile.TemporaryDirectory() as tmp:
    with open(SWEEP) as f:
        good = json.load(f)

    # a row of v8 held to 160 registers (bench_kernels' regs=160, the same op): its own column, v8's kept
    held = json.loads(json.dumps(good))
    row = next(m for m in held["measurements"] if m["shape"] == "B=1 cache=4096 Hq=32 Hkv=8 d=64 v8 ran v8 splits=9")
    row = json.loads(json.dumps(row))
    row["shape"] += " regs=160"
    row["stats"]["median"] = row["stats"]["median"] * 0.5
    held["measurements"].append(row)
    path = os.path.join(tmp, "held.json")
    with open(path, "w") as f:
        json.dump(held, f)
    rc, out, err = run(path)
    check(rc == 0 and "  d64 B1 4K: v7 0.013, v8 0.011 (ran v8, splits=9) = 1.14x; v8 held to 160 registers 0.006 "
          "(v8 / it 2.00x)" in out.splitlines(), "v8 held to 160 registers: a column beside v8 (%s)" % err.strip())

    # and a row of v8's softmax as written (lean=0, the lean form the default), then one of an older file's lean
    # softmax (lean=1): a column each, all kept, in that order
    for tag, scale in ((" lean=0", 2.0), (" lean=1", 0.5)):
        row = json.loads(json.dumps(row))
        row["shape"] = row["shape"].replace(" regs=160", "").replace(" lean=0", "") + tag
        row["stats"]["median"] = row["stats"]["median"] * scale
        held["measurements"].append(row)
        with open(path, "w") as f:
            json.dump(held, f)
        rc, out, err = run(path)
        want = ("  d64 B1 4K: v7 0.013, v8 0.011 (ran v8, splits=9) = 1.14x; v8 held to 160 registers 0.006 "
                "(v8 / it 2.00x); v8 with its softmax as written 0.011 (v8 / it 1.00x)")
        want += "" if tag == " lean=0" else "; v8 with its lean softmax 0.006 (v8 / it 2.00x)"
        check(rc == 0 and want in out.splitlines(), "v8%s: a column beside v8 and the held one (%s: %s)"
              % (tag, err.strip(), [l for l in out.splitlines() if l.startswith("  d64 B1 4K")]))

    def refused(doc, what, *extra):
        path = os.path.join(tmp, "b.json")
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        rc, out, err = run(path, *extra)
        check(rc == 1 and out == "" and "summary:" in err, "%s: refused, nothing printed (%s)" % (what, err.strip()[-70:]))

    bad = json.loads(json.dumps(good))
    bad["measurements"][-1]["stats"] = "fast"
    refused(bad, "a cell whose stats are a string")
    bad = json.loads(json.dumps(good))
    del bad["measurements"][-1]["shape"]
    refused(bad, "a cell without its shape")
    refused([1, 2, 3], "a list, not an object")
    refused("{", "not JSON")
    anchors = os.path.join(tmp, "a.json")
    with open(anchors, "w") as f:
        json.dump({"cases": [{"op": "decode", "head_dim": "sixty-four"}]}, f)
    refused(good, "an anchor case with a head dim that is not a number", anchors)

checks.finish()
