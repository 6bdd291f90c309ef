#!/usr/bin/env python3
"""Checks that Hugging Face transformers, loading the analytic recall checkpoint as LlamaForCausalLM (eager
attention, float32), gives the same greedy answers as `orthros eval` under the `transformer` architecture.

It builds the checkpoint with `orthros make-model analytic-recall` (unless --model names one), runs `orthros eval
niah` (every variant) and `orthros eval mqar` with --save-prompts, replays every saved sample through transformers
with the same protocol (prompt -> first answer; then each further question as one more token, multi-value feeding
each answer back first), and compares the answers token for token. It also compares the last-position logits of a
few prompts with `orthros logits`. Exit status 0 when everything agrees, 1 otherwise.

    python3 evals/check_hf.py --orthros build/orthros                      # cpu, here
    python3 evals/check_hf.py --orthros build/orthros --device cuda \
        --ctx 1k,8k,32k --samples 4                                         # GPU machine: ours on cuda, HF on cuda
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    from transformers import LlamaForCausalLM
except ImportError as e:  # a clear line instead of a traceback
    sys.exit(f"check_hf.py: {e.name or e} is missing: python3 -m pip install -r evals/requirements.txt")


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def hf_answers(model, rec, device):
    """Greedy answers of transformers for one saved sample, by the protocol of evals/tasks.c."""
    ids = torch.tensor([rec["prompt"]], device=device)
    out = model(input_ids=ids, use_cache=True)
    past, gen = out.past_key_values, [int(out.logits[0, -1].argmax())]
    for i in range(1, len(rec["queries"])):
        step = ([gen[-1]] if rec["feed_back"] else []) + [rec["queries"][i]]
        out = model(input_ids=torch.tensor([step], device=device), past_key_values=past, use_cache=True)
        past = out.past_key_values
        gen.append(int(out.logits[0, -1].argmax()))
    return gen


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orthros", default="build/orthros", help="the orthros binary")
    ap.add_argument("--model", help="an analytic checkpoint (default: made into the work directory)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda: where both engines run (default cpu)")
    ap.add_argument("--ctx", default="64,300,1k", help="NIAH and MQAR context lengths (default 64,300,1k)")
    ap.add_argument("--depths", default="0,33,100", help="NIAH depths (default 0,33,100)")
    ap.add_argument("--pairs", default="1,8,64", help="MQAR pair counts (default 1,8,64)")
    ap.add_argument("--mqar-ctx", default="300,1k", help="MQAR context lengths (default 300,1k)")
    ap.add_argument("--samples", type=int, default=2, help="samples per cell (default 2)")
    ap.add_argument("--work", help="work directory (default: a fresh temporary one)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="orthros-check-hf-")
    os.makedirs(work, exist_ok=True)
    model_dir = a.model or os.path.join(work, "analytic-recall")
    if not os.path.exists(os.path.join(model_dir, "config.json")):
        run([a.orthros, "make-model", "analytic-recall", "--out", model_dir])

    common = ["--model", model_dir, "--arch", "transformer", "--samples", str(a.samples), "--device", a.device]
    runs = [("niah-" + v, ["niah", "--variant", v, "--ctx", a.ctx, "--depths", a.depths])
            for v in ["single", "multikey", "multivalue", "multiquery"]]
    runs.append(("mqar", ["mqar", "--ctx", a.mqar_ctx, "--pairs", a.pairs]))
    recs = []
    for name, args in runs:
        prompts = os.path.join(work, name + ".jsonl")
        run([a.orthros, "eval"] + args + common + ["--json", os.path.join(work, name + ".json"),
                                                   "--save-prompts", prompts])
        recs += [json.loads(line) for line in open(prompts)]

    dev = torch.device(a.device)
    model = LlamaForCausalLM.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).to(dev)
    model.eval()
    agree = right = answers = 0
    bad = []
    with torch.no_grad():
        for r in recs:
            hf = hf_answers(model, r, dev)
            answers += len(hf)
            agree += sum(x == y for x, y in zip(hf, r["generated"]))
            right += sum(x == y for x, y in zip(hf, r["expected"])) if r["variant"] != "multivalue" else \
                len(set(hf) & set(r["expected"]))
            if hf != r["generated"]:
                bad.append((r["task"], r["variant"], r["ctx"], r.get("depth", r.get("pairs")), hf, r["generated"]))

        # Logits of the last prompt position, ours against transformers', on the first prompt of each variant.
        worst = 0.0
        seen = set()
        for r in recs:
            if r["variant"] in seen:
                continue
            seen.add(r["variant"])
            out = os.path.join(work, "logits.f32")
            run([a.orthros, "logits", "--model", model_dir, "--arch", "transformer", "--device", a.device,
                 "--tokens", ",".join(map(str, r["prompt"])), "--out", out])
            ours = np.fromfile(out, dtype=np.float32).reshape(len(r["prompt"]), -1)[-1]
            theirs = model(input_ids=torch.tensor([r["prompt"]], device=dev)).logits[0, -1].float().cpu().numpy()
            worst = max(worst, float(np.abs(ours - theirs).max()))

    print(f"check_hf: {len(recs)} samples, {answers} answers on {a.device}: transformers agrees with orthros on "
          f"{agree}/{answers}, both right on {right}/{answers}; last-position logits max |diff| {worst:.3g}")
    for b in bad[:10]:
        print("  MISMATCH task %s variant %s ctx %s depth/pairs %s: transformers %s, orthros %s" % b)
    tol = 1e-3 if a.device == "cpu" else 0.5  # bf16 activations on the cuda backend
    ok = not bad and worst <= tol
    print("check_hf: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
