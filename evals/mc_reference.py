#!/usr/bin/env python3
"""lm-evaluation-harness's own numbers for the multiple-choice task files of evals/tests/mc/, the reference that the
`eval_mc_parity` test compares `orthros eval mc --device cpu` with.

Usage (from the repository root, with the packages of evals/requirements.txt, lm_eval among them, and the model
fetched by ci/fetch-model.sh):

    .venv/bin/python evals/mc_reference.py            # writes evals/tests/mc/reference.json

The model is SmolLM2-135M-Instruct as the engine runs it on the cpu: transformers loads the same GGUF
(AutoModelForCausalLM, gguf_file=, dequantised to float32), with SmolLM2's tokenizer (data/tokenizers/smollm2, the
tokenizer the engine's parity tests use: transformers' own GGUF tokenizer lacks SmolLM2's digit split). lm-eval's
HFLM wraps them (batch size 1, cpu), and lm_eval.simple_evaluate runs each file as a task whose configuration is
lm-eval's own task YAML (doc_to_text, doc_to_choice, doc_to_target, metrics; HellaSwag's process_docs and
Winogrande's functions imported from lm_eval.tasks) over the local JSONL file (dataset_path json), with the
first_n few-shot sampler drawing from the same file. Nothing is downloaded.

For every question it records lm-eval's log-likelihood of each choice (the resps of its loglikelihood requests)
and its acc / acc_norm; for every task the aggregated metrics and their stderr (lm-eval's mean_stderr: the bootstrap
is not used for means).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, ".cache", "models")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOK_DIR = os.path.join(ROOT, "data", "tokenizers", "smollm2")
TASK_DIR = os.path.join(ROOT, "evals", "tests", "mc")
OUT = os.path.join(TASK_DIR, "reference.json")

# (file, layout, few-shot examples): every layout zero-shot, two of them with few-shot examples as well.
RUNS = [("arc.jsonl", "arc", 0), ("arc.jsonl", "arc", 2), ("hellaswag.jsonl", "hellaswag", 0),
        ("piqa.jsonl", "piqa", 0), ("openbookqa.jsonl", "openbookqa", 0), ("winogrande.jsonl", "winogrande", 0),
        ("winogrande.jsonl", "winogrande", 1), ("generic.jsonl", "generic", 0)]


def task_config(name, path, layout, shots):
    """lm-eval 0.4.13's task YAML of the layout, over a local JSONL file."""
    from lm_eval.tasks.hellaswag import utils as hellaswag_utils
    from lm_eval.tasks.winogrande import preprocess_winogrande as wino
    acc = {"metric": "acc", "aggregation": "mean", "higher_is_better": True}
    acc_norm = {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}
    cfg = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"train": path}},
           "test_split": "train", "fewshot_split": "train", "fewshot_config": {"sampler": "first_n"},
           "output_type": "multiple_choice", "num_fewshot": shots, "metric_list": [acc, acc_norm],
           "metadata": {"version": 1.0}}
    if layout == "arc":  # arc/arc_easy.yaml
        cfg.update(doc_to_text="Question: {{question}}\nAnswer:", doc_to_target="{{choices.label.index(answerKey)}}",
                   doc_to_choice="{{choices.text}}")
    elif layout == "hellaswag":  # hellaswag/hellaswag.yaml
        cfg.update(process_docs=hellaswag_utils.process_docs, doc_to_text="{{query}}", doc_to_target="{{label}}",
                   doc_to_choice="choices")
    elif layout == "piqa":  # piqa/piqa.yaml
        cfg.update(doc_to_text="Question: {{goal}}\nAnswer:", doc_to_target="label", doc_to_choice="{{[sol1, sol2]}}")
    elif layout == "openbookqa":  # openbookqa/openbookqa.yaml
        cfg.update(doc_to_text="question_stem", doc_to_target="{{choices.label.index(answerKey.lstrip())}}",
                   doc_to_choice="{{choices.text}}")
    elif layout == "winogrande":  # winogrande/default.yaml: acc only
        cfg.update(doc_to_text=wino.doc_to_text, doc_to_target=wino.doc_to_target, doc_to_choice=wino.doc_to_choice,
                   metric_list=[acc])
    elif layout == "generic":  # {"context", "choices", "gold"}
        cfg.update(doc_to_text="{{context}}", doc_to_target="{{gold}}", doc_to_choice="{{choices}}")
    return cfg


def main():
    import lm_eval
    import torch
    import transformers
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE, dtype=torch.float32)
    model.eval()
    tok = AutoTokenizer.from_pretrained(TOK_DIR)
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=1, device="cpu")
    out = {"model": MODEL_FILE, "tokenizer": "data/tokenizers/smollm2",
           "made_with": {"lm_eval": lm_eval.__version__ if hasattr(lm_eval, "__version__") else "0.4.13",
                         "transformers": transformers.__version__, "torch": torch.__version__},
           "runs": []}
    for fname, layout, shots in RUNS:
        name = f"{os.path.splitext(fname)[0]}_{shots}shot"
        cfg = task_config(name, os.path.join(TASK_DIR, fname), layout, shots)
        res = lm_eval.simple_evaluate(model=lm, tasks=[cfg], num_fewshot=shots, log_samples=True,
                                      bootstrap_iters=1000, random_seed=0, numpy_random_seed=0, torch_random_seed=0,
                                      fewshot_random_seed=1234)
        metrics = res["results"][name]
        questions = []
        for s in sorted(res["samples"][name], key=lambda s: s["doc_id"]):
            lls = [float(r[0][0]) for r in s["resps"]]
            q = {"doc_id": s["doc_id"], "loglikelihoods": lls, "acc": float(s["acc"])}
            if "acc_norm" in s:
                q["acc_norm"] = float(s["acc_norm"])
            questions.append(q)
        run = {"file": f"evals/tests/mc/{fname}", "layout": layout, "shots": shots, "questions": questions,
               "acc": metrics["acc,none"], "acc_stderr": metrics.get("acc_stderr,none")}
        if "acc_norm,none" in metrics:
            run["acc_norm"] = metrics["acc_norm,none"]
            run["acc_norm_stderr"] = metrics.get("acc_norm_stderr,none")
        out["runs"].append(run)
        print(f"{name}: {len(questions)} questions, acc {run['acc']:.4f}"
              + (f", acc_norm {run['acc_norm']:.4f}" if "acc_norm" in run else ""), file=sys.stderr)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
