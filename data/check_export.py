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
    weights to bf16 moves the logits (the bf16 export against the f32 one) is reported;
  - an adapter: a directory naming the GGUF by file name (found through .cache/models/) and its sha256, holding
    PEFT-named BF16 low-rank deltas on every projection of three layers; PyTorch merges them into the f32 export's
    weights (W + alpha / r * B @ A in float64, rounded once) and transformers runs the merged model: its logits
    equal `orthros logits` on the adapter directory within 1e-4 of the row's scale, and `orthros export` of the
    adapter directory holds the merged weights (every element equal, or the count that is not).
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


def check_adapter(orthros, gguf, exp, tmp, failures):
    """PEFT-style deltas over the GGUF, merged by PyTorch, against the engine's adapter directory."""
    import hashlib

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import LlamaForCausalLM

    adir, mdir = os.path.join(tmp, "adapter"), os.path.join(tmp, "merged")
    os.makedirs(adir)
    os.makedirs(mdir)
    weights = load_file(os.path.join(exp, "model.safetensors"))
    gen = torch.Generator().manual_seed(0)
    alpha, tensors = 16.0, {}
    projs = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
             "mlp.up_proj", "mlp.down_proj"]
    for layer in (0, 7, 29):
        for p in projs:
            name = f"model.layers.{layer}.{p}"
            w = weights[name + ".weight"]
            r = 4 if "attn" in p else 8
            a = (torch.randn(r, w.shape[1], generator=gen) * 0.05).to(torch.bfloat16)
            b = (torch.randn(w.shape[0], r, generator=gen) * 0.05).to(torch.bfloat16)
            tensors[name + ".lora_A.weight"], tensors[name + ".lora_B.weight"] = a, b
            weights[name + ".weight"] = (w.double() + alpha / r * (b.double() @ a.double())).float()
    save_file(tensors, os.path.join(adir, "adapter.safetensors"), metadata={"lora_alpha": "16"})
    with open(gguf, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(adir, "config.json"), "w") as f:
        json.dump({"orthros_base": {"path": os.path.basename(gguf), "sha256": sha, "fetch": "ci/fetch-model.sh"}}, f)
    save_file(weights, os.path.join(mdir, "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(exp, name), "rb") as src, open(os.path.join(mdir, name), "wb") as dst:
            dst.write(src.read())
    model = LlamaForCausalLM.from_pretrained(mdir, dtype=torch.float32).eval()
    worst = 0.0
    for text in PROMPTS[:2]:
        ids = [int(x) for x in run([orthros, "tokenize", "--model", adir, "--text", text], cwd=ROOT).strip().split(",")]
        path = os.path.join(tmp, "adapter-logits.f32")
        run([orthros, "logits", "--model", adir, "--tokens", ",".join(map(str, ids)), "--out", path, "--device", "cpu"],
            cwd=ROOT)
        got = np.fromfile(path, dtype=np.float32).reshape(len(ids), -1)
        with torch.no_grad():
            ref = model(torch.tensor([ids])).logits[0].numpy()
        err = (np.abs(got - ref).max(axis=1) / np.abs(ref).max(axis=1)).max()
        worst = max(worst, err)
        if err > 1e-4:
            failures.append(f"adapter, {text!r}: the engine's logits differ from PyTorch's merge by {err:.3g}")
    out = os.path.join(tmp, "adapter-export")
    run([orthros, "export", "--model", adir, "--out", out], cwd=ROOT)
    exported = load_file(os.path.join(out, "model.safetensors"))
    differ = sum(int((exported[k] != weights[k]).sum()) for k in exported)
    total = sum(v.numel() for v in exported.values())
    if set(exported) != set(weights) or differ > total // 100000:
        failures.append(f"adapter export: {differ} of {total} weights differ from PyTorch's merge")
    print(f"adapter (21 BF16 deltas over the GGUF, via .cache/models/): logits within {worst:.2e} of the row scale of "
          f"transformers on PyTorch's merge; its export differs from that merge in {differ} of {total} weights")
    return worst, differ


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
        adapter_err, adapter_differ = check_adapter(a.orthros, os.path.abspath(a.model), exp["f32"], tmp, failures)

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
                      "bf16_greedy_same_as_f32": [agree16, total16], "tokenizer_corpus_texts_equal": [n_equal, n_corpus],
                      "adapter_max_err_of_row_scale": float(f"{adapter_err:.3g}"),
                      "adapter_export_weights_differing_from_torch_merge": adapter_differ},
            "topk": TOPK,
            "prompts": prompts,
        }
        with open(OUT, "w") as f:
            json.dump(ref, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
