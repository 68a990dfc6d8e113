#!/usr/bin/python3
"""tools/dump/torch_family_dump.py: run, with torch, the RoPE of five 2025-26 model families as each
family's code computes it, and dump it in the format `ropecheck audit` reads (see tools/dump/README.md),
with a config.json in the family's own spelling.

Families (written from the formulas of their code, not copied from it; run with the installed torch):
  nanochat  transformers src/transformers/models/nanochat/modeling_nanochat.py: NanoChatRotaryEmbedding
        .forward (fp32 angles inv_freq @ position_ids with autocast off, emb = cat(freqs, freqs), cos/sin
        cast to x.dtype), apply_rotary_pos_emb q*cos + rotate_half(q)*sin over the whole head, and that
        file's rotate_half, which returns cat(x2, -x1) (HF Llama's returns cat(-x2, x1)). Half-split pairs
        (i, i + d/2) turn by R(-p): y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos. inv_freq of
        NanoChatRotaryEmbedding.compute_default_rope_parameters (base rope_theta, default 10000;
        head_dim = hidden_size / num_attention_heads = 128 for the class defaults 768 / 6).
        Bug forward_rotation: HF Llama's rotate_half (turns by R(+p)).
  gemma4  a full-attention layer of Gemma 4: transformers src/transformers/modeling_rope_utils.py
        _compute_proportional_rope_parameters (rope_angles = int(partial_rotary_factor * head_dim // 2);
        inv_freq_rotated = 1 / base ** (arange(0, 2*rope_angles, 2).float() / head_dim), the exponent over
        the WHOLE head_dim; torch.zeros for the other head_dim/2 - rope_angles bands; inv_freq /= factor)
        with head_dim = global_head_dim (class default 512), and models/gemma4/modeling_gemma4.py
        Gemma4TextRotaryEmbedding.forward (emb = cat(freqs, freqs) over all head_dim/2 bands) +
        apply_rotary_pos_emb with Llama's rotate_half over the whole head: half-split pairs
        (i, i + head_dim/2), the frozen bands (frequency 0) pass through. A sliding layer (--layer of a
        sliding_attention layer) is the default RoPE of head_dim (base 1e4). The dump's
        __metadata__ "layer" says which layer it is. Bugs: partial_as_usual (the usual partial rotary:
        rotary_dim = int(head_dim * factor) coordinates, pairs (i, i + rotary_dim/2), exponent over
        rotary_dim, the rest passed through), exponent_over_rotary (the turning bands' exponent over
        2*rope_angles instead of head_dim).
  hunyuan  transformers models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py HunYuanDenseV1RotaryEmbedding
        .__init__: rope_type "dynamic" with rope_scaling["alpha"]: base = rope_theta * alpha **
        (head_dim / (head_dim - 2)) (Python floats), inv_freq = 1 / base ** (arange(0, head_dim, 2).float()
        / head_dim), attention_scaling 1; Llama's forward and rotate_half (half-split, whole head). Its
        forward keeps @dynamic_rope_update, which would recompute the frequencies (HF's dynamic NTK
        formula) for a sequence longer than max_position_embeddings: the dump stays below it.
        Bug alpha_ignored: the plain base rope_theta (alpha dropped).
  phimoe  transformers models/phimoe/modeling_phimoe.py PhimoeRotaryEmbedding.forward: seq_len =
        max(position_ids) + 1; mscale = long_mscale if seq_len > original_max_position_embeddings else
        short_mscale; inv_freq of modeling_rope_utils.py _compute_longrope_parameters at that seq_len
        (ext = long_factor if seq_len > original else short_factor, fp32; inv_freq = 1 / (ext * base **
        (arange(0, dim, 2).float() / dim))); cos = cos(emb) * mscale, sin = sin(emb) * mscale (the mscale
        replaces the computed attention factor), cast to x.dtype; Llama's rotate_half. The factor lists
        are GENERATED (monotone: short 1 + 0.2 t^2, long 1 + 31 t^2, t = i / (d/2 - 1), 6 decimals), not
        Phi-3.5-MoE's; short_mscale 1.1 and long_mscale 1.243163121016122 differ (the file's are equal)
        so that the regime shows. Bugs: computed_attention_factor (sqrt(1 + ln s / ln L), s =
        max_position_embeddings / original, instead of the mscale), switch_at_equality (long factors and
        long mscale already when seq_len >= original).
  deepseek_v32  the lightning indexer of DeepSeek-V3.2 (DeepSeek-V3.2-Exp reference inference/model.py
        Indexer.forward: q viewed [.., index_n_heads, index_head_dim], split [qk_rope_head_dim, rest],
        apply_rotary_emb(q_pe, freqs_cis, False), cat(q_pe, q_nope): the FIRST qk_rope_head_dim (64) of
        the index_head_dim (128) coordinates rotate, NOT interleaved: apply_rotary_emb with
        interleaved=False views x as [2, d/2], transposes it, multiplies as complex64 and writes back
        cat(y[0::2], y[1::2]): half-split pairs (i, i + 32); the rest pass through. mlx-lm
        mlx_lm/models/deepseek_v32.py agrees (indexer_rope_interleave default False). freqs_cis as the
        reference's precompute_freqs_cis (fp32 freqs over qk_rope_head_dim, YaRN smoothing when
        --scaling yarn, torch.polar; the rows at the dump's positions). The dump holds the indexer's q
        before the Hadamard rotate_activation; __metadata__ "part": "indexer". Bug interleaved_indexer:
        the attention's interleaved layout (apply_rotary_emb(..., True)) used for the indexer.

--bug NAME injects one known bug; config.json always describes the CLAIMED (correct) convention.
The dump (--out DIR): DIR/dump.safetensors (or DIR/dump/*.npy with --format npy) holding positions I64
[tokens], x and y [tokens, heads, head_dim] in --dtype, and (unless --no-cache) cos/sin as the code
holds them ([tokens, head_dim] in q's dtype for the HF families, the complex64 table's real/imaginary
parts [tokens, qk_rope_head_dim/2] for deepseek_v32) and the fp32 inv_freq used; __metadata__ family,
dtype, bug, torch_version, seed, command, and "layer" (gemma4) or "part": "indexer" (deepseek_v32),
which an .npy dump carries in its ropecheck.json sidecar ("metadata").
Positions: `default` is 0..63 dense, 96 log-spaced to max_position_embeddings - 1 and the fp16/bf16
edges (torch_rope_dump.py default_positions), or a list (N | A..B | A..B/N). x ~ N(0, 1) from
torch.Generator(seed), cast to --dtype (q in the model's dtype, angles in fp32 as the code computes
them). Run with /usr/bin/python3 (Debian's python3-torch); stdlib, torch and numpy only; the same
command gives byte-identical files.
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_common import (  # noqa: E402  (what every dump script shares)
    DTYPES, add_output_options, check_sizes, hf_cos_sin, hf_default_inv_freq, print_self_check, rotate_half, rotate_pairs64,
    run_kernel, take_defaults, write_dump, yarn_correction_range)
from torch_rope_dump import parse_positions  # noqa: E402  (the 1-D script's)

FAMILIES = ("nanochat", "gemma4", "hunyuan", "phimoe", "deepseek_v32")
BUGS = {
    "nanochat": ("none", "forward_rotation"),
    "gemma4": ("none", "partial_as_usual", "exponent_over_rotary"),
    "hunyuan": ("none", "alpha_ignored"),
    "phimoe": ("none", "computed_attention_factor", "switch_at_equality"),
    "deepseek_v32": ("none", "interleaved_indexer"),
}
ALL_BUGS = tuple(dict.fromkeys(b for bs in BUGS.values() for b in bs))
# Per family: head_dim (gemma4: global_head_dim), rope_theta, max_position_embeddings.
DEFAULTS = {
    "nanochat": {"head_dim": 128, "base": 10000.0, "mpe": 32768},
    "gemma4": {"head_dim": 512, "base": 1000000.0, "mpe": 131072},
    "hunyuan": {"head_dim": 128, "base": 10000.0, "mpe": 32768},
    "phimoe": {"head_dim": 128, "base": 10000.0, "mpe": 131072},
    "deepseek_v32": {"head_dim": 128, "base": 10000.0, "mpe": 163840},
}
GEMMA4_PARTIAL = 0.25
GEMMA4_SLIDING_BASE = 10000.0
HUNYUAN_ALPHA = 1000.0
PHIMOE_ORIGINAL = 4096
PHIMOE_SHORT_MSCALE = 1.1
PHIMOE_LONG_MSCALE = 1.243163121016122
DSV32_ROPE_DIM = 64  # qk_rope_head_dim
DSV32_YARN = {"factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}


# ----------------------------------------------------------------------------------------------
# Shared pieces (written from the formulas of the families' code)
# ----------------------------------------------------------------------------------------------
def rotate_half_nanochat(t):
    """nanochat's rotate_half: cat(x2, -x1) (the rotation turns by R(-p))."""
    h = t.shape[-1] // 2
    return torch.cat((t[..., h:], -t[..., :h]), dim=-1)


def hf_apply(x, cos, sin, rotate_half, rotary_dim=None):
    """apply_rotary_pos_emb on q [1, H, T, D] (x held [T, H, D]); the first rotary_dim coordinates
    rotate (all by default), the rest pass through. Returns y [T, H, D]."""
    q = x.permute(1, 0, 2)[None]
    cos_u, sin_u = cos.unsqueeze(1), sin.unsqueeze(1)
    if rotary_dim is None or rotary_dim == q.shape[-1]:
        out = (q * cos_u) + (rotate_half(q) * sin_u)
    else:
        q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
        out = torch.cat(((q_rot * cos_u) + (rotate_half(q_rot) * sin_u), q_pass), dim=-1)
    return out[0].permute(1, 0, 2).contiguous()


# ----------------------------------------------------------------------------------------------
# The families. x: [T, H, D] in the dump dtype; positions: int64 [T].
# Each returns y [T, H, D] (x.dtype), cos, sin (the rows used, as held) and inv_freq (fp32, as used).
# ----------------------------------------------------------------------------------------------
def run_nanochat(a, x, positions):
    inv_freq = hf_default_inv_freq(a.base, a.head_dim, a.head_dim)
    cos, sin = hf_cos_sin(inv_freq, positions, x.dtype)
    rh = rotate_half if a.bug == "forward_rotation" else rotate_half_nanochat
    return hf_apply(x, cos, sin, rh), cos[0].contiguous(), sin[0].contiguous(), inv_freq


def gemma4_layer_types(n):
    """Gemma4TextConfig's default: 5 sliding : 1 full, the last layer forced full."""
    t = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    t[-1] = "full_attention"
    return t


def run_gemma4(a, x, positions):
    if a.layer_type == "sliding_attention":
        # The default RoPE of head_dim (the sliding layers' rope_parameters: default, base 1e4).
        inv_freq = hf_default_inv_freq(GEMMA4_SLIDING_BASE, a.head_dim, a.head_dim)
        cos, sin = hf_cos_sin(inv_freq, positions, x.dtype)
        return hf_apply(x, cos, sin, rotate_half), cos[0].contiguous(), sin[0].contiguous(), inv_freq
    G, base, factor = a.head_dim, a.base, 1.0
    if a.bug == "partial_as_usual":
        # The usual partial rotary (default rope_type with partial_rotary_factor): rotary_dim coordinates.
        rd = int(G * GEMMA4_PARTIAL)
        inv_freq = hf_default_inv_freq(base, rd, rd)
        cos, sin = hf_cos_sin(inv_freq, positions, x.dtype)
        return (hf_apply(x, cos, sin, rotate_half, rotary_dim=rd), cos[0].contiguous(), sin[0].contiguous(),
                inv_freq)
    # _compute_proportional_rope_parameters with head_dim = global_head_dim
    rope_angles = int(GEMMA4_PARTIAL * G // 2)
    exponent_dim = 2 * rope_angles if a.bug == "exponent_over_rotary" else G
    inv_freq_rotated = 1.0 / (base ** (torch.arange(0, 2 * rope_angles, 2, dtype=torch.int64).float() / exponent_dim))
    nope_angles = G // 2 - rope_angles
    if nope_angles > 0:
        inv_freq = torch.cat((inv_freq_rotated, torch.zeros(nope_angles, dtype=torch.float32)), dim=0)
    else:
        inv_freq = inv_freq_rotated
    inv_freq /= factor
    cos, sin = hf_cos_sin(inv_freq, positions, x.dtype)
    return hf_apply(x, cos, sin, rotate_half), cos[0].contiguous(), sin[0].contiguous(), inv_freq


def run_hunyuan(a, x, positions):
    D = a.head_dim
    if a.bug == "alpha_ignored":
        base = a.base
    else:
        base = a.base * HUNYUAN_ALPHA ** (D / (D - 2))  # Python float, as HunYuanDenseV1RotaryEmbedding
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2).float() / D))
    cos, sin = hf_cos_sin(inv_freq, positions, x.dtype, 1.0)
    return hf_apply(x, cos, sin, rotate_half), cos[0].contiguous(), sin[0].contiguous(), inv_freq


def phimoe_factors(n):
    """GENERATED monotone LongRoPE factor lists of length n = head_dim / 2 (not Phi-3.5-MoE's)."""
    ts = [i / (n - 1) for i in range(n)] if n > 1 else [0.0]
    short = [round(1.0 + 0.2 * t * t, 6) for t in ts]
    long_ = [round(1.0 + 31.0 * t * t, 6) for t in ts]
    return short, long_


def phimoe_regime(a, seq_len):
    """True for the long regime: seq_len > original (switch_at_equality: >=)."""
    if a.bug == "switch_at_equality":
        return seq_len >= PHIMOE_ORIGINAL
    return seq_len > PHIMOE_ORIGINAL


def run_phimoe(a, x, positions):
    D = a.head_dim
    short, long_ = phimoe_factors(D // 2)
    seq_len = torch.max(positions[None, :]) + 1  # a 0-d int64 tensor, as PhimoeRotaryEmbedding.forward
    is_long = bool(phimoe_regime(a, seq_len))
    mscale = PHIMOE_LONG_MSCALE if is_long else PHIMOE_SHORT_MSCALE
    # _compute_longrope_parameters (factor = max_position_embeddings / original_max_position_embeddings)
    factor = a.max_position_embeddings / PHIMOE_ORIGINAL
    attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(PHIMOE_ORIGINAL))
    ext_factors = torch.tensor(long_ if is_long else short, dtype=torch.float32)
    inv_freq_shape = torch.arange(0, D, 2, dtype=torch.int64).float() / D
    inv_freq = 1.0 / (ext_factors * a.base ** inv_freq_shape)
    if a.bug == "computed_attention_factor":
        mscale = attention_factor
    cos, sin = hf_cos_sin(inv_freq, positions, x.dtype, mscale)
    return hf_apply(x, cos, sin, rotate_half), cos[0].contiguous(), sin[0].contiguous(), inv_freq


def dsv32_freqs(a):
    """precompute_freqs_cis's fp32 frequencies over qk_rope_head_dim (YaRN-smoothed with --scaling yarn)."""
    dim, base = DSV32_ROPE_DIM, a.base
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    if a.scaling == "yarn":
        y = DSV32_YARN
        low, high = yarn_correction_range(y["beta_fast"], y["beta_slow"], dim, base, y["original_max_position_embeddings"])
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        smooth = 1 - ramp
        freqs = freqs / y["factor"] * (1 - smooth) + freqs * smooth
    return freqs


def run_deepseek_v32(a, x, positions):
    rd = DSV32_ROPE_DIM
    freqs = dsv32_freqs(a)
    ang = torch.outer(positions, freqs)  # the rows of torch.outer(arange(max_seq_len), freqs) (fp32)
    freqs_cis = torch.polar(torch.ones_like(ang), ang)  # complex64 [T, rd/2]
    interleaved = a.bug == "interleaved_indexer"
    q = x[None]  # [1, T, H, index_head_dim]
    q_pe, q_nope = torch.split(q, [rd, q.shape[-1] - rd], dim=-1)
    # apply_rotary_emb(q_pe, freqs_cis, interleaved)
    dtype, shape = q_pe.dtype, q_pe.shape
    t = q_pe
    if not interleaved:
        t = t.view(*shape[:-1], 2, -1).transpose(-1, -2).contiguous()
    t = torch.view_as_complex(t.float().view(*shape[:-1], -1, 2))
    fc = freqs_cis.view(1, t.size(1), 1, t.size(-1))
    yq = torch.view_as_real(t * fc).flatten(3)
    if not interleaved:
        yq = torch.cat([yq[..., 0::2], yq[..., 1::2]], dim=-1)
    q_pe = yq.to(dtype)
    y = torch.cat([q_pe, q_nope], dim=-1)[0].contiguous()
    return y, freqs_cis.real.contiguous(), freqs_cis.imag.contiguous(), freqs.contiguous()


RUN = {"nanochat": run_nanochat, "gemma4": run_gemma4, "hunyuan": run_hunyuan, "phimoe": run_phimoe,
       "deepseek_v32": run_deepseek_v32}


# ----------------------------------------------------------------------------------------------
# The claimed convention in float64 (for --self-check)
# ----------------------------------------------------------------------------------------------
def exact_convention(a, positions):
    """(rotary_dim, layout, direction sign, theta float64 [rotary_dim/2], scale)."""
    f, D = a.family, a.head_dim
    e = torch.arange(0, D, 2, dtype=torch.float64) / D
    if f == "nanochat":
        return D, "half_split", -1, a.base ** (-e), 1.0
    if f == "gemma4":
        if a.layer_type == "sliding_attention":
            return D, "half_split", 1, GEMMA4_SLIDING_BASE ** (-e), 1.0
        rope_angles = int(GEMMA4_PARTIAL * D // 2)
        th = a.base ** (-e)
        th[rope_angles:] = 0.0
        return D, "half_split", 1, th, 1.0
    if f == "hunyuan":
        return D, "half_split", 1, (a.base * HUNYUAN_ALPHA ** (D / (D - 2))) ** (-e), 1.0
    if f == "phimoe":
        short, long_ = phimoe_factors(D // 2)
        is_long = int(positions.max()) + 1 > PHIMOE_ORIGINAL
        ext = torch.tensor(long_ if is_long else short, dtype=torch.float64)
        return D, "half_split", 1, 1.0 / (ext * a.base ** e), PHIMOE_LONG_MSCALE if is_long else PHIMOE_SHORT_MSCALE
    if f == "deepseek_v32":
        rd = DSV32_ROPE_DIM
        th = a.base ** (-(torch.arange(0, rd, 2, dtype=torch.float64) / rd))
        if a.scaling == "yarn":
            y = DSV32_YARN
            low, high = yarn_correction_range(y["beta_fast"], y["beta_slow"], rd, a.base,
                                              y["original_max_position_embeddings"])
            if low == high:
                high += 0.001
            ramp = torch.clamp((torch.arange(rd // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
            th = th / y["factor"] * ramp + th * (1 - ramp)
        return rd, "half_split", 1, th, 1.0
    raise AssertionError(f)


def exact_rotation(a, x, positions):
    rd, layout, sign, th, scale = exact_convention(a, positions)
    ang = positions.to(torch.float64)[:, None] * th[None, :]
    c = (torch.cos(ang) * scale)[:, None, :]
    s = (torch.sin(ang) * scale * sign)[:, None, :]
    return rotate_pairs64(x, c, s, layout)


# ----------------------------------------------------------------------------------------------
# config.json in each family's own spelling
# ----------------------------------------------------------------------------------------------
def claimed_config(a):
    f, D, H = a.family, a.head_dim, a.heads
    if f == "nanochat":
        return {"architectures": ["NanoChatForCausalLM"], "model_type": "nanochat",
                "hidden_size": D * H, "num_attention_heads": H, "num_key_value_heads": H, "head_dim": D,
                "num_hidden_layers": 12, "max_position_embeddings": a.max_position_embeddings,
                "rope_theta": float(a.base), "hidden_act": "relu2", "final_logit_softcapping": 15.0}
    if f == "gemma4":
        return {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
                "text_config": {
                    "model_type": "gemma4_text", "hidden_size": 1536, "num_attention_heads": H,
                    "num_key_value_heads": 1, "head_dim": a.sliding_head_dim, "global_head_dim": a.global_head_dim,
                    "num_hidden_layers": a.num_hidden_layers, "layer_types": a.layer_types,
                    "max_position_embeddings": a.max_position_embeddings, "sliding_window": 512,
                    "rope_parameters": {
                        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": GEMMA4_PARTIAL,
                                           "rope_theta": float(a.full_base)},
                        "sliding_attention": {"rope_type": "default", "rope_theta": GEMMA4_SLIDING_BASE}}}}
    if f == "hunyuan":
        return {"architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense",
                "hidden_size": D * H, "num_attention_heads": H, "num_key_value_heads": H, "head_dim": D,
                "num_hidden_layers": 32, "max_position_embeddings": a.max_position_embeddings,
                "rope_theta": float(a.base),
                "rope_scaling": {"type": "dynamic", "alpha": HUNYUAN_ALPHA, "factor": 1.0, "beta_fast": 32,
                                 "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
                "use_qk_norm": True}
    if f == "phimoe":
        short, long_ = phimoe_factors(D // 2)
        return {"architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe",
                "hidden_size": D * H, "num_attention_heads": H, "num_key_value_heads": H, "num_hidden_layers": 32,
                "max_position_embeddings": a.max_position_embeddings,
                "original_max_position_embeddings": PHIMOE_ORIGINAL, "rope_theta": float(a.base),
                "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long_,
                                 "short_mscale": PHIMOE_SHORT_MSCALE, "long_mscale": PHIMOE_LONG_MSCALE}}
    if f == "deepseek_v32":
        cfg = {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
               "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
               "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": DSV32_ROPE_DIM,
               "v_head_dim": 128, "rope_theta": float(a.base), "max_position_embeddings": a.max_position_embeddings,
               "index_head_dim": D, "index_n_heads": H, "index_topk": 2048}
        if a.scaling == "yarn":
            y = DSV32_YARN
            cfg["rope_scaling"] = {"type": "yarn", "factor": y["factor"], "beta_fast": y["beta_fast"],
                                   "beta_slow": y["beta_slow"], "mscale": 1.0, "mscale_all_dim": 1.0,
                                   "original_max_position_embeddings": y["original_max_position_embeddings"]}
        return cfg
    raise AssertionError(f)


def canonical_command(a):
    parts = ["tools/dump/torch_family_dump.py", "--family", a.family, "--dtype", a.dtype, "--bug", a.bug,
             "--base", repr(float(a.base)),
             "--head-dim", str(a.global_head_dim if a.family == "gemma4" else a.head_dim), "--heads", str(a.heads),
             "--max-position-embeddings", str(a.max_position_embeddings), "--positions", a.positions,
             "--seed", str(a.seed), "--format", a.format]
    if a.family == "gemma4":
        parts += ["--layer", str(a.layer), "--num-hidden-layers", str(a.num_hidden_layers),
                  "--sliding-head-dim", str(a.sliding_head_dim)]
    if a.family == "deepseek_v32":
        parts += ["--scaling", a.scaling]
    if a.no_cache:
        parts += ["--no-cache"]
    return " ".join(parts)


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def build_parser():
    p = argparse.ArgumentParser(
        prog="torch_family_dump.py",
        description="Dump the RoPE of nanochat, Gemma 4 (proportional), Hunyuan dense (NTK-alpha), Phi-3.5-MoE "
                    "(LongRoPE mscale) or the DeepSeek-V3.2 lightning indexer, run with torch, in ropecheck audit's format.")
    p.add_argument("--family", choices=FAMILIES, required=True)
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32", help="q's dtype (the audited dtype)")
    p.add_argument("--bug", choices=ALL_BUGS, default="none",
                   help="inject one known bug of the family (config.json still claims the correct convention): "
                        + "; ".join(f"{f}: {', '.join(b[1:])}" for f, b in BUGS.items()))
    p.add_argument("--base", type=float, default=None,
                   help="rope_theta (gemma4: of the full-attention layers); default: the family's")
    p.add_argument("--head-dim", type=int, default=None,
                   help="head_dim (gemma4: global_head_dim of the full layers, class default 512; deepseek_v32: "
                        "index_head_dim, 128); default: the family's")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--max-position-embeddings", type=int, default=None,
                   help="config.json's max_position_embeddings (default: the family's; nanochat 32768, above the "
                        "class default 2048 so that positions reach a few 10^4)")
    p.add_argument("--positions", default="default",
                   help="'default' (0..63, 96 log-spaced to max_position_embeddings-1, 255..258, 2047..2049, "
                        "65504, 65505 when below it) or comma-separated N | A..B | A..B/N (N log-spaced)")
    p.add_argument("--layer", type=int, default=5, help="gemma4: the decoder layer the dump stands for (default 5, full)")
    p.add_argument("--num-hidden-layers", type=int, default=12, help="gemma4: layers of the config (default 12)")
    p.add_argument("--sliding-head-dim", type=int, default=256, help="gemma4: text_config.head_dim (sliding layers)")
    p.add_argument("--scaling", choices=("default", "yarn"), default="default",
                   help="deepseek_v32: the model's rope_scaling (yarn: factor 40 over 4096, DeepSeek-V3.2's)")
    add_output_options(p)
    return p


def validate(p, a):
    err = p.error
    take_defaults(err, a, "family", BUGS, DEFAULTS)
    if a.head_dim < 4 or a.head_dim % 2:
        err("--head-dim must be even and >= 4")
    check_sizes(err, a)
    if a.family != "gemma4" and (a.layer != 5 or a.num_hidden_layers != 12 or a.sliding_head_dim != 256):
        err("--layer, --num-hidden-layers, --sliding-head-dim are gemma4's")
    if a.family != "deepseek_v32" and a.scaling != "default":
        err("--scaling is deepseek_v32's")
    if a.family == "gemma4":
        if a.num_hidden_layers < 1 or not (0 <= a.layer < a.num_hidden_layers):
            err("--layer must be in [0, --num-hidden-layers)")
        a.layer_types = gemma4_layer_types(a.num_hidden_layers)
        a.layer_type = a.layer_types[a.layer]
        a.full_base, a.global_head_dim = a.base, a.head_dim
        if a.layer_type == "sliding_attention":
            if a.bug != "none":
                err(f"--bug {a.bug} is a bug of the full-attention layers; --layer {a.layer} is a sliding one")
            a.head_dim = a.sliding_head_dim  # the sliding layer's q
        if int(GEMMA4_PARTIAL * a.global_head_dim // 2) < 1:
            err("--head-dim too small: no turning band")
    if a.family == "hunyuan" and a.head_dim < 4:
        err("--head-dim must be >= 4 (alpha ** (d / (d - 2)))")
    if a.family == "phimoe" and a.max_position_embeddings <= PHIMOE_ORIGINAL:
        err(f"--max-position-embeddings must exceed original_max_position_embeddings {PHIMOE_ORIGINAL}")
    if a.family == "deepseek_v32" and a.head_dim < DSV32_ROPE_DIM:
        err(f"--head-dim (index_head_dim) must be >= qk_rope_head_dim {DSV32_ROPE_DIM}")
    try:
        a.position_list = parse_positions(a.positions, a.max_position_embeddings)
    except argparse.ArgumentTypeError as e:
        err(str(e))
    if a.family == "hunyuan" and a.position_list[-1] + 1 > a.max_position_embeddings:
        err("--family hunyuan: positions must stay below --max-position-embeddings (@dynamic_rope_update would "
            "recompute the frequencies)")


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)

    positions = torch.tensor(a.position_list, dtype=torch.int64)
    x, (y, cos, sin, inv_freq) = run_kernel(a, RUN[a.family], positions)

    metadata = {}
    if a.family == "gemma4":
        metadata["layer"] = str(a.layer)
    if a.family == "deepseek_v32":
        metadata["part"] = "indexer"
    tensors = [("positions", positions), ("x", x), ("y", y)]
    if not a.no_cache:
        tensors += [("cos", cos), ("sin", sin), ("inv_freq", inv_freq.float().contiguous())]
    write_dump(a, "family", tensors, claimed_config(a), canonical_command(a),
               generator="tools/dump/torch_family_dump.py", metadata=metadata, show_positions=True)

    if a.self_check:
        print_self_check(y, exact_rotation(a, x, positions), x, positions, a.dtype, a.bug)
    return 0


if __name__ == "__main__":
    sys.exit(main())
