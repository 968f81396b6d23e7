#!/usr/bin/env python3
# baselines.py - TFLOP/s of torch and Triton for kdsl-bench-cuda's rows, as JSON: bf16 and fp8 matmul and f16 flash attention.
# Each is measured independently: an error in one (any Exception) is recorded as that one's "error: ..." string and
# the others' numbers stay. Keys (TFLOP/s or a reason): torch_<n>, triton_<n> (matmul n^3: torch.matmul is cuBLAS,
# Triton the tutorial's matmul); torch_fp8_<n> (torch._scaled_mm of fp8 e4m3, per-tensor scales, bf16 out);
# torch_sdpa[_causal]_<seq>, triton_flash[_causal]_<seq> (attention forward over
# FLASH_HEADS heads of FLASH_D: torch's scaled_dot_product_attention, and a Triton kernel written here in the
# tutorial's form and configuration, the loop kdsl's examples/flash_attention.h runs).
# Usage: baselines.py [--quick] > baselines.json   (--quick: 512^3 and a 512-long sequence, a smoke run)
import json
import sys
import traceback

QUICK = "--quick" in sys.argv
SIZES = (512,) if QUICK else (4096, 8192)
# Attention as kdsl-bench-cuda times it: 4 x 32 heads (Triton's tutorial's batch and heads) of D = 128, f16.
FLASH_SEQS = (512,) if QUICK else (4096, 8192)
FLASH_HEADS, FLASH_D = (4, 128) if QUICK else (128, 128)
out = {}


def reason(e):
    return f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def milliseconds(torch, fn):
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
    return start.elapsed_time(stop) / reps


def tflops(torch, fn, n):
    return 2 * n**3 / milliseconds(torch, fn) / 1e9


def attention_flops(seq, causal):
    # two products of seq x seq x D per head; a causal pass does half of them
    return 4 * FLASH_HEADS * seq * seq * FLASH_D * (0.5 if causal else 1.0)


def attention_inputs(torch, seq):
    shape = (1, FLASH_HEADS, seq, FLASH_D)
    return [torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3)]


def measure_sdpa(torch):
    import torch.nn.functional as F

    for seq in FLASH_SEQS:
        for causal in (False, True):
            key = f"torch_sdpa{'_causal' if causal else ''}_{seq}"
            try:
                q, k, v = attention_inputs(torch, seq)
                ms = milliseconds(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                out[key] = attention_flops(seq, causal) / ms / 1e9
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                out[key] = reason(e)


def measure_triton_flash(torch):
    import triton
    import triton.language as tl

    # One program per BM query rows of one head: the keys BN at a time with a running maximum,
    # sum and weighted sum (FlashAttention-2), scores in base 2, every key block masked when causal.
    @triton.jit
    def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                         CAUSAL: tl.constexpr):
        block, head = tl.program_id(0), tl.program_id(1)
        base = head.to(tl.int64) * seq * D
        rows = block * BM + tl.arange(0, BM)
        d = tl.arange(0, D)
        q = tl.load(q_ptr + base + rows[:, None] * D + d[None, :])
        m = tl.full((BM,), float("-inf"), tl.float32)
        l = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, D), tl.float32)
        log2_scale = scale * 1.4426950408889634
        if CAUSAL:
            end = (block + 1) * BM
        else:
            end = seq
        for start in range(0, end, BN):
            keys = start + tl.arange(0, BN)
            k = tl.load(k_ptr + base + keys[:, None] * D + d[None, :])
            v = tl.load(v_ptr + base + keys[:, None] * D + d[None, :])
            s = tl.dot(q, tl.trans(k)) * log2_scale
            if CAUSAL:
                s = tl.where(keys[None, :] <= rows[:, None], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m - m_new)
            l = l * alpha + tl.sum(p, 1)
            acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
            m = m_new
        tl.store(o_ptr + base + rows[:, None] * D + d[None, :], (acc / l[:, None]).to(tl.float16))

    for seq in FLASH_SEQS:
        for causal in (False, True):
            key = f"triton_flash{'_causal' if causal else ''}_{seq}"
            try:
                q, k, v = attention_inputs(torch, seq)
                o = torch.empty_like(q)
                grid = (seq // 128, FLASH_HEADS)
                scale = FLASH_D**-0.5
                ms = milliseconds(torch, lambda: attention_kernel[grid](q, k, v, o, seq, scale, D=FLASH_D, BM=128, BN=64, CAUSAL=causal,
                                                                        num_warps=8, num_stages=3))
                want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                error = (o.float() - want.float()).abs().max().item()
                # outputs are means of N(0, 1) values, rounded to f16 on both sides
                out[key] = attention_flops(seq, causal) / ms / 1e9 if error < 2e-2 else \
                    f"error: the output differs from torch's scaled_dot_product_attention by {error:.3g}"
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                out[key] = reason(e)


def measure_torch(torch):
    for n in SIZES:
        try:
            a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            out[f"torch_{n}"] = tflops(torch, lambda: torch.matmul(a, b), n)
        except Exception as e:  # noqa: BLE001 - one size's failure must not lose the others
            traceback.print_exc(file=sys.stderr)
            out[f"torch_{n}"] = reason(e)


def measure_torch_fp8(torch):
    # C = A W^T in fp8 e4m3 with per-tensor scales, bf16 out: torch._scaled_mm wants B column-major (W^T).
    for n in SIZES:
        try:
            a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            w = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            one = torch.tensor(1.0, device="cuda")
            out[f"torch_fp8_{n}"] = tflops(torch, lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16), n)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            out[f"torch_fp8_{n}"] = reason(e)


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


# The keys each measurement fills, so that one that fails as a whole records its reason in each.
def keys_of(measure):
    if measure in ("torch", "triton", "torch_fp8"):
        return [f"{measure}_{n}" for n in SIZES]
    return [f"{measure}{causal}_{seq}" for seq in FLASH_SEQS for causal in ("", "_causal")]


MEASURES = {"torch": measure_torch, "triton": measure_triton, "torch_fp8": measure_torch_fp8, "torch_sdpa": measure_sdpa,
            "triton_flash": measure_triton_flash}


def main():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        for name in MEASURES:
            for key in keys_of(name):
                out[key] = f"not installed ({reason(e)})"
        return
    if not torch.cuda.is_available():
        for name in MEASURES:
            for key in keys_of(name):
                out[key] = "skipped: torch sees no CUDA device"
        return
    # Each on its own: an ImportError or a compile error in one leaves the others' numbers.
    for name, measure in MEASURES.items():
        try:
            measure(torch)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            for key in keys_of(name):
                out.setdefault(key, reason(e))

main()
print(json.dumps(out, indent=1))
