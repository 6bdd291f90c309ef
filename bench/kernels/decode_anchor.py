#!/usr/bin/env python3
"""PyTorch anchor of a whole decode step, for the side-by-side run of the decode modes (ci/gpu.sh --decode,
docs/kernels.md "Whole-model decode"): the Llama-3.2-1B and Llama-3.1-8B shapes with random bf16 weights, written in
plain PyTorch the way a static-cache server runs them: a KV cache of fixed length, the position and the token in
device tensors, the step (embedding, every layer's RMSNorm, fused q/k/v projection, RoPE, cache write, SDPA over the
cache with a mask up to the position, O projection, RMSNorm, gate/up, SwiGLU, down, the final norm, the LM head and
the argmax) captured once as a CUDA graph by hand (torch.cuda.graph) and replayed; the step itself advances the
position and feeds its argmax back, so replays run back to back. This is what torch.compile's reduce-overhead mode
does with a static cache, without depending on transformers or on the compiler's version.
Per case: the median over 5 samples of the time per step of `steps` replays between CUDA events, after the cache
is filled with random keys and values to depth ctx (a step's time does not depend on their values). Matmuls go to
cuBLAS through F.linear; attention through SDPA (enable_gqa), which reads the whole cache length under the mask.
Writes JSON to argv[1] (bench/kernels/decode_summary.py sets it beside orthros bench's decode files) and prints a
table.
usage: python3 bench/kernels/decode_anchor.py OUT.json [--quick] [--only MODEL:BATCH:CTX,...] [--compile] [--device cpu]
(--compile: the step through torch.compile first, Inductor fusing the norms, RoPE, SwiGLU and the other elementwise
ops as a compiled static-cache server would, then captured the same way: the stronger anchor, at a minute or so of
compiling per case; --device cpu: a smoke run of the tiny shape, uncaptured, to check the script without a GPU)"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "llama3.2-1b": dict(D=2048, L=16, Hq=32, Hkv=8, d=64, Fm=8192, V=128256, tied=True, theta=500000.0),
    "llama3.1-8b": dict(D=4096, L=32, Hq=32, Hkv=8, d=128, Fm=14336, V=128256, tied=False, theta=500000.0),
    "tiny": dict(D=64, L=2, Hq=4, Hkv=2, d=16, Fm=160, V=256, tied=False, theta=10000.0),
}
# The cells of ci/gpu.sh --decode: (model, batch, cache depth).
CASES = [("llama3.2-1b", 1, 4096), ("llama3.2-1b", 1, 131072), ("llama3.1-8b", 1, 4096), ("llama3.2-1b", 16, 4096),
         ("llama3.2-1b", 16, 32768), ("llama3.1-8b", 16, 4096), ("llama3.1-8b", 16, 32768)]


class DecodeStep:
    """One model shape's weights, a static KV cache of `cap` positions for `batch` sequences, and the step."""

    def __init__(self, shape, batch, cap, device):
        s = SHAPES[shape]
        self.s, self.B, self.cap, self.dev = s, batch, cap, device
        bf = torch.bfloat16
        D, Hq, Hkv, d, Fm, V = s["D"], s["Hq"], s["Hkv"], s["d"], s["Fm"], s["V"]
        g = torch.Generator(device=device).manual_seed(1)

        def w(rows, cols):
            return (torch.rand(rows, cols, generator=g, device=device, dtype=torch.float32) * 2 - 1).mul_(
                1 / math.sqrt(cols)).to(bf)

        self.embed = (torch.rand(V, D, generator=g, device=device) * 2 - 1).to(bf)
        self.head = self.embed if s["tied"] else w(V, D)
        self.layers = []
        for _ in range(s["L"]):
            self.layers.append(dict(wqkv=w((Hq + 2 * Hkv) * d, D), wo=w(D, Hq * d), wgu=w(2 * Fm, D), wdown=w(D, Fm),
                                    n1=torch.ones(D, device=device, dtype=bf), n2=torch.ones(D, device=device, dtype=bf)))
        self.nf = torch.ones(D, device=device, dtype=bf)
        # The cache filled with random keys and values (a step's time does not depend on them).
        self.k = [torch.randn(batch, Hkv, cap, d, generator=g, device=device).to(bf) for _ in range(s["L"])]
        self.v = [torch.randn(batch, Hkv, cap, d, generator=g, device=device).to(bf) for _ in range(s["L"])]
        self.inv_freq = 1.0 / (s["theta"] ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
        self.tok = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.keys = torch.arange(cap, device=device)

    @staticmethod
    def rmsnorm(x, w, eps=1e-5):
        xf = x.float()
        return (w.float() * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))).to(torch.bfloat16)

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half].float(), x[..., half:].float()
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).to(torch.bfloat16)

    def step(self):
        s, B = self.s, self.B
        Hq, Hkv, d = s["Hq"], s["Hkv"], s["d"]
        ang = self.pos.float()[:, None] * self.inv_freq[None, :]  # [1, d/2]
        cos, sin = torch.cos(ang), torch.sin(ang)
        mask = torch.where(self.keys <= self.pos, 0.0, float("-inf")).to(torch.bfloat16)[None, None, None, :]
        x = F.embedding(self.tok, self.embed)  # [B, 1, D]
        for i, lw in enumerate(self.layers):
            qkv = F.linear(self.rmsnorm(x, lw["n1"]), lw["wqkv"])
            q = qkv[..., :Hq * d].view(B, 1, Hq, d).transpose(1, 2)
            k = qkv[..., Hq * d:(Hq + Hkv) * d].view(B, 1, Hkv, d).transpose(1, 2)
            v = qkv[..., (Hq + Hkv) * d:].view(B, 1, Hkv, d).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            self.k[i].index_copy_(2, self.pos, k)
            self.v[i].index_copy_(2, self.pos, v)
            o = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask, enable_gqa=True)
            x = x + F.linear(o.transpose(1, 2).reshape(B, 1, Hq * d), lw["wo"])
            gu = F.linear(self.rmsnorm(x, lw["n2"]), lw["wgu"])
            g, u = gu.chunk(2, -1)
            x = x + F.linear(F.silu(g) * u, lw["wdown"])
        logits = F.linear(self.rmsnorm(x, self.nf), self.head)
        self.tok.copy_(logits.float().argmax(-1))
        self.pos.add_(1)


def run_case(shape, batch, ctx, steps, device, compile_step=False):
    cap = ctx + steps + 8  # every sample runs its steps from depth ctx
    m = DecodeStep(shape, batch, cap, device)
    cuda = device.type == "cuda"
    # --compile: the step through torch.compile (Inductor's default mode: the elementwise ops fused into Triton
    # kernels, the matmuls left to cuBLAS), then captured by hand like the eager step.
    step = torch.compile(m.step, dynamic=False) if compile_step else m.step
    graph = None
    if cuda:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                m.pos.fill_(ctx)
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        m.pos.fill_(ctx)
        with torch.cuda.graph(graph):
            step()
    elif compile_step:
        m.pos.fill_(ctx)
        step()  # the compile itself, outside the timed samples
    samples = []
    for _ in range(5 + 2):
        m.pos.fill_(ctx)
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(steps):
                graph.replay()
            b.record()
            b.synchronize()
            samples.append(a.elapsed_time(b) / 1e3 / steps)
        else:
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            samples.append((time.perf_counter() - t0) / steps)
    samples = samples[2:]  # warm-up
    med = sorted(samples)[len(samples) // 2]
    del m, graph
    if cuda:
        torch.cuda.empty_cache()
    return med, samples


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out_path = sys.argv[1]
    quick = "--quick" in sys.argv
    compile_step = "--compile" in sys.argv
    device = torch.device("cpu" if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cpu" else "cuda")
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    cases = [("tiny", 1, 64), ("tiny", 3, 100)] if device.type == "cpu" else CASES
    steps = 4 if device.type == "cpu" else (32 if quick else 64)
    method = "plain PyTorch decode step with a static KV cache, " + (
        "through torch.compile (Inductor, default mode), " if compile_step else "") + \
        "captured as a CUDA graph by hand and replayed"
    res = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__,
           "method": method, "compiled": compile_step, "steps": steps, "cases": []}
    print(f"{'model':14s} {'batch':>5s} {'ctx':>7s} {'ms/step':>9s}")
    for shape, batch, ctx in cases:
        if only and f"{shape}:{batch}:{ctx}" not in only.split(","):
            continue
        try:
            t0 = time.perf_counter()
            med, samples = run_case(shape, batch, ctx, steps, device, compile_step)
            setup_s = time.perf_counter() - t0
        except torch.cuda.OutOfMemoryError as e:  # noqa: PERF203
            print(f"{shape:14s} {batch:5d} {ctx:7d} out of memory: {e}")
            continue
        res["cases"].append({"model": shape, "batch": batch, "ctx": ctx, "median_s": med, "samples": samples,
                             "wall_s": round(setup_s, 1)})
        print(f"{shape:14s} {batch:5d} {ctx:7d} {med * 1e3:9.4f}")
        with open(out_path, "w") as f:
            json.dump(res, f, indent=1)
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
