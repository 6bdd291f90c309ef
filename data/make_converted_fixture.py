#!/usr/bin/env python3
"""Build data/fixtures/llama-tiny-converted: llama-tiny's weights plus what a converted model adds (hedgehog feature
maps, per-head window gates, an `orthros` object in config.json), with reference logits of the linear formula of
docs/converted-models.md computed here in float64 from the formula itself (no engine code, no transformers model).

Usage (from the repository root, in the reference venv):

    python3 data/make_converted_fixture.py

Writes, beside a copy of llama-tiny's ref.json / logits.f32 (transformers' logits of the same weights: the
transformer must still give them):

    config.json            llama-tiny's, plus "orthros": {architecture orthros, feature_map hedgehog, feature_dim 16,
                           feature_map_rope after, local_window 4, tail 1}
    model.safetensors      llama-tiny's tensors (F32) plus, per layer, self_attn.feature_map_q.weight [Hq, d, 16],
                           self_attn.feature_map_k.weight [Hkv, d, 16] and self_attn.window_gate [Hq]
    converted.json         {"tokens", "logits_file", "vocab", "cases": [{"arch", "tail", "hybrid_every",
                           "feature_map_rope", "local_window", "index"}], "made_with"}
    converted-logits.f32   float32 little-endian [case][position][vocab]

Cases: every kind that runs the linear formula (orthros with tails 1 and 4, linear, hybrid with every 2nd layer full),
phi before and after RoPE, windows 0, 1, 4 and 40 (longer than the 32-token prompt). The script checks its own
transformer against transformers' logits of llama-tiny (logits.f32) and that a window covering the prompt gives the
transformer's logits for every kind, whatever the gates.

Seeded and deterministic: a rerun writes the same files.
"""

import json
import os
import shutil

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "fixtures", "llama-tiny")
OUT = os.path.join(HERE, "fixtures", "llama-tiny-converted")

FEATURE_DIM = 16  # hedgehog columns per sign: F = 32, not the head dim 16
EPS = 1e-6  # the linear formula's epsilon (W = 0 only)
ORTHROS = {"architecture": "orthros", "feature_map": "hedgehog", "feature_dim": FEATURE_DIM,
           "feature_map_rope": "after", "local_window": 4, "tail": 1}
KINDS = [("orthros", 1, None), ("orthros", 4, None), ("linear", None, None), ("hybrid", None, 2)]
PLACEMENTS = ["before", "after"]
WINDOWS = [0, 1, 4, 40]

torch.set_default_dtype(torch.float64)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def rope(x, positions, theta):
    """Hugging Face's rotate-half RoPE; inv_freq and the angle formed in float32 as transformers forms them."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.int64).to(torch.float32) / d))
    ang = (positions.to(torch.float32)[:, None] * inv_freq[None, :]).to(torch.float64)  # [n, d/2]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def hedgehog(x, w):
    """x [n, H, d], w [H, d, F/2] -> [n, H, F]: [softmax(x w), softmax(-x w)] over the features."""
    u = torch.einsum("nhd,hdf->nhf", x, w)
    return torch.cat([torch.softmax(u, -1), torch.softmax(-u, -1)], -1)


def full_attention(qr, kr, v, rows):
    """Softmax attention of query rows `rows` over every position <= t: qr [n, Hq, d], kr, v [n, Hkv, d]."""
    n, Hq, d = qr.shape
    g = Hq // kr.shape[1]
    out = torch.zeros(len(rows), Hq, d)
    for i, t in enumerate(rows):
        for h in range(Hq):
            x = kr[: t + 1, h // g] @ qr[t, h] / d ** 0.5
            out[i, h] = torch.softmax(x, 0) @ v[: t + 1, h // g]
    return out


def linear_formula(q, k, v, qr, kr, rows, wq, wk, gates, placement, window):
    """docs/converted-models.md for query rows `rows`: phi on q, k (before) or q~, k~ (after); W = 0: DESIGN's
    linear attention with eps; W >= 1: gamma_h exp(q~.k~ / sqrt(d) - m_t) over s in [t - W + 1, t] (m_t the max there)
    plus phi(q).phi(k_s) over s <= t - W, one denominator, no eps."""
    n, Hq, d = q.shape
    g = Hq // k.shape[1]
    qf, kf = (qr, kr) if placement == "after" else (q, k)
    pq, pk = hedgehog(qf, wq), hedgehog(kf, wk)
    out = torch.zeros(len(rows), Hq, d)
    for i, t in enumerate(rows):
        for h in range(Hq):
            kv = h // g
            lin_end = t - window if window > 0 else t  # the linear term covers s <= lin_end
            b = pk[: lin_end + 1, kv] @ pq[t, h] if lin_end >= 0 else torch.zeros(0)
            num = b @ v[: lin_end + 1, kv] if lin_end >= 0 else torch.zeros(d)
            den = b.sum()
            if window > 0:
                lo = max(0, t - window + 1)
                x = kr[lo: t + 1, kv] @ qr[t, h] / d ** 0.5
                a = gates[h] * torch.exp(x - x.max())
                num = num + a @ v[lo: t + 1, kv]
                den = den + a.sum()
            else:
                den = den + EPS
            out[i, h] = num / den
    return out


def forward(cfg, W, tokens, kind=None, tail=None, hybrid_every=None, placement="before", window=0):
    """Logits [n, V] of the whole prompt; kind None is the transformer."""
    n = len(tokens)
    Hq, Hkv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    pos = torch.arange(n)
    x = W["model.embed_tokens.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(n, Hq, d)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(n, Hkv, d)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(n, Hkv, d)
        qr, kr = rope(q, pos, theta), rope(k, pos, theta)
        if kind is None or (kind == "hybrid" and (l + 1) % hybrid_every == 0):
            lin_rows = []
        elif kind == "orthros":
            lin_rows = list(range(n - tail))
        else:
            lin_rows = list(range(n))
        full_rows = [t for t in range(n) if t not in lin_rows]
        o = torch.zeros(n, Hq, d)
        if lin_rows:
            o[lin_rows] = linear_formula(q, k, v, qr, kr, lin_rows, W[p + "self_attn.feature_map_q.weight"],
                                         W[p + "self_attn.feature_map_k.weight"], W[p + "self_attn.window_gate"],
                                         placement, window)
        if full_rows:
            o[full_rows] = full_attention(qr, kr, v, full_rows)
        x = x + o.reshape(n, Hq * d) @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        gate, up = h @ W[p + "mlp.gate_proj.weight"].T, h @ W[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps)
    return x @ W["lm_head.weight"].T


def main():
    cfg = json.load(open(os.path.join(BASE, "config.json")))
    ref = json.load(open(os.path.join(BASE, "ref.json")))
    base = load_file(os.path.join(BASE, "model.safetensors"))
    Hq, Hkv, d, L = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["num_hidden_layers"]
    V = cfg["vocab_size"]
    rng = np.random.default_rng(20261201)
    tensors = dict(base)
    for l in range(L):
        p = f"model.layers.{l}.self_attn."
        tensors[p + "feature_map_q.weight"] = (rng.standard_normal((Hq, d, FEATURE_DIM)) / d ** 0.5).astype(np.float32)
        tensors[p + "feature_map_k.weight"] = (rng.standard_normal((Hkv, d, FEATURE_DIM)) / d ** 0.5).astype(np.float32)
        tensors[p + "window_gate"] = rng.uniform(0.05, 0.95, Hq).astype(np.float32)
    W = {name: torch.from_numpy(t.astype(np.float64)) for name, t in tensors.items()}
    tokens = torch.tensor(ref["tokens"])
    n = len(tokens)

    # The script's own transformer against transformers' logits of the same weights.
    hf = np.fromfile(os.path.join(BASE, ref["logits_file"]), dtype="<f4").reshape(n, V)
    tr = forward(cfg, W, tokens)
    err = float(np.abs(tr.numpy() - hf).max())
    print(f"transformer (this script, float64) vs transformers' llama-tiny logits: max abs err {err:.3g}")
    assert err < 1e-4, err

    cases, logits = [], []
    for kind, tail, every in KINDS:
        for placement in PLACEMENTS:
            for window in WINDOWS:
                lg = forward(cfg, W, tokens, kind, tail, every, placement, window)
                gap = float((lg - tr).abs().max())
                if window >= n:
                    assert gap < 1e-9, (kind, tail, placement, window, gap)  # softmax over the prompt, gates cancel
                else:
                    assert gap > 1e-3, (kind, tail, placement, window, gap)  # the linear term ran
                case = {"arch": kind, "tail": tail if tail else -1, "hybrid_every": every if every else -1,
                        "feature_map_rope": placement, "local_window": window, "index": len(cases)}
                print(f"{kind:8s} tail {case['tail']:2d} every {case['hybrid_every']:2d} phi {placement:6s} "
                      f"window {window:2d}: max |logits - transformer| {gap:.3g}")
                cases.append(case)
                logits.append(lg.numpy().astype("<f4"))

    os.makedirs(OUT, exist_ok=True)
    out_cfg = dict(cfg)
    out_cfg["orthros"] = ORTHROS
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(out_cfg, f, indent=2)
        f.write("\n")
    save_file({k: tensors[k] for k in sorted(tensors)}, os.path.join(OUT, "model.safetensors"))
    os.chmod(os.path.join(OUT, "model.safetensors"), 0o644)
    shutil.copyfile(os.path.join(BASE, "ref.json"), os.path.join(OUT, "ref.json"))
    shutil.copyfile(os.path.join(BASE, ref["logits_file"]), os.path.join(OUT, ref["logits_file"]))
    np.concatenate(logits).tofile(os.path.join(OUT, "converted-logits.f32"))
    with open(os.path.join(OUT, "converted.json"), "w") as f:
        json.dump({"tokens": ref["tokens"], "logits_file": "converted-logits.f32", "vocab": V,
                   "logits_shape": [len(cases), n, V], "logits_dtype": "float32 little-endian, [case][position][vocab]",
                   "cases": cases, "tolerance": 1e-4,
                   "made_with": "data/make_converted_fixture.py: the formula of docs/converted-models.md in float64 "
                                f"(torch {torch.__version__}), llama-tiny's weights"}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases of {n} positions")


if __name__ == "__main__":
    main()
