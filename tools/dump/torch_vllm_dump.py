#!/usr/bin/python3
"""tools/dump/torch_vllm_dump.py: run, with torch, the RoPE variants of vLLM's rotary classes as vLLM computes
them, and dump them in the format `ropecheck audit` reads (see tools/dump/README.md), with a config.json in the
spelling vLLM's get_rope reads. Audit the dumps with `--engine vllm` (the claim is vLLM's reading of the file).

Every style is written from vLLM's code (vllm-project/vllm, vllm/model_executor/layers/rotary_embedding/, the
commits ropecheck's src/ropecheck/engine_variants.hpp cites), not copied from it, and computed the way vLLM does:
inv_freq in fp32 torch, the cos/sin cache rows in fp32 (freqs = einsum("i,j->ij", t, inv_freq) with t the
positions as fp32, times the class's mscale), cat(cos, sin) cast to the model dtype (RotaryEmbeddingBase.__init__
cache.to(dtype)), then the class's torch-native rotation on the first rotary_dim coordinates in q's dtype:
rotate_neox (half-split pairs (i, i + r/2)) or rotate_gptj (interleaved pairs (2i, 2i+1)), outputs in place.
Only the cache rows at the dump's positions are formed: each row of vLLM's table depends on its own position
only (t[i] * inv_freq[j], one fp32 product), so they are bit-identical to the rows of the whole table.

Styles:
  dynamic   dynamic_ntk_scaling_rope.py DynamicNTKScalingRotaryEmbedding._compute_cos_sin_cache: NOT dynamic.
        max_len = L * s (L = max_position_embeddings), base' = base * ((s * max_len / L) - (s - 1)) ** (d/(d-2))
        (= base * (s^2 - s + 1)^(d/(d-2)), Python floats), RotaryEmbeddingBase._compute_inv_freq(base'), a cache
        of max_len rows; RotaryEmbedding.forward_static (half-split, common.py apply_rotary_emb_torch).
        config.json: rope_scaling {"rope_type": "dynamic", "factor": 4}, max_position_embeddings 4096.
        Bug hf_dynamic: transformers' per-sequence dynamic NTK (modeling_rope_utils.py
        _compute_dynamic_ntk_parameters at seq_len = max position + 1: base * ((s * seq_len / L) - (s - 1))^(d/(d-2))
        when seq_len > L, else the plain base). At seq_len = L * s it IS vLLM's base (the default positions reach
        16383: identical); a shorter dump (--positions ...8191) shows it.
  ntk / ntk_mixed  ntk_scaling_rope.py NTKScalingRotaryEmbedding._compute_inv_freq: fixed (mixed_b None):
        inv_freq of base * s, then divided by s ** (2 / rotary_dim); mixed_b b (ntk_mixed, b = 0.75): inv_freq of
        the plain base divided by exp(a * j^b), a = ln(torch.tensor(s)) / (rotary_dim/2)^b, j = 1..rotary_dim/2
        (fp32). config.json: {"rope_type": "ntk", "factor": 4[, "mixed_b": 0.75]}, max_position_embeddings 16384.
        Bug ropecheck_static_ntk: the NTK-alpha base base * s^(d/(d-2)) (ropecheck's and HF's static "ntk") with
        the plain schedule instead of vLLM's per-band divisors.
  yarn  yarn_scaling_rope.py YaRNScalingRotaryEmbedding (+ common.py yarn_find_correction_range,
        yarn_linear_ramp_mask, yarn_get_mscale): get_rope passes original_max_position_embeddings as the class's
        max_position_embeddings; pos_freqs = base ** (arange(0, r, 2) / r), low/high = floor/ceil of the
        correction dims of beta_fast 32 / beta_slow 1 over original 4096 (clamped), mask = 1 - ramp,
        inv_freq = interp * (1 - mask) + extrap * mask; cache of original * s rows times mscale =
        yarn_get_mscale(s) * attn_factor (0.1 ln s + 1 times 0.9). config.json: {"rope_type": "yarn", "factor": 4,
        "original_max_position_embeddings": 4096, "attn_factor": 0.9}, max_position_embeddings 16384.
        Bug attn_factor_ignored: mscale = yarn_get_mscale(s) (attn_factor dropped).
  deepseek_yarn  deepseek_scaling_rope.py DeepseekScalingRotaryEmbedding, selected by vLLM's
        models/deepseek_v2.py DeepseekV2Attention (rope_type set to "deepseek_yarn", get_rope(qk_rope_head_dim,
        ..., is_neox_style=False)): the YaRN inv_freq above over qk_rope_head_dim 64 (original 4096, s 40),
        mscale = yarn_get_mscale(s, mscale) / yarn_get_mscale(s, mscale_all_dim) * attn_factor (= 1 for
        mscale = mscale_all_dim = 1), cos/sin repeat_interleave(2), query_rot * cos + rotate_gptj(query_rot) * sin:
        interleaved pairs, written back IN PLACE (transformers' apply_rotary_pos_emb_interleave instead writes
        pair i to (i, i + 32)). The dump is the MLA rope slice [tokens, heads, 64], as torch_rope_dump.py
        --impl deepseek dumps it; config.json is DeepSeek-V3's (tests/data/families/deepseek_v3.json).
        Bug outputs_half_split: transformers' output permutation (pair i written to (i, i + 32)).
  longrope  phi3_long_rope_scaled_rope.py Phi3LongRoPEScaledRotaryEmbedding: use_long_rope = max_model_len >
        original_max_position_embeddings, decided ONCE when the engine starts (--max-model-len, default 131072:
        the long factors at every position, position 0 included); inv_freq = 1 / (factors * base ** (arange(0, r,
        2) / r)) (fp32), mscale = sqrt(1 + ln(mpe / L0) / ln(L0)) (short_mscale / long_mscale absent), the short
        table (L0 rows) and the long one (mpe rows) concatenated, row position + L0 when long; cos.repeat(1, 2),
        rotate_neox. config.json: model_type "phi3", original 4096, max_position_embeddings 131072, rope_scaling
        {"type": "longrope", short_factor, long_factor}. The factor lists are GENERATED, monotone over the 64 bands
        (t = i / 63): short 1 + 0.2 t^2, long 1 + 31 t^2, 6 decimals (torch_family_dump.py phimoe_factors; not a
        real model's). Positions stay below --max-model-len (vLLM's scheduler caps them). max_model_len is not
        written to __metadata__ (ropecheck does not read it there): audit with --max-model-len N.
        Bug per_sequence_switch: short or long chosen per sequence (long only when max position + 1 > L0, as
        transformers does): the short factors for a dump below 4096 although max_model_len > 4096.
  mrope_yarn  mrope.py MRotaryEmbedding with YaRN (get_rope's rope type yarn with mrope_section): the class gets
        max_position = original_max_position_embeddings (32768) and enlarges it 4x (cache_max_position_num) BEFORE
        YaRNScalingRotaryEmbedding._compute_inv_freq runs on it: the correction range is taken at 4 * 32768;
        mscale = yarn_get_mscale(4) * attn_factor (1); the rows of the 3 position rows, merged by contiguous
        mrope_section [16, 24, 24] (band block i from row i), apply_rotary_emb_torch half-split (forward_native).
        config.json: Qwen2.5-VL's flat spelling (model_type "qwen2_5_vl", rope_scaling {"type": "yarn",
        "mrope_section": [16, 24, 24], "factor": 4, "original_max_position_embeddings": 32768}), base 1e6,
        max_position_embeddings 131072. Positions [3, tokens] as torch_mrope_dump.py rope_index lays them out (text,
        a 1x8x8 image, a 2x4x4 video, text, far text), its far text merged with the text positions of --positions
        beyond the text after the video (default: the log spread to max_position_embeddings - 1). Bug correction_at_original: the correction range at 32768 (transformers' YaRN).
  xdrope  xdrope.py XDRotaryEmbedding (a DynamicNTKAlphaRotaryEmbedding, dynamic_ntk_alpha_rope.py, with
        xdrope_section), selected by __init__.py get_rope for rope type "xdrope" (it passes rope_theta, alpha as
        scaling_alpha, xdrope_section, and max_position = the model's max_position_embeddings): the cache of
        max_position_embeddings rows with the static NTK-alpha base base * alpha ** (r / (r - 2)) (Python floats,
        r = rotary_dim), RotaryEmbeddingBase._compute_inv_freq of it (fp32), cast to the model dtype;
        forward_native indexes the cache by the [4, tokens] positions, splits cos and sin contiguously by
        xdrope_section and takes block r from position row r, then ApplyRotaryEmb (common.py) on
        query[..., :rotary_dim] with is_neox_style True (half-split; models/hunyuan_v1.py HunYuanAttention,
        HunYuan-VL's language model, calls get_rope(..., is_neox_style=True)). config.json: model_type "llama"
        (ropecheck reads rope type xdrope under --engine vllm for any family), head_dim 128, rope_theta 10000,
        max_position_embeddings 32768, rope_scaling {"rope_type": "xdrope", "alpha": 1000, "xdrope_section":
        [16, 16, 16, 16]}. Positions [4, tokens] (rows P, W, H, T) as models/hunyuan_vision.py
        HunYuanVLForConditionalGeneration.get_xdrope_input_positions lays them out: every row the token index,
        except an image's grid tokens (from its start token + 2, llm grid h x (w + 1), a newline column per row):
        W the column 0..w, H the row 0..h-1, T the image's index; here 64 text tokens, an 8 x 8 image, 8 text, a
        4 x 6 image, 16 text, then the text positions of --positions beyond (default: the log spread to 32767).
        Bugs: alpha_ignored (the plain base), rows_swapped (rows 1 and 2, W and H, exchanged), section_wrong (the
        bands split by [8, 24, 16, 16]).

--bug NAME injects one known bug; config.json always describes the CLAIMED (correct, vLLM's) convention.
The dump (--out DIR): DIR/dump.safetensors (or DIR/dump/*.npy with --format npy) holding positions I64 [tokens]
([3, tokens] for mrope_yarn, [4, tokens] for xdrope), x and y [tokens, heads, head_dim] in --dtype (vLLM's query
viewed [tokens, heads, head_size]), and (unless --no-cache) cos/sin, the cache rows vLLM reads ([tokens,
rotary_dim/2] each, the two halves of the cos_sin_cache row, in the model dtype; mrope_yarn, xdrope: the rows
merged by section), and the fp32 inv_freq used; __metadata__ generator, style, dtype, bug, torch_version, seed, command.
Positions: `default` is 0..63 dense, 96 log-spaced to the style's length - 1 and the fp16/bf16 edges
(torch_rope_dump.py default_positions), or a list (N | A..B | A..B/N); every position must lie inside vLLM's table.
x ~ N(0, 1) from torch.Generator(seed), cast to --dtype. Run with /usr/bin/python3 (Debian's python3-torch);
stdlib, torch and numpy only; the same command gives byte-identical files.
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_common import (  # noqa: E402  (what every dump script shares)
    DTYPES, add_output_options, check_sizes, print_self_check, rotate_half, rotate_half_interleaved, rotate_pairs64,
    run_kernel, take_defaults, write_dump, yarn_correction_range)
from torch_rope_dump import parse_positions  # noqa: E402  (the positions of the 1-D script)
from torch_family_dump import phimoe_factors  # noqa: E402  (the generated LongRoPE factor lists)
from torch_mrope_dump import rope_index  # noqa: E402  (get_rope_index's text / image / video layout)

STYLES = ("dynamic", "ntk", "ntk_mixed", "yarn", "deepseek_yarn", "longrope", "mrope_yarn", "xdrope")
BUGS = {
    "dynamic": ("none", "hf_dynamic"),
    "ntk": ("none", "ropecheck_static_ntk"),
    "ntk_mixed": ("none", "ropecheck_static_ntk"),
    "yarn": ("none", "attn_factor_ignored"),
    "deepseek_yarn": ("none", "outputs_half_split"),
    "longrope": ("none", "per_sequence_switch"),
    "mrope_yarn": ("none", "correction_at_original"),
    "xdrope": ("none", "alpha_ignored", "rows_swapped", "section_wrong"),
}
ALL_BUGS = tuple(dict.fromkeys(b for bs in BUGS.values() for b in bs))
# Per style: head_dim, rope_theta, max_position_embeddings.
DEFAULTS = {
    "dynamic": {"head_dim": 128, "base": 10000.0, "mpe": 4096},
    "ntk": {"head_dim": 128, "base": 10000.0, "mpe": 16384},
    "ntk_mixed": {"head_dim": 128, "base": 10000.0, "mpe": 16384},
    "yarn": {"head_dim": 128, "base": 10000.0, "mpe": 16384},
    "deepseek_yarn": {"head_dim": 64, "base": 10000.0, "mpe": 163840},
    "longrope": {"head_dim": 128, "base": 10000.0, "mpe": 131072},
    "mrope_yarn": {"head_dim": 128, "base": 1000000.0, "mpe": 131072},
    "xdrope": {"head_dim": 128, "base": 10000.0, "mpe": 32768},
}
SCALE = 4.0                      # dynamic, ntk, yarn, mrope_yarn: rope_scaling factor
MIXED_B = 0.75                   # ntk_mixed
YARN_ORIGINAL = 4096             # yarn
YARN_ATTN_FACTOR = 0.9           # yarn
DSV3 = {"factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0}
LONGROPE_ORIGINAL = 4096
MROPE_ORIGINAL = 32768
MROPE_SECTION = (16, 24, 24)
BETA_FAST, BETA_SLOW = 32, 1     # YaRNScalingRotaryEmbedding / MRotaryEmbedding defaults
XD_ALPHA = 1000.0                # xdrope: rope_scaling alpha
XD_SECTION = (16, 16, 16, 16)    # xdrope: xdrope_section (sums to rotary_dim / 2)
XD_WRONG_SECTION = (8, 24, 16, 16)  # xdrope, bug section_wrong
XD_IMAGES = ((8, 8), (4, 6))     # xdrope: llm grids (h, w) of the two images (after the spatial merge)
MULTI_ROW = ("mrope_yarn", "xdrope")  # styles whose positions are [rows, tokens]


# ----------------------------------------------------------------------------------------------
# vLLM's common pieces (common.py, base.py), written from their formulas
# ----------------------------------------------------------------------------------------------
def base_inv_freq(base, rd):
    """RotaryEmbeddingBase._compute_inv_freq: 1 / base ** (arange(0, r, 2, float) / r), fp32."""
    return 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float) / rd))


def linear_ramp_mask(low, high, n, dtype):
    """common.py yarn_linear_ramp_mask."""
    if low == high:
        high += 0.001
    return torch.clamp((torch.arange(n, dtype=dtype) - low) / (high - low), 0, 1)


def get_mscale(scale=1.0, mscale=1.0):
    """common.py yarn_get_mscale: 0.1 m ln s + 1 (1 when s <= 1)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_inv_freq(base, rd, scaling_factor, max_pos, beta_fast=BETA_FAST, beta_slow=BETA_SLOW,
                  extrapolation_factor=1.0):
    """YaRNScalingRotaryEmbedding._compute_inv_freq (also DeepseekScalingRotaryEmbedding's): max_pos is the class's
    self.max_position_embeddings (the original length; MRotaryEmbedding's 4x enlarged one)."""
    pos_freqs = base ** (torch.arange(0, rd, 2, dtype=torch.float) / rd)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (scaling_factor * pos_freqs)
    low, high = yarn_correction_range(beta_fast, beta_slow, rd, base, max_pos)
    inv_freq_mask = (1 - linear_ramp_mask(low, high, rd // 2, dtype=torch.float)) * extrapolation_factor
    return inv_freq_interpolation * (1 - inv_freq_mask) + inv_freq_extrapolation * inv_freq_mask


def cache_rows(inv_freq, rows, dtype, mscale=None):
    """The rows `rows` (int64, any shape) of the class's _compute_cos_sin_cache: t (fp32) x inv_freq, cos/sin
    (times mscale in fp32 when the class multiplies), cat(cos, sin), cast to the model dtype. Returns cos, sin
    [..., rd/2] as held (the two halves of each cos_sin_cache row)."""
    t = rows.reshape(-1).to(torch.float32)
    freqs = torch.einsum("i,j -> ij", t, inv_freq)
    cos, sin = freqs.cos(), freqs.sin()
    if mscale is not None:
        cos, sin = cos * mscale, sin * mscale
    cache = torch.cat((cos, sin), dim=-1).to(dtype)
    cos, sin = cache.chunk(2, dim=-1)
    shape = tuple(rows.shape) + (inv_freq.shape[0],)
    return cos.reshape(shape), sin.reshape(shape)


def apply_rotary_emb_torch(x, cos, sin, is_neox_style):
    """common.py apply_rotary_emb_torch (RotaryEmbedding.forward_static on the first rotary_dim coordinates):
    cos/sin [T, r/2] unsqueezed over heads and cast to x.dtype; o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin."""
    cos = cos.unsqueeze(-2).to(x.dtype)
    sin = sin.unsqueeze(-2).to(x.dtype)
    if is_neox_style:
        x1, x2 = torch.chunk(x, 2, dim=-1)
    else:
        x1, x2 = x[..., ::2], x[..., 1::2]
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if is_neox_style:
        return torch.cat((o1, o2), dim=-1)
    return torch.stack((o1, o2), dim=-1).flatten(-2)


def forward_static(x, cos, sin, rd, is_neox_style):
    """RotaryEmbedding.forward_static: rotate query[..., :rotary_dim], pass the rest."""
    q_rot, q_pass = x[..., :rd], x[..., rd:]
    return torch.cat((apply_rotary_emb_torch(q_rot, cos, sin, is_neox_style), q_pass), dim=-1)


# ----------------------------------------------------------------------------------------------
# The styles. x: [T, H, D] in the dump dtype; positions: int64 [T] ([3, T] for mrope_yarn, [4, T] for xdrope).
# Each returns y [T, H, D] (x.dtype), cos, sin [T, rd/2] (as held) and inv_freq (fp32, as used).
# ----------------------------------------------------------------------------------------------
def run_dynamic(a, x, positions):
    rd, s, L = a.head_dim, SCALE, a.max_position_embeddings
    if a.bug == "hf_dynamic":
        # @dynamic_rope_update: seq_len = torch.max(position_ids) + 1 (a 0-d int64 tensor, so the base is an fp32
        # 0-d tensor), recomputed only when seq_len > max_position_embeddings
        seq_len = torch.max(positions) + 1
        base = a.base * ((s * seq_len / L) - (s - 1)) ** (rd / (rd - 2)) if int(seq_len) > L else a.base
    else:
        max_len = L * s
        base = a.base * ((s * max_len / L) - (s - 1)) ** (rd / (rd - 2))
    inv_freq = base_inv_freq(base, rd)
    cos, sin = cache_rows(inv_freq, positions, x.dtype)
    return forward_static(x, cos, sin, rd, True), cos, sin, inv_freq


def run_ntk(a, x, positions):
    rd, s = a.head_dim, SCALE
    if a.bug == "ropecheck_static_ntk":
        inv_freq = base_inv_freq(a.base * s ** (rd / (rd - 2)), rd)
    elif a.style == "ntk":
        inv_freq = base_inv_freq(a.base * s, rd)
        inv_freq = inv_freq / s ** (2 / rd)
    else:
        inv_freq = base_inv_freq(a.base, rd)
        am = torch.tensor(s).log() / (rd / 2) ** MIXED_B
        lambda_1_m = (am * torch.arange(1, rd // 2 + 1).float() ** MIXED_B).exp()
        inv_freq = inv_freq / lambda_1_m
    cos, sin = cache_rows(inv_freq, positions, x.dtype)
    return forward_static(x, cos, sin, rd, True), cos, sin, inv_freq


def run_yarn(a, x, positions):
    rd, s = a.head_dim, SCALE
    inv_freq = yarn_inv_freq(a.base, rd, s, YARN_ORIGINAL)
    mscale = float(get_mscale(s) * (1.0 if a.bug == "attn_factor_ignored" else YARN_ATTN_FACTOR))
    cos, sin = cache_rows(inv_freq, positions, x.dtype, mscale)
    return forward_static(x, cos, sin, rd, True), cos, sin, inv_freq


def run_deepseek_yarn(a, x, positions):
    rd, d = a.head_dim, DSV3
    inv_freq = yarn_inv_freq(a.base, rd, d["factor"], d["original_max_position_embeddings"], d["beta_fast"],
                             d["beta_slow"])
    mscale = float(get_mscale(d["factor"], d["mscale"]) / get_mscale(d["factor"], d["mscale_all_dim"]) * 1.0)
    cos, sin = cache_rows(inv_freq, positions, x.dtype, mscale)
    # DeepseekScalingRotaryEmbedding.forward_native, is_neox_style False
    cos_r = cos.repeat_interleave(2, dim=-1).unsqueeze(-2)
    sin_r = sin.repeat_interleave(2, dim=-1).unsqueeze(-2)
    q_rot = x[..., :rd]
    q_rot = q_rot * cos_r + rotate_half_interleaved(q_rot) * sin_r
    if a.bug == "outputs_half_split":
        # transformers' apply_rotary_pos_emb_interleave order: pair i (2i, 2i+1) written to (i, i + rd/2)
        q_rot = torch.cat((q_rot[..., 0::2], q_rot[..., 1::2]), dim=-1)
    y = torch.cat((q_rot, x[..., rd:]), dim=-1)
    return y, cos, sin, inv_freq


def longrope_uses_long(a, positions):
    if a.bug == "per_sequence_switch":
        return int(positions.max()) + 1 > LONGROPE_ORIGINAL
    return a.max_model_len > LONGROPE_ORIGINAL


def longrope_mscale(a):
    scale = a.max_position_embeddings / LONGROPE_ORIGINAL
    return 1.0 if scale <= 1.0 else math.sqrt(1 + math.log(scale) / math.log(LONGROPE_ORIGINAL))


def run_longrope(a, x, positions):
    rd = a.head_dim
    short, long_ = phimoe_factors(rd // 2)
    use_long = longrope_uses_long(a, positions)
    mscale = longrope_mscale(a)  # short_mscale = long_mscale = the default scaling_factor
    factors = torch.tensor(long_ if use_long else short, dtype=torch.float32)
    inv_freq = 1.0 / (factors * (a.base ** (torch.arange(0, rd, 2, dtype=torch.float) / rd)))
    # long_short_cos_sin_cache = cat(short table [L0 rows], long table [mpe rows]); row position (+ L0 when long):
    # the row of the chosen table at the position itself.
    cos, sin = cache_rows(inv_freq, positions, x.dtype, mscale)
    cos_r = cos.repeat(1, 2).unsqueeze(-2)
    sin_r = sin.repeat(1, 2).unsqueeze(-2)
    q_rot, q_pass = x[..., :rd], x[..., rd:]
    q_rot = q_rot * cos_r + rotate_half(q_rot) * sin_r
    return torch.cat((q_rot, q_pass), dim=-1), cos, sin, inv_freq


def mrope_max_pos(a):
    """MRotaryEmbedding.cache_max_position_num: 4 * the max_position get_rope passes (original, for yarn)."""
    return MROPE_ORIGINAL if a.bug == "correction_at_original" else 4 * MROPE_ORIGINAL


def run_mrope_yarn(a, x, positions):
    rd, s = a.head_dim, SCALE
    inv_freq = yarn_inv_freq(a.base, rd, s, mrope_max_pos(a))
    mscale = float(get_mscale(s) * 1.0)
    cos3, sin3 = cache_rows(inv_freq, positions, x.dtype, mscale)  # [3, T, rd/2]
    sec = list(a.mrope_section)
    cos = torch.cat([m[i] for i, m in enumerate(cos3.split(sec, dim=-1))], dim=-1)
    sin = torch.cat([m[i] for i, m in enumerate(sin3.split(sec, dim=-1))], dim=-1)
    return forward_static(x, cos, sin, rd, True), cos.contiguous(), sin.contiguous(), inv_freq


def xd_sections(a):
    """The sections the kernel splits by (the claimed xdrope_section unless --bug section_wrong)."""
    return list(XD_WRONG_SECTION) if a.bug == "section_wrong" else list(a.xdrope_section)


def run_xdrope(a, x, positions):
    rd = a.head_dim
    # DynamicNTKAlphaRotaryEmbedding._compute_cos_sin_cache: base * alpha ** (r / (r - 2)) in Python floats
    base = a.base if a.bug == "alpha_ignored" else a.base * XD_ALPHA ** (rd / (rd - 2))
    inv_freq = base_inv_freq(base, rd)
    used = positions[[0, 2, 1, 3]] if a.bug == "rows_swapped" else positions
    cos4, sin4 = cache_rows(inv_freq, used, x.dtype)  # cos_sin_cache[positions].chunk(2): [4, T, rd/2] each
    sec = xd_sections(a)
    cos = torch.cat([m[r] for r, m in enumerate(cos4.split(sec, dim=-1))], dim=-1)
    sin = torch.cat([m[r] for r, m in enumerate(sin4.split(sec, dim=-1))], dim=-1)
    # forward_native: self.apply_rotary_emb.forward_native (ApplyRotaryEmb, is_neox_style True) on query_rot
    return forward_static(x, cos, sin, rd, True), cos.contiguous(), sin.contiguous(), inv_freq


RUN = {"dynamic": run_dynamic, "ntk": run_ntk, "ntk_mixed": run_ntk, "yarn": run_yarn,
       "deepseek_yarn": run_deepseek_yarn, "longrope": run_longrope, "mrope_yarn": run_mrope_yarn,
       "xdrope": run_xdrope}


# ----------------------------------------------------------------------------------------------
# The claimed convention in float64 (for --self-check)
# ----------------------------------------------------------------------------------------------
def yarn_theta64(base, rd, s, max_pos, beta_fast=BETA_FAST, beta_slow=BETA_SLOW):
    e = torch.arange(0, rd, 2, dtype=torch.float64) / rd
    th = base ** (-e)
    low, high = yarn_correction_range(beta_fast, beta_slow, rd, base, max_pos)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(rd // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
    return th / s * ramp + th * (1 - ramp)


def exact_convention(a):
    """(layout, theta float64 [rd/2], attention factor, band rows or None)."""
    st, D, s = a.style, a.head_dim, SCALE
    e = torch.arange(0, D, 2, dtype=torch.float64) / D
    j = torch.arange(1, D // 2 + 1, dtype=torch.float64) / (D // 2)
    if st == "dynamic":
        return "half_split", (a.base * (s * s - s + 1) ** (D / (D - 2))) ** (-e), 1.0, None
    if st == "ntk":
        return "half_split", a.base ** (-e) / s ** j, 1.0, None
    if st == "ntk_mixed":
        return "half_split", a.base ** (-e) / torch.exp(math.log(s) * j ** MIXED_B), 1.0, None
    if st == "yarn":
        return "half_split", yarn_theta64(a.base, D, s, YARN_ORIGINAL), get_mscale(s) * YARN_ATTN_FACTOR, None
    if st == "deepseek_yarn":
        d = DSV3
        th = yarn_theta64(a.base, D, d["factor"], d["original_max_position_embeddings"], d["beta_fast"], d["beta_slow"])
        return "interleaved", th, get_mscale(d["factor"], d["mscale"]) / get_mscale(d["factor"], d["mscale_all_dim"]), None
    if st == "longrope":
        short, long_ = phimoe_factors(D // 2)
        ext = torch.tensor(long_ if a.max_model_len > LONGROPE_ORIGINAL else short, dtype=torch.float64)
        return "half_split", 1.0 / (ext * a.base ** e), longrope_mscale(a), None
    if st == "mrope_yarn":
        rows = [next(r for r in range(3) if b < sum(a.mrope_section[:r + 1])) for b in range(D // 2)]
        return "half_split", yarn_theta64(a.base, D, s, 4 * MROPE_ORIGINAL), get_mscale(s), rows
    if st == "xdrope":
        rows = [next(r for r in range(4) if b < sum(a.xdrope_section[:r + 1])) for b in range(D // 2)]
        return "half_split", (a.base * XD_ALPHA ** (D / (D - 2))) ** (-e), 1.0, rows
    raise AssertionError(st)


def exact_rotation(a, x, positions):
    layout, th, af, rows = exact_convention(a)
    if rows is None:
        ang = positions.to(torch.float64)[:, None] * th[None, :]
    else:
        p = positions.to(torch.float64)  # [rows, T]
        ang = torch.stack([p[rows[b]] * th[b] for b in range(th.shape[0])], dim=-1)
    c = (torch.cos(ang) * af)[:, None, :]
    sn = (torch.sin(ang) * af)[:, None, :]
    return rotate_pairs64(x, c, sn, layout)


# ----------------------------------------------------------------------------------------------
# config.json in the spelling vLLM reads (v4 rope_scaling)
# ----------------------------------------------------------------------------------------------
def claimed_config(a):
    st, D, H = a.style, a.head_dim, a.heads
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D * H,
             "num_attention_heads": H, "num_key_value_heads": H, "head_dim": D, "num_hidden_layers": 32,
             "max_position_embeddings": a.max_position_embeddings, "rope_theta": float(a.base)}
    if st == "dynamic":
        return {**llama, "rope_scaling": {"rope_type": "dynamic", "factor": SCALE}}
    if st in ("ntk", "ntk_mixed"):
        rs = {"rope_type": "ntk", "factor": SCALE}
        if st == "ntk_mixed":
            rs["mixed_b"] = MIXED_B
        return {**llama, "rope_scaling": rs}
    if st == "yarn":
        return {**llama, "rope_scaling": {"rope_type": "yarn", "factor": SCALE,
                                          "original_max_position_embeddings": YARN_ORIGINAL,
                                          "attn_factor": YARN_ATTN_FACTOR}}
    if st == "deepseek_yarn":
        # DeepSeek-V3 as published (tests/data/families/deepseek_v3.json, first case): no rope_interleave key
        return {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
                "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
                "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": D,
                "v_head_dim": 128, "rope_theta": float(a.base),
                "rope_scaling": {"beta_fast": DSV3["beta_fast"], "beta_slow": DSV3["beta_slow"],
                                 "factor": DSV3["factor"], "mscale": DSV3["mscale"],
                                 "mscale_all_dim": DSV3["mscale_all_dim"],
                                 "original_max_position_embeddings": DSV3["original_max_position_embeddings"],
                                 "type": "yarn"},
                "max_position_embeddings": a.max_position_embeddings, "first_k_dense_replace": 3,
                "n_routed_experts": 256, "num_experts_per_tok": 8}
    if st == "longrope":
        short, long_ = phimoe_factors(D // 2)
        return {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": D * H,
                "num_attention_heads": H, "num_key_value_heads": H, "num_hidden_layers": 32,
                "max_position_embeddings": a.max_position_embeddings,
                "original_max_position_embeddings": LONGROPE_ORIGINAL, "rope_theta": float(a.base),
                "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long_}}
    if st == "mrope_yarn":
        # Qwen2.5-VL's flat text fields (tests/data/families/qwen2_5_vl.json), rope_scaling type yarn + mrope_section
        return {"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
                "hidden_size": D * H, "num_attention_heads": H, "num_key_value_heads": H, "num_hidden_layers": 28,
                "max_position_embeddings": a.max_position_embeddings, "rope_theta": float(a.base),
                "rope_scaling": {"type": "yarn", "mrope_section": list(a.mrope_section), "factor": SCALE,
                                 "original_max_position_embeddings": MROPE_ORIGINAL},
                "use_sliding_window": False, "sliding_window": 32768, "max_window_layers": 28,
                "vision_config": {"depth": 32, "embed_dim": 1280, "num_heads": 16, "spatial_merge_size": 2}}
    if st == "xdrope":
        return {**llama, "rope_scaling": {"rope_type": "xdrope", "alpha": XD_ALPHA,
                                          "xdrope_section": list(a.xdrope_section)}}
    raise AssertionError(st)


def canonical_command(a):
    parts = ["tools/dump/torch_vllm_dump.py", "--style", a.style, "--dtype", a.dtype, "--bug", a.bug,
             "--base", repr(float(a.base)), "--head-dim", str(a.head_dim), "--heads", str(a.heads),
             "--max-position-embeddings", str(a.max_position_embeddings), "--positions", a.positions,
             "--seed", str(a.seed), "--format", a.format]
    if a.style == "longrope":
        parts += ["--max-model-len", str(a.max_model_len)]
    if a.no_cache:
        parts += ["--no-cache"]
    return " ".join(parts)


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def build_parser():
    p = argparse.ArgumentParser(
        prog="torch_vllm_dump.py",
        description="Dump vLLM's RoPE variants (dynamic NTK, NTK fixed/mixed, YaRN, DeepSeek YaRN, Phi-3 LongRoPE, "
                    "M-RoPE with YaRN, XD-RoPE), run with torch as vLLM's rotary classes compute them, in ropecheck "
                    "audit's format; audit them with --engine vllm.")
    p.add_argument("--style", choices=STYLES, required=True)
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32", help="the model dtype (q and the cos/sin cache)")
    p.add_argument("--bug", choices=ALL_BUGS, default="none",
                   help="inject one known bug (config.json still claims vLLM's correct convention): "
                        + "; ".join(f"{s}: {', '.join(b[1:])}" for s, b in BUGS.items()))
    p.add_argument("--base", type=float, default=None, help="rope_theta (default: the style's)")
    p.add_argument("--head-dim", type=int, default=None,
                   help="head_dim, all of it rotary (deepseek_yarn: qk_rope_head_dim, 64; default: the style's)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--max-position-embeddings", type=int, default=None,
                   help="config.json's max_position_embeddings (default: the style's)")
    p.add_argument("--max-model-len", type=int, default=None,
                   help="longrope: vLLM's engine-wide max_model_len (default 131072: the long factors)")
    p.add_argument("--positions", default="default",
                   help="'default' (0..63, 96 log-spaced to the style's length - 1, the fp16/bf16 edges) or "
                        "comma-separated N | A..B | A..B/N (N log-spaced); mrope_yarn, xdrope: the text positions "
                        "appended after the image/video layout")
    add_output_options(p)
    return p


def table_length(a):
    """The rows of vLLM's cos/sin table (positions must index inside it) and the default positions' length."""
    st = a.style
    if st == "dynamic":
        n = int(a.max_position_embeddings * SCALE)          # max_len = L * s
        return n, n
    if st in ("ntk", "ntk_mixed"):
        return a.max_position_embeddings, a.max_position_embeddings
    if st == "yarn":
        n = int(YARN_ORIGINAL * SCALE)                      # original * s
        return n, n
    if st == "deepseek_yarn":
        n = int(DSV3["original_max_position_embeddings"] * DSV3["factor"])
        return n, n
    if st == "longrope":
        n = min(a.max_position_embeddings, a.max_model_len)  # the scheduler caps positions at max_model_len
        return n, n
    if st == "mrope_yarn":
        return int(4 * MROPE_ORIGINAL * SCALE), a.max_position_embeddings
    if st == "xdrope":
        return a.max_position_embeddings, a.max_position_embeddings  # max_len = max_position_embeddings
    raise AssertionError(st)


def mrope_positions(a, text):
    """[3, T]: torch_mrope_dump.py rope_index (64 text, a 1x8x8 image, a 2x4x4 video at t-step 2, 16 text, far
    text 1000 / 4097 / 32769 / 100000), its far text merged with the text positions `text` beyond the
    contiguous text after the video (sorted: one increasing text tail)."""
    layout = argparse.Namespace(text_before=64, image="1x8x8", video="2x4x4", video_t_step=2, text_after=16)
    rows = rope_index(layout)
    differ = (rows != rows[0:1]).any(dim=0).nonzero()
    k = int(differ.max()) + 1 if differ.numel() else 0  # first token after the last multimodal one
    while k + 1 < rows.shape[1] and int(rows[0, k + 1]) == int(rows[0, k]) + 1:
        k += 1                                           # the contiguous text run after the video
    head, text_end = rows[:, :k + 1], int(rows[0, k])
    tail = sorted(set(rows[0, k + 1:].tolist()) | {p for p in text if p > text_end})
    if tail:
        head = torch.cat((head, torch.tensor([tail] * 3, dtype=torch.int64)), dim=1)
    return head


def xdrope_positions(a, text):
    """[4, T] (rows P, W, H, T) as HunYuanVLForConditionalGeneration.get_xdrope_input_positions lays them out:
    every row the token index, except each image's grid tokens, which start 2 after its start token (start token,
    begin embedding, h x (w + 1) grid tokens row by row with a newline column, end embedding, end token): row W
    the column 0..w, row H the grid row 0..h-1, row T the image's index. 64 text tokens, the 8 x 8 image, 8 text,
    the 4 x 6 image, 16 text, then the text positions `text` beyond the last token (sorted)."""
    rows = [[], [], [], []]
    idx = 0

    def text_tokens(n):
        nonlocal idx
        for _ in range(n):
            for r in rows:
                r.append(idx)
            idx += 1
    text_tokens(64)
    for k, (h, w) in enumerate(XD_IMAGES):
        text_tokens(2)  # the image start token and the begin embedding (token index in every row)
        for hi in range(h):
            for wi in range(w + 1):
                rows[0].append(idx), rows[1].append(wi), rows[2].append(hi), rows[3].append(k)
                idx += 1
        text_tokens(2)  # the end embedding and the end token
        text_tokens(8 if k + 1 < len(XD_IMAGES) else 16)
    tail = sorted(p for p in set(text) if p >= idx)
    for r in rows:
        r.extend(tail)
    return torch.tensor(rows, dtype=torch.int64)


def validate(p, a):
    err = p.error
    take_defaults(err, a, "style", BUGS, DEFAULTS)
    if a.style != "longrope" and a.max_model_len is not None:
        err("--max-model-len is longrope's (vLLM's other classes do not read it)")
    if a.style == "longrope":
        if a.max_model_len is None:
            a.max_model_len = 131072
        if a.max_model_len < 1:
            err("--max-model-len must be >= 1")
        if a.max_position_embeddings <= LONGROPE_ORIGINAL:
            err(f"--max-position-embeddings must exceed original_max_position_embeddings {LONGROPE_ORIGINAL}")
    if a.head_dim < 4 or a.head_dim % 4:
        err("--head-dim must be a multiple of 4 and >= 4")
    check_sizes(err, a)
    a.mrope_section = list(MROPE_SECTION)
    if a.style == "mrope_yarn" and sum(a.mrope_section) != a.head_dim // 2:
        err(f"--style mrope_yarn: mrope_section {a.mrope_section} must sum to head_dim / 2 (use --head-dim 128)")
    a.xdrope_section = list(XD_SECTION)
    if a.style == "xdrope" and sum(a.xdrope_section) != a.head_dim // 2:
        err(f"--style xdrope: xdrope_section {a.xdrope_section} must sum to head_dim / 2 (use --head-dim 128)")
    rows, default_len = table_length(a)
    try:
        plist = parse_positions(a.positions, default_len)
    except argparse.ArgumentTypeError as e:
        err(str(e))
    if a.style in MULTI_ROW:
        a.position_rows = (mrope_positions if a.style == "mrope_yarn" else xdrope_positions)(a, plist)
        top = int(a.position_rows.max())
    else:
        a.position_list = plist
        top = plist[-1]
    if top >= rows:
        what = {"longrope": "min(max_position_embeddings, --max-model-len)"}.get(a.style, "vLLM's cos/sin table")
        err(f"--positions: {top} lies outside {what} ({rows} rows)")
    if a.style == "longrope" and a.bug == "per_sequence_switch":
        if a.max_model_len <= LONGROPE_ORIGINAL or top + 1 > LONGROPE_ORIGINAL:
            err(f"--bug per_sequence_switch differs from vLLM's rule only for a dump below {LONGROPE_ORIGINAL} "
                f"(max position + 1 <= {LONGROPE_ORIGINAL}) with --max-model-len > {LONGROPE_ORIGINAL}")


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)

    if a.style in MULTI_ROW:
        positions = a.position_rows
    else:
        positions = torch.tensor(a.position_list, dtype=torch.int64)
    x, (y, cos, sin, inv_freq) = run_kernel(a, RUN[a.style], positions)

    tensors = [("positions", positions.contiguous()), ("x", x), ("y", y.contiguous())]
    if not a.no_cache:
        tensors += [("cos", cos.contiguous()), ("sin", sin.contiguous()), ("inv_freq", inv_freq.float().contiguous())]
    write_dump(a, "style", tensors, claimed_config(a), canonical_command(a),
               generator="tools/dump/torch_vllm_dump.py", show_positions=True,
               note=(f"; audit with --engine vllm --max-model-len {a.max_model_len}" if a.style == "longrope"
                     else "; audit with --engine vllm"))

    if a.self_check:
        print_self_check(y, exact_rotation(a, x, positions), x, positions, a.dtype, a.bug)
    return 0


if __name__ == "__main__":
    sys.exit(main())
