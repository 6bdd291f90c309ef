#!/usr/bin/env python3
"""decode_profile.py against a profile it read on the H200 (data/results/h200-2026-12-02-decode-profile/, the 1B step
at 4K: 98 kernels a step, 6 a layer, 16 layers) and against tables made here: the step found when the table ends
inside one, a table with no repeating step and a file with no ncu table refused. Standard library only."""
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "decode_profile.py")
RUN = os.path.join(ROOT, "data", "results", "h200-2026-12-02-decode-profile", "default-da29600")


def run(*args):
    rc, out, err = checks.run(TOOL, *args)
    return rc, out + err


def table(names, us, cut=0):
    rows = ['==PROF== Connected to process 1', '"ID","Process ID","Kernel Name","Context","gpu__time_duration.sum"',
            '"","","","","usecond"']
    seq = [(n, u) for n, u in zip(names, us)]
    for i, (n, u) in enumerate(seq[: len(seq) - cut]):
        rows.append('"%d","1","%s","1","%s"' % (i, n, u))
    return "\n".join(rows) + "\n"


rc, out = run(os.path.join(RUN, "llama3.2-1b-b1-4k.csv.gz"), os.path.join(RUN, "llama3.2-1b-b1-4k.json"))
check(rc == 0, "the H200 profile is read (rc %d)" % rc)
check("8 steps of 98 kernels" in out, "98 kernels a step, 8 steps")
check("per layer (6 kernels, 16 layers" in out, "6 kernels a layer, 16 layers")
check("each alone: 1092.8 us" in out, "the kernels of a step add up to 1092.8 us")
check("the step in the plain bench: 1027.6 us" in out, "the bench's step beside it")

layer = ["void q<1>(a)", "void attn(b)", "void combine(c)", "void o<0>(d)"]
step = ["void embed(e)"] + layer * 5 + ["void head(f)"]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "t.csv")
    with open(path, "w") as f:
        f.write(table(step * 3, ["1.5"] * (3 * len(step)), cut=4))
    rc, out = run(path)
    check(rc == 0 and "2 steps of 22 kernels" in out and "per layer (4 kernels, 5 layers" in out,
          "a table that ends inside a step: the whole steps before it")
    check("each alone: 33.0 us" in out, "microseconds as units: 22 kernels of 1.5 us")
    with open(path, "w") as f:
        f.write(table(["void k%d(x)" % i for i in range(30)], ["1000"] * 30))
    rc, out = run(path)
    check(rc != 0 and "no repeating step" in out, "no repeating step: refused")
    with open(path, "w") as f:
        f.write("not a profile\n")
    rc, out = run(path)
    check(rc != 0 and "no ncu table" in out, "no ncu table: refused")
checks.finish()
