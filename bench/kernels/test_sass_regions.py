#!/usr/bin/env python3
"""sass_regions.py against source counters it read on the H200 (data/results/h200-2026-12-04-sass/: the decode
attention of the 8B shape at 4K before and after Q's loads were changed, 576 warps; the gemv products of a 1B
layer, each printed twice by ncu) and against pages made here: the runs of a small kernel, a page without the
source counters, a file that is no source page and bad options refused. Standard library only."""
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "sass_regions.py")
RUN = os.path.join(ROOT, "data", "results", "h200-2026-12-04-sass")


def run(*args):
    rc, out, err = checks.run(TOOL, *args)
    return rc, out + err


HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"# Samples","Instructions Executed","stall_wait","stall_long_sb","stall_wait (Not Issued)"')


def page(name, rows):
    """A source page of one kernel: rows of (instruction, executed, samples, wait, long_sb)."""
    lines = ['"Kernel Name","%s",' % name, HEADER]
    for i, (src, e, s, w, l) in enumerate(rows):
        lines.append('"0x%x","%s","%d","%d","%d","%d","%d","%d","0"' % (16 * i, src, s, s, s, e, w, l))
    return "\n".join(lines) + "\n"


rc, out = run(os.path.join(RUN, "attn-f77e70b", "sass-att-llama3.1-8b.csv.xz"), "--min-share", "2")
check(rc == 0, "the H200 source page is read (rc %d)" % rc)
check("5704 SASS instructions, 576 warps, 3088.2 instructions a warp, 756 stall samples" in out,
      "the 8B attention before: 5704 instructions, 576 warps, 3088.2 a warp, 756 samples")
check("   3201   265    3.67     971.7    133 (17.6%)" in out, "its key loop: 265 instructions run 3.67 times a warp")
check(out.count("    1.00      4") >= 16, "the sixteen runs of Q's loads, each run once a warp")
rc, out = run(os.path.join(RUN, "attn-f77e70b", "sass-att-llama3.1-8b.csv.xz"), "--min-share", "100", "--regions",
              "0:prologue,928:stages,1247:q_loads,2888:loop_head,3201:key_loop,3466:block_merge,3718:cluster_merge")
check(rc == 0 and "q_loads           1247-2888      952.0    209 (27.6%)" in out,
      "--regions: Q's loads 952 instructions a warp, 27.6% of the samples (NOTES.md's table)")
check("cluster_merge     3718-5704      127.1    170 (22.5%)" in out, "--regions: the last region ends at the kernel's end")
rc, out = run(os.path.join(RUN, "qload-c6ccda1", "sass-att-llama3.1-8b.csv.xz"))
check(rc == 0 and "4200 SASS instructions, 576 warps, 2164.6 instructions a warp" in out,
      "the 8B attention after: 4200 instructions, 2164.6 a warp")
rc, out = run(os.path.join(RUN, "gemv-c6ccda1", "sass-gemv-llama3.2-1b.csv.xz"))
check(rc == 0 and out.count("SASS instructions") == 4, "eight kernel pages, each twice: four kernels printed")
check("[1] void gemv2_kernel<(int)1, (int)4, (bool)1>" in out and "2112 warps, 1633.8 instructions a warp" in out,
      "the 1B q/k/v product: 2112 warps, 1633.8 instructions a warp")
rc, out = run(os.path.join(RUN, "gemv-c6ccda1", "sass-gemv-llama3.2-1b.csv.xz"), "--kernel", "2")
check(rc == 0 and out.count("SASS instructions") == 1 and "[2] " in out, "--kernel 2: that kernel alone")

loop = [("LDC R1", 4, 10, 0, 0), ("IADD3 R2", 4, 2, 2, 0), ("LDG.E R3", 16, 30, 0, 30), ("FFMA R4", 16, 8, 8, 0),
        ("FFMA R5", 16, 0, 0, 0), ("BRA", 16, 0, 0, 0), ("EXIT", 4, 1, 1, 0), ("NOP", 0, 0, 0, 0)]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "t.csv")
    with open(path, "w") as f:
        f.write(page("void k(int)", loop))
    rc, out = run(path)
    check(rc == 0 and "8 SASS instructions, 4 warps, 19.0 instructions a warp, 51 stall samples" in out,
          "a small kernel: 4 warps (its first instruction's executions), 76 / 4 instructions a warp")
    check("      0     2    1.00       2.0     12 (23.5%)" in out, "the prologue: 2 instructions once a warp")
    check("      2     4    4.00      16.0     38 (74.5%)" in out and "long_sb 30 wait 8" in out,
          "the loop: 4 instructions 4 times a warp, its stalls summed")
    check("      6     1    1.00       1.0      1 ( 2.0%)" in out, "the epilogue, a run of its own")
    rc, out = run(path, "--min-share", "50")
    check(rc == 0 and "      2     4    4.00" in out and "      0     2    1.00" not in out,
          "--min-share 50: the loop alone")
    with open(path, "w") as f:
        f.write(page("void k(int)", loop).replace("Instructions Executed", "Executed"))
    rc, out = run(path)
    check(rc != 0 and "lacks Instructions Executed" in out, "a page without the source counters: refused")
    with open(path, "w") as f:
        f.write(page("void k(int)", loop).replace('"16","0","30"', '"many","0","30"'))
    rc, out = run(path)
    check(rc != 0 and "not numbers" in out, "a count that is no number: refused")
    with open(path, "w") as f:
        f.write("not a source page\n")
    rc, out = run(path)
    check(rc != 0 and "no ncu source page" in out, "no source page: refused")
    rc, out = run(path, "--min-share")
    check(rc != 0 and "needs a value" in out, "--min-share without its value: refused")
    rc, out = run(path, "--kernel", "-1")
    check(rc != 0 and "negative" in out, "--kernel -1: refused")
    with open(path, "w") as f:
        f.write(page("void k(int)", loop))
    rc, out = run(path, "--kernel", "3")
    check(rc != 0 and "holds 1 kernels" in out, "--kernel past the file's kernels: refused")
    rc, out = run(path, "--regions", "0:a,2:loop,6:tail")
    check(rc == 0 and "loop                 2-6          16.0     38 (74.5%)" in out, "--regions on a small kernel")
    for bad, why in (("2:a,4:b", "the first region starts at 0"), ("0:a,4:b,3:c", "regions out of order"),
                     ("0:a;b", "a name with a ;"), ("0:a,x:b", "a start that is no number"), ("0:a,9:b", "past the end")):
        rc, out = run(path, "--regions", bad)
        check(rc != 0 and "--regions" in out, "--regions %s (%s): refused" % (bad, why))
checks.finish()
