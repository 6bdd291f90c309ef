#!/usr/bin/env python3
"""Small GGUF fixtures made by the gguf package (llama.cpp's own Python writer and quantiser), with references
from it and from Hugging Face transformers, for the C loader's tests (engine/tests/test_gguf.c):

    .venv/bin/python data/make_gguf_fixtures.py

data/gguf/quants.gguf + quants.f32: seeded random tensors stored as F32, F16, BF16, Q8_0, Q4_0 and Q4_1 (rows of
64 and 96 values), and the float32 values gguf.quants.dequantize gives for them, concatenated in tensor order.

data/gguf/tiny-q4_1/model.gguf + logits.f32 + ref.json: the weights of data/fixtures/llama-tiny written the way
llama.cpp's convert_hf_to_gguf.py writes a Llama (q_proj / k_proj rows permuted for its RoPE, llama.* metadata)
with SmolLM2's mix of types: Q4_1 matrices, Q8_0 embeddings, F32 norms; the logits are transformers' for the
fixture's tokens after loading this file (AutoModelForCausalLM, gguf_file=, float32), so the loader's whole path
(parse, dequantise, unpermute, config) is checked against an independent implementation without the 98 MB model.
"""
import json
import os

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "data", "gguf")


def quants():
    rng = np.random.default_rng(5)
    w = gguf.GGUFWriter(os.path.join(OUT, "quants.gguf"), arch="llama")
    refs = []
    for qt in (Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1):
        for rows, cols in ((2, 64), (3, 96)):
            x = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 4)).astype(np.float32)
            x[0, :5] = [0.0, -0.0, 1e-8, 65504.0, -3.5]  # zero, tiny, f16 max, a negative
            q = gguf.quants.quantize(x, qt)
            name = f"{qt.name.lower()}_{rows}x{cols}"
            w.add_tensor(name, q, raw_dtype=qt)
            refs.append(gguf.quants.dequantize(q, qt).astype(np.float32).reshape(-1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.concatenate(refs).astype("<f4").tofile(os.path.join(OUT, "quants.f32"))


def permute(weights, n_head, n_head_kv):
    # convert_hf_to_gguf.py's LlamaModel.permute, as it is applied to q_proj (n_head) and k_proj (n_head_kv).
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def tiny_q41():
    import torch
    import transformers
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM
    src = os.path.join(ROOT, "data", "fixtures", "llama-tiny")
    cfg = json.load(open(os.path.join(src, "config.json")))
    ref = json.load(open(os.path.join(src, "ref.json")))
    t = load_file(os.path.join(src, "model.safetensors"))
    d = os.path.join(OUT, "tiny-q4_1")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    w.add_name("llama-tiny fixture, Q4_1")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)

    def put(name, x, qt):
        x = np.ascontiguousarray(x.astype(np.float32))
        w.add_tensor(name, gguf.quants.quantize(x, qt) if qt != Q.F32 else x, raw_dtype=qt)

    put("token_embd.weight", t["model.embed_tokens.weight"], Q.Q8_0)
    put("output_norm.weight", t["model.norm.weight"], Q.F32)
    put("output.weight", t["lm_head.weight"], Q.Q8_0)
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    for i in range(cfg["num_hidden_layers"]):
        for hf, gg in names.items():
            x = t[f"model.layers.{i}.{hf}.weight"]
            if gg == "attn_q":
                x = permute(x, H, H)
            elif gg == "attn_k":
                x = permute(x, H, Hkv)
            put(f"blk.{i}.{gg}.weight", x, Q.Q4_1)
        put(f"blk.{i}.attn_norm.weight", t[f"model.layers.{i}.input_layernorm.weight"], Q.F32)
        put(f"blk.{i}.ffn_norm.weight", t[f"model.layers.{i}.post_attention_layernorm.weight"], Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file="model.gguf", dtype=torch.float32,
                                                 attn_implementation="eager")
    tokens = ref["tokens"]
    with torch.no_grad():
        logits = model(torch.tensor([tokens])).logits[0].float().numpy()
    logits.astype("<f4").tofile(os.path.join(d, "logits.f32"))
    json.dump({"tokens": tokens, "logits_file": "logits.f32", "logits_shape": list(logits.shape),
               "made_with": {"transformers": transformers.__version__, "torch": torch.__version__,
                             "gguf": "0.19.0"}}, open(os.path.join(d, "ref.json"), "w"), indent=1)
    print(f"{path}: {os.path.getsize(path)} bytes, logits {logits.shape}")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    quants()
    tiny_q41()
