"""The engine's forward in PyTorch, written from DESIGN section 2 and docs/converted-models.md (not from
transformers' attention): RMSNorm, RoPE (llama3 scaling), GQA, SwiGLU, and the attention kinds full, linear
(elu1 / relu / hedgehog maps, phi before or after RoPE, local softmax window W with per-query-head gate gamma_h, one
shared denominator, key maps and state per kv head), orthros (t < N - T linear, t >= N - T full over everything)
and hybrid (layer i full when (i+1) mod K = 0, else linear). LoRA deltas on any projection.

The linear formula has two implementations that compute the same thing: `naive` materialises the N x N maps
(the reference, as the formula reads), `chunked` works in blocks of C >= W queries against their own and the
previous block's keys plus the (S, z) state of the blocks before those (O(N (2C + F) d) instead of O(N^2 d)).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

KINDS_ARCH = ("transformer", "orthros", "linear", "hybrid")


@dataclass
class Arch:
    """The attention settings of docs/converted-models.md (the checkpoint's `orthros` object and the options)."""
    name: str = "transformer"
    feature_map: str = "elu1"          # elu1 | relu | hedgehog
    feature_dim: int = 0               # hedgehog: columns of W (F = 2 * feature_dim); 0: head_dim / 2
    feature_map_rope: str = "before"   # before | after
    local_window: int = 0              # W; 0 = none
    tail: int = 1                      # orthros: last T positions full
    hybrid_every: int = 4
    eps: float = 1e-6

    def check(self):
        if self.name not in KINDS_ARCH:
            raise ValueError(f"architecture {self.name!r}: one of {', '.join(KINDS_ARCH)}")
        if self.feature_map not in ("elu1", "relu", "hedgehog"):
            raise ValueError(f"feature_map {self.feature_map!r}")
        if self.feature_map_rope not in ("before", "after"):
            raise ValueError(f"feature_map_rope {self.feature_map_rope!r}")
        if self.local_window < 0 or self.tail < 0 or self.hybrid_every < 1:
            raise ValueError("local_window, tail >= 0 and hybrid_every >= 1")
        return self

    def kind(self, i):
        if self.name == "transformer":
            return "full"
        if self.name == "hybrid":
            return "full" if (i + 1) % self.hybrid_every == 0 else "linear"
        return self.name  # orthros | linear

    def to_json(self):
        return {"architecture": self.name, "feature_map": self.feature_map, "feature_dim": self.feature_dim,
                "feature_map_rope": self.feature_map_rope, "local_window": self.local_window, "tail": self.tail}

    @staticmethod
    def from_json(o, head_dim):
        a = Arch(name=o.get("architecture", "transformer"), feature_map=o.get("feature_map", "elu1"),
                 feature_dim=int(o.get("feature_dim", 0)), feature_map_rope=o.get("feature_map_rope", "before"),
                 local_window=int(o.get("local_window", 0)), tail=int(o.get("tail", 1)),
                 hybrid_every=int(o.get("hybrid_every", 4)), eps=float(o.get("eps", 1e-6)))
        if not a.feature_dim:
            a.feature_dim = max(1, head_dim // 2)
        return a.check()


# ---- pieces ----

def rmsnorm(x, w, eps):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))


def inv_freq(cfg):
    d = cfg.head_dim
    f = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    rs = cfg.rope_scaling
    if rs:
        factor, lo, hi = float(rs["factor"]), float(rs["low_freq_factor"]), float(rs["high_freq_factor"])
        old = float(rs["original_max_position_embeddings"])
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / f
        g = torch.where(wl > lo_wl, f / factor, f)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * g / factor + smooth * g
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        f = torch.where(medium, smoothed, g)
    return f


def rope_tables(cfg, n, device):
    pos = torch.arange(n, device=device, dtype=torch.float32)
    fr = torch.outer(pos, inv_freq(cfg).to(device))
    emb = torch.cat([fr, fr], dim=-1)
    return emb.cos(), emb.sin()


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos + rot * sin


def feature_map(x, kind, w=None):
    """phi over the last axis. x [B, H, N, d]; hedgehog w [H, d, half]: [softmax(x w), softmax(-x w)]."""
    if kind == "elu1":
        return F.elu(x) + 1.0
    if kind == "relu":
        return F.relu(x)
    z = torch.einsum("bhnd,hdf->bhnf", x, w)
    return torch.cat([torch.softmax(z, dim=-1), torch.softmax(-z, dim=-1)], dim=-1)


def full_attention(q, k, v):
    """Causal softmax attention, GQA. q [B, Hq, N, d], k, v [B, Hkv, N, d] (rotated q, k)."""
    g = q.shape[1] // k.shape[1]
    if g > 1:
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def tail_attention(q_tail, k, v, start):
    """Rows t = start .. start + T - 1 of causal softmax attention over every key s <= t (orthros' tail, decode)."""
    B, Hq, T, d = q_tail.shape
    Hkv, N = k.shape[1], k.shape[2]
    g = Hq // Hkv
    qg = q_tail.float().view(B, Hkv, g, T, d)
    x = torch.einsum("bkgtd,bksd->bkgts", qg, k.float()) / math.sqrt(d)
    t = torch.arange(start, start + T, device=q_tail.device)[:, None]
    s = torch.arange(N, device=q_tail.device)[None, :]
    x = x.masked_fill(s > t, float("-inf"))
    p = torch.softmax(x, dim=-1)
    return torch.einsum("bkgts,bksd->bkgtd", p, v.float()).reshape(B, Hq, T, d)


def linear_naive(fq, fk, v, qr, kr, gamma, W, eps):
    """The linear formula with N x N maps. fq [B, Hkv, g, N, F], fk [B, Hkv, N, F], v [B, Hkv, N, d],
    qr [B, Hkv, g, N, d], kr [B, Hkv, N, d] (rotated), gamma [Hkv, g]."""
    N, d = v.shape[2], v.shape[3]
    t = torch.arange(N, device=v.device)[:, None]
    s = torch.arange(N, device=v.device)[None, :]
    b = torch.einsum("bkgnf,bkmf->bkgnm", fq, fk)
    if W == 0:
        b = b * (s <= t)
        return torch.einsum("bkgnm,bkmd->bkgnd", b, v) / (b.sum(-1, keepdim=True) + eps)
    win = (s <= t) & (s > t - W)
    x = torch.einsum("bkgnd,bkmd->bkgnm", qr, kr) / math.sqrt(d)
    x = x.masked_fill(~win, float("-inf"))
    a = gamma[None, :, :, None, None] * torch.exp(x - x.amax(-1, keepdim=True))
    w = a + b * (s <= t - W)
    return torch.einsum("bkgnm,bkmd->bkgnd", w, v) / w.sum(-1, keepdim=True)


def linear_chunked(fq, fk, v, qr, kr, gamma, W, eps, chunk=64):
    """The same formula in blocks of C = max(chunk, W) queries: each block sees its own and the previous block's
    keys exactly (window and linear terms under their masks) and the (S, z) sums of all older blocks (which lie
    wholly in the linear region since C >= W)."""
    B, K, g, N, Fd = fq.shape
    d = v.shape[-1]
    C = max(chunk, W)
    nC = -(-N // C)
    pad = nC * C - N
    if pad:
        fq, qr = F.pad(fq, (0, 0, 0, pad)), F.pad(qr, (0, 0, 0, pad))
        fk, kr, v = F.pad(fk, (0, 0, 0, pad)), F.pad(kr, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
    fq = fq.view(B, K, g, nC, C, Fd)
    fk = fk.view(B, K, nC, C, Fd)
    v = v.view(B, K, nC, C, d)

    def two(x):  # [B, K, nC, C, X] -> keys of the previous block then this one: [B, K, nC, 2C, X]
        prev = torch.cat([torch.zeros_like(x[:, :, :1]), x[:, :, :-1]], dim=2)
        return torch.cat([prev, x], dim=3)

    fk2, v2 = two(fk), two(v)
    dev = v.device
    t = torch.arange(C, device=dev)[:, None]           # query offset in its block
    j = torch.arange(2 * C, device=dev)[None, :] - C   # key offset relative to the block start
    first = (torch.arange(nC, device=dev) == 0)[:, None, None] & (j < 0)[None]  # block 0 has no previous block
    causal = (j <= t)[None] & ~first                   # [nC, C, 2C]
    lin = (j <= t - W)[None] & ~first
    b = torch.einsum("bkgicf,bkijf->bkgicj", fq, fk2) * lin
    # state of the blocks up to i - 2
    Sc = torch.einsum("bkicf,bkicd->bkifd", fk, v)
    zc = fk.sum(3)
    S = torch.cumsum(Sc, dim=2)
    z = torch.cumsum(zc, dim=2)
    S = torch.cat([torch.zeros_like(S[:, :, :2]), S[:, :, :-2]], dim=2)[:, :, :nC]
    z = torch.cat([torch.zeros_like(z[:, :, :2]), z[:, :, :-2]], dim=2)[:, :, :nC]
    num = torch.einsum("bkgicf,bkifd->bkgicd", fq, S)
    den = torch.einsum("bkgicf,bkif->bkgic", fq, z)
    if W == 0:
        w = b
    else:
        qr = qr.view(B, K, g, nC, C, d)
        kr2 = two(kr.view(B, K, nC, C, d))
        x = torch.einsum("bkgicd,bkijd->bkgicj", qr, kr2) / math.sqrt(d)
        win = causal & ~lin
        x = x.masked_fill(~win, float("-inf"))
        a = gamma[None, :, :, None, None, None] * torch.exp(x - x.amax(-1, keepdim=True))
        w = a + b
    num = num + torch.einsum("bkgicj,bkijd->bkgicd", w, v2)
    den = den + w.sum(-1)
    if W == 0:
        den = den + eps
    o = num / den[..., None]
    return o.reshape(B, K, g, nC * C, d)[:, :, :, :N]


# ---- modules ----

class Lin(nn.Module):
    """A frozen projection with an optional low-rank delta: y = x W^T + (alpha / r) (x A^T) B^T."""

    def __init__(self, w):
        super().__init__()
        self.weight = nn.Parameter(w, requires_grad=False)
        self.lora_A = self.lora_B = None
        self.scale = 0.0
        self.enabled = True  # False: the base projection alone (the teacher pass of a LoRA fine-tune)

    def add_lora(self, r, alpha, gen):
        out_f, in_f = self.weight.shape
        A = torch.empty(r, in_f)
        bound = 1.0 / math.sqrt(in_f)  # kaiming_uniform(a=sqrt(5)), as peft initialises A; B starts at zero
        A.uniform_(-bound, bound, generator=gen)
        self.lora_A = nn.Parameter(A.to(self.weight.device))
        self.lora_B = nn.Parameter(torch.zeros(out_f, r, device=self.weight.device))
        self.scale = alpha / r

    def set_lora(self, A, B, alpha):
        self.lora_A = nn.Parameter(A.to(self.weight.device).float())
        self.lora_B = nn.Parameter(B.to(self.weight.device).float())
        self.scale = alpha / A.shape[0]

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.lora_A is not None and self.enabled:
            y = y + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.scale
        return y


class Attn(nn.Module):
    def __init__(self, cfg, sd, i):
        super().__init__()
        p = f"model.layers.{i}.self_attn."
        self.q_proj, self.k_proj = Lin(sd[p + "q_proj.weight"]), Lin(sd[p + "k_proj.weight"])
        self.v_proj, self.o_proj = Lin(sd[p + "v_proj.weight"]), Lin(sd[p + "o_proj.weight"])
        self.fm_q = self.fm_k = self.gate_logit = None
        self.gamma_fixed = None  # a window_gate read from a file that is not in (0, 1) (no logit): used as is

    def init_feature_maps(self, cfg, half, init, gen):
        d = cfg.head_dim

        def make(h):
            w = torch.empty(h, d, half)
            if init == "identity":  # LoLCATs' zero_init flag: eye on each head's [d, half]
                w.zero_()
                for x in range(h):
                    nn.init.eye_(w[x])
            else:  # LoLCATs' default, kaiming_uniform_ on the [H, d, half] tensor
                bound = math.sqrt(6.0 / (d * half))
                w.uniform_(-bound, bound, generator=gen)
            return nn.Parameter(w.to(self.q_proj.weight.device))

        self.fm_q, self.fm_k = make(cfg.n_heads), make(cfg.n_kv)
        self.gate_logit = nn.Parameter(torch.full((cfg.n_heads,), -2.1972245773362196,
                                                  device=self.q_proj.weight.device))

    def gamma(self, n_heads, device):
        if self.gamma_fixed is not None:
            return self.gamma_fixed
        if self.gate_logit is None:
            return torch.ones(n_heads, device=device)
        return torch.sigmoid(self.gate_logit.float())


class Model(nn.Module):
    """The decoder. `forward(ids, arch)` -> logits [B, N, V] (float32 on the cpu; bf16 under cuda autocast)."""

    def __init__(self, cfg, sd):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Parameter(sd["model.embed_tokens.weight"], requires_grad=False)
        self.norm = nn.Parameter(sd["model.norm.weight"], requires_grad=False)
        self.lm_head = None if cfg.tie or "lm_head.weight" not in sd else \
            nn.Parameter(sd["lm_head.weight"], requires_grad=False)
        self.attn = nn.ModuleList()
        self.mlp = nn.ModuleList()
        self.ln1, self.ln2 = nn.ParameterList(), nn.ParameterList()
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            self.attn.append(Attn(cfg, sd, i))
            m = nn.Module()
            m.gate_proj, m.up_proj = Lin(sd[p + "mlp.gate_proj.weight"]), Lin(sd[p + "mlp.up_proj.weight"])
            m.down_proj = Lin(sd[p + "mlp.down_proj.weight"])
            self.mlp.append(m)
            self.ln1.append(nn.Parameter(sd[p + "input_layernorm.weight"], requires_grad=False))
            self.ln2.append(nn.Parameter(sd[p + "post_attention_layernorm.weight"], requires_grad=False))
        self.impl = "chunked"
        self.chunk = 64
        self._linear_fn = linear_chunked
        self._rope = {}

    # -- feature maps, gates, LoRA --
    def init_feature_maps(self, half, init="identity", seed=0):
        gen = torch.Generator().manual_seed(seed)
        for a in self.attn:
            a.init_feature_maps(self.cfg, half, init, gen)

    def add_lora(self, r, alpha, mlp=False, seed=0):
        gen = torch.Generator().manual_seed(seed)
        for a, m in zip(self.attn, self.mlp):
            for lin in (a.q_proj, a.k_proj, a.v_proj, a.o_proj):
                lin.add_lora(r, alpha, gen)
            if mlp:
                for lin in (m.gate_proj, m.up_proj, m.down_proj):
                    lin.add_lora(r, alpha, gen)

    def set_lora_enabled(self, on):
        for _, lin in self.named_projections():
            lin.enabled = on

    def compile_linear(self):
        """torch.compile the chunked linear formula; the eager function stays the fallback if compiling fails."""
        compiled = torch.compile(linear_chunked, dynamic=False)
        state = {"fn": compiled}

        def fn(*args, **kw):
            if state["fn"] is not linear_chunked:
                try:
                    return state["fn"](*args, **kw)
                except Exception as e:  # no compiler, no triton, ...: eager from now on
                    import sys
                    print(f"convert: torch.compile failed ({type(e).__name__}: {str(e)[:200]}); eager from now on",
                          file=sys.stderr)
                    state["fn"] = linear_chunked
            return linear_chunked(*args, **kw)

        self._linear_fn = fn

    def named_projections(self):
        for i, (a, m) in enumerate(zip(self.attn, self.mlp)):
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                yield f"model.layers.{i}.self_attn.{n}", getattr(a, n)
            for n in ("gate_proj", "up_proj", "down_proj"):
                yield f"model.layers.{i}.mlp.{n}", getattr(m, n)

    def adapter_tensors(self, maps=True, lora=True):
        """The tensors of adapter.safetensors (docs/converted-models.md), and lora_alpha (or None)."""
        t, alpha = {}, None
        for i, a in enumerate(self.attn):
            p = f"model.layers.{i}.self_attn."
            if maps and a.fm_q is not None:
                t[p + "feature_map_q.weight"] = a.fm_q.detach()
                t[p + "feature_map_k.weight"] = a.fm_k.detach()
                t[p + "window_gate"] = a.gamma(self.cfg.n_heads, a.fm_q.device).detach()
        if lora:
            for name, lin in self.named_projections():
                if lin.lora_A is not None:
                    t[name + ".lora_A.weight"] = lin.lora_A.detach()
                    t[name + ".lora_B.weight"] = lin.lora_B.detach()
                    alpha = lin.scale * lin.lora_A.shape[0]
        return t, alpha

    def load_adapter_tensors(self, tensors, alpha):
        projs = dict(self.named_projections())
        left = dict(tensors)
        for i, a in enumerate(self.attn):
            p = f"model.layers.{i}.self_attn."
            if p + "feature_map_q.weight" in left:
                dev = a.q_proj.weight.device
                a.fm_q = nn.Parameter(left.pop(p + "feature_map_q.weight").to(dev))
                a.fm_k = nn.Parameter(left.pop(p + "feature_map_k.weight").to(dev))
            if p + "window_gate" in left:
                gm = left.pop(p + "window_gate").to(a.q_proj.weight.device)
                if bool(((gm > 0) & (gm < 1)).all()):
                    a.gate_logit = nn.Parameter(torch.log(gm) - torch.log1p(-gm))
                else:
                    a.gamma_fixed = gm
        for name, lin in projs.items():
            if name + ".lora_A.weight" in left:
                if alpha is None:
                    raise ValueError("adapter: LoRA tensors without lora_alpha in its metadata")
                lin.set_lora(left.pop(name + ".lora_A.weight"), left.pop(name + ".lora_B.weight"), alpha)
        if left:
            raise ValueError(f"adapter: tensors this model does not have: {', '.join(sorted(left)[:4])}")

    # -- the forward, in pieces the trainers reuse --
    def rope_for(self, n, device, offset=0):
        """cos, sin of positions offset .. offset + n - 1 (slices of the longest table made so far)."""
        key = str(device)
        if key not in self._rope or self._rope[key][0].shape[0] < n + offset:
            self._rope = {key: rope_tables(self.cfg, n + offset, device)}
        cos, sin = self._rope[key]
        return cos[offset:offset + n], sin[offset:offset + n]

    def qkv(self, i, h, cos, sin):
        """q, k, v before RoPE and q~, k~ after: [B, H, N, d]."""
        c, a = self.cfg, self.attn[i]
        B, N, _ = h.shape
        q = a.q_proj(h).view(B, N, c.n_heads, c.head_dim).transpose(1, 2)
        k = a.k_proj(h).view(B, N, c.n_kv, c.head_dim).transpose(1, 2)
        v = a.v_proj(h).view(B, N, c.n_kv, c.head_dim).transpose(1, 2)
        return q, k, v, rope(q, cos, sin).to(q.dtype), rope(k, cos, sin).to(k.dtype)

    def linear(self, i, arch, q, k, v, qr, kr, impl=None):
        """The linear formula (docs/converted-models.md), computed in float32: [B, Hq, N, d]."""
        c, a = self.cfg, self.attn[i]
        with torch.autocast(device_type=q.device.type, enabled=False):
            q, k, v, qr, kr = q.float(), k.float(), v.float(), qr.float(), kr.float()
            qf, kf = (qr, kr) if arch.feature_map_rope == "after" else (q, k)
            if arch.feature_map == "hedgehog" and a.fm_q is None:
                raise ValueError(f"layer {i}: hedgehog feature map without weights")
            fq = feature_map(qf, arch.feature_map, a.fm_q.float() if a.fm_q is not None else None)
            fk = feature_map(kf, arch.feature_map, a.fm_k.float() if a.fm_k is not None else None)
            B, Hq, N, d = q.shape
            K = c.n_kv
            g = Hq // K
            gamma = a.gamma(Hq, q.device).float().view(K, g)
            args = (fq.view(B, K, g, N, -1), fk, v, qr.view(B, K, g, N, d), kr, gamma, arch.local_window, arch.eps)
            if (impl or self.impl) == "naive":
                o = linear_naive(*args)
            else:
                o = self._linear_fn(*args, chunk=self.chunk)
            return o.reshape(B, Hq, N, d)

    def attention(self, i, arch, q, k, v, qr, kr, tail=None, impl=None):
        kind = arch.kind(i)
        if kind == "full":
            return full_attention(qr, kr, v)
        if kind == "linear":
            return self.linear(i, arch, q, k, v, qr, kr, impl).to(v.dtype)
        T = arch.tail if tail is None else tail
        N = q.shape[2]
        if T >= N:
            return full_attention(qr, kr, v)
        if self._linear_fn is not linear_chunked:  # compiled: one shape for every tail (the prefix is causal)
            o_lin = self.linear(i, arch, q, k, v, qr, kr, impl)[:, :, :N - T] if N - T > 0 else None
        else:
            o_lin = self.linear(i, arch, q[:, :, :N - T], k[:, :, :N - T], v[:, :, :N - T], qr[:, :, :N - T],
                                kr[:, :, :N - T], impl) if N - T > 0 else None
        o_tail = tail_attention(qr[:, :, N - T:], kr, v, N - T) if T > 0 else None
        parts = [x for x in (o_lin, o_tail) if x is not None]
        return torch.cat(parts, dim=2).to(v.dtype)

    def attn_out(self, i, y):
        B, H, N, d = y.shape
        return self.attn[i].o_proj(y.transpose(1, 2).reshape(B, N, H * d))

    def mlp_out(self, i, h):
        m = self.mlp[i]
        return m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))

    def logits_of(self, x):
        h = rmsnorm(x, self.norm, self.cfg.eps)
        return F.linear(h, self.embed if self.lm_head is None else self.lm_head)

    def forward(self, ids, arch, tail=None, impl=None, offset=0):
        """offset: the first token's RoPE position (0 at inference; training may shift it, train.py
        --rope-offset-max)."""
        c = self.cfg
        x = F.embedding(ids, self.embed)
        cos, sin = self.rope_for(ids.shape[1], ids.device, offset)
        for i in range(c.layers):
            h = rmsnorm(x, self.ln1[i], c.eps)
            q, k, v, qr, kr = self.qkv(i, h, cos, sin)
            y = self.attention(i, arch, q, k, v, qr, kr, tail, impl)
            x = x + self.attn_out(i, y)
            x = x + self.mlp_out(i, rmsnorm(x, self.ln2[i], c.eps))
        return self.logits_of(x)


def build(model_path, adapter=None, device="cpu"):
    """(Model, Arch) of a base model plus an optional adapter (directory or .safetensors); Arch from the adapter's
    config (else the base's `orthros` object, else transformer)."""
    from . import ckpt
    acfg = None
    tensors, alpha = {}, None
    if adapter:
        acfg, tensors, alpha = ckpt.load_adapter(adapter)
    if model_path is None:
        if not acfg or "orthros_base" not in acfg:
            raise ValueError("--model is needed unless --adapter is a directory naming its base")
        model_path = ckpt.resolve_base(adapter, acfg)
    cfg, sd = ckpt.load_model(model_path)
    m = Model(cfg, sd).to(device)
    own = {k: v for k, v in sd.items() if "feature_map" in k or k.endswith("window_gate")}
    if own:  # a converted model as one checkpoint (orthros export): its maps and gates
        m.load_adapter_tensors(own, None)
    if tensors:
        m.load_adapter_tensors(tensors, alpha)
    o = (acfg or {}).get("orthros") or cfg.orthros
    return m, Arch.from_json(o, cfg.head_dim)
