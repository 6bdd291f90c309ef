#!/usr/bin/env python3
"""The kernel figures of one GPU run side by side: bench_kernels.json (every kernel version by name) against
anchors.json (PyTorch SDPA flash and cuDNN on the same shapes, same run), as ratios: anchor time / our time, so
above 1.0x means ours is faster. Per case the default version and the fastest kept version; the ceilings of the
run (copy, read, GEMM) and the default kernel versions. Standard library only.
usage: python3 bench/kernels/summary.py BENCH_KERNELS.json [ANCHORS.json]
A file that does not have the shape of bench_kernels' (or anchors.py's) output is refused: exit 1, nothing printed but
why. Tested by test_summary.py."""
import contextlib
import io
import json
import sys

# bench_kernels' rows of v8 in another form (the last word of an attn_full_decode_cluster shape): a column each;
# lean=1 in files from before the lean softmax was the default
CLUSTER_FORMS = {"regs=160": " held to 160 registers", "lean=0": " with its softmax as written",
                 "lean=1": " with its lean softmax", "push=1": " with its merge pushed"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"summary: cannot read {path}: {e}", file=sys.stderr)
        return None


def normalise(bench):
    """The records and default versions of a kernel bench file: the bench result format (measurements of kernel
    cells, bench_kernels since it writes that format) or the older {"results": [...]} one."""
    if "measurements" not in bench:
        return bench.get("results", []), bench.get("defaults", {})
    out = []
    for m in bench["measurements"]:
        if "op" not in m or "stats" not in m:
            continue
        med = m["stats"]["median"]
        thr = m.get("throughput", {})
        floor = m.get("floor_s")
        out.append({"op": m["op"], "shape": m["shape"], "median_ms": med * 1e3, "tflops": thr.get("tflops"),
                    "tbps": thr.get("tbps"), "fraction_of_floor": floor / med if floor else None,
                    "case": m.get("case"), "gpu": m.get("gpu")})
    in_use = bench.get("environment", {}).get("device", {}).get("kernels", "")
    defaults = {"in_use": in_use} if in_use else {}
    for part in in_use.split(","):
        words = part.split()
        if len(words) == 2 and words[1].startswith("v"):
            defaults[words[0]] = words[1][1:]
    return out, defaults


def fmt_ms(x):
    return "-" if x is None else f"{x:.3f}"


def ratio(anchor, ours):
    return "-" if anchor is None or ours is None or ours <= 0 else f"{anchor / ours:.2f}x"


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bench = load(sys.argv[1])
    if bench is None:
        return 1
    anchors = load(sys.argv[2]) if len(sys.argv) > 2 else None
    if len(sys.argv) > 2 and anchors is None:
        return 1
    # The report is written to a buffer and printed whole: a file of another shape (a field missing or of another
    # type) is refused with the reason, without a partial table.
    out = io.StringIO()
    try:
        if not isinstance(bench, dict) or (anchors is not None and not isinstance(anchors, dict)):
            raise TypeError("not a JSON object")
        with contextlib.redirect_stdout(out):
            rc = report(bench, anchors)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        names = sys.argv[1] + (f" or {sys.argv[2]}" if len(sys.argv) > 2 else "")
        print(f"summary: {names}: not the output of bench_kernels (or anchors.py) this reads: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(out.getvalue())
    return rc


def report(bench, anchors):
    results, defs = normalise(bench)
    ceil = {r["op"]: r for r in results if r.get("op", "").startswith("ceiling_")}
    copy = ceil.get("ceiling_copy", {}).get("tbps")
    read = ceil.get("ceiling_read", {}).get("tbps")
    gemm = ceil.get("ceiling_gemm_bf16", {}).get("tflops")
    line = "ceilings:"
    if copy:
        line += f" copy {copy:.2f} TB/s,"
    if read:
        line += f" read {read:.2f} TB/s,"
    if gemm:
        line += f" GEMM {gemm:.0f} TFLOP/s"
    print(line.rstrip(","))
    if anchors:
        extra = []
        for k, name, unit in (("copy_tbps", "copy", "TB/s"), ("read_tbps", "read (sum)", "TB/s"),
                              ("gemm_tflops", "GEMM", "TFLOP/s")):
            if k in anchors:
                extra.append(f"{name} {anchors[k]:.2f} {unit}")
        print("anchors' ceilings (PyTorch): " + ", ".join(extra))
    if defs:
        print(f"default kernel versions: attn_prefill v{defs.get('attn_prefill')}, attn_decode v{defs.get('attn_decode')}, "
              f"linear_prefill v{defs.get('linear_prefill')} (backend: {defs.get('in_use', '?')})")

    # The GPU at the end of each cell (bench_kernels since it records it): the SM clock range and what held it.
    gpus = [r["gpu"] for r in results if isinstance(r.get("gpu"), dict)]
    clocks = [g["sm_clock_mhz"] for g in gpus if isinstance(g.get("sm_clock_mhz"), (int, float))]
    if clocks:
        held = {}
        for g in gpus:
            for reason in str(g.get("clock_limits", "")).split(","):
                if reason and reason not in ("none", "gpu_idle"):
                    held[reason] = held.get(reason, 0) + 1
        top = max((g.get("sm_clock_max_mhz") for g in gpus if isinstance(g.get("sm_clock_max_mhz"), (int, float))),
                  default=None)
        why = ", ".join(f"{k} {v}" for k, v in sorted(held.items())) or "none"
        print(f"GPU at the end of the {len(gpus)} cells: SM {min(clocks):.0f}-{max(clocks):.0f}"
              f"{f' of {top:.0f}' if top else ''} MHz; cells whose clock was held, by reason: {why}")

    # Ours per (kind, d, ctx, batch), window 0 and (prefill) from position 0: the default's time and the best.
    ours = {}
    for r in results:
        c = r.get("case")
        if not c or c.get("window", 0) or c.get("kind") not in ("prefill", "decode"):
            continue
        if c["kind"] == "prefill" and c.get("pos0", 0):
            continue
        key = (c["kind"], int(c["head_dim"]), int(c["ctx"]), int(c["batch"]))
        e = ours.setdefault(key, {"default": None, "best": None, "versions": {}})
        ms = r["median_ms"]
        e["versions"][c["version"]] = min(ms, e["versions"].get(c["version"], ms))
        if c.get("default") and (e["default"] is None or ms < e["default"][1]):
            e["default"] = (c["version"], ms, r.get("fraction_of_floor"))
        if e["best"] is None or ms < e["best"][1]:
            e["best"] = (c["version"], ms, r.get("fraction_of_floor"))
    anc = {}
    for a in (anchors or {}).get("cases", []):
        key = (a["op"], int(a["head_dim"]), int(a["ctx"]), int(a["batch"]))
        anc.setdefault(key, {})[a["backend"]] = a["median_s"] * 1e3

    keys = sorted(set(ours) | set(anc), key=lambda k: (k[0] != "prefill", k[1], k[3], k[2]))
    print()
    print(f"{'case':26s} {'default':>13s} {'best':>13s} {'flash':>8s} {'cuDNN':>8s} "
          f"{'dflt/flash':>10s} {'dflt/cuDNN':>10s} {'best/faster':>11s} {'floor%':>7s}")
    for k in keys:
        kind, d, ctx, b = k
        if k not in ours:
            continue
        e = ours[k]
        a = anc.get(k, {})
        fl, cu = a.get("flash"), a.get("cudnn")
        faster = min([x for x in (fl, cu) if x is not None], default=None)
        dv = e["default"]
        bv = e["best"]
        name = f"{kind} d{d} {ctx // 1024}K" + (f" B{b}" if kind == "decode" else "")
        dtxt = f"v{dv[0]} {dv[1]:.3f}" if dv else "-"
        btxt = f"v{bv[0]} {bv[1]:.3f}" if bv else "-"
        floor = f"{100 * bv[2]:.0f}%" if bv and bv[2] else "-"
        print(f"{name:26s} {dtxt:>13s} {btxt:>13s} {fmt_ms(fl):>8s} {fmt_ms(cu):>8s} "
              f"{ratio(fl, dv[1] if dv else None):>10s} {ratio(cu, dv[1] if dv else None):>10s} "
              f"{ratio(faster, bv[1] if bv else None):>11s} {floor:>7s}")
    print("(ratios: anchor time / our time, above 1.00x ours is faster; floor%: the best version's fraction of its "
          "floor, decode against the read ceiling)")

    # Every version of each op by name: the per-version table the defaults are chosen from.
    print()
    print("every version by name (ms):")
    for k in keys:
        if k in ours and len(ours[k]["versions"]) > 1:
            vs = ", ".join(f"v{v} {ms:.3f}" for v, ms in sorted(ours[k]["versions"].items()))
            print(f"  {k[0]} d{k[1]} {k[2] // 1024}K B{k[3]}: {vs}")

    # Sliding-window prefill and linear prefill: against our own versions (no SDPA anchor for these).
    others = [r for r in results if r.get("case") and (r["case"].get("window") or r["case"]["kind"].startswith("linear"))]
    if others:
        print()
        for r in others:
            print(f"{r['op']:22s} {r['shape']:52s} {r['median_ms']:9.3f} ms  {100 * (r.get('fraction_of_floor') or 0):5.1f}% of floor")

    # A converted model's local window (attn_linear_window): W 64 against W 0 of the same run; the target is 1.5x.
    win = {}
    for r in results:
        c = r.get("case")
        if r["op"] == "attn_linear_window" and c:
            win[(int(c["head_dim"]), int(c["ctx"]), int(c.get("window", 0)))] = r["median_ms"]
    for (d, n, w), ms in sorted(win.items()):
        base = win.get((d, n, 0))
        if w and base:
            print(f"local window {w} against none, d{d} {n // 1024}K: {ms:.3f} / {base:.3f} ms = {ms / base:.2f}x "
                  "(target: at most 1.50x)")

    # The window pass alone (attn_linear_window_pass) by version, against the prediction written before it ran
    # (docs/kernels.md, "The local window pass"): v2 at 128K, W 64.
    predicted = {(64, 131072, 64, 2): 0.52, (128, 131072, 64, 2): 1.04}
    for r in results:
        c = r.get("case")
        if r["op"] != "attn_linear_window_pass" or not c:
            continue
        key = (int(c["head_dim"]), int(c["ctx"]), int(c.get("window", 0)), int(c.get("version", 0)))
        note = f" (predicted ~{predicted[key]:.2f} ms)" if key in predicted else ""
        print(f"window pass v{key[3]} d{key[0]} {key[1] // 1024}K W {key[2]}: {r['median_ms']:.3f} ms, "
              f"{100 * (r.get('fraction_of_floor') or 0):.0f}% of its floor{note}")

    # The decode split plan against fixed split counts (attn_full_decode_splits): the planned row and the fastest.
    splits = [r for r in results if r["op"] == "attn_full_decode_splits" and r.get("case")]
    if splits:
        print()
        print("decode split counts (ms; 'planned' is the default plan's pick):")
        groups = {}
        for r in splits:
            c = r["case"]
            groups.setdefault((int(c["head_dim"]), int(c["ctx"]), int(c["batch"])), []).append(r)
        for (d, n, b), rs in sorted(groups.items()):
            row = ", ".join(f"{r['shape'].split()[-1]} {r['median_ms']:.3f}" for r in rs)
            best = min(rs, key=lambda r: r["median_ms"])
            print(f"  decode d{d} {n // 1024}K B{b}: {row}; fastest {best['shape'].split()[-1]}")

    # The decode step's matrix-vector products (op gemv): per projection cuBLAS, the GEMV kernel (ORTHROS_GEMV=1) and
    # the fused op of the FUSED decode mode, in ms and % of the floor (the weights over the read ceiling); then the
    # step's products summed (every layer's four and the head), against the prediction of docs/kernels.md.
    gemv = [r for r in results if r["op"] == "gemv" and len(r["shape"].split()) == 6]
    if gemv:
        layers = {"1B": 16, "8B": 32}
        # docs/kernels.md, "Whole-model decode": the fused ops' share of the floor over a step's products
        predicted = {("1B", 1): 0.85, ("8B", 1): 0.85, ("1B", 16): 0.75, ("8B", 16): 0.75}
        table = {}
        for r in gemv:
            w = r["shape"].split()
            model, proj, n, kind = w[0], w[1], int(w[2][2:]), w[5]
            frac = r.get("fraction_of_floor")
            table.setdefault((model, n), {}).setdefault(proj, {})[kind] = (r["median_ms"], r["median_ms"] * frac if frac else None)
        print()
        print("decode matrix-vector products (ms and % of the floor, the weights over the read ceiling):")
        print(f"  {'shape':22s} {'floor':>8s} {'cuBLAS':>15s} {'GEMV':>15s} {'fused':>15s}")
        for (model, n), projs in sorted(table.items()):
            total = {"cublas": 0.0, "gemv": 0.0, "fused": 0.0}
            floor_total = 0.0
            for proj in ("qkv", "o", "gate_up", "down", "head"):
                e = projs.get(proj, {})
                times = 1 if proj == "head" else layers.get(model, 1)
                floor = next((v[1] for v in e.values() if v[1]), None)
                cells = []
                for kind in ("cublas", "gemv", "fused"):
                    if kind in e:
                        ms = e[kind][0]
                        total[kind] += times * ms
                        cells.append(f"{ms:.4f} {100 * floor / ms:3.0f}%" if floor else f"{ms:.4f}")
                    else:
                        cells.append("-")
                if floor:
                    floor_total += times * floor
                name = f"{model} {proj} n={n}"
                print(f"  {name:22s} {f'{floor:.4f}' if floor else '-':>8s} "
                      f"{cells[0]:>15s} {cells[1]:>15s} {cells[2]:>15s}")
            pct = {k: (100 * floor_total / v if v else 0) for k, v in total.items()}
            pred = predicted.get((model, n))
            print(f"  {model} n={n} step ({layers.get(model, 1)} layers + head): floor {floor_total:.3f} ms; cuBLAS "
                  f"{total['cublas']:.3f} ms ({pct['cublas']:.0f}%), GEMV {total['gemv']:.3f} ({pct['gemv']:.0f}%), fused "
                  f"{total['fused']:.3f} ({pct['fused']:.0f}%)" + (f"; predicted fused >= {100 * pred:.0f}%" if pred else ""))

    # Decode v7 against v8 (attn_full_decode_cluster, --only decode_cluster): per shape both, and for v8 the version
    # the call ran (v8's clusters, or v7 where they do not fit one wave) and its split count (the cluster size).
    clus = {}
    for r in results:
        c = r.get("case")
        if r["op"] != "attn_full_decode_cluster" or not c:
            continue
        w = r["shape"].split()  # B=1 cache=4096 Hq=32 Hkv=8 d=64 v8 ran v8 splits=9 [regs=160 | lean=0 | push=1 ...]
        key = w[5] + CLUSTER_FORMS.get(w[-1], "")
        clus.setdefault((int(c["head_dim"]), int(c["batch"]), int(c["ctx"])), {})[key] = (r["median_ms"], w[7], w[8])
    if clus:
        print()
        print("decode attention v7 against v8, the clusters (ms a call; v7 / v8 above 1.00x: v8 faster):")
        for (d, b, n), e in sorted(clus.items()):
            v7, v8 = e.get("v7"), e.get("v8")
            txt = f"  d{d} B{b} {n // 1024}K: v7 {fmt_ms(v7[0] if v7 else None)}, v8 {fmt_ms(v8[0] if v8 else None)}"
            if v8:
                txt += f" (ran {v8[1]}, {v8[2]})"
            txt += f" = {v7[0] / v8[0]:.2f}x" if v7 and v8 else ""
            for form in CLUSTER_FORMS.values():
                alt = e.get("v8" + form)
                if alt:
                    txt += f"; v8{form} {fmt_ms(alt[0])}"
                    txt += f" (v8 / it {v8[0] / alt[0]:.2f}x)" if v8 else ""
            print(txt)

    # The read patterns of mem_read.cu (the ceiling reads with variant 0): which reaches the HBM's rate.
    probes = [r for r in results if r["op"] == "read_probe"]
    if probes:
        print()
        print("read patterns over 4 GiB (the read ceiling uses variant 0):")
        for r in probes:
            tb = r.get("tbps")
            print(f"  {r['shape']:72s} {r['median_ms']:8.3f} ms  {'-' if tb is None else f'{tb:.2f}'} TB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
