#!/usr/bin/env python3
"""Text sampled from the teacher (the base transformer), as training tokens beside the Debian corpus:

    convert/sample_teacher.py --model M --prompts build-data/corpus/train.u16.xz --out build-data/teacher \\
        --tokens 4M --max-seconds 500 [--resume]

Each sequence starts from a 16-token prefix of the corpus at a seeded random position (the prefix is not kept),
then samples --length tokens (temperature 1, top-p 0.95 by default) with this package's own forward and a KV cache
(full attention). The samples go to OUT/teacher.u16 (uint16, each followed by eos) with OUT/manifest.json (model,
settings, tokens, seconds, GPU); --max-seconds stops between batches (exit status 3), --resume appends.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt  # noqa: E402
from convert.data import Tokens  # noqa: E402
from convert.model import Model, rmsnorm, rope  # noqa: E402
from convert.train import count, environment  # noqa: E402


@torch.no_grad()
def sample(m, prefix, length, temperature, top_p, gen):
    """prefix [B, P] -> [B, length] sampled ids, full attention with a KV cache."""
    c = m.cfg
    B, P = prefix.shape
    N = P + length
    cos, sin = m.rope_for(N, prefix.device)
    kc = [torch.zeros(B, c.n_kv, N, c.head_dim, device=prefix.device, dtype=torch.bfloat16 if prefix.is_cuda
                      else torch.float32) for _ in range(c.layers)]
    vc = [torch.zeros_like(kc[0]) for _ in range(c.layers)]
    out, ids, pos = [], prefix, 0
    g = c.n_heads // c.n_kv
    for _ in range(length):
        n = ids.shape[1]
        x = F.embedding(ids, m.embed)
        for i in range(c.layers):
            h = rmsnorm(x, m.ln1[i], c.eps)
            a = m.attn[i]
            q = a.q_proj(h).view(B, n, c.n_heads, c.head_dim).transpose(1, 2)
            k = a.k_proj(h).view(B, n, c.n_kv, c.head_dim).transpose(1, 2)
            v = a.v_proj(h).view(B, n, c.n_kv, c.head_dim).transpose(1, 2)
            q = rope(q, cos[pos:pos + n], sin[pos:pos + n]).to(v.dtype)
            kc[i][:, :, pos:pos + n] = rope(k, cos[pos:pos + n], sin[pos:pos + n]).to(kc[i].dtype)
            vc[i][:, :, pos:pos + n] = v.to(vc[i].dtype)
            K = kc[i][:, :, :pos + n].repeat_interleave(g, dim=1).to(q.dtype)
            V = vc[i][:, :, :pos + n].repeat_interleave(g, dim=1).to(q.dtype)
            mask = torch.ones(n, pos + n, dtype=torch.bool, device=q.device).tril(pos)
            y = F.scaled_dot_product_attention(q, K, V, attn_mask=mask)
            x = x + m.attn_out(i, y)
            x = x + m.mlp_out(i, rmsnorm(x, m.ln2[i], c.eps))
        logits = m.logits_of(x[:, -1]).float() / temperature
        probs = torch.softmax(logits, -1)
        sp, si = probs.sort(-1, descending=True)
        keep = sp.cumsum(-1) - sp < top_p
        sp = sp * keep
        nxt = si.gather(-1, torch.multinomial(sp / sp.sum(-1, keepdim=True), 1, generator=gen))
        out.append(nxt)
        pos += n
        ids = nxt
    return torch.cat(out, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True, help="token file the 16-token prefixes come from")
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", default="4M")
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--max-seconds", type=float, default=0)
    ap.add_argument("--resume", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    dev = torch.device(a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    cfg, sd = ckpt.load_model(a.model)
    m = Model(cfg, sd).to(dev)
    data = Tokens([a.prompts], cfg.vocab)
    os.makedirs(a.out, exist_ok=True)
    path, man_path = os.path.join(a.out, "teacher.u16"), os.path.join(a.out, "manifest.json")
    man = json.load(open(man_path)) if a.resume and os.path.exists(man_path) else None
    if man is None:
        open(path, "wb").close()
        man = {"schema": 1, "model": a.model, "prompts": data.files[0], "settings": {k: v for k, v in vars(a).items()
               if k not in ("resume", "max_seconds", "device", "out")}, "batches": 0, "tokens": 0, "seconds": 0.0}
    eos = cfg.eos if isinstance(cfg.eos, int) else 2
    batches = math.ceil(count(a.tokens) / (a.batch * (a.length + 1)))
    bt = None
    while man["batches"] < batches:
        if a.max_seconds and bt and time.time() - t0 + 1.3 * bt > a.max_seconds:
            print(f"sample_teacher: stopped after {man['batches']} of {batches} batches; --resume goes on",
                  file=sys.stderr)
            return 3
        t = time.time()
        gen = torch.Generator(device=dev).manual_seed(a.seed * 100003 + man["batches"])
        prefix = data.batch(a.batch, 16, a.seed, man["batches"]).to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            ids = sample(m, prefix, a.length, a.temperature, a.top_p, gen).cpu()
        ids = torch.cat([ids, torch.full((a.batch, 1), eos)], 1).numpy().astype("<u2")
        with open(path, "ab") as f:
            f.write(ids.tobytes())
        bt = time.time() - t
        man["batches"] += 1
        man["tokens"] += int(ids.size)
        man["seconds"] += bt
        man["environment"] = environment(dev)
        json.dump(man, open(man_path, "w"), indent=1)
        print(f"sample_teacher: batch {man['batches']}/{batches}, {man['tokens']} tokens, {bt:.1f} s",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
