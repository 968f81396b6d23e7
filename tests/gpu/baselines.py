#!/usr/bin/env python3
# baselines.py - bf16 matmul TFLOP/s of torch.matmul (cuBLAS) and Triton's tutorial matmul, as JSON for kdsl-bench-cuda.
# Keys absent (torch/triton not installed) print as "not installed" in the table. UNTESTED: written without a GPU.
import json
import sys

out = {}
try:
    import torch
except ImportError:
    print(json.dumps(out))
    sys.exit(0)

if not torch.cuda.is_available():
    print(json.dumps(out))
    sys.exit(0)


def tflops(fn, n):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 10
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return 2 * n**3 / (start.elapsed_time(stop) / reps) / 1e9


for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out[f"torch_{n}"] = tflops(lambda: torch.matmul(a, b), n)

try:
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        grid = (n // 128, n // 128)
        out[f"triton_{n}"] = tflops(lambda: matmul_kernel[grid](a, b, c, n, n, n, BM=128, BN=128, BK=64, num_warps=8, num_stages=3), n)
except ImportError:
    pass

print(json.dumps(out))
