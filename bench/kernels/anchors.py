#!/usr/bin/env python3
"""Anchor figures measured in the same GPU run as our kernels: PyTorch SDPA with its flash and cuDNN backends
on the shapes of the issue (batch 1, 32 query / 8 kv heads, head dims 64 and 128, causal prefill 4K to 128K;
decode of one query token over a 32K / 64K / 128K cache, batch 1, 8 and 16: the shapes bench_kernels times every
kernel version on), plus a cuBLAS bf16 GEMM, a device copy and a read-only pass (a sum) as ceilings.
Causal attention FLOPs: 2 * N^2 * Hq * d (DESIGN section 6). Decode bytes: the K and V caches read
once plus q and o. Writes JSON to argv[1] and prints a table.
usage: python3 bench/kernels/anchors.py OUT.json [--quick]"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def bench(fn, reps=10, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return times[len(times) // 2], times


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "anchors.json"
    quick = "--quick" in sys.argv
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "cases": []}
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    t, _ = bench(lambda: a @ b)
    res["gemm_tflops"] = 2 * n ** 3 / t / 1e12
    x = torch.randn(1 << 30, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    t, _ = bench(lambda: y.copy_(x))
    res["copy_tbps"] = 2 * x.numel() * 2 / t / 1e12
    t, _ = bench(lambda: x.sum(dtype=torch.float32))
    res["read_tbps"] = x.numel() * 2 / t / 1e12
    print(f"ceilings: gemm {res['gemm_tflops']:.0f} TFLOP/s, copy {res['copy_tbps']:.2f} TB/s, "
          f"read (torch sum) {res['read_tbps']:.2f} TB/s")
    del a, b, x, y
    Hq, Hkv = 32, 8
    lengths = [4096, 16384, 65536] if quick else [4096, 8192, 16384, 32768, 65536, 131072]
    print(f"{'case':44s} {'ms':>9s} {'TFLOP/s':>8s} {'TB/s':>6s}")
    for d in (64, 128):
        for N in lengths:
            q = torch.randn(1, Hq, N, d, device=dev, dtype=torch.bfloat16)
            k = torch.randn(1, Hkv, N, d, device=dev, dtype=torch.bfloat16)
            v = torch.randn(1, Hkv, N, d, device=dev, dtype=torch.bfloat16)
            for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        t, ts = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
                                      reps=5 if N >= 65536 else 10)
                except Exception as e:  # a backend that refuses the shape is recorded, not fatal
                    print(f"prefill {name} d{d} N{N}: {e}")
                    continue
                fl = 2 * N * N * Hq * d
                c = {"op": "prefill", "backend": name, "head_dim": d, "ctx": N, "batch": 1, "median_s": t,
                     "samples_s": ts, "tflops": fl / t / 1e12}
                res["cases"].append(c)
                print(f"{'prefill ' + name + f' d{d} N{N}':44s} {t * 1e3:9.3f} {c['tflops']:8.1f}")
            del q, k, v
        for N in ((131072,) if quick else (32768, 65536, 131072)):
            for B in (1, 8, 16):
                q = torch.randn(B, Hq, 1, d, device=dev, dtype=torch.bfloat16)
                k = torch.randn(B, Hkv, N, d, device=dev, dtype=torch.bfloat16)
                v = torch.randn(B, Hkv, N, d, device=dev, dtype=torch.bfloat16)
                for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                    try:
                        with sdpa_kernel(backend):
                            t, ts = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                    except Exception as e:
                        print(f"decode {name} d{d} N{N} B{B}: {e}")
                        continue
                    by = 2 * B * N * Hkv * d * 2 + 2 * B * Hq * d * 2
                    c = {"op": "decode", "backend": name, "head_dim": d, "ctx": N, "batch": B, "median_s": t,
                         "samples_s": ts, "tbps": by / t / 1e12}
                    res["cases"].append(c)
                    print(f"{'decode ' + name + f' d{d} N{N} B{B}':44s} {t * 1e3:9.3f} {'':8s} {c['tbps']:6.2f}")
                del q, k, v
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
