#!/usr/bin/env python3
"""A minute's check on the GPU machine before the grid:

    python3 convert/preflight.py --model .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --data build-data/corpus/train.u16.xz [--json "$OUT/preflight.json"]

1. The cuda forward (bf16 autocast, as the training runs it) against the cpu float32 forward on one 512-token window,
   as transformer and as orthros (hedgehog maps at random, W 64, tail 16): the largest difference relative to the
   row's scale, and the share of positions whose argmax agrees.
2. A few steps of each job (stage 1, stage 2 both phases, control) at the pipeline's sizes, timed after a warm-up
   step: tokens a second, peak GPU memory, and the projected GPU-minutes of the default grid.
Exit 0 when nothing failed (the figures are for reading; the thresholds only catch a broken device path).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt, train  # noqa: E402
from convert.data import Tokens  # noqa: E402
from convert.model import Arch, Model  # noqa: E402
from convert.pipeline import unpacked  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per job after one warm-up (default 3)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("preflight: no cuda device")
    data = unpacked(a.data)
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    ok = True

    cfg, sd = ckpt.load_model(a.model)
    ids = Tokens([data], cfg.vocab).batch(1, 512, 7, 0)
    cpu = Model(cfg, {k: v.clone() for k, v in sd.items()})
    gpu = Model(cfg, sd).cuda()
    cpu.init_feature_maps(cfg.head_dim, "kaiming", 3)
    gpu.init_feature_maps(cfg.head_dim, "kaiming", 3)
    gpu.cuda()
    out["device_check"] = {}
    for name, arch in (("transformer", Arch("transformer")),
                       ("orthros", Arch("orthros", "hedgehog", cfg.head_dim, "after", 64, tail=16))):
        with torch.no_grad():
            ref = cpu(ids, arch).float()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                got = gpu(ids.cuda(), arch).float().cpu()
        rel = float(((got - ref).abs().amax(-1) / ref.abs().amax(-1)).max())
        agree = float((got.argmax(-1) == ref.argmax(-1)).float().mean())
        out["device_check"][name] = {"max_rel_diff": rel, "argmax_agreement": agree}
        good = rel < 0.1 and agree > 0.8
        ok &= good
        print(f"preflight: {name}: cuda bf16 vs cpu fp32: max rel diff {rel:.3g}, argmax agreement {agree:.1%} "
              f"{'ok' if good else 'FAIL'}", flush=True)
    del cpu, gpu
    torch.cuda.empty_cache()

    work = tempfile.mkdtemp(prefix="preflight-")
    n = a.steps + 1
    tok = str(n * 32 * 1024)
    common = ["--model", a.model, "--data", data, "--tokens", tok, "--log-every", "1000", "--warmup", "1"]
    jobs = [("stage1", ["stage1", *common, "--out", os.path.join(work, "s1")]),
            ("stage2", ["stage2", *common, "--out", os.path.join(work, "s2"), "--maps", os.path.join(work, "s1"),
                        "--micro-batch", "16"]),
            ("control", ["control", *common, "--out", os.path.join(work, "ctl"), "--micro-batch", "16"])]
    out["jobs"] = {}
    for name, argv in jobs:
        torch.cuda.reset_peak_memory_stats()
        t = time.time()
        rc = train.main(argv)
        wall = time.time() - t
        steps = json.load(open(os.path.join(argv[argv.index("--out") + 1], "log.json")))["steps"]
        timed = steps[1:]
        secs = timed[-1]["seconds"] - steps[0]["seconds"] if timed else float("nan")
        tps = len(timed) * 32 * 1024 / secs if timed else float("nan")
        peak = torch.cuda.max_memory_allocated() / 2 ** 30
        out["jobs"][name] = {"rc": rc, "tokens_per_second": tps, "peak_gib": peak, "wall_seconds": wall,
                             "first_step_seconds": steps[0]["seconds"]}
        ok &= rc == 0
        print(f"preflight: {name}: {tps / 1e3:.0f}K tokens/s, peak {peak:.1f} GiB, first step "
              f"{steps[0]['seconds']:.1f} s, {wall:.0f} s in all (rc {rc})", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    j = out["jobs"]
    grid = {"stage1": 10.5e6, "stage2": 18.5e6, "control": 10.5e6}  # tokens of the default grid
    minutes = sum(grid[k] / j[k]["tokens_per_second"] for k in grid) / 60
    out["projected_grid_gpu_minutes"] = minutes
    print(f"preflight: projected GPU time of the default grid (16M, 4M, 1M, controls, ablation): {minutes:.1f} min "
          "(plus about 10 s of loading per job)")
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)
    print("preflight: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
