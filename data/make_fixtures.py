#!/usr/bin/env python3
"""Build small random Llama reference fixtures with Hugging Face transformers.

Usage (from the repository root):

    python3 data/make_fixtures.py            # (re)build all fixtures below
    python3 data/make_fixtures.py NAME ...   # only the named fixtures

Each fixture goes to data/fixtures/<name>/ and holds, like llama-tiny:

    config.json                      classic Llama key layout (top-level
                                     "rope_theta", optional "rope_scaling")
    model.safetensors                or model-0000X-of-0000N.safetensors +
                                     model.safetensors.index.json
    logits.f32                       float32 little-endian, row-major
                                     [position][vocab], logits of every
                                     position of ref.json "tokens"
    ref.json                         {"tokens", "logits_file", "logits_shape",
                                      "logits_dtype", "greedy": {"prompt",
                                      "generated"}, "made_with"}

Reference logits and greedy tokens are computed by LlamaForCausalLM in float32
(dtype=torch.float32, attn_implementation="eager") after loading the SAVED
files back, i.e. from the stored weights (bf16/f16 upcast exactly to f32).

Everything is seeded; re-running gives the same weights and tokens (logits can
differ in the last bits between machines/BLAS builds, never within one run).
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors import safe_open
from transformers import LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_ROOT = os.path.join(HERE, "fixtures")

DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}

# Common config bits (eps matches llama-tiny and Llama 2/3 checkpoints).
BASE_CFG = dict(
    hidden_act="silu",
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    attention_bias=False,
    mlp_bias=False,
    max_position_embeddings=2048,
    tie_word_embeddings=False,
)

FIXTURES = [
    dict(
        name="gqa4-bf16-d64",
        desc="GQA 4:1 (8 q heads / 2 kv heads), head_dim 64, hidden 128 "
        "(!= n_heads*head_dim = 512), 2 layers, BF16 weights",
        seed=1001,
        store_dtype=torch.bfloat16,
        cfg=dict(
            vocab_size=256,
            hidden_size=128,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=64,
            intermediate_size=256,
            num_hidden_layers=2,
            rope_theta=10000.0,
        ),
        n_tokens=300,
        prompt_len=16,
        max_new_tokens=16,
        max_shard_size=None,
    ),
    dict(
        name="mqa-d128-tied",
        desc="MQA (4 q heads / 1 kv head), head_dim 128, hidden 128 "
        "(!= n_heads*head_dim = 512), 2 layers, tied embeddings "
        "(no lm_head.weight), F16 weights",
        seed=2002,
        store_dtype=torch.float16,
        cfg=dict(
            vocab_size=512,
            hidden_size=128,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=128,
            intermediate_size=256,
            num_hidden_layers=2,
            rope_theta=10000.0,
            tie_word_embeddings=True,
        ),
        # Tied: logits = E . norm(h). With a large embedding the residual is
        # dominated by the current token's own row and greedy just repeats the
        # last token; keep E small so the layers' outputs dominate h.
        init_std={"embed_tokens": 0.02},
        n_tokens=200,
        prompt_len=16,
        max_new_tokens=16,
        max_shard_size=None,
    ),
    dict(
        name="llama3-rope",
        desc="Llama 3.1 rope scaling (rope_type llama3, factor 8, low 1, "
        "high 4, original_max_position_embeddings 64), rope_theta 500000, "
        "GQA 2:1 (2 q heads / 1 kv head), head_dim 64, hidden 128, "
        "2 layers, F32 weights, 300-token sequence",
        seed=3003,
        store_dtype=torch.float32,
        cfg=dict(
            vocab_size=256,
            hidden_size=128,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=64,
            intermediate_size=256,
            num_hidden_layers=2,
            rope_theta=500000.0,
            max_position_embeddings=512,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        ),
        n_tokens=300,
        prompt_len=16,
        max_new_tokens=16,
        max_shard_size=None,
    ),
    dict(
        name="sharded-f16",
        desc="F16 weights sharded into 3 files + model.safetensors.index.json, "
        "MHA-vs-GQA 2:1 (4 q heads / 2 kv heads), head_dim 32, hidden 128, "
        "3 layers, vocab 384 (not a power of two)",
        seed=4004,
        store_dtype=torch.float16,
        cfg=dict(
            vocab_size=384,
            hidden_size=128,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            intermediate_size=320,
            num_hidden_layers=3,
            rope_theta=10000.0,
        ),
        n_tokens=128,
        prompt_len=16,
        max_new_tokens=16,
        max_shard_size="500KB",
    ),
]

# Init: seeded normal per tensor. q/k get a larger std so attention is far
# from uniform; norms get 1 + noise so that their weights matter. After init
# the final norm weight is rescaled so the logits have std TARGET_LOGIT_STD.
INIT_STD = {
    "embed_tokens": 0.5,
    "lm_head": 0.05,
    "q_proj": 0.10,
    "k_proj": 0.10,
    "v_proj": 0.05,
    "o_proj": 0.05,
    "gate_proj": 0.05,
    "up_proj": 0.05,
    "down_proj": 0.05,
}
NORM_NOISE = 0.1
TARGET_LOGIT_STD = 2.5
MAX_TOKEN_TRIES = 50
MIN_GREEDY_MARGIN = 0.02  # reject prompts whose greedy path has a near-tie


def log(*a):
    print(*a, flush=True)


def init_weights(model, seed, overrides=None):
    g = torch.Generator().manual_seed(seed)
    stds = dict(INIT_STD)
    stds.update(overrides or {})
    with torch.no_grad():
        # named_parameters() de-duplicates tied tensors: with tied embeddings
        # only model.embed_tokens.weight is visited.
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + NORM_NOISE * torch.randn(p.shape, generator=g))
                continue
            key = next(k for k in stds if k in name)
            p.copy_(stds[key] * torch.randn(p.shape, generator=g))


def eager_fp32(path):
    m = LlamaForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    )
    m.eval()
    return m


@torch.no_grad()
def full_logits(model, tokens):
    ids = torch.tensor([tokens], dtype=torch.long)
    out = model(input_ids=ids, use_cache=False)
    return out.logits[0].to(torch.float32).contiguous()


@torch.no_grad()
def greedy(model, prompt, n_new):
    ids = torch.tensor([prompt], dtype=torch.long)
    # Cache-free full-recompute argmax loop first: if it hits eos, generate()
    # would stop early, so report that (None) and let the caller pick another
    # prompt.
    seq = list(prompt)
    for _ in range(n_new):
        seq.append(int(full_logits(model, seq)[-1].argmax()))
    loop = seq[len(prompt):]
    if model.config.eos_token_id in loop:
        return None
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=n_new,
        num_beams=1,
        pad_token_id=model.config.eos_token_id,
    )
    gen = out[0, len(prompt):].tolist()
    if loop != gen:
        raise RuntimeError(f"generate() {gen} != full-recompute greedy {loop}")
    return gen


@torch.no_grad()
def greedy_margin(model, prompt, gen):
    """Smallest top1-top2 logit gap along a greedy path (numerical slack before
    an implementation's greedy token could flip)."""
    seq = list(prompt) + list(gen)
    lg = full_logits(model, seq[:-1])[len(prompt) - 1:]
    top2 = torch.topk(lg, 2, dim=-1).values
    return float((top2[:, 0] - top2[:, 1]).min())


def classic_rope_config(path):
    """Rewrite config.json to the classic layout: top-level rope_theta and
    (for non-default rope) a rope_scaling object; drop rope_parameters."""
    cfg_path = os.path.join(path, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    written_layout = sorted(k for k in ("rope_parameters", "rope_scaling", "rope_theta") if k in cfg)
    rp = cfg.pop("rope_parameters", None)
    if rp is not None:
        rp = dict(rp)
        cfg["rope_theta"] = float(rp.pop("rope_theta"))
        rtype = rp.get("rope_type", "default")
        if rtype == "default":
            cfg.pop("rope_scaling", None)
        else:
            order = ["rope_type", "factor", "low_freq_factor", "high_freq_factor",
                     "original_max_position_embeddings"]
            rs = {k: rp[k] for k in order if k in rp}
            rs.update({k: v for k, v in rp.items() if k not in rs})
            cfg["rope_scaling"] = rs
    cfg = dict(sorted(cfg.items()))
    with open(cfg_path, "w") as f:
        f.write(json.dumps(cfg, indent=2) + "\n")
    return written_layout, cfg


def stored_dtypes(path):
    dts = set()
    names = []
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            with safe_open(os.path.join(path, fn), "pt") as f:
                for k in f.keys():
                    names.append(k)
                    dts.add(str(f.get_slice(k).get_dtype()))
    return dts, names


def make_fixture(spec):
    name = spec["name"]
    out = os.path.join(OUT_ROOT, name)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    log(f"=== {name}: {spec['desc']}")

    cfg_kwargs = dict(BASE_CFG)
    cfg_kwargs.update(spec["cfg"])
    config = LlamaConfig(**cfg_kwargs)
    torch.manual_seed(spec["seed"])
    model = LlamaForCausalLM(config).to(torch.float32)
    init_weights(model, spec["seed"], spec.get("init_std"))
    model.eval()

    # Token sequence (deterministic); retried with the next sub-seed until the
    # greedy continuation avoids bos/eos, is not one repeated token, and has
    # no near-tie (top1-top2 gap < MIN_GREEDY_MARGIN) along its path.
    V = config.vocab_size

    def tokens_for(attempt):
        g = torch.Generator().manual_seed(spec["seed"] * 1000 + attempt)
        return torch.randint(3, V, (spec["n_tokens"],), generator=g).tolist()

    # Scale the final norm so logits have the target spread (exact scaling of
    # logits; for tied embeddings this leaves the embedding matrix alone).
    with torch.no_grad():
        s = full_logits(model, tokens_for(0)).std().item()
        model.model.norm.weight.mul_(TARGET_LOGIT_STD / s)

    # Store in the requested dtype and save.
    model = model.to(spec["store_dtype"])
    save_kw = {}
    if spec["max_shard_size"] is not None:
        save_kw["max_shard_size"] = spec["max_shard_size"]
    model.save_pretrained(out, safe_serialization=True, **save_kw)
    del model
    for fn in os.listdir(out):  # save_pretrained leaves the shards mode 0600
        os.chmod(os.path.join(out, fn), 0o644)
    gen_cfg = os.path.join(out, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)  # llama-tiny has none; generation args are explicit here

    # Load back with the config as transformers wrote it.
    m_written = eager_fp32(out)
    t0 = tokens_for(0)
    logits_written = full_logits(m_written, t0)
    rope_written = dict(m_written.config.rope_parameters)
    inv_written = m_written.model.rotary_emb.inv_freq.clone()
    del m_written

    # Rewrite to the classic key layout; reload; must be bit-identical.
    layout, cfg_json = classic_rope_config(out)
    m = eager_fp32(out)
    logits_classic = full_logits(m, t0)
    d = (logits_classic - logits_written).abs().max().item()
    if d != 0.0 or not torch.equal(inv_written, m.model.rotary_emb.inv_freq):
        raise RuntimeError(f"{name}: classic rope config changes logits (max diff {d})")
    if dict(m.config.rope_parameters) != rope_written:
        raise RuntimeError(f"{name}: rope params differ {m.config.rope_parameters} vs {rope_written}")

    # Pick the token sequence / prompt.
    for attempt in range(MAX_TOKEN_TRIES):
        toks = tokens_for(attempt)
        prompt = toks[: spec["prompt_len"]]
        gen = greedy(m, prompt, spec["max_new_tokens"])
        bad = {config.bos_token_id, config.eos_token_id}
        if (gen is not None and not (set(gen) & bad)
                and len(set(gen)) >= max(4, len(gen) // 3)
                and greedy_margin(m, prompt, gen) >= MIN_GREEDY_MARGIN):
            break
    else:
        log(f"  WARNING: no attempt gave a varied greedy continuation; using last")
        if gen is None:
            raise RuntimeError(f"{name}: greedy hits eos for every attempted prompt")
    logits = full_logits(m, toks)

    # Write logits.f32 and ref.json.
    arr = logits.numpy().astype("<f4")
    arr.tofile(os.path.join(out, "logits.f32"))
    dts, tensor_names = stored_dtypes(out)
    store_name = DTYPE_NAMES[spec["store_dtype"]]
    ref = {
        "tokens": toks,
        "logits_file": "logits.f32",
        "logits_shape": [len(toks), V],
        "logits_dtype": "float32 little-endian, row-major [position][vocab]",
        "greedy": {"prompt": prompt, "generated": gen},
        "made_with": (
            f"transformers {transformers.__version__} LlamaForCausalLM, torch {torch.__version__}; "
            f"weights stored as {store_name} (safetensors); reference logits and greedy "
            f"computed in float32 (dtype=torch.float32, attn_implementation=eager) from the "
            f"stored weights reloaded from this directory; greedy = generate(do_sample=False, "
            f"max_new_tokens={spec['max_new_tokens']}); data/make_fixtures.py seed {spec['seed']}"
        ),
    }
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f)

    info = dict(
        name=name,
        transformers_layout=layout,
        cfg=cfg_json,
        stored_dtypes=sorted(dts),
        tensor_names=tensor_names,
        logit_std=float(logits.std()),
        logit_range=(float(logits.min()), float(logits.max())),
        attempt=attempt,
    )

    # Extra check for the llama3 fixture: scaling must actually matter.
    if cfg_json.get("rope_scaling"):
        c2 = LlamaConfig.from_pretrained(out)
        c2.rope_parameters = {"rope_type": "default", "rope_theta": c2.rope_parameters["rope_theta"]}
        m2 = LlamaForCausalLM.from_pretrained(out, config=c2, dtype=torch.float32,
                                              attn_implementation="eager").eval()
        l2 = full_logits(m2, toks)
        inv_s = m.model.rotary_emb.inv_freq
        inv_d = m2.model.rotary_emb.inv_freq
        info["rope_check"] = dict(
            inv_freq_llama3=inv_s.tolist(),
            inv_freq_ratio=(inv_d / inv_s).tolist(),
            max_logit_diff_vs_unscaled=float((l2 - logits).abs().max()),
            max_logit_diff_vs_unscaled_first_pos=float((l2[:1] - logits[:1]).abs().max()),
        )
        del m2
    del m
    return info


def verify_fixture(name):
    """Fresh reload from disk, recompute, compare bit-exactly with logits.f32."""
    out = os.path.join(OUT_ROOT, name)
    with open(os.path.join(out, "ref.json")) as f:
        ref = json.load(f)
    n, V = ref["logits_shape"]
    stored = np.fromfile(os.path.join(out, ref["logits_file"]), dtype="<f4").reshape(n, V)
    m = eager_fp32(out)
    logits = full_logits(m, ref["tokens"]).numpy()
    diff = float(np.abs(logits - stored).max())
    gen = greedy(m, ref["greedy"]["prompt"], len(ref["greedy"]["generated"]))
    ok_gen = gen == ref["greedy"]["generated"]
    # The stored logits' argmax of the prompt's last position is the first greedy token
    # only if the prompt is a prefix of tokens (it is, by construction).
    first = int(stored[len(ref["greedy"]["prompt"]) - 1].argmax())
    ok_first = first == ref["greedy"]["generated"][0]
    # Smallest top1-top2 logit gap along the greedy path: how much numerical
    # slack an implementation has before a greedy token could flip.
    margin = greedy_margin(m, ref["greedy"]["prompt"], ref["greedy"]["generated"])
    return diff, ok_gen, ok_first, margin


def dir_sizes(path):
    sizes = {fn: os.path.getsize(os.path.join(path, fn)) for fn in sorted(os.listdir(path))}
    return sizes, sum(sizes.values())


def main(argv):
    torch.set_grad_enabled(False)
    names = argv[1:] or [s["name"] for s in FIXTURES]
    specs = {s["name"]: s for s in FIXTURES}
    os.makedirs(OUT_ROOT, exist_ok=True)
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, numpy {np.__version__}")
    infos = [make_fixture(specs[n]) for n in names]

    log("\n=================== SUMMARY ===================")
    all_ok = True
    for info in infos:
        name = info["name"]
        out = os.path.join(OUT_ROOT, name)
        cfg = info["cfg"]
        with open(os.path.join(out, "ref.json")) as f:
            ref = json.load(f)
        diff, ok_gen, ok_first, margin = verify_fixture(name)
        all_ok &= diff == 0.0 and ok_gen and ok_first
        sizes, total = dir_sizes(out)
        log(f"\n--- {name}")
        log(f"  config: vocab {cfg['vocab_size']}, hidden {cfg['hidden_size']}, layers {cfg['num_hidden_layers']}, "
            f"heads {cfg['num_attention_heads']}/{cfg['num_key_value_heads']} kv, head_dim {cfg['head_dim']}, "
            f"ffn {cfg['intermediate_size']}, eps {cfg['rms_norm_eps']}, tie {cfg['tie_word_embeddings']}, "
            f"rope_theta {cfg['rope_theta']}, rope_scaling {cfg.get('rope_scaling')}")
        log(f"  transformers wrote rope keys: {info['transformers_layout']} -> rewritten to classic "
            f"{[k for k in ('rope_theta', 'rope_scaling') if k in cfg]}")
        log(f"  stored dtypes: {info['stored_dtypes']}; lm_head.weight stored: {'lm_head.weight' in info['tensor_names']}; "
            f"{len(info['tensor_names'])} tensors")
        log(f"  files: " + ", ".join(f"{k} {v}" for k, v in sizes.items()) + f"; total {total} bytes")
        log(f"  logits shape {ref['logits_shape']}, std {info['logit_std']:.3f}, "
            f"range [{info['logit_range'][0]:.3f}, {info['logit_range'][1]:.3f}] (token attempt {info['attempt']})")
        log(f"  greedy prompt {ref['greedy']['prompt']}")
        log(f"  greedy generated {ref['greedy']['generated']}")
        log(f"  verify: reload max|diff| {diff} ; greedy reproduces {ok_gen} ; "
            f"argmax(logits[prompt_len-1]) == generated[0]: {ok_first} ; "
            f"min greedy top1-top2 margin {margin:.4f}")
        if "rope_check" in info:
            rc = info["rope_check"]
            log(f"  llama3 rope: inv_freq(unscaled)/inv_freq(llama3) per pair = "
                + "[" + ", ".join(f"{r:.3f}" for r in rc["inv_freq_ratio"]) + "]")
            log(f"  llama3 rope: max |logits(llama3) - logits(default rope, same theta)| = "
                f"{rc['max_logit_diff_vs_unscaled']:.4f} (position 0: {rc['max_logit_diff_vs_unscaled_first_pos']})")
    _, grand = (None, sum(dir_sizes(os.path.join(OUT_ROOT, d))[1]
                          for d in os.listdir(OUT_ROOT) if os.path.isdir(os.path.join(OUT_ROOT, d))))
    log(f"\ntotal size of fixture directories: {grand} bytes")
    log("ALL OK" if all_ok else "SOME CHECKS FAILED")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
