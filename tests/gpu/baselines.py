#!/usr/bin/env python3
# baselines.py - bf16 matmul TFLOP/s of torch.matmul (cuBLAS) and Triton's tutorial matmul, as JSON for kdsl-bench-cuda.
# torch and Triton are measured independently: an error in one (any Exception) is recorded as that one's
# "error: ..." string and the other's numbers stay. Keys: torch_<n>, triton_<n> (TFLOP/s or a reason).
# Usage: baselines.py [--quick] > baselines.json   (--quick: 512^3 only, a smoke run)
import json
import sys
import traceback

QUICK = "--quick" in sys.argv
SIZES = (512,) if QUICK else (4096, 8192)
out = {}


def reason(e):
    return f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def tflops(torch, fn, n):
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


def measure_torch(torch):
    for n in SIZES:
        try:
            a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            out[f"torch_{n}"] = tflops(torch, lambda: torch.matmul(a, b), n)
        except Exception as e:  # noqa: BLE001 - one size's failure must not lose the others
            traceback.print_exc(file=sys.stderr)
            out[f"torch_{n}"] = reason(e)


def measure_triton(torch):
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

    for n in SIZES:
        try:
            a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
            grid = (n // 128, n // 128)
            out[f"triton_{n}"] = tflops(
                torch, lambda: matmul_kernel[grid](a, b, c, n, n, n, BM=128, BN=128, BK=64, num_warps=8, num_stages=3), n
            )
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            out[f"triton_{n}"] = reason(e)


def main():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        for n in SIZES:
            out[f"torch_{n}"] = out[f"triton_{n}"] = f"not installed ({reason(e)})"
        return
    if not torch.cuda.is_available():
        for n in SIZES:
            out[f"torch_{n}"] = out[f"triton_{n}"] = "skipped: torch sees no CUDA device"
        return
    try:
        measure_torch(torch)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        for n in SIZES:
            out.setdefault(f"torch_{n}", reason(e))
    try:
        measure_triton(torch)
    except Exception as e:  # noqa: BLE001 - ImportError or a compile error: torch's numbers stay
        traceback.print_exc(file=sys.stderr)
        for n in SIZES:
            out.setdefault(f"triton_{n}", reason(e))


main()
print(json.dumps(out, indent=1))
