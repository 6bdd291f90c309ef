# cuDNN SDPA causal d128 prefill for ~4 s at 16K then ~4 s at 128K, printing wall-clock marks (to align with an
# nvidia-smi trace) and the achieved TFLOP/s of each half.
import time, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
dev = "cuda"; Hq, Hkv, d = 32, 8, 128
for N in (16384, 131072, 16384):
    q = torch.randn(1, Hq, N, d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, Hkv, N, d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, Hkv, N, d, device=dev, dtype=torch.bfloat16)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        f(); torch.cuda.synchronize()
        time.sleep(1.0)  # idle: let clocks recover before the phase
        t0 = time.time(); print(f"mark start N={N} {t0:.3f}", flush=True)
        reps = 0; e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        times = []
        while time.time() - t0 < 4.0:
            e0.record(); f(); e1.record(); e1.synchronize(); times.append(e0.elapsed_time(e1) / 1e3); reps += 1
        t1 = time.time(); print(f"mark end N={N} {t1:.3f} reps {reps}", flush=True)
    fl = 2 * N * N * Hq * d
    first, last = times[0], sorted(times[-max(1, reps // 4):])[len(times[-max(1, reps // 4):]) // 2]
    print(f"cudnn d128 N={N}: first rep {first*1e3:.3f} ms ({fl/first/1e12:.0f} TFLOP/s), median of last quarter "
          f"{last*1e3:.3f} ms ({fl/last/1e12:.0f} TFLOP/s), min {min(times)*1e3:.3f} ms ({fl/min(times)/1e12:.0f})", flush=True)
    del q, k, v
