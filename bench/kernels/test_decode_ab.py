#!/usr/bin/env python3
"""decode_ab.py (ci/gpu-ab.sh's table) on rounds made from a committed H100 decode result (the 1B step at batch 1,
data/results/h100-2026-12-06-lean/run2-79aa2a8): a switch faster beyond both spreads, one within them, eight rounds
against a base build, and rounds, labels or files that are not what ci/gpu-ab.sh writes refused by name. Standard
library only."""
import copy
import json
import os
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "decode_ab.py")
SRC = os.path.join(ROOT, "data", "results", "h100-2026-12-06-lean", "run2-79aa2a8", "decode",
                   "llama3.2-1b-b1-default.json")

with open(SRC) as f:
    base = json.load(f)


def cell(ctx, ms, kernels):
    """the committed file cut to its decode cell of ctx keys, its median ms and its kernels line replaced"""
    f = copy.deepcopy(base)
    f["measurements"] = [m for m in f["measurements"] if m.get("ctx") == ctx]
    f["measurements"][0]["stats"]["median"] = ms / 1e3
    f["environment"]["device"]["kernels"] = kernels
    return f


def write(d, name, doc):
    with open(os.path.join(d, name), "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def rounds(d, shape, ctx, a1, b1, b2, a2):
    for r, ms in (("a1", a1), ("b1", b1), ("b2", b2), ("a2", a2)):
        write(d, "%s-%s.json" % (shape, r), cell(ctx, ms, "attn_decode v8" + (", attn push" if r[0] == "b" else "")))


def line(out, shape):
    return next((l.split() for l in out.splitlines() if l.startswith(shape + " ")), [])


with tempfile.TemporaryDirectory() as d:
    # 128K: b 1.08% faster, each side 0.06-0.13% apart: faster; 4K: b 0.05% slower, a's rounds 0.2% apart: within
    rounds(d, "llama3.2-1b-b1-128k", 131072, 2.4982, 2.4720, 2.4689, 2.4967)
    rounds(d, "llama3.2-1b-b1-4k", 4096, 1.0400, 1.0405, 1.0410, 1.0420)
    rc, out, err = checks.run(TOOL, d, "ORTHROS_ATTN_DECODE_PUSH=1")
    check(rc == 0 and not err, "four rounds of two shapes read (rc %d: %s)" % (rc, err.strip()))
    check(line(out, "llama3.2-1b-b1-128k") == ["llama3.2-1b-b1-128k", "2.4982", "2.4720", "2.4689", "2.4967",
                                               "-1.08%", "0.06%", "0.13%", "faster"],
          "128K: the medians, b against a, the spreads, faster (%r)" % line(out, "llama3.2-1b-b1-128k"))
    check(line(out, "llama3.2-1b-b1-4k")[-3:] == ["within", "the", "spread"],
          "4K: a difference inside a's spread is not a verdict (%r)" % line(out, "llama3.2-1b-b1-4k"))
    check("  a kernels: attn_decode v8" in out.splitlines() and "  b kernels: attn_decode v8, attn push" in out,
          "each side's kernels line printed")
    # b slower beyond both spreads
    rounds(d, "llama3.2-1b-b1-4k", 4096, 1.0400, 1.0600, 1.0610, 1.0401)
    rc, out, err = checks.run(TOOL, d, "ORTHROS_ATTN_DECODE_PUSH=1")
    check(rc == 0 and line(out, "llama3.2-1b-b1-4k")[-1] == "slower", "slower beyond both spreads")
    # a value of up to 10 digits, as ci/gpu-ab.sh takes (ORTHROS_ATTN_DECODE_CLAIM=32768 was refused at 4)
    rc, out, err = checks.run(TOOL, d, "ORTHROS_ATTN_DECODE_CLAIM=2147483647")
    check(rc == 0 and "ORTHROS_ATTN_DECODE_CLAIM=2147483647 against the default" in out,
          "a switch's value of 10 digits read (rc %d: %s)" % (rc, err.strip()))

    def refused(why, *args):
        rc, out, err = checks.run(TOOL, *args)
        check(rc != 0 and why in err and not out, "refused: %s (rc %d: %s)" % (why, rc, err.strip()[:120]))

    refused("not a switch", d, "PATH=1")
    refused("not a switch", d, "ORTHROS_X=1; rm -rf /")
    refused("not a switch", d, "ORTHROS_X=12345678901")
    refused("usage", d)
    os.remove(os.path.join(d, "llama3.2-1b-b1-4k-b2.json"))
    refused("llama3.2-1b-b1-4k: no round b2", d, "ORTHROS_ATTN_DECODE_PUSH=1")
    write(d, "llama3.2-1b-b1-4k-b2.json", "{not json")
    refused("cannot read", d, "ORTHROS_ATTN_DECODE_PUSH=1")
    two = copy.deepcopy(base)
    write(d, "llama3.2-1b-b1-4k-b2.json", two)
    refused("2 decode cells, not one", d, "ORTHROS_ATTN_DECODE_PUSH=1")
    bad = cell(4096, 1.0, "x")
    bad["measurements"][0]["stats"]["median"] = -1
    write(d, "llama3.2-1b-b1-4k-b2.json", bad)
    refused("without a positive batch, ctx and stats.median", d, "ORTHROS_ATTN_DECODE_PUSH=1")
with tempfile.TemporaryDirectory() as d:
    # eight rounds (ORTHROS_AB_ROUNDS=8) against a base build: each side's mean and its largest less its smallest
    for r, ms in (("a1", 1.0400), ("b1", 1.0300), ("b2", 1.0302), ("a2", 1.0410), ("a3", 1.0405), ("b3", 1.0298),
                  ("b4", 1.0301), ("a4", 1.0399)):
        write(d, "llama3.2-1b-b1-4k-%s.json" % r, cell(4096, ms, "attn_decode v8"))
    rc, out, err = checks.run(TOOL, d, "base=4a022ad")
    check(rc == 0 and "against the base build 4a022ad" in out and "a1 b1 b2 a2 a3 b3 b4 a4" in out,
          "eight rounds against a base build read (rc %d: %s)" % (rc, err.strip()))
    check(line(out, "llama3.2-1b-b1-4k")[9:] == ["-0.99%", "0.11%", "0.04%", "faster"],
          "eight rounds: b against a, the spreads max - min, faster (%r)" % line(out, "llama3.2-1b-b1-4k"))
    refused("not a switch VAR=VALUE nor base=SHA", d, "base=HEAD")
    refused("not a switch VAR=VALUE nor base=SHA", d, "base=4a022ad; ls")
    os.remove(os.path.join(d, "llama3.2-1b-b1-4k-b4.json"))
    refused("llama3.2-1b-b1-4k: no round b4", d, "base=4a022ad")
    for r, ms in (("a1", 2.4), ("b1", 2.4), ("b2", 2.4), ("a2", 2.4)):
        write(d, "llama3.2-1b-b1-128k-%s.json" % r, cell(131072, ms, "attn_decode v8"))
    write(d, "llama3.2-1b-b1-4k-b4.json", cell(4096, 1.03, "attn_decode v8"))
    refused("llama3.2-1b-b1-4k: 8 rounds where the other shapes have 4", d, "base=4a022ad")
with tempfile.TemporaryDirectory() as d:
    refused("no <shape>-<round>.json files", d, "ORTHROS_ATTN_DECODE_PUSH=1")
    refused("cannot read", os.path.join(d, "missing"), "ORTHROS_ATTN_DECODE_PUSH=1")
checks.finish()
