#!/usr/bin/env python3
"""Reference data for the GGUF loader and the tokenizer, made with Hugging Face tokenizers and transformers.

Usage (from the repository root, with the packages of evals/requirements.txt and the model fetched by
ci/fetch-model.sh):

    .venv/bin/python data/make_text_refs.py tokenizer   # data/tokenizers/smollm2/ + data/text/tokenizer-corpus.jsonl
    .venv/bin/python data/make_text_refs.py parity      # data/text/smollm2-parity.json (logits, greedy text)
    .venv/bin/python data/make_text_refs.py unicode     # checks engine/unicode_tables.c's classes against HF

tokenizer: data/tokenizers/smollm2/tokenizer.json is SmolLM2's tokenizer as Hugging Face publishes it for
HuggingFaceTB/SmolLM2-135M-Instruct (BPE, vocab and merges, the 17 special tokens, pre_tokenizer Digits(individual)
then ByteLevel, ByteLevel decoder), rebuilt from the GGUF's metadata because no hub is reachable here; the
GGUF's tokenizer.ggml.pre is "smollm", which llama.cpp defines as the same split (every \\p{N} alone, then the
GPT-2 regex). Each corpus line holds a text (hex of its UTF-8) and the ids tokenizers gives it. The script also
reports where transformers' own GGUF tokenizer (AutoTokenizer with gguf_file=) disagrees: it maps "smollm" to
plain GPT-2 byte-level BPE without the digit split (transformers 5.23).

parity: transformers loads the same GGUF (AutoModelForCausalLM, gguf_file=, which dequantises to float32) and
records, for a few prompts, the top-16 logits of every position and the greedy continuation (ids and text).
"""
import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, ".cache", "models")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOK_DIR = os.path.join(ROOT, "data", "tokenizers", "smollm2")
CORPUS = os.path.join(ROOT, "data", "text", "tokenizer-corpus.jsonl")
PARITY = os.path.join(ROOT, "data", "text", "smollm2-parity.json")

# Awkward text: every branch of the split, Unicode classes, special tokens, whitespace runs.
AWKWARD = [
    "Hello, world!",
    "hello world",
    " leading space",
    "  two leading spaces",
    "trailing space ",
    "trailing spaces   ",
    "a  b   c    d",
    "tabs\tand\t\ttabs",
    "new\nline\n\nand\n\n\nmore",
    "\r\n windows \r\n\r\nline ends",
    " \n \t \n",
    "   ",
    "\n",
    "x" * 300,
    " " * 100 + "deep",
    "I'm sure they'll say it's fine, don't you think? We've seen it; I'd go.",
    "CAPS'S 'S 'll' 're've'm'd 'x ''",
    "\u2019s curly apostrophe isn\u2019t split",
    "Numbers 12345 and 3.14159 and 1,000,000 and 0x1F and 2024-11-30",
    "007 agent 1st 2nd 3rd 4th",
    "\u00b2 squared \u00bd half \u2167 roman \u0663\u0664 arabic digits \u0967 devanagari",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade \u00c5ngstr\u00f6m",
    "e\u0301 combining acute, a\u0308, n\u0303 and Z\u0351\u0362a\u0315\u0358l\u0338g\u0361o\u0336",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u8fd9\u662f\u4e00\u4e2a\u6d4b\u8bd5\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca \u30fc",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4",
    "\u0420\u043e\u0441\u0441\u0438\u044f \u0438 \u0423\u043a\u0440\u0430\u0457\u043d\u0430",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "Emoji: \U0001F600\U0001F44D\U0001F3FD\U0001F1FA\U0001F1F8 and \u2764\ufe0f and \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "zero\u200bwidth and non\u00a0breaking and ideographic\u3000space and\u2003em",
    "math: \u2200x\u2208\u211d, x\u00b2 \u2265 0; \u222b f(x)dx \u2248 \u2211 \u03b1\u1d62",
    "def foo(x):\n    return x ** 2  # square\n\n\nclass Bar:\n\tpass\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "https://example.com/path?q=1&r=two#frag",
    "user@example.org, +1 (555) 010-9999",
    "Punctuation!!! ??? ... --- (parens) [brackets] {braces} \"quotes\" 'single'",
    "$$$ %%% ^^^ &&& *** ___ === +++ ~~~ `backticks` |||",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|><|endoftext|> back to back <|im_end|>",
    "almost special <|im_start| and <im_end|> and <|unknown|>",
    "<repo_name>orthros<file_sep>main.c<filename>x<gh_stars>10",
    "The quick brown fox jumps over the lazy dog. " * 8,
    "Mixed123Text456With789Digits and v2.0.1-beta+build.5",
    "\u00a0\u00a0nbsp run\u00a0\u00a0",
    "\u2028line separator\u2029paragraph separator\u0085next line",
    "\u000b\u000c vertical tab and form feed",
    "control \u0001\u0002\u001f\u007f chars",
    "\U00010000 \U0001D400 \U0001F9D1 supplementary",
    "\uFFFD replacement char and \uFEFF bom",
    "\u1c89 Unicode 16 letter and \U00011DE0 Unicode 17 digit",
    "a",
    "1",
    " 1",
    "'",
    "'s",
]

# Characters for random strings: one or more from each class the split distinguishes.
ALPHABET = (list("aZ') ,.!?-_\"") + [" ", " ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "\u2003"] +
            list("0123456789") + ["\u00b2", "\u00bd", "\u2167", "\u0663", "\U00011DE0"] +
            ["\u00e9", "e\u0301", "\u4f60", "\u597d", "\u0416", "\u05d0", "\U0001F600", "\u200d", "\ufe0f",
             "<|im_end|>", "<|endoftext|>", "'s", "'ll", "'re"])


def corpus_texts():
    rng = random.Random(12)
    texts = list(AWKWARD)
    for _ in range(300):
        texts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))))
    return texts


def gguf_tokenizer_fields(path):
    import gguf
    r = gguf.GGUFReader(path)

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def scalar(key):
        f = r.fields.get(key)
        return None if f is None else f.contents()

    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    return {
        "tokens": strings("tokenizer.ggml.tokens"), "merges": strings("tokenizer.ggml.merges"), "types": types,
        "pre": scalar("tokenizer.ggml.pre"), "bos": scalar("tokenizer.ggml.bos_token_id"),
        "eos": scalar("tokenizer.ggml.eos_token_id"), "unk": scalar("tokenizer.ggml.unknown_token_id"),
        "pad": scalar("tokenizer.ggml.padding_token_id"), "chat_template": scalar("tokenizer.chat_template"),
    }


def build_tokenizer_json(fields):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, (t, ty) in enumerate(zip(fields["tokens"], fields["types"])) if ty == 3]
    assert fields["pre"] == "smollm", fields["pre"]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(fields["tokens"])},
                  "merges": [m.split(" ") for m in fields["merges"]]},
    }


def cmd_tokenizer(args):
    from tokenizers import Tokenizer
    fields = gguf_tokenizer_fields(os.path.join(MODEL_DIR, MODEL_FILE))
    os.makedirs(TOK_DIR, exist_ok=True)
    tj = build_tokenizer_json(fields)
    with open(os.path.join(TOK_DIR, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
    toks = fields["tokens"]
    cfg = {"bos_token": toks[fields["bos"]], "eos_token": toks[fields["eos"]], "unk_token": toks[fields["unk"]],
           "pad_token": toks[fields["pad"]], "chat_template": fields["chat_template"],
           "clean_up_tokenization_spaces": False, "model_max_length": 8192}
    with open(os.path.join(TOK_DIR, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    tok = Tokenizer.from_file(os.path.join(TOK_DIR, "tokenizer.json"))
    texts = corpus_texts()
    with open(CORPUS, "w", encoding="utf-8") as f:
        for t in texts:
            ids = tok.encode(t).ids
            assert tok.decode(ids, skip_special_tokens=False) == t, repr(t)
            f.write(json.dumps({"hex": t.encode("utf-8").hex(), "ids": ids}) + "\n")
    print(f"wrote {len(texts)} texts to {CORPUS}")
    try:
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE)
        diff = [t for t in texts if hf.encode(t, add_special_tokens=True) != tok.encode(t).ids]
        print(f"transformers' GGUF tokenizer differs on {len(diff)} of {len(texts)} texts", end="")
        print(f", e.g. {diff[0]!r}" if diff else "")
    except Exception as e:  # the comparison is informative only
        print(f"transformers' GGUF tokenizer not compared: {e}")


def cmd_unicode(args):
    import unicodedata2
    from tokenizers import pre_tokenizers as P
    bl = P.ByteLevel(add_prefix_space=False, use_regex=True)
    dg = P.Digits(individual_digits=True)
    sys.path.insert(0, os.path.join(ROOT, "engine"))
    import gen_unicode
    extra = {cp for a, b in gen_unicode.DIGITS_EXTRA for cp in range(a, b + 1)}
    ws = {0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000} | set(range(0x2000, 0x200b))
    bad = 0
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch, cat = chr(cp), unicodedata2.category(chr(cp))
        is_l = cp != 0x20 and len(bl.pre_tokenize_str("a" + ch)) == 1
        is_n = cp != 0x20 and len(bl.pre_tokenize_str("1" + ch)) == 1
        is_s = cp == 0x20 or (not is_l and not is_n and len(bl.pre_tokenize_str("x" + ch + ch + "x")) == 4)
        is_d = len(dg.pre_tokenize_str("a" + ch + "a")) == 3
        if is_l != (cat[0] == "L") or is_n != (cat[0] == "N") or is_s != (cp in ws) or is_d != (cat[0] == "N" or cp in extra):
            bad += 1
            if bad < 20:
                print(f"U+{cp:04X} {cat}: HF letter {is_l} number {is_n} space {is_s} digit {is_d}")
    print(f"{bad} code points differ between HF tokenizers and the tables (Unicode {unicodedata2.unidata_version})")
    sys.exit(1 if bad else 0)


PROMPTS = [
    "The capital of France is",
    "<|im_start|>user\nWhat is the tallest mountain in the world?<|im_end|>\n<|im_start|>assistant\n",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "In 1969, Neil Armstrong and Buzz Aldrin became the first people to",
]


def cmd_parity(args):
    import numpy as np
    import torch
    import transformers
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    tok = Tokenizer.from_file(os.path.join(TOK_DIR, "tokenizer.json"))
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE, dtype=torch.float32)
    model.eval()
    cfg = model.config
    emb = model.get_input_embeddings().weight
    tied = model.lm_head.weight.data_ptr() == emb.data_ptr() or torch.equal(model.lm_head.weight, emb)
    out = {"model": MODEL_FILE, "made_with": {"transformers": transformers.__version__, "torch": torch.__version__},
           "config": {"num_hidden_layers": cfg.num_hidden_layers, "hidden_size": cfg.hidden_size,
                      "num_attention_heads": cfg.num_attention_heads, "num_key_value_heads": cfg.num_key_value_heads,
                      "head_dim": getattr(cfg, "head_dim", cfg.hidden_size // cfg.num_attention_heads),
                      "vocab_size": cfg.vocab_size, "intermediate_size": cfg.intermediate_size,
                      "rope_theta": float(getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]),
                      "max_position_embeddings": cfg.max_position_embeddings, "rms_norm_eps": cfg.rms_norm_eps,
                      "lm_head_tied": bool(tied)},
           "topk": 16, "max_new": 24, "prompts": []}
    for text in PROMPTS:
        ids = tok.encode(text).ids
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float().numpy()
            gen = model.generate(torch.tensor([ids]), max_new_tokens=out["max_new"], do_sample=False,
                                 attention_mask=torch.ones(1, len(ids), dtype=torch.long))[0, len(ids):].tolist()
        top = np.argsort(-logits, axis=1, kind="stable")[:, :out["topk"]]
        out["prompts"].append({
            "text": text, "ids": ids,
            "top_ids": top.tolist(),
            "top_logits": [[float(logits[p, j]) for j in top[p]] for p in range(len(ids))],
            "generated": gen, "generated_text": tok.decode(gen, skip_special_tokens=True)})
        print(f"{len(ids)} tokens -> {tok.decode(gen, skip_special_tokens=True)!r}")
    with open(PARITY, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
    print(f"wrote {PARITY}: {out['config']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["tokenizer", "parity", "unicode"])
    args = ap.parse_args()
    {"tokenizer": cmd_tokenizer, "parity": cmd_parity, "unicode": cmd_unicode}[args.what](args)


if __name__ == "__main__":
    main()
