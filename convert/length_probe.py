#!/usr/bin/env python3
"""How a converted model's linear formula holds up with the position, layer by layer (issue 25: the 16M conversion,
trained on 1024-token sequences, breaks past 1024 tokens):

    .venv/bin/python convert/length_probe.py --adapter data/models/smollm2-135m-orthros \\
        --data build-data/corpus/val.u16 --seq 4096 --windows 2 --json probe.json

Teacher-forced, as stage 1 trains: the hidden states are the transformer's (the base, or with --lora the base with
the adapter's LoRA deltas), and at every layer the adapter's linear formula (feature maps, window, gates) is set
beside the softmax attention it replaces on the same q, k, v. Per layer and per band of query positions it reports

    err    the relative error of the formula's output, |y_lin - y_softmax|^2 / |y_softmax|^2, over heads and positions
    share  the linear term's share of the formula's denominator (the rest is the window's gated softmax terms)

so that a band past the training length shows whether the formula drifts there, and whether the drift follows the
linear share (which grows with the number of keys behind the window). Runs in float32 on the cpu (or --device).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert.model import build, feature_map, full_attention, rmsnorm  # noqa: E402


def bands_of(n):
    """[0, 256), [256, 512), [512, 1024), [1024, 2048), ... up to n."""
    edges, e = [0, 256], 256
    while e < n:
        e = min(2 * e, n)
        edges.append(e)
    return list(zip(edges[:-1], edges[1:]))


def linear_share(m, i, arch, q, k, qr, kr):
    """The linear term's share of the denominator at every query position: [B, Hq, N]."""
    a, c = m.attn[i], m.cfg
    qf, kf = (qr, kr) if arch.feature_map_rope == "after" else (q, k)
    fq = feature_map(qf.float(), arch.feature_map, a.fm_q.float())  # [B, Hq, N, F]
    fk = feature_map(kf.float(), arch.feature_map, a.fm_k.float())  # [B, K, N, F]
    B, Hq, N, d = q.shape
    g, W = Hq // c.n_kv, arch.local_window
    fk = fk.repeat_interleave(g, dim=1)
    z = torch.cumsum(fk, dim=2)  # keys 0..t
    zb = torch.zeros_like(z)
    if N > W:
        zb[:, :, W:] = z[:, :, :N - W]  # keys 0..t-W: the ones behind the window
    lin = (fq * zb).sum(-1)
    krep = kr.float().repeat_interleave(g, dim=1)
    x = torch.einsum("bhnd,bhmd->bhnm", qr.float(), krep) / d ** 0.5
    t = torch.arange(N, device=x.device)[:, None]
    s = torch.arange(N, device=x.device)[None, :]
    x = x.masked_fill(~((s <= t) & (s > t - W)), float("-inf"))
    gamma = a.gamma(Hq, q.device).float().view(1, Hq, 1)
    win = gamma * torch.exp(x - x.amax(-1, keepdim=True)).sum(-1)
    return lin / (lin + win)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="base model (default: the adapter's orthros_base)")
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--data", required=True, help="uint16 token file (the conversion corpus's val.u16)")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--windows", type=int, default=2, help="windows of --seq tokens, from the start of --data")
    ap.add_argument("--lora", action="store_true", help="teacher-force with the adapter's LoRA deltas on")
    ap.add_argument("--offset", type=int, default=0,
                    help="RoPE positions start here instead of 0 (softmax attention is blind to it; maps after RoPE "
                         "are not): tells a drift from the keys' count from one from positions never trained on")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json")
    a = ap.parse_args()
    m, arch = build(a.model, a.adapter, a.device)
    if arch.local_window <= 0 or m.attn[0].fm_q is None:
        ap.error("the adapter has no hedgehog maps and local window to probe")
    m.set_lora_enabled(a.lora)
    toks = np.fromfile(a.data, dtype="<u2")
    if len(toks) < a.seq * a.windows:
        ap.error(f"{a.data}: {len(toks)} tokens, fewer than {a.windows} windows of {a.seq}")
    c = m.cfg
    bands = bands_of(a.seq)
    err_num = np.zeros((c.layers, len(bands)))
    err_den = np.zeros((c.layers, len(bands)))
    share = np.zeros((c.layers, len(bands)))
    with torch.no_grad():
        for w in range(a.windows):
            ids = torch.tensor(toks[w * a.seq:(w + 1) * a.seq].astype(np.int64), device=a.device)[None]
            x = torch.nn.functional.embedding(ids, m.embed)
            cos, sin = m.rope_for(a.seq, ids.device, a.offset)
            for i in range(c.layers):
                h = rmsnorm(x, m.ln1[i], c.eps)
                q, k, v, qr, kr = m.qkv(i, h, cos, sin)
                y_t = full_attention(qr, kr, v).float()
                y_l = m.linear(i, arch, q, k, v, qr, kr).float()
                e = ((y_l - y_t) ** 2).sum(-1)[0]  # [Hq, N]
                r = (y_t ** 2).sum(-1)[0]
                sh = linear_share(m, i, arch, q, k, qr, kr)[0]
                for b, (lo, hi) in enumerate(bands):
                    err_num[i, b] += e[:, lo:hi].sum().item()
                    err_den[i, b] += r[:, lo:hi].sum().item()
                    share[i, b] += sh[:, lo:hi].mean().item() / a.windows
                x = x + m.attn_out(i, y_t.to(x.dtype))  # the teacher's path onwards
                x = x + m.mlp_out(i, rmsnorm(x, m.ln2[i], c.eps))
            print(f"length_probe: window {w + 1}/{a.windows} done", file=sys.stderr, flush=True)
    err = err_num / err_den
    head = "layer " + " ".join(f"{f'{lo}-{hi}':>15}" for lo, hi in bands)
    print(f"relative output error (and the linear share of the denominator) by query position; "
          f"{a.windows} x {a.seq} tokens of {os.path.basename(a.data)}, LoRA {'on' if a.lora else 'off'}, "
          f"RoPE positions from {a.offset}")
    print(head)
    for i in range(c.layers):
        print(f"{i:5d} " + " ".join(f"{err[i, b]:7.4f} ({share[i, b]:4.2f})" for b in range(len(bands))))
    mean = err_num.sum(0) / err_den.sum(0)
    print("  all " + " ".join(f"{mean[b]:7.4f} ({share[:, b].mean():4.2f})" for b in range(len(bands))))
    if a.json:
        json.dump({"adapter": a.adapter, "data": a.data, "seq": a.seq, "windows": a.windows, "lora": a.lora,
                   "offset": a.offset, "arch": arch.to_json(), "bands": bands, "err": err.tolist(), "share": share.tolist(),
                   "err_all_layers": mean.tolist()}, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
