#!/usr/bin/env python3
"""Checks convert/'s forward against transformers, the engine and itself. Exit 0 when every check passes.

    .venv/bin/python convert/check_model.py                       # fixture + SmolLM2 (GGUF) + engine, cpu
    .venv/bin/python convert/check_model.py --quick               # llama-tiny only (seconds)

1. data/fixtures/llama-tiny: logits of the `transformer` forward against transformers' LlamaForCausalLM (eager,
   float32) and the fixture's committed logits.f32, and the other fixtures (BF16 with hidden != heads x head_dim,
   MQA with tied embeddings, llama3 rope scaling, F16 shards) against their committed transformers logits: max |diff|
   <= 1e-4.
2. SmolLM2-135M-Instruct (the GGUF; --gguf): convert/ckpt.py's own GGUF reader against transformers' GGUF loader
   (every tensor), and logits against transformers and against the engine's cpu logits (`orthros logits --device
   cpu`): max |diff| <= 1e-3 of the row's scale (max |logit| of the row).
3. The attention kinds the engine runs today (phi before RoPE, no window; elu1 and relu): linear, orthros (tail 4),
   hybrid, on llama-tiny and SmolLM2, against `orthros logits --arch ...` on the cpu, same tolerance.
4. Self-consistency of the converted-model formula (docs/converted-models.md), hedgehog maps at random, random
   gates: the chunked form equals the naive N x N form (W 0, 1, 5, 16, 64, 100; phi before and after RoPE; orthros,
   linear, hybrid), and a window at least as long as the sequence gives the transformer's logits.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt  # noqa: E402
from convert.model import Arch, Model  # noqa: E402

ROOT = ckpt.ROOT
FIXTURE = os.path.join(ROOT, "data", "fixtures", "llama-tiny")
fails = []


def report(name, err, tol):
    ok = err <= tol
    print(f"check_model: {'ok  ' if ok else 'FAIL'} {name}: {err:.3g} (tolerance {tol:g})", flush=True)
    if not ok:
        fails.append(name)


def rel_err(a, b):
    """max over rows of max |a - b| / max |b| (the row's scale)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float((np.abs(a - b).max(-1) / np.maximum(np.abs(b).max(-1), 1e-30)).max())


def engine_logits(orthros, model, tokens, extra=()):
    with tempfile.NamedTemporaryFile(suffix=".f32", delete=False) as f:
        out = f.name
    cmd = [orthros, "logits", "--model", model, "--device", "cpu", "--tokens", ",".join(map(str, tokens)),
           "--out", out, *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        os.unlink(out)
        raise RuntimeError(f"{' '.join(cmd[:8])}...: {r.stderr.strip()}")
    x = np.fromfile(out, dtype=np.float32).reshape(len(tokens), -1)
    os.unlink(out)
    return x


def ours(m, arch, tokens, impl="chunked"):
    with torch.no_grad():
        return m(torch.tensor([tokens]), arch, impl=impl)[0].float().numpy()


def check_kinds_engine(orthros, model_path, m, tokens, tag):
    for fm in ("elu1", "relu"):
        for name, extra, arch in (
                ("linear", [], Arch("linear", fm)),
                ("orthros tail 4", ["--tail", "4"], Arch("orthros", fm, tail=4)),
                ("hybrid every 2", ["--hybrid-every", "2"], Arch("hybrid", fm, hybrid_every=2))):
            e = engine_logits(orthros, model_path, tokens, ["--arch", name.split()[0], "--feature-map", fm, *extra])
            report(f"{tag}: {name} ({fm}) vs the engine", rel_err(ours(m, arch, tokens), e), 1e-3)


def check_formula(m, N, seed=0, windows=(0, 1, 5, 16, 64, 100), chunks=(4, 16, 64)):
    """Chunked == naive on random hedgehog maps and gates; a window >= N gives the transformer's logits."""
    torch.manual_seed(seed)
    c = m.cfg
    m.init_feature_maps(max(1, c.head_dim // 2), init="kaiming", seed=seed)
    for a in m.attn:  # random gates in (0, 1)
        a.gate_logit.data = torch.randn(c.n_heads)
    tokens = torch.randint(0, c.vocab, (2, N))
    worst = 0.0
    with torch.no_grad():
        for rope_side in ("before", "after"):
            for W in windows:
                for arch in (Arch("linear", "hedgehog", feature_map_rope=rope_side, local_window=W),
                             Arch("orthros", "hedgehog", feature_map_rope=rope_side, local_window=W, tail=7),
                             Arch("hybrid", "hedgehog", feature_map_rope=rope_side, local_window=W, hybrid_every=2)):
                    for chunk in chunks:
                        m.chunk = chunk
                        a = m(tokens, arch, impl="chunked").float()
                        b = m(tokens, arch, impl="naive").float()
                        worst = max(worst, rel_err(a.numpy(), b.numpy()))
        m.chunk = 64
        report(f"chunked form == naive form (N {N}, W {list(windows)}, chunks {list(chunks)}, phi before/after, "
               "linear/orthros/hybrid)", worst, 1e-5)
        full = m(tokens, Arch("transformer")).float().numpy()
        for rope_side in ("before", "after"):
            lin = m(tokens, Arch("linear", "hedgehog", feature_map_rope=rope_side, local_window=N)).float().numpy()
            report(f"window W = N ({N}) gives the transformer's logits (phi {rope_side})", rel_err(lin, full), 1e-5)
    for a in m.attn:
        a.fm_q = a.fm_k = a.gate_logit = None


def check_converted_fixture(d):
    """data/fixtures/llama-tiny-converted (issue 24): 32 float64 references of the converted formula (orthros tails 1
    and 4, linear, hybrid; phi before / after RoPE; windows 0, 1, 4, 40), made by data/make_converted_fixture.py
    independently of this code."""
    if not os.path.exists(os.path.join(d, "converted.json")):
        print(f"check_model: skip: no converted fixture at {d}", flush=True)
        return
    import json
    ref = json.load(open(os.path.join(d, "converted.json")))
    tokens = ref["tokens"]
    want = np.fromfile(os.path.join(d, ref["logits_file"]), dtype=np.float32).reshape(ref["logits_shape"])
    cfg, sd = ckpt.load_model(d)
    m = Model(cfg, sd)
    extra = {k: v for k, v in sd.items() if "feature_map" in k or "window_gate" in k}
    m.load_adapter_tensors(extra, None)
    base = Arch.from_json(cfg.orthros, cfg.head_dim)
    worst = {"chunked": 0.0, "naive": 0.0}
    for c in ref["cases"]:
        arch = Arch(c["arch"], base.feature_map, base.feature_dim, c["feature_map_rope"], c["local_window"],
                    c["tail"], c["hybrid_every"] if c["hybrid_every"] > 0 else 4)
        for impl in worst:
            got = ours(m, arch, tokens, impl)
            worst[impl] = max(worst[impl], float(np.abs(got - want[c["index"]]).max()))
    for impl, w in worst.items():
        report(f"llama-tiny-converted: {len(ref['cases'])} float64 references of the formula, {impl} form", w,
               ref.get("tolerance", 1e-4))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orthros", default=os.path.join(ROOT, "build", "orthros"), help="the engine binary")
    ap.add_argument("--gguf", default=os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--quick", action="store_true", help="the fixtures only")
    ap.add_argument("--converted-fixture", default=os.path.join(ROOT, "data", "fixtures", "llama-tiny-converted"),
                    help="issue 24's converted fixture (skipped when absent)")
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    have_engine = os.path.exists(a.orthros)
    if not have_engine:
        print(f"check_model: no engine at {a.orthros}: the engine checks are skipped", flush=True)

    # 1. llama-tiny against transformers and the fixture
    from transformers import LlamaForCausalLM
    cfg, sd = ckpt.load_model(FIXTURE)
    m = Model(cfg, sd)
    import json
    ref = json.load(open(os.path.join(FIXTURE, "ref.json")))
    tokens = ref["tokens"]
    hf = LlamaForCausalLM.from_pretrained(FIXTURE, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.no_grad():
        theirs = hf(torch.tensor([tokens])).logits[0].numpy()
    mine = ours(m, Arch("transformer"), tokens)
    report("llama-tiny transformer vs transformers", float(np.abs(mine - theirs).max()), 1e-4)
    fx = np.fromfile(os.path.join(FIXTURE, "logits.f32"), dtype=np.float32).reshape(len(tokens), -1)
    report("llama-tiny transformer vs the fixture's logits.f32", float(np.abs(mine - fx).max()), 1e-4)
    for name in ("gqa4-bf16-d64", "mqa-d128-tied", "llama3-rope", "sharded-f16"):
        d = os.path.join(ROOT, "data", "fixtures", name)
        r = json.load(open(os.path.join(d, "ref.json")))
        c2, sd2 = ckpt.load_model(d)
        got = ours(Model(c2, sd2), Arch("transformer"), r["tokens"])
        want = np.fromfile(os.path.join(d, r["logits_file"]), dtype=np.float32).reshape(len(r["tokens"]), -1)
        report(f"{name} transformer vs its committed transformers logits", float(np.abs(got - want).max()), 1e-4)
    if have_engine:
        check_kinds_engine(a.orthros, FIXTURE, m, tokens, "llama-tiny")
    check_formula(m, len(tokens))
    check_converted_fixture(a.converted_fixture)
    check_formula(m, 200, seed=1, windows=(0, 63, 64, 65), chunks=(64,))

    if a.quick:
        return finish()
    # 2. SmolLM2 from the GGUF
    if not os.path.exists(a.gguf):
        print(f"check_model: FAIL no GGUF at {a.gguf} (ci/fetch-model.sh)")
        fails.append("gguf")
        return finish()
    from transformers import AutoModelForCausalLM
    cfg, sd = ckpt.load_gguf(a.gguf)
    hfm = AutoModelForCausalLM.from_pretrained(os.path.dirname(a.gguf), gguf_file=os.path.basename(a.gguf),
                                               dtype=torch.float32, attn_implementation="eager").eval()
    hsd = hfm.state_dict()
    worst = 0.0
    for k, v in sd.items():
        worst = max(worst, float((v - hsd[k].float()).abs().max()))
    missing = [k for k in hsd if k not in sd and not (k == "lm_head.weight" and cfg.tie)]
    report(f"SmolLM2 GGUF reader vs transformers' ({len(sd)} tensors, missing {missing[:3]})",
           worst if not missing else float("inf"), 0.0)
    m = Model(cfg, sd)
    prompt = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
              19712, 8182, 2, 198, 1, 4093, 198, 504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 5213, 314]
    mine = ours(m, Arch("transformer"), prompt)
    with torch.no_grad():
        theirs = hfm(torch.tensor([prompt])).logits[0].numpy()
    report("SmolLM2 transformer vs transformers (row scale)", rel_err(mine, theirs), 1e-3)
    if have_engine:
        e = engine_logits(a.orthros, a.gguf, prompt, ["--arch", "transformer"])
        report("SmolLM2 transformer vs the engine's cpu logits (row scale)", rel_err(mine, e), 1e-3)
        check_kinds_engine(a.orthros, a.gguf, m, prompt, "SmolLM2")
    return finish()


def finish():
    print("check_model: " + ("PASS" if not fails else "FAIL: " + "; ".join(fails)))
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
