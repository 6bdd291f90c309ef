#!/usr/bin/env python3
"""The engine against the conversion code on a converted model: logits of every position, and greedy text.

    .venv/bin/python convert/parity.py --adapter build-data/runs/s2-16M/adapter --orthros build/orthros
    .venv/bin/python convert/parity.py --adapter DIR --via adapter      # the engine loads the adapter itself

--via merged (default, works without the engine's adapter loader): the base model with the adapter merged in
float32 (W + (alpha / r) B A, feature maps and gates as checkpoint tensors, the adapter's `orthros` object in
config.json) is written as a Hugging Face directory in a temporary folder, and `orthros logits --model THAT` runs
on the cpu. --via adapter: `orthros logits --model ADAPTER_DIR` (docs/converted-models.md). Either way the engine's
logits are compared with convert/'s for each prompt under orthros (tail 1 and 4), linear and hybrid, and the greedy
continuation (--max-new tokens, orthros) of both is compared token for token. Pass: every row within --tol of its
scale (max |logit|) and equal greedy tokens. --write-ref DIR also writes DIR/parity.json: per case 8 positions with
the row scale and the 64 largest logits of convert/, and the greedy tokens (the small reference of the CI test
converted_model_parity).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt  # noqa: E402
from convert.model import Arch, build  # noqa: E402

def prompts(vocab):
    """A short text, then prompts longer than a 64-token window: seeded random ids, and a text repeated."""
    text = [504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 5213, 314]
    text = [t % vocab for t in text]
    g = np.random.default_rng(5)
    return [text, [int(x) for x in g.integers(3, vocab, 150)], (text * 20)[:200]]


def merged_dir(base, adapter, out):
    """base + adapter as one Hugging Face directory (what `orthros export` of the adapter would write)."""
    from safetensors.torch import save_file
    acfg, tensors, alpha = ckpt.load_adapter(adapter)
    cfg, sd = ckpt.load_model(base)
    for k in [k for k in tensors if k.endswith(".lora_A.weight")]:
        w = k[:-len(".lora_A.weight")] + ".weight"
        A, B = tensors.pop(k), tensors.pop(k.replace("lora_A", "lora_B"))
        sd[w] = sd[w] + (alpha / A.shape[0]) * (B @ A)
    sd.update(tensors)
    if cfg.tie:
        sd.pop("lm_head.weight", None)
    raw = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": cfg.hidden,
           "intermediate_size": cfg.ffn, "num_hidden_layers": cfg.layers, "num_attention_heads": cfg.n_heads,
           "num_key_value_heads": cfg.n_kv, "head_dim": cfg.head_dim, "vocab_size": cfg.vocab,
           "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_theta, "tie_word_embeddings": cfg.tie,
           "max_position_embeddings": int(cfg.raw.get("max_position_embeddings", 8192)), "hidden_act": "silu",
           "attention_bias": False, "mlp_bias": False, "bos_token_id": cfg.bos, "eos_token_id": cfg.eos,
           "orthros": (acfg or {}).get("orthros", {})}
    if cfg.rope_scaling:
        raw["rope_scaling"] = cfg.rope_scaling
    os.makedirs(out, exist_ok=True)
    json.dump(raw, open(os.path.join(out, "config.json"), "w"), indent=1)
    save_file({k: v.contiguous() for k, v in sd.items()}, os.path.join(out, "model.safetensors"))
    return out


def engine(orthros, model, tokens, extra):
    with tempfile.NamedTemporaryFile(suffix=".f32", delete=False) as f:
        path = f.name
    r = subprocess.run([orthros, "logits", "--model", model, "--device", "cpu", "--tokens",
                        ",".join(map(str, tokens)), "--out", path, *extra], capture_output=True, text=True)
    if r.returncode:
        os.unlink(path)
        raise SystemExit(f"parity: orthros logits failed: {r.stderr.strip()}")
    x = np.fromfile(path, dtype="<f4").reshape(len(tokens), -1)
    os.unlink(path)
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adapter", required=True, help="adapter directory")
    ap.add_argument("--model", help="base model (default: the adapter's orthros_base)")
    ap.add_argument("--orthros", default=os.path.join(ckpt.ROOT, "build", "orthros"))
    ap.add_argument("--via", choices=["merged", "adapter"], default="merged")
    ap.add_argument("--max-new", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--write-ref", help="write prompts, logits and greedy tokens of convert/ here")
    a = ap.parse_args()
    base = a.model or ckpt.resolve_base(a.adapter, json.load(open(os.path.join(a.adapter, "config.json"))))
    m, arch = build(base, a.adapter)
    work = tempfile.mkdtemp(prefix="parity-")
    target = merged_dir(base, a.adapter, os.path.join(work, "merged")) if a.via == "merged" else a.adapter
    worst, same, ref, greedy = 0.0, True, [], []
    cases = [("orthros tail 1", Arch(**{**arch.__dict__, "name": "orthros", "tail": 1}), ["--arch", "orthros"]),
             ("orthros tail 4", Arch(**{**arch.__dict__, "name": "orthros", "tail": 4}), ["--arch", "orthros",
                                                                                        "--tail", "4"]),
             ("linear", Arch(**{**arch.__dict__, "name": "linear"}), ["--arch", "linear"]),
             ("hybrid", Arch(**{**arch.__dict__, "name": "hybrid"}), ["--arch", "hybrid"])]
    for p in prompts(m.cfg.vocab):
        for name, ar, extra in cases:
            with torch.no_grad():
                ours = m(torch.tensor([p]), ar)[0].numpy()
            theirs = engine(a.orthros, target, p, extra)
            err = float((np.abs(ours - theirs).max(-1) / np.abs(ours).max(-1)).max())
            worst = max(worst, err)
            print(f"parity: prompt of {len(p)} tokens, {name}: max |diff| / row scale {err:.3g}", flush=True)
            ref.append({"prompt": p, "case": name, "args": extra, "logits": ours})
        # greedy text under orthros (tail 1 for the prompt, then decode = full attention over the cache)
        ids, ours_gen, theirs_gen = list(p), [], []
        for _ in range(a.max_new):
            with torch.no_grad():
                lg = m(torch.tensor([ids]), Arch(**{**arch.__dict__, "name": "orthros",
                                                     "tail": len(ids) - len(p) + 1}))[0, -1]
            ours_gen.append(int(lg.argmax()))
            ids.append(ours_gen[-1])
        r = subprocess.run([a.orthros, "generate", "--model", target, "--device", "cpu", "--arch", "orthros",
                            "--tokens", ",".join(map(str, p)), "--max-new", str(a.max_new)], capture_output=True,
                           text=True)
        if r.returncode == 0:
            theirs_gen = json.loads(r.stdout.strip().splitlines()[-1])["generated"][:a.max_new]
        ok = theirs_gen == ours_gen[:len(theirs_gen)] and len(theirs_gen) > 0
        same &= ok
        print(f"parity: greedy {ours_gen} (convert/) vs {theirs_gen} (engine): {'same' if ok else 'DIFFER'}")
        greedy.append({"prompt": p, "generated": ours_gen})
    if a.write_ref:
        # A small reference for CI (no PyTorch there): per case, 8 positions spread over the prompt, each with its
        # row scale (max |logit|) and the 64 largest logits by index; the greedy tokens of each prompt.
        cases = []
        for r in ref:
            lg, n = r["logits"], len(r["prompt"])
            rows = []
            for j in sorted({int(round(k * (n - 1) / 7)) for k in range(8)}):
                top = np.argsort(-lg[j])[:64]
                rows.append({"position": j, "scale": float(np.abs(lg[j]).max()), "ids": [int(i) for i in top],
                             "logits": [float(lg[j][i]) for i in top]})
            cases.append({"case": r["case"], "args": r["args"], "prompt": r["prompt"], "rows": rows})
        out = {"made_with": "convert/parity.py --write-ref (convert/model.py, float32, cpu)",
               "adapter": os.path.relpath(os.path.abspath(a.adapter), ckpt.ROOT), "tolerance": a.tol,
               "max_new": a.max_new, "cases": cases, "greedy": greedy}
        os.makedirs(a.write_ref, exist_ok=True)
        with open(os.path.join(a.write_ref, "parity.json"), "w") as f:
            json.dump(out, f, separators=(",", ":"))
            f.write("\n")
    ok = worst <= a.tol and same
    print(f"parity: worst {worst:.3g} (tolerance {a.tol:g}), greedy {'equal' if same else 'DIFFERENT'}: "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
