#!/usr/bin/env python3
"""Data efficiency of the conversion (issue 25, item 6): quality against conversion tokens, from the quality grid's
result files (evals/run_converted_grid.sh) and the pipeline's summary.json files (convert/pipeline.py), as a table
(efficiency.md, efficiency.json) and a figure (efficiency.png, by gnuplot with plots/common.gp and
plots/efficiency.gp, when gnuplot is installed):

    convert/efficiency.py --out DIR --base GRID/base \\
        --summary RUN_A/summary.json --summary RUN_B/summary.json \\
        --point 16M=GRID_A/conv --point 4M=GRID_B/conv-4M --point 1M=GRID_B/conv-1M \\
        --point 4M-before=GRID_B/conv-4M-before --control 16M=GRID_A/control

A point NAME=PREFIX is the converted model of the pipeline's jobs s1-NAME and s2-NAME (its tokens and GPU seconds:
the sum of both stages' tokens_seen and seconds in a summary.json) and its grid files PREFIX-ppl-kjv.json,
PREFIX-ppl-python.json and PREFIX-niah-single.json. --base names the transformer's grid files. A point whose NAME
has no suffix (16M, 4M, 1M) is a budget of the recipe as committed; one with a suffix (4M-before, 4M-L4096, ...) is a
variant of the length study: a line through its budgets when it has two or more (4M-before and 16M-before), else a
lone marker. A control NAME=PREFIX is the control transformer of budget NAME (the pipeline's job ctl-NAME: LoRA on
the unchanged transformer with the stage-2 tokens and steps of that budget), drawn at the tokens it saw, as a line
through the controls given; its grid files are PREFIX-ppl-kjv.json, PREFIX-ppl-python.json and
PREFIX-niah-single.json (as transformer). A job in several summaries takes the last one's figures. Standard library
only. It is not an `orthros plot` figure
because half its inputs, the pipeline's summaries, are the conversion's files, not the harness's result files.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

CTXS = (1024, 2048, 4096, 8192)
SAFE = re.compile(r"[^A-Za-z0-9 ,._@()+-]")


def fail(msg):
    raise SystemExit(f"efficiency: {msg}")


def load(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read {what}: {e.strerror}")
    except ValueError as e:
        fail(f"{path}: not JSON ({e})")


def cells_of(path, kind):
    d = load(path, kind)
    if not isinstance(d, dict) or d.get("kind") != "eval" or not isinstance(d.get("cells"), list):
        fail(f"{path}: not an orthros eval result file")
    return d["cells"]


def num(v, path, field):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        fail(f"{path}: {field} is not a finite number")
    return float(v)


def ppl(prefix, text, arch):
    """{ctx: perplexity} of `arch` in PREFIX-ppl-TEXT.json."""
    path = f"{prefix}-ppl-{text}.json"
    out = {}
    for c in cells_of(path, "a perplexity file"):
        if isinstance(c, dict) and c.get("arch") == arch and "ppl" in c:
            out[int(num(c.get("ctx"), path, "ctx"))] = num(c["ppl"], path, "ppl")
    if not out:
        fail(f"{path}: no {arch} perplexity cells")
    return out


def niah(prefix, arch):
    """{ctx: partial score in %, the mean over depths} of `arch` in PREFIX-niah-single.json."""
    path = f"{prefix}-niah-single.json"
    acc = {}
    for c in cells_of(path, "a RULER file"):
        if isinstance(c, dict) and c.get("arch") == arch and "partial_score" in c:
            acc.setdefault(int(num(c.get("ctx"), path, "ctx")), []).append(num(c["partial_score"], path, "partial_score"))
    return {k: 100.0 * sum(v) / len(v) for k, v in acc.items()}


def jobs_of(summaries):
    jobs = {}
    for path in summaries:
        d = load(path, "a pipeline summary")
        if not isinstance(d, dict) or not isinstance(d.get("jobs"), dict):
            fail(f"{path}: not a convert/pipeline.py summary.json")
        for name, j in d["jobs"].items():
            if isinstance(j, dict) and j.get("state") == "done":
                jobs[name] = (num(j.get("tokens_seen"), path, f"{name}.tokens_seen"),
                              num(j.get("seconds"), path, f"{name}.seconds"), j.get("gpu") or "?")
    return jobs


def point(name, prefix, jobs):
    if not re.fullmatch(r"[0-9]+[KMG](-[A-Za-z0-9._]+)*", name):
        fail(f"--point {name}: NAME is a budget (16M) or a budget and a variant (4M-before, 16M-L4096-before)")
    missing = [j for j in (f"s1-{name}", f"s2-{name}") if j not in jobs]
    if missing:
        fail(f"--point {name}: no finished job {', '.join(missing)} in the --summary files")
    t1, s1, gpu = jobs[f"s1-{name}"]
    t2, s2, _ = jobs[f"s2-{name}"]
    return {"name": name, "variant": name.partition("-")[2] or None, "tokens": int(t1 + t2),
            "gpu_minutes": round((s1 + s2) / 60.0, 2), "gpu": gpu, "grid": prefix,
            "ppl_kjv": ppl(prefix, "kjv", "orthros"), "ppl_python": ppl(prefix, "python", "orthros"),
            "niah_orthros": niah(prefix, "orthros"), "niah_linear": niah(prefix, "linear")}


def control(name, prefix, jobs):
    if not re.fullmatch(r"[0-9]+[KMG]", name):
        fail(f"--control {name}: NAME is a budget (16M)")
    if f"ctl-{name}" not in jobs:
        fail(f"--control {name}: no finished job ctl-{name} in the --summary files")
    t, s, gpu = jobs[f"ctl-{name}"]
    return {"name": f"control {name}", "budget": name, "tokens": int(t), "gpu_minutes": round(s / 60.0, 2), "gpu": gpu,
            "grid": prefix, "ppl_kjv": ppl(prefix, "kjv", "transformer"),
            "ppl_python": ppl(prefix, "python", "transformer"), "niah": niah(prefix, "transformer")}


def cell(d, k, fmt):
    return fmt.format(d[k]) if k in d else "-"


def table(base, pts, ctls=()):
    head = ["conversion", "tokens", "GPU-min"] + [f"KJV ppl {c // 1024}K" for c in CTXS] + \
        [f"Python ppl {c // 1024}K" for c in (1024, 8192)] + [f"NIAH orthros {c // 1024}K" for c in CTXS] + \
        ["NIAH linear 1K"]
    def row(label, p, niah, linear):
        cost = [f"{p['tokens'] / 1e6:.1f}M", f"{p['gpu_minutes']:.2f}"] if "tokens" in p else ["-", "-"]
        return ([label] + cost + [cell(p["ppl_kjv"], c, "{:.2f}") for c in CTXS] +
                [cell(p["ppl_python"], c, "{:.2f}") for c in (1024, 8192)] + [cell(niah, c, "{:.1f}") for c in CTXS] +
                [cell(linear, 1024, "{:.1f}")])
    rows = [row("base transformer", base, base["niah"], {})]
    rows += [row(p["name"], p, p["niah_orthros"], p["niah_linear"]) for p in pts]
    rows += [row(p["name"] + " (transformer)", p, p["niah"], {}) for p in ctls]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# Series of the two panels: (title, color, dash type, point type, [(x, y)]); the transformer's as a line across the
# range; a variant's two windows joined by a thin dotted line (dash type 3); the controls a line through their tokens.
def series(base, pts, ctls=()):
    budgets = sorted((p for p in pts if not p["variant"]), key=lambda p: p["tokens"])
    variants = [p for p in pts if p["variant"]]
    ctls = sorted(ctls, key=lambda p: p["tokens"])
    xs = [p["tokens"] for p in list(pts) + ctls]
    span = [min(xs) / 1.5, max(xs) * 1.5]
    colors = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    left, right = [], []
    for c, dash in ((1024, 1), (8192, 2)):
        k = f"{c // 1024}K"
        left.append((f"transformer, {k} windows", "#d62728", dash, 0,
                     [(x, base["ppl_kjv"][c]) for x in span if c in base["ppl_kjv"]]))
        left.append((f"converted, {k} windows", "#ff7f0e", dash, 7,
                     [(p["tokens"], p["ppl_kjv"][c]) for p in budgets if c in p["ppl_kjv"]]))
    for c, dash in ((1024, 1), (4096, 2)):
        k = f"{c // 1024}K"
        right.append((f"transformer, {k}", "#d62728", dash, 0, [(x, base["niah"][c]) for x in span if c in base["niah"]]))
        right.append((f"converted as orthros, {k}", "#ff7f0e", dash, 7,
                      [(p["tokens"], p["niah_orthros"][c]) for p in budgets if c in p["niah_orthros"]]))
    right.append(("converted as linear, 1K", "#7f7f7f", 1, 6,
                  [(p["tokens"], p["niah_linear"][1024]) for p in budgets if 1024 in p["niah_linear"]]))
    if ctls:
        for c, dash in ((1024, 1), (8192, 2)):
            left.append((f"control transformer, {c // 1024}K windows", "#bcbd22", dash, 13,
                         [(p["tokens"], p["ppl_kjv"][c]) for p in ctls if c in p["ppl_kjv"]]))
        for c, dash in ((1024, 1), (4096, 2)):
            right.append((f"control transformer, {c // 1024}K", "#bcbd22", dash, 13,
                          [(p["tokens"], p["niah"][c]) for p in ctls if c in p["niah"]]))
    # A variant at two budgets or more is a line of its own through its budgets (solid at 1K, dashed at the longer
    # window); a variant at one budget is a marker.
    groups = {}
    for p in variants:
        groups.setdefault(p["variant"], []).append(p)
    lone = [p for p in variants if len(groups[p["variant"]]) == 1]
    for i, (v, ps) in enumerate((v, ps) for v, ps in groups.items() if len(ps) > 1):
        col, pt = colors[(len(colors) - 1 - i) % len(colors)], 9 + 2 * (i % 3)
        ps = sorted(ps, key=lambda p: p["tokens"])
        for c, dash in ((1024, 1), (8192, 2)):
            left.append((f"converted ({v}), {c // 1024}K windows", col, dash, pt,
                         [(p["tokens"], p["ppl_kjv"][c]) for p in ps if c in p["ppl_kjv"]]))
        for c, dash in ((1024, 1), (4096, 2)):
            right.append((f"converted ({v}) as orthros, {c // 1024}K", col, dash, pt,
                          [(p["tokens"], p["niah_orthros"][c]) for p in ps if c in p["niah_orthros"]]))
    for i, p in enumerate(lone):
        col = colors[i % len(colors)]
        x = p["tokens"] * 1.18 ** (i + 1)  # drawn apart from the budget point and each other (log x); the table is exact
        left.append((f"{p['name']} (1K, 8K)", col, 3, 5 + 2 * (i % 4),
                     [(x, p["ppl_kjv"][c]) for c in (1024, 8192) if c in p["ppl_kjv"]]))
        right.append((f"{p['name']} as orthros (1K, 4K)", col, 3, 5 + 2 * (i % 4),
                      [(x, p["niah_orthros"][c]) for c in (1024, 4096) if c in p["niah_orthros"]]))
    return left, right


def write_dat(path, ser):
    with open(path, "w") as f:
        for i, (title, _, _, _, pts) in enumerate(ser):
            if i:
                f.write("\n\n")
            f.write('"' + SAFE.sub("_", title) + '"\n')
            for x, y in pts or [(float("nan"), float("nan"))]:
                f.write(f"{x:.6g} {y:.6g}\n")


def words(ser, k):
    return " ".join(str(s[k]) for s in ser)


def widths(ser):
    return " ".join("1" if s[2] == 3 else "2" for s in ser)


def figure(out, left, right, fmt):
    if not shutil.which("gnuplot"):
        print("efficiency: no gnuplot: the figure is not drawn (the table is written)", file=sys.stderr)
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    scripts = os.path.join(os.path.dirname(here), "plots")
    with tempfile.TemporaryDirectory() as tmp:
        write_dat(os.path.join(tmp, "left.dat"), left)
        write_dat(os.path.join(tmp, "right.dat"), right)
        # Only numbers and words this script made reach gnuplot; the folders are its working directory.
        text = (f"w = 1300\nh = 700\nfmt = '{fmt}'\nout = 'efficiency.{fmt}'\ndat = 'left.dat'\n"
                f"nl = {len(left)}\nnr = {len(right)}\n"
                f"cl = '{words(left, 1)}'\ndl = '{words(left, 2)}'\npl = '{words(left, 3)}'\nwl = '{widths(left)}'\n"
                f"cr = '{words(right, 1)}'\ndr = '{words(right, 2)}'\npr = '{words(right, 3)}'\nwr = '{widths(right)}'\n")
        for name in ("common.gp", "efficiency.gp"):
            with open(os.path.join(scripts, name)) as f:
                text += f.read() + "\n"
        r = subprocess.run(["gnuplot"], input=text, text=True, cwd=tmp, capture_output=True)
        if r.returncode != 0 or not os.path.exists(os.path.join(tmp, f"efficiency.{fmt}")):
            fail(f"gnuplot failed: {r.stderr.strip()[:400]}")
        dest = os.path.join(out, f"efficiency.{fmt}")
        shutil.copyfile(os.path.join(tmp, f"efficiency.{fmt}"), dest)
        for name in ("left.dat", "right.dat"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(out, f"efficiency-{name}"))
    return dest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for efficiency.{md,json,png}")
    ap.add_argument("--base", required=True, help="grid prefix of the base transformer (PREFIX-ppl-kjv.json, ...)")
    ap.add_argument("--summary", action="append", required=True, help="convert/pipeline.py summary.json (repeat)")
    ap.add_argument("--point", action="append", required=True, help="NAME=PREFIX: a conversion and its grid files")
    ap.add_argument("--control", action="append", default=[],
                    help="NAME=PREFIX: the control transformer of budget NAME (job ctl-NAME) and its grid files")
    ap.add_argument("--format", choices=("png", "svg", "pdf"), default="png")
    a = ap.parse_args(argv)
    jobs = jobs_of(a.summary)
    base = {"ppl_kjv": ppl(a.base, "kjv", "transformer"), "ppl_python": ppl(a.base, "python", "transformer"),
            "niah": niah(a.base, "transformer")}
    def each(flag, specs, make):
        out = []
        for spec in specs:
            name, eq, prefix = spec.partition("=")
            if not eq or not prefix:
                fail(f"{flag} {spec}: NAME=PREFIX")
            out.append(make(name, prefix, jobs))
        return out

    pts = each("--point", a.point, point)
    ctls = each("--control", a.control, control)
    if not any(not p["variant"] for p in pts):
        fail("no budget point (a NAME without a variant suffix): nothing to draw a line through")
    os.makedirs(a.out, exist_ok=True)
    md = table(base, pts, ctls)
    with open(os.path.join(a.out, "efficiency.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "efficiency.json"), "w") as f:
        json.dump({"schema": 1, "base": base, "points": pts, "controls": ctls}, f, indent=1)
    sys.stdout.write(md)
    left, right = series(base, pts, ctls)
    dest = figure(a.out, left, right, a.format)
    if dest:
        print(f"efficiency: {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
