#!/usr/bin/env python3
"""The conversion code's logits for given token ids, for the engine-vs-conversion parity test:

    convert/logits.py --adapter data/models/smollm2-135m-orthros --tokens 1,2,3 --out ours.f32
    convert/logits.py --model .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf --adapter DIR --arch linear \\
        --tokens-file ids.txt --out ours.f32 --json summary.json

Writes float32 little-endian logits [position][vocab] of every position (the layout of `orthros logits --out`), and
prints one line per position (its argmax and max logit; --quiet: none). The attention settings come from the
adapter's config (else the model's `orthros` object, else transformer); --arch, --tail, --local-window,
--feature-map-rope override them as the engine's options do. Runs in float32 (cpu by default); --impl naive uses
the N x N form of the formula instead of the chunked one.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert.model import build  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="base model (default: the adapter's orthros_base)")
    ap.add_argument("--adapter", help="adapter directory or .safetensors")
    ap.add_argument("--tokens", help="comma-separated token ids")
    ap.add_argument("--tokens-file", help="token ids separated by commas or white space")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", help="also write {tokens, argmax, arch} here")
    ap.add_argument("--arch", choices=["transformer", "orthros", "linear", "hybrid"])
    ap.add_argument("--tail", type=int)
    ap.add_argument("--local-window", type=int)
    ap.add_argument("--feature-map-rope", choices=["before", "after"])
    ap.add_argument("--hybrid-every", type=int)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--impl", choices=["chunked", "naive"], default="chunked")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    if bool(a.tokens) == bool(a.tokens_file):
        ap.error("give --tokens or --tokens-file")
    text = a.tokens if a.tokens else open(a.tokens_file).read()
    try:
        ids = [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        ap.error("token ids must be integers")
    m, arch = build(a.model, a.adapter, a.device)
    for k, f in (("arch", "name"), ("tail", "tail"), ("local_window", "local_window"),
                 ("feature_map_rope", "feature_map_rope"), ("hybrid_every", "hybrid_every")):
        if getattr(a, k) is not None:
            setattr(arch, f, getattr(a, k))
    arch.check()
    if not ids or max(ids) >= m.cfg.vocab or min(ids) < 0:
        ap.error(f"token ids must be in [0, {m.cfg.vocab})")
    if arch.name == "orthros" and arch.tail > len(ids):
        ap.error(f"--tail {arch.tail} is longer than the prompt ({len(ids)} tokens)")
    with torch.no_grad():
        lg = m(torch.tensor([ids], device=a.device), arch, impl=a.impl)[0].float().cpu().numpy()
    lg.astype("<f4").tofile(a.out)
    am = lg.argmax(-1).tolist()
    if not a.quiet:
        for i, (t, g) in enumerate(zip(ids, am)):
            print(f"{i}\t{t}\targmax {g}\tmax {lg[i].max():.5f}")
    if a.json:
        json.dump({"tokens": ids, "argmax": am, "arch": arch.to_json(), "logits_file": a.out,
                   "logits_shape": list(lg.shape)}, open(a.json, "w"), indent=1)
    print(f"logits: {len(ids)} positions x {lg.shape[1]} -> {a.out} ({arch.name})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
