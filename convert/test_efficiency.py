#!/usr/bin/env python3
"""convert/efficiency.py on the committed results of the conversion (data/results/smollm2-converted-h200-*): the
table's figures are those of the grid files and the pipeline summaries, and bad input is refused with one line.
Standard library only (CI runs it without PyTorch): `python3 convert/test_efficiency.py`."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from convert import efficiency  # noqa: E402

A = os.path.join(ROOT, "data/results/smollm2-converted-h200-2026-12-01")
B = os.path.join(ROOT, "data/results/smollm2-converted-h200-2026-12-01b")
C = os.path.join(ROOT, "data/results/smollm2-converted-h200-2026-12-02")
D = os.path.join(ROOT, "data/results/smollm2-converted-h200-2026-12-02b")
E = os.path.join(ROOT, "data/results/smollm2-converted-h200-2026-12-02e")


def read(path):
    with open(path) as f:
        return json.load(f)


def run(*extra, out):
    argv = ["--out", out, "--base", f"{A}/grid/base", "--summary", f"{A}/convert/summary.json",
            "--summary", f"{B}/convert/summary.json", *extra]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        efficiency.main(argv)
    return buf.getvalue()


class Efficiency(unittest.TestCase):
    def test_table(self):
        with tempfile.TemporaryDirectory() as out:
            md = run("--point", f"16M={A}/grid/conv", "--point", f"4M={B}/grid/conv-4M",
                     "--point", f"4M-before={B}/grid/conv-4M-before", out=out)
            rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in md.splitlines()[2:]}
            self.assertEqual(set(rows), {"base transformer", "16M", "4M", "4M-before"})
            # KJV perplexity at 1K and 8K and NIAH orthros at 1K as the grid files hold them
            self.assertEqual(rows["base transformer"][2], "13.47")
            self.assertEqual(rows["16M"][2], "14.48")
            self.assertEqual(rows["16M"][5], "170.60")
            self.assertEqual(rows["4M-before"][5], "18.82")
            self.assertEqual(rows["4M-before"][8], "97.5")
            # tokens and GPU-minutes: both stages of the pipeline summaries
            s = read(f"{B}/convert/summary.json")["jobs"]
            want = s["s1-4M"]["tokens_seen"] + s["s2-4M"]["tokens_seen"]
            got = read(os.path.join(out, "efficiency.json"))
            p4 = next(p for p in got["points"] if p["name"] == "4M")
            self.assertEqual(p4["tokens"], want)
            self.assertAlmostEqual(p4["gpu_minutes"], (s["s1-4M"]["seconds"] + s["s2-4M"]["seconds"]) / 60, places=2)
            self.assertIsNone(p4["variant"])
            self.assertEqual(next(p for p in got["points"] if p["name"] == "4M-before")["variant"], "before")

    def test_variant_line(self):
        """A variant at two budgets (4M-before, 16M-before) is a line of its own through both; one at a single budget
        (4M-L4096) is a marker, its two windows joined by a dotted line."""
        jobs = efficiency.jobs_of([f"{B}/convert/summary.json", f"{C}/convert/summary.json"])
        pts = [efficiency.point("4M", f"{B}/grid/conv-4M", jobs),
               efficiency.point("4M-before", f"{B}/grid/conv-4M-before", jobs),
               efficiency.point("16M-before", f"{C}/grid/conv", jobs),
               efficiency.point("4M-L4096", f"{B}/grid/conv-4M-L4096", jobs)]
        base = {"ppl_kjv": efficiency.ppl(f"{A}/grid/base", "kjv", "transformer"),
                "niah": efficiency.niah(f"{A}/grid/base", "transformer")}
        left, right = efficiency.series(base, pts)
        by = {s[0]: s for s in left}
        line = by["converted (before), 1K windows"]
        self.assertEqual([x for x, _ in line[4]], [pts[1]["tokens"], pts[2]["tokens"]])
        self.assertEqual([round(y, 2) for _, y in line[4]], [16.41, 14.09])
        self.assertEqual(line[2], 1)
        self.assertEqual([round(y, 2) for _, y in by["converted (before), 8K windows"][4]], [18.82, 15.17])
        self.assertNotIn("4M-before (1K, 8K)", by)
        marker = by["4M-L4096 (1K, 8K)"]
        self.assertEqual((marker[2], len(marker[4])), (3, 2))
        niah = {s[0]: s for s in right}["converted (before) as orthros, 4K"]
        self.assertEqual([y for _, y in niah[4]], [32.5, 40.0])

    def test_variant_of_parts(self):
        """A variant of several parts (16M-L4096-before: 4096-token sequences, the maps before RoPE) is one variant,
        named by everything after the budget, with both stages' tokens and seconds."""
        jobs = efficiency.jobs_of([f"{D}/convert/summary.json"])
        p = efficiency.point("16M-L4096-before", f"{D}/grid/l4096", jobs)
        self.assertEqual(p["variant"], "L4096-before")
        self.assertEqual(p["tokens"], 2 * 8028160)
        self.assertEqual(p["gpu_minutes"], round((77.561 + 207.745) / 60.0, 2))
        self.assertEqual([round(p["ppl_kjv"][c], 2) for c in efficiency.CTXS], [14.62, 14.16, 14.0, 14.1])
        self.assertEqual([p["niah_orthros"][c] for c in efficiency.CTXS], [95.0, 77.5, 42.5, 27.5])

    def test_controls(self):
        """The control transformers (jobs ctl-16M, ctl-24M) are rows of the table and a line through the tokens they
        saw, their figures those of their grid files as transformer."""
        with tempfile.TemporaryDirectory() as out:
            md = run("--summary", f"{E}/convert/summary.json", "--point", f"16M={A}/grid/conv",
                     "--control", f"24M={E}/grid/control", "--control", f"16M={A}/grid/control", out=out)
            rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in md.splitlines()[2:]}
            self.assertEqual(rows["control 16M (transformer)"][2], "11.41")
            self.assertEqual(rows["control 24M (transformer)"][2], "11.31")
            self.assertEqual(rows["control 24M (transformer)"][5], "10.12")
            self.assertEqual(rows["control 24M (transformer)"][8], "72.5")
            got = read(os.path.join(out, "efficiency.json"))
            c24 = next(c for c in got["controls"] if c["budget"] == "24M")
            s = read(f"{E}/convert/summary.json")["jobs"]["ctl-24M"]
            self.assertEqual(c24["tokens"], s["tokens_seen"])
            self.assertAlmostEqual(c24["gpu_minutes"], s["seconds"] / 60, places=2)
        jobs = efficiency.jobs_of([f"{A}/convert/summary.json", f"{E}/convert/summary.json"])
        ctls = [efficiency.control("24M", f"{E}/grid/control", jobs), efficiency.control("16M", f"{A}/grid/control", jobs)]
        base = {"ppl_kjv": efficiency.ppl(f"{A}/grid/base", "kjv", "transformer"),
                "niah": efficiency.niah(f"{A}/grid/base", "transformer")}
        left, _ = efficiency.series(base, [efficiency.point("16M", f"{A}/grid/conv", jobs)], ctls)
        line = {s[0]: s for s in left}["control transformer, 1K windows"]
        self.assertEqual([round(y, 2) for _, y in line[4]], [11.41, 11.31])  # in order of tokens

    def refused(self, *extra, says):
        with tempfile.TemporaryDirectory() as out:
            with self.assertRaises(SystemExit) as e:
                run(*extra, out=out)
            self.assertIn(says, str(e.exception))
            self.assertFalse(os.path.exists(os.path.join(out, "efficiency.md")), "nothing is written on bad input")

    def test_refusals(self):
        self.refused("--point", f"64M={A}/grid/conv", says="no finished job s1-64M, s2-64M")
        self.refused("--point", f"16M;rm={A}/grid/conv", says="NAME is a budget")
        self.refused("--point", f"16M={A}/grid/nothing", says="cannot read")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "x-ppl-kjv.json"), "w") as f:
                json.dump({"kind": "bench", "cells": []}, f)
            self.refused("--point", f"16M={d}/x", says="not an orthros eval result file")
        self.refused("--point", f"4M-before={B}/grid/conv-4M-before", says="no budget point")
        self.refused("--point", f"16M={A}/grid/conv", "--control", f"64M={A}/grid/control", says="no finished job ctl-64M")
        self.refused("--point", f"16M={A}/grid/conv", "--control", f"16M-before={A}/grid/control", says="NAME is a budget")
        self.refused("--point", f"16M={A}/grid/conv", "--control", f"16M={B}/grid/control", says="cannot read")


if __name__ == "__main__":
    unittest.main()
