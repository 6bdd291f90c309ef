#!/usr/bin/env python3
"""`orthros export` checked with Hugging Face transformers, and the small reference CI compares against.

Usage (from the repository root, with build/orthros built, the model fetched by ci/fetch-model.sh and the packages
of evals/requirements.txt):

    .venv/bin/python data/check_export.py            # checks, then writes data/text/smollm2-export.json
    .venv/bin/python data/check_export.py --no-write # checks only

It exports SmolLM2-135M-Instruct (the Q4_1 GGUF: dequantised, q / k rows unpermuted, the tokenizer's metadata
written as tokenizer.json) with `orthros export`, in f32 and in bf16, and loads each export as a user would:
LlamaForCausalLM.from_pretrained(DIR) and AutoTokenizer.from_pretrained(DIR). Then, and any failure exits 1:
  - AutoTokenizer's ids equal `orthros tokenize` on the export and on the GGUF, for every prompt, and equal the ids
    Hugging Face tokenizers gives with SmolLM2's published tokenizer.json for every text of
    data/text/tokenizer-corpus.jsonl;
  - transformers' logits of every prompt position equal `orthros logits` on the export (cpu) within 1e-4 of the
    row's largest |logit| (f32), the greedy token of every position the same;
  - the bf16 export: transformers loading it in float32 (the bf16 weights widened exactly) against `orthros logits`
    on it (cpu, fp32 arithmetic over the same weights), within 1e-4 of the row's scale; how far rounding the
    weights to bf16 moves the logits (the bf16 export against the f32 one) is reported.
The reference file holds, per prompt, the ids and the top-16 logits (ids and values) of three positions from
transformers on the f32 export; engine/tests' export test compares the engine's export with it (CI, no PyTorch).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
CORPUS = os.path.join(ROOT, "data", "text", "tokenizer-corpus.jsonl")
OUT = os.path.join(ROOT, "data", "text", "smollm2-export.json")

PROMPTS = [
    "The capital of France is",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # 12345",
    "<|im_start|>user\nWhat is 7 times 8?<|im_end|>\n<|im_start|>assistant\n",
    "Caf\u00e9 na\u00efve \u4f60\u597d\uff0c\u4e16\u754c  \t tabs and   spaces 3.14159",
]
TOPK = 16


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"check_export: {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def engine_ids(orthros, model, text):
    out = run([orthros, "tokenize", "--model", model, "--text", text])
    return [int(x) for x in out.strip().split(",")] if out.strip() else []


def engine_logits(orthros, model, ids, tmp):
    path = os.path.join(tmp, "logits.f32")
    run([orthros, "logits", "--model", model, "--tokens", ",".join(map(str, ids)), "--out", path, "--device", "cpu"])
    return np.fromfile(path, dtype=np.float32).reshape(len(ids), -1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orthros", default=os.path.join(ROOT, "build", "orthros"))
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()

    import tokenizers
    import torch
    import transformers
    from transformers import AutoTokenizer, LlamaForCausalLM

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        exp = {dt: os.path.join(tmp, "export-" + dt) for dt in ("f32", "bf16")}
        for dt, d in exp.items():
            run([a.orthros, "export", "--model", a.model, "--out", d, "--dtype", dt])
        tok = AutoTokenizer.from_pretrained(exp["f32"])
        model = LlamaForCausalLM.from_pretrained(exp["f32"], dtype=torch.float32).eval()
        model16 = LlamaForCausalLM.from_pretrained(exp["bf16"], dtype=torch.float32).eval()

        # The tokenizer: the whole corpus against SmolLM2's published tokenizer.json ids.
        n_corpus = n_equal = 0
        with open(CORPUS) as f:
            for line in f:
                rec = json.loads(line)
                text = bytes.fromhex(rec["hex"]).decode("utf-8", errors="strict") if rec.get("hex") else ""
                n_corpus += 1
                got = tok(text, add_special_tokens=True)["input_ids"]
                if got == rec["ids"]:
                    n_equal += 1
                elif len(failures) < 20:
                    failures.append(f"corpus text {n_corpus}: AutoTokenizer {got[:12]} != {rec['ids'][:12]}")
        print(f"tokenizer corpus: {n_equal}/{n_corpus} texts encode to the published tokenizer.json's ids")
        if n_equal != n_corpus:
            failures.append(f"tokenizer corpus: {n_corpus - n_equal} texts differ")

        prompts = []
        worst = worst16 = worst_round = 0.0
        agree16 = total16 = 0
        for text in PROMPTS:
            ids = tok(text)["input_ids"]
            for where, model_path in (("export", exp["f32"]), ("GGUF", a.model)):
                e = engine_ids(a.orthros, model_path, text)
                if e != ids:
                    failures.append(f"{text!r}: orthros tokenize on the {where} gives {e}, AutoTokenizer {ids}")
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0].float().numpy()
                ref16 = model16(torch.tensor([ids])).logits[0].float().numpy()
            got = engine_logits(a.orthros, exp["f32"], ids, tmp)
            got16 = engine_logits(a.orthros, exp["bf16"], ids, tmp)
            scale = np.abs(ref).max(axis=1)
            err = (np.abs(got - ref).max(axis=1) / scale).max()
            err16 = (np.abs(got16 - ref16).max(axis=1) / np.abs(ref16).max(axis=1)).max()
            rounding = (np.abs(got16 - got).max(axis=1) / scale).max()
            worst, worst16, worst_round = max(worst, err), max(worst16, err16), max(worst_round, rounding)
            if err > 1e-4:
                failures.append(f"{text!r}: f32 export logits differ by {err:.3g} of the row scale")
            if err16 > 1e-4:
                failures.append(f"{text!r}: bf16 export logits differ by {err16:.3g} of the row scale")
            if not (got.argmax(1) == ref.argmax(1)).all() or not (got16.argmax(1) == ref16.argmax(1)).all():
                failures.append(f"{text!r}: a greedy token differs")
            agree16 += int((got16.argmax(1) == got.argmax(1)).sum())
            total16 += len(ids)
            rows = []
            for pos in sorted({0, len(ids) // 2, len(ids) - 1}):
                top = np.argsort(-ref[pos], kind="stable")[:TOPK]
                rows.append({"position": pos, "top_ids": [int(i) for i in top],
                             "top_logits": [round(float(ref[pos][i]), 5) for i in top]})
            prompts.append({"text": text, "ids": ids, "rows": rows})
            print(f"{text[:40]!r:44} {len(ids):3d} ids; engine vs transformers: f32 export {err:.2e}, bf16 export "
                  f"{err16:.2e} of the row scale; bf16 vs f32 export {rounding:.2e}")
        print(f"worst: f32 {worst:.3g}, bf16 {worst16:.3g} of the row scale; rounding to bf16 moves the logits by up to "
              f"{worst_round:.3g} of the row scale, greedy tokens the same at {agree16}/{total16} positions")

    if failures:
        for f in failures:
            print("FAIL", f)
        sys.exit(1)
    if not a.no_write:
        ref = {
            "model": os.path.basename(a.model),
            "made_with": {"transformers": transformers.__version__, "torch": torch.__version__,
                          "tokenizers": tokenizers.__version__},
            "check": {"f32_max_err_of_row_scale": float(f"{worst:.3g}"), "bf16_max_err_of_row_scale": float(f"{worst16:.3g}"),
                      "bf16_rounding_of_row_scale": float(f"{worst_round:.3g}"),
                      "bf16_greedy_same_as_f32": [agree16, total16], "tokenizer_corpus_texts_equal": [n_equal, n_corpus]},
            "topk": TOPK,
            "prompts": prompts,
        }
        with open(OUT, "w") as f:
            json.dump(ref, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
