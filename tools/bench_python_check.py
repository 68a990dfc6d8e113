#!/usr/bin/python3
"""tools/bench_python_check.py — what the Python door's checks cost on a 128-dim fp32 eager torch kernel on the CPU.

    /usr/bin/python3 tools/bench_python_check.py [--runs 5] [--bin build/tools/ropecheck]

Prints each run's split (probe: `ropecheck probe` writing the probe file; calls: the kernel applied to every call
of the plan, prefill twice and decode once, and the outputs file written; judge: `ropecheck audit` of the outputs
file), the median of each part and of the total, and the total against the target (< 5 s, issue 23). The kernel is
a correct Llama-style half-split RoPE computed in fp32 (transformers' modeling_llama.py LlamaRotaryEmbedding and
apply_rotary_pos_emb, written here from their formulas), checked against a Llama-3-like claim (head_dim 128,
rope_theta 500000, 8192 positions) in float32 on the CPU. A benchmark, not a test: it prints figures; exit 0 unless
the check itself fails (then 1: the figures would be of a failing kernel, and say so).

The score door (issue 31) is timed the same way, side by side in the same run: `check_qk()` on the same RoPE over
distinct q (8 heads) and k (2 heads), target < 1 s; `check_attention()` on the RoPE inside a transformers-style eager
attention, target < 3 s; each with the judge's share of the total.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import ropecheck  # noqa: E402

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 4,
          "num_key_value_heads": 4, "head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 8192,
          "rope_scaling": None}
HEAD_DIM, BASE = 128, 500000.0


def llama_rope(x, positions):
    """x [T, H, 128] fp32, positions int64 [T]: inv_freq = 1 / base^(2i/d) in fp32, angles p * inv_freq in fp32,
    y = x cos + rotate_half(x) sin (the halves pairing)."""
    inv_freq = 1.0 / (BASE ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.int64).float() / HEAD_DIM))
    freqs = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :].to(x.dtype), emb.sin()[:, None, :].to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def llama_qk(q, k, positions):
    """The same RoPE on distinct q [T, Hq, 128] and k [T, Hk, 128] (transformers' apply_rotary_pos_emb)."""
    return llama_rope(q, positions), llama_rope(k, positions)


def eager_attention(q, k, v, q_positions, k_positions):
    """RoPE inside an eager attention (transformers' eager_attention_forward: repeat_kv, logits * head_dim^-0.5,
    softmax in fp32 cast to q's dtype), every query attending to every key of the call."""
    q2, k2 = llama_rope(q, q_positions), llama_rope(k, k_positions)
    rep = q.shape[1] // k.shape[1]
    k2, v2 = k2.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    w = torch.softmax(torch.einsum("qhd,khd->hqk", q2, k2) * HEAD_DIM ** -0.5, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.einsum("hqk,khd->qhd", w, v2)


def bench(name, run_check, runs, target, tmp) -> int:
    """Times `runs` checks of one door; prints each run's split, the medians and the total against `target`."""
    parts = ("probe", "calls", "judge")
    rows = []
    for run in range(runs):
        t0 = time.perf_counter()
        v = run_check(Path(tmp) / f"{name}{run}")
        total = time.perf_counter() - t0
        if not v.passed:
            print(v)
            print(f"the benchmark's {name} kernel failed the check: these figures are not of a passing check")
            return 1
        row = [v.seconds[p] for p in parts] + [total]
        rows.append(row)
        print(f"  {name} run {run}: " + ", ".join(f"{p} {s:.3f} s" for p, s in zip(parts + ("total",), row)))
    med = [statistics.median(r[i] for r in rows) for i in range(len(parts) + 1)]
    print(f"{name} median: " + ", ".join(f"{p} {s:.3f} s" for p, s in zip(parts + ("total",), med)) +
          f" (judge {med[2] / med[-1]:.0%} of the total)")
    print(f"{name} target: total < {target:g} s: {'met' if med[-1] < target else 'MISSED'} (median {med[-1]:.3f} s, "
          f"{med[-1] / target:.1%} of the target)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="checks to time (the first also warms the caches)")
    ap.add_argument("--bin", default=str(REPO / "build" / "tools" / "ropecheck"), help="the ropecheck program")
    args = ap.parse_args()
    os.environ["ROPECHECK_BIN"] = str(Path(args.bin).resolve())
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    print(f"ropecheck.check(): 128-dim fp32 eager kernel on the CPU, {args.runs} runs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, program {os.environ['ROPECHECK_BIN']}")
    with tempfile.TemporaryDirectory(prefix="ropecheck-bench-") as tmp:
        rc = bench("x", lambda d: ropecheck.check(llama_rope, CONFIG, dtype=torch.float32, dump_dir=d), args.runs, 5.0, tmp)
        # The score door (issue 31): q and k together (target 1 s), RoPE inside attention (target 3 s).
        qk_config = dict(CONFIG, num_attention_heads=8, num_key_value_heads=2)
        rc |= bench("qk", lambda d: ropecheck.check_qk(llama_qk, qk_config, dtype=torch.float32, heads=8, kv_heads=2,
                                                      dump_dir=d), args.runs, 1.0, tmp)
        if hasattr(ropecheck, "check_attention"):
            rc |= bench("attention", lambda d: ropecheck.check_attention(eager_attention, qk_config, dtype=torch.float32,
                                                                         heads=8, kv_heads=2, dump_dir=d),
                        args.runs, 3.0, tmp)
    return rc


if __name__ == "__main__":
    sys.exit(main())
