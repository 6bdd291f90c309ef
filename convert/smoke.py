#!/usr/bin/env python3
"""The cpu smoke run of the whole recipe on data/fixtures/llama-tiny (no GPU, well under a minute):

    .venv/bin/python convert/smoke.py

Makes a small token file (a seeded, learnable stream over the fixture's 256-token vocabulary), then runs stage 1,
stage 2 in both phases, stage 2 linear-phase-only and the control, and checks: losses fall; a run stopped by
--max-seconds and resumed ends with the very tensors of an uninterrupted run; every adapter directory has the files,
config fields, tensor names, shapes and lora_alpha of docs/converted-models.md; convert/logits.py gives the
adapter's logits; the trained Orthros model with a window as long as the prompt gives the transformer's logits
(the LoRA deltas merged in both). Prints 'N passed, N failed' and exits 0 when everything passed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt, train  # noqa: E402
from convert.model import Arch, build  # noqa: E402

ROOT = ckpt.ROOT
FIXTURE = os.path.join(ROOT, "data", "fixtures", "llama-tiny")
passed, failed = 0, 0


def check(name, ok, detail=""):
    global passed, failed
    print(f"smoke: {'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


def make_tokens(path, n=60000, seed=3):
    """A stream a tiny model can learn: random 'words' from a fixed lexicon of short token sequences."""
    rng = np.random.default_rng(seed)
    lex = [rng.integers(3, 256, size=rng.integers(2, 6)) for _ in range(40)]
    out = []
    while sum(len(x) for x in out) < n:
        out.append(lex[int(rng.zipf(1.5)) % 40])
    np.concatenate(out)[:n].astype("<u2").tofile(path)


def run(argv):
    t = time.time()
    rc = train.main(argv)
    return rc, time.time() - t


def losses(job_dir, key="loss"):
    return [r[key] for r in json.load(open(os.path.join(job_dir, "log.json")))["steps"]]


def adapter_ok(d, maps, lora, cfg):
    acfg = json.load(open(os.path.join(d, "config.json")))
    _, t, alpha = ckpt.load_adapter(d)
    problems = []
    base = acfg.get("orthros_base", {})
    if not base.get("path") or len(base.get("sha256", "")) != 64:
        problems.append("orthros_base")
    o = acfg.get("orthros", {})
    if maps:
        for k, v in (("architecture", "orthros"), ("feature_map", "hedgehog"), ("feature_map_rope", "after")):
            if o.get(k) != v:
                problems.append(f"orthros.{k}={o.get(k)}")
        for k in ("feature_dim", "local_window", "tail"):
            if not isinstance(o.get(k), int):
                problems.append(f"orthros.{k}")
    H, K, d = cfg.n_heads, cfg.n_kv, cfg.head_dim
    for i in range(cfg.layers):
        p = f"model.layers.{i}.self_attn."
        if maps:
            F2 = o.get("feature_dim")
            if tuple(t.get(p + "feature_map_q.weight", torch.empty(0)).shape) != (H, d, F2):
                problems.append(p + "feature_map_q.weight")
            if tuple(t.get(p + "feature_map_k.weight", torch.empty(0)).shape) != (K, d, F2):
                problems.append(p + "feature_map_k.weight")
            g = t.get(p + "window_gate", torch.empty(0))
            if tuple(g.shape) != (H,) or not bool(((g > 0) & torch.isfinite(g)).all()):
                problems.append(p + "window_gate")
        if lora:
            for n, (o_, i_) in (("q_proj", (H * d, cfg.hidden)), ("k_proj", (K * d, cfg.hidden)),
                                ("v_proj", (K * d, cfg.hidden)), ("o_proj", (cfg.hidden, H * d))):
                A, B = t.get(p + n + ".lora_A.weight"), t.get(p + n + ".lora_B.weight")
                if A is None or B is None or tuple(A.shape) != (8, i_) or tuple(B.shape) != (o_, 8):
                    problems.append(p + n + " lora")
    if lora and alpha != 16.0:
        problems.append(f"lora_alpha {alpha}")
    if not lora and any("lora_" in k for k in t):
        problems.append("unexpected lora tensors")
    return problems


def main():
    t0 = time.time()
    torch.set_num_threads(1)  # the machine is shared: one thread is the fastest here
    work = tempfile.mkdtemp(prefix="convert-smoke-")
    data = os.path.join(work, "train.u16")
    make_tokens(data)
    cfg, _ = ckpt.load_model(FIXTURE)
    common = ["--model", FIXTURE, "--data", data, "--seq", "64", "--batch", "8",
              "--device", "cpu", "--warmup", "2", "--log-every", "1000"]
    s1 = os.path.join(work, "s1")
    rc, dt = run(["stage1", *common, "--out", s1, "--tokens", str(15 * 8 * 64), "--window", "8",
                  "--feature-dim", "8"])
    l1 = losses(s1)
    check("stage1 runs to the end", rc == 0, f"{len(l1)} steps, {dt:.1f} s")
    check("stage1 attention-transfer loss falls", np.mean(l1[-3:]) < 0.95 * np.mean(l1[:3]),
          f"{np.mean(l1[:3]):.4g} -> {np.mean(l1[-3:]):.4g}")
    check("stage1 adapter is as docs/converted-models.md says",
          not adapter_ok(os.path.join(s1, "adapter"), True, False, cfg), ", ".join(
              adapter_ok(os.path.join(s1, "adapter"), True, False, cfg)))

    ft = ["--tokens", str(16 * 8 * 64), "--lr", "3e-3"]
    s2 = os.path.join(work, "s2")
    rc, dt = run(["stage2", *common, *ft, "--out", s2, "--maps", s1, "--tail-min", "4", "--tail-max", "16",
                  "--micro-batch", "4"])
    l2 = losses(s2, "ce")
    check("stage2 (both phases) runs to the end", rc == 0, f"{len(l2)} steps, {dt:.1f} s")
    check("stage2 cross-entropy falls", np.mean(l2[-3:]) < np.mean(l2[:3]), f"{np.mean(l2[:3]):.4g} -> "
          f"{np.mean(l2[-3:]):.4g}")
    rec = json.load(open(os.path.join(s2, "log.json")))["steps"][0]
    check("stage2 logs both phases' losses and the tail", all(k in rec for k in ("ce_linear", "ce_tail", "tail")))
    probs = adapter_ok(os.path.join(s2, "adapter"), True, True, cfg)
    check("stage2 adapter is as docs/converted-models.md says", not probs, ", ".join(probs))

    # the same job stopped after its first step by --max-seconds, then resumed: the very same tensors
    s2r = os.path.join(work, "s2r")
    rc1, _ = run(["stage2", *common, *ft, "--out", s2r, "--maps", s1, "--tail-min", "4", "--tail-max", "16",
                  "--micro-batch", "4", "--max-seconds", "0.001"])
    n1 = len(losses(s2r))
    rc2, _ = run(["stage2", *common, *ft, "--out", s2r, "--maps", s1, "--tail-min", "4", "--tail-max", "16",
                  "--micro-batch", "4", "--resume"])
    _, ta, _ = ckpt.load_adapter(os.path.join(s2, "adapter"))
    _, tb, _ = ckpt.load_adapter(os.path.join(s2r, "adapter"))
    same = ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta)
    check("--max-seconds stops (status 3) and --resume ends with an uninterrupted run's tensors",
          rc1 == train.STOPPED and rc2 == 0 and 0 < n1 < len(l2) and same, f"stopped after {n1} steps")

    s2l = os.path.join(work, "s2lin")
    rc, dt = run(["stage2", *common, *ft, "--out", s2l, "--maps", s1, "--phases", "linear"])
    rec = json.load(open(os.path.join(s2l, "log.json")))
    check("stage2 --phases linear runs, and sees no tail", rc == 0 and "tail" not in rec["steps"][0] and
          rec["recipe"]["phases"] == "linear", f"{dt:.1f} s")
    ctl = os.path.join(work, "control")
    rc, dt = run(["control", *common, *ft, "--out", ctl])
    lc = losses(ctl, "ce")
    probs = adapter_ok(os.path.join(ctl, "adapter"), False, True, cfg)
    check("control runs, its loss falls, its adapter has LoRA only",
          rc == 0 and np.mean(lc[-3:]) < np.mean(lc[:3]) and not probs, ", ".join(probs))

    # convert/logits.py on the stage-2 adapter (base resolved from the adapter's config)
    ids = list(range(5, 45))
    out = os.path.join(work, "l.f32")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "convert", "logits.py"), "--adapter",
                        os.path.join(s2, "adapter"), "--tokens", ",".join(map(str, ids)), "--out", out, "--quiet"],
                       capture_output=True, text=True)
    m, arch = build(None, os.path.join(s2, "adapter"))
    with torch.no_grad():
        ref = m(torch.tensor([ids]), arch)[0].numpy()
        got = np.fromfile(out, dtype="<f4").reshape(len(ids), -1) if r.returncode == 0 else None
        check("convert/logits.py writes the adapter's logits", got is not None and np.abs(got - ref).max() == 0,
              r.stderr.strip()[-200:] if r.returncode else "")
        full = m(torch.tensor([ids]), Arch("transformer"))[0].numpy()
        wide = m(torch.tensor([ids]), Arch(**{**arch.__dict__, "name": "linear", "local_window": len(ids)}))[0].numpy()
        check("the trained model with W = prompt length gives the transformer's logits",
              np.abs(wide - full).max() < 1e-4, f"{np.abs(wide - full).max():.2g}")
        check("the trained model as orthros differs from the transformer (the maps are used)",
              np.abs(ref - full).max() > 1e-3)
        # RoPE offsets (train.py --rope-offset-max): softmax attention is blind to them, maps after RoPE are not
        shifted = m(torch.tensor([ids]), Arch("transformer"), offset=300)[0].numpy()
        check("the transformer's logits at RoPE offset 300 equal offset 0's", np.abs(shifted - full).max() < 1e-4,
              f"{np.abs(shifted - full).max():.2g}")
        moved = m(torch.tensor([ids]), arch, offset=300)[0].numpy()
        check("the converted model's logits move with the RoPE offset (maps after RoPE)",
              np.abs(moved - ref).max() > 1e-3, f"{np.abs(moved - ref).max():.2g}")
    so = os.path.join(work, "s1-offset")
    rc, dt = run(["stage1", *common, "--out", so, "--tokens", str(15 * 8 * 64), "--window", "8", "--feature-dim", "8",
                  "--rope-offset-max", "512"])
    lo = losses(so)
    rec = json.load(open(os.path.join(so, "log.json")))
    _, t_plain, _ = ckpt.load_adapter(os.path.join(s1, "adapter"))
    _, t_off, _ = ckpt.load_adapter(os.path.join(so, "adapter"))
    check("stage1 --rope-offset-max runs, its loss falls, it is logged and trains other maps",
          rc == 0 and np.mean(lo[-3:]) < 0.95 * np.mean(lo[:3]) and rec["recipe"].get("rope_offset_max") == 512 and
          any(not torch.equal(t_plain[k], t_off[k]) for k in t_plain), f"{dt:.1f} s")
    si = os.path.join(work, "s1-init")
    rc, dt = run(["stage1", *common, "--out", si, "--tokens", str(2 * 8 * 64), "--window", "8", "--feature-dim", "8",
                  "--init-maps", os.path.join(s1, "adapter"), "--lr", "1e-12", "--warmup", "1"])
    _, t_init, _ = ckpt.load_adapter(os.path.join(si, "adapter"))
    check("stage1 --init-maps starts from an adapter's maps and gates (at lr 1e-12 it ends with the same tensors)",
          rc == 0 and t_init.keys() == t_plain.keys() and all(torch.equal(t_init[k], t_plain[k]) for k in t_plain),
          f"{dt:.1f} s")
    # the pipeline's plan: --fm-before brings its ablation, --only keeps the named jobs and refuses unknown ones
    from convert import pipeline
    import argparse
    pa = argparse.Namespace(budgets="16M", controls="none", no_ablation=False, seq=1024, ft_micro_batch=16, runs=work,
                            tail_min=64, tail_max=256, rope_offset_max=0, fm_before=True, long=0,
                            variant=["L4096-before"])
    plan = pipeline.plan(pa)
    names = [j[0] for j in plan]
    combo = dict((j[0], j[2]) for j in plan).get("s1-16M-L4096-before", [])
    only = subprocess.run([sys.executable, os.path.join(ROOT, "convert/pipeline.py"), "--model", "m", "--data", "d.u16",
                           "--runs", os.path.join(work, "plan"), "--budgets", "16M", "--fm-before", "--only",
                           "s2-16M-before,nosuch"], capture_output=True, text=True)
    check("pipeline: --fm-before adds s2lin-16M-before, --variant L4096-before combines two variants; --only refuses a "
          "job the plan lacks",
          names[-5:] == ["s1-16M-before", "s2-16M-before", "s2lin-16M-before", "s1-16M-L4096-before",
                         "s2-16M-L4096-before"] and "4096" in combo and "before" in combo and only.returncode != 0 and
          "no job nosuch" in only.stderr, f"{names}; {only.stderr.strip()[-120:]}")
    # the teacher sampler's KV-cache decode, greedy (top-p ~ 0), against argmax of full recomputes
    from convert.sample_teacher import sample
    m, _ = build(FIXTURE)
    prefix = torch.tensor([[5, 17, 99, 3], [42, 42, 7, 200]])
    with torch.no_grad():
        got = sample(m, prefix, 12, 1.0, 1e-9, torch.Generator().manual_seed(0))
        ids = prefix
        for _ in range(12):
            nxt = m(ids, Arch("transformer"))[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
    check("sample_teacher's cached decode (greedy) equals full recomputes", torch.equal(got, ids[:, 4:]))
    print(f"smoke: {time.time() - t0:.1f} s" + (f", work directory kept: {work}" if failed else ""))
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
