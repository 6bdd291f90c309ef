"""Model files: a Hugging Face Llama directory (what `orthros export` writes), a llama.cpp GGUF read with numpy
(F32, F16, Q8_0 and Q4_1 tensors, dequantised to float32 as transformers does, so that the GPU machine needs no
`gguf` package), and the adapter directory of docs/converted-models.md."""
import hashlib
import json
import os
import struct

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Config:
    """The Llama fields the forward needs, and the checkpoint's `orthros` object (a dict, maybe empty)."""

    def __init__(self, d):
        self.hidden = int(d["hidden_size"])
        self.ffn = int(d["intermediate_size"])
        self.layers = int(d["num_hidden_layers"])
        self.n_heads = int(d["num_attention_heads"])
        self.n_kv = int(d.get("num_key_value_heads") or self.n_heads)
        self.head_dim = int(d.get("head_dim") or self.hidden // self.n_heads)
        self.vocab = int(d["vocab_size"])
        self.eps = float(d.get("rms_norm_eps", 1e-6))
        self.rope_theta = float(d.get("rope_theta", 10000.0))
        self.rope_scaling = d.get("rope_scaling")
        if self.rope_scaling is None and isinstance(d.get("rope_parameters"), dict):
            rp = d["rope_parameters"]
            self.rope_theta = float(rp.get("rope_theta", self.rope_theta))
            if rp.get("rope_type", "default") != "default":
                self.rope_scaling = rp
        self.tie = bool(d.get("tie_word_embeddings", False))
        self.bos = d.get("bos_token_id")
        self.eos = d.get("eos_token_id")
        self.orthros = dict(d.get("orthros") or {})
        self.raw = d
        if self.n_heads % self.n_kv:
            raise ValueError(f"num_attention_heads {self.n_heads} is not a multiple of num_key_value_heads {self.n_kv}")
        if self.rope_scaling and self.rope_scaling.get("rope_type", self.rope_scaling.get("type")) not in ("llama3",):
            raise ValueError(f"rope_scaling {self.rope_scaling}: only llama3 is supported")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


# ---- Hugging Face directory ----

def load_hf_dir(path):
    from safetensors.torch import load_file
    cfg = json.load(open(os.path.join(path, "config.json")))
    if "orthros_base" in cfg:
        raise ValueError(f"{path} is an adapter directory: pass its base as --model and it as --adapter")
    idx = os.path.join(path, "model.safetensors.index.json")
    sd = {}
    if os.path.exists(idx):
        for f in sorted(set(json.load(open(idx))["weight_map"].values())):
            sd.update(load_file(os.path.join(path, f)))
    else:
        sd = load_file(os.path.join(path, "model.safetensors"))
    return Config(cfg), {k: v.float() for k, v in sd.items()}


# ---- GGUF ----

_GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class _Reader:
    def __init__(self, buf):
        self.b, self.o = buf, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = bytes(self.b[self.o:self.o + n]).decode("utf-8")
        self.o += n
        return s

    def value(self, t):
        if t in _GGUF_SCALAR:
            return self.take(_GGUF_SCALAR[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            if et in _GGUF_SCALAR and et != 8:  # numeric arrays: skip in bulk
                size = struct.calcsize(_GGUF_SCALAR[et])
                arr = np.frombuffer(self.b, dtype=np.dtype(_GGUF_SCALAR[et]), count=n, offset=self.o)
                self.o += n * size
                return arr
            return [self.value(et) for _ in range(n)]
        raise ValueError(f"GGUF: unknown value type {t}")


def _dequant(buf, off, ttype, n):
    """n float32 values of a tensor of GGUF type ttype starting at buf[off]."""
    if ttype == 0:
        return np.frombuffer(buf, np.float32, n, off).copy()
    if ttype == 1:
        return np.frombuffer(buf, np.float16, n, off).astype(np.float32)
    if ttype == 8:  # Q8_0: blocks of 32: f16 scale, 32 int8
        blk = np.frombuffer(buf, np.uint8, n // 32 * 34, off).reshape(-1, 34)
        d = blk[:, :2].copy().view(np.float16).astype(np.float32)
        q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
        return (d * q).reshape(-1)
    if ttype == 3:  # Q4_1: blocks of 32: f16 scale, f16 min, 16 bytes (low nibbles: 0..15, high: 16..31)
        blk = np.frombuffer(buf, np.uint8, n // 32 * 20, off).reshape(-1, 20)
        d = blk[:, 0:2].copy().view(np.float16).astype(np.float32)
        m = blk[:, 2:4].copy().view(np.float16).astype(np.float32)
        qs = blk[:, 4:]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float32)
        return (d * q + m).reshape(-1)
    raise ValueError(f"GGUF tensor type {ttype} is not supported here (F32, F16, Q8_0, Q4_1 are)")


def _unpermute(w, n_head):
    """llama.cpp stores q/k rows interleaved for its rope; this undoes its `permute` (HF's rotate-half layout)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_gguf(path):
    buf = memoryview(open(path, "rb").read())
    r = _Reader(buf)
    if bytes(buf[:4]) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.o = 4
    version = r.take("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version}")
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        meta[k] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take("<I")
        dims = [r.take("<Q") for _ in range(nd)]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = int(meta.get("general.alignment", 32))
    base = (r.o + align - 1) // align * align
    if meta.get("general.architecture") != "llama":
        raise ValueError(f"{path}: architecture {meta.get('general.architecture')}, expected llama")
    p = "llama."
    n_head, n_kv_head = int(meta[p + "attention.head_count"]), int(meta.get(p + "attention.head_count_kv",
                                                                             meta[p + "attention.head_count"]))
    hidden = int(meta[p + "embedding_length"])
    cfg = {"hidden_size": hidden, "intermediate_size": int(meta[p + "feed_forward_length"]),
           "num_hidden_layers": int(meta[p + "block_count"]), "num_attention_heads": n_head,
           "num_key_value_heads": n_kv_head,
           "head_dim": int(meta.get(p + "attention.key_length", hidden // n_head)),
           "rms_norm_eps": float(meta[p + "attention.layer_norm_rms_epsilon"]),
           "rope_theta": float(meta.get(p + "rope.freq_base", 10000.0)),
           "max_position_embeddings": int(meta.get(p + "context_length", 2048)),
           "bos_token_id": int(meta["tokenizer.ggml.bos_token_id"]) if "tokenizer.ggml.bos_token_id" in meta else None,
           "eos_token_id": int(meta["tokenizer.ggml.eos_token_id"]) if "tokenizer.ggml.eos_token_id" in meta else None}
    if p + "rope.scaling.type" in meta and meta[p + "rope.scaling.type"] not in ("none",):
        raise ValueError(f"{path}: rope scaling {meta[p + 'rope.scaling.type']} is not supported here")
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
           "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
           "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    sd = {}
    for name, dims, ttype, off in infos:
        n = int(np.prod(dims))
        a = _dequant(buf, base + off, ttype, n).reshape(list(reversed(dims)))
        if name in names:
            hf = names[name]
        else:
            parts = name.split(".")
            if parts[0] != "blk" or parts[2] not in per:
                continue  # rope_freqs and the like: not used by a plain llama
            hf = f"model.layers.{parts[1]}.{per[parts[2]]}.{parts[3]}"
        if hf.endswith("q_proj.weight"):
            a = _unpermute(a, n_head)
        elif hf.endswith("k_proj.weight"):
            a = _unpermute(a, n_kv_head)
        sd[hf] = torch.from_numpy(np.ascontiguousarray(a))
    cfg["tie_word_embeddings"] = "lm_head.weight" not in sd
    cfg["vocab_size"] = int(sd["model.embed_tokens.weight"].shape[0])
    return Config(cfg), sd


def load_model(path):
    """(Config, float32 state dict) of a model directory or GGUF file."""
    if os.path.isdir(path):
        return load_hf_dir(path)
    if path.endswith(".gguf"):
        return load_gguf(path)
    raise ValueError(f"{path}: neither a model directory nor a .gguf file")


def base_reference(path):
    """The `orthros_base` object naming a base model: its file name (resolved by the engine relative to the adapter
    directory, then to .cache/models/), the sha256 the engine checks, and how to fetch it."""
    if os.path.isdir(path):
        f = os.path.join(path, "model.safetensors.index.json")
        if not os.path.exists(f):
            f = os.path.join(path, "model.safetensors")
        ref = {"path": os.path.abspath(path), "sha256": sha256_file(f)}
    else:
        ref = {"path": os.path.basename(path), "sha256": sha256_file(path)}
    if os.path.basename(path) == "SmolLM2-135M-Instruct.Q4_1.gguf":
        ref["fetch"] = "ci/fetch-model.sh"
    return ref


# ---- adapters (docs/converted-models.md) ----

def save_adapter(out_dir, base_ref, orthros_obj, tensors, lora_alpha=None, dtype="f32"):
    """config.json (orthros_base + orthros) and adapter.safetensors (F32 or BF16) into out_dir, atomically per file."""
    from safetensors.torch import save_file
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"orthros_base": base_ref, "orthros": orthros_obj}
    tmp = os.path.join(out_dir, "config.json.tmp")
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "config.json"))
    meta = {"format": "pt"}
    if lora_alpha is not None:
        meta["lora_alpha"] = repr(float(lora_alpha))
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    t = {k: v.detach().to(dt).contiguous().cpu() for k, v in sorted(tensors.items())}
    tmp = os.path.join(out_dir, "adapter.safetensors.tmp")
    save_file(t, tmp, metadata=meta)
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(out_dir, "adapter.safetensors"))


def load_adapter(path):
    """(config dict or None, tensors, lora_alpha or None) of an adapter directory or .safetensors file."""
    from safetensors import safe_open
    cfg = None
    if os.path.isdir(path):
        cfg = json.load(open(os.path.join(path, "config.json")))
        path = os.path.join(path, "adapter.safetensors")
    tensors, alpha = {}, None
    with safe_open(path, "pt") as f:
        meta = f.metadata() or {}
        for k in f.keys():
            tensors[k] = f.get_tensor(k).float()
    if "lora_alpha" in meta:
        alpha = float(meta["lora_alpha"])
    return cfg, tensors, alpha


def resolve_base(adapter_dir, cfg):
    """The base model file of an adapter config, as the engine resolves it, with the sha256 checked."""
    b = cfg["orthros_base"]
    for cand in (os.path.join(adapter_dir, b["path"]), os.path.join(".cache", "models", b["path"]),
                 os.path.join(ROOT, ".cache", "models", b["path"]), b["path"]):
        if os.path.exists(cand):
            ref = base_reference(cand)
            if ref["sha256"] != b["sha256"]:
                raise ValueError(f"{cand}: sha256 {ref['sha256']}, the adapter wants {b['sha256']}")
            return cand
    raise FileNotFoundError(f"{adapter_dir}: base {b['path']} not found" +
                            (f" (fetch it with {b['fetch']})" if b.get("fetch") else ""))
