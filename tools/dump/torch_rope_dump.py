#!/usr/bin/python3
"""tools/dump/torch_rope_dump.py: run a real PyTorch RoPE implementation and dump what it did in
the format `ropecheck audit` reads (see tools/dump/README.md).

Implementations (written from the published formulas of the real code, run with the installed torch):
  hf    transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb (modeling_rope_utils.py inv_freq
        for default / linear / dynamic / yarn / llama3; fp32 angles with autocast off; cos/sin cast to
        x.dtype; rotation q*cos + rotate_half(q)*sin in x.dtype; half-split pairs (i, i+r/2); partial
        rotary rotates the first rotary_dim coordinates and passes the rest through).
  meta  Meta's llama precompute_freqs_cis + apply_rotary_emb (complex64 torch.polar cache, x.float()
        viewed as complex over interleaved pairs (2i, 2i+1), product, .type_as(x)); llama3 scaling as
        Meta's apply_scaling.
  glm   transformers' GLM-4 (models/glm4/modeling_glm4.py apply_rotary_pos_emb): the Llama cos/sin
        of rotary_dim = int(head_dim * partial_rotary_factor) coordinates, their first half
        repeat_interleave(2)d, rotate_half over (x[..., 0::2], x[..., 1::2]): interleaved pairs within
        the rotary part, the rest passed through. config.json: model_type "glm4".
  deepseek  transformers' DeepSeek-V3 with rope_interleave (models/deepseek_v3/modeling_deepseek_v3.py
        apply_rotary_pos_emb_interleave): q viewed [d/2, 2], transposed (de-interleaved), then
        q*cos + rotate_half(q)*sin: interleaved pairs in, pair i written to (i, i + d/2). The whole
        qk_rope_head_dim (= --head-dim) rotates. config.json: model_type "deepseek_v3".

--bug NAME injects one known bug into the implementation; config.json always describes the CLAIMED
(correct) convention, never the bug. Run with /usr/bin/python3 (Debian's python3-torch); stdlib,
torch and numpy only. Output is deterministic: the same command gives byte-identical files.
"""

import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_common import (  # noqa: E402  (what every dump script shares)
    DTYPES, add_output_options, check_sizes, hf_cos_sin, hf_default_inv_freq, print_self_check, rotate_half,
    rotate_half_interleaved, rotate_pairs64, run_kernel, write_dump, yarn_correction_range)

BUGS = (
    "none",
    "bf16_positions",
    "wrong_base",
    "layout_swapped",
    "cos_sin_bf16",
    "offset_by_one",
    "partial_over_head_dim",
    "yarn_factor_missing",
    "yarn_factor_doubled",
    "inv_freq_bf16",
    "decode_at_zero",
    "fast_sincos",
    "dynamic_ntk_not_reset",
    "scaling_missing",
    "kv_decode_off_by_one",
    "outputs_in_place",
)
WRONG_BASE = 10000.0  # the base the `wrong_base` implementation uses


# ----------------------------------------------------------------------------------------------
# Positions
# ----------------------------------------------------------------------------------------------
def default_positions(max_pos):
    """0..63 dense, 96 log-spaced from 64 to max_pos-1, the bf16/fp16 edges; sorted, unique."""
    ps = set(range(min(64, max_pos)))
    hi = max_pos - 1
    if hi > 64:
        lo_l, hi_l, n = math.log(64), math.log(hi), 96
        for k in range(n):
            ps.add(int(round(math.exp(lo_l + (hi_l - lo_l) * k / (n - 1)))))
    for p in (255, 256, 257, 258, 2047, 2048, 2049, 65504, 65505):
        if p < max_pos:
            ps.add(p)
    return sorted(ps)


def parse_positions(spec, max_pos):
    """SPEC: 'default', or comma-separated items: N | A..B (dense, inclusive) | A..B/N (N log-spaced)."""
    if spec == "default":
        return default_positions(max_pos)
    ps = set()
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            if ".." in item:
                a, rest = item.split("..", 1)
                if "/" in rest:
                    b, n = rest.split("/", 1)
                    a, b, n = int(a), int(b), int(n)
                    if n < 2 or a < 1 or b < a:
                        raise ValueError("A..B/N needs 1 <= A <= B and N >= 2")
                    for k in range(n):
                        ps.add(int(round(math.exp(math.log(a) + (math.log(b) - math.log(a)) * k / (n - 1)))))
                else:
                    a, b = int(a), int(rest)
                    if b < a:
                        raise ValueError("A..B needs A <= B")
                    if b - a > 1_000_000:
                        raise ValueError("range longer than 10^6 positions")
                    ps.update(range(a, b + 1))
            else:
                ps.add(int(item))
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"--positions: bad item '{item}': {e}")
    if not ps:
        raise argparse.ArgumentTypeError("--positions: no positions")
    if min(ps) < 0 or max(ps) >= 2 ** 53:
        raise argparse.ArgumentTypeError("--positions: positions must lie in [0, 2^53)")
    return sorted(ps)


# ----------------------------------------------------------------------------------------------
# Frequencies (fp32, as the implementations compute them)
# ----------------------------------------------------------------------------------------------
def hf_frequencies(a, base, rd, exponent_dim, seq_len):
    """(inv_freq fp32 [rd/2], attention_factor Python float) per modeling_rope_utils."""
    sc = a.scaling
    if sc == "default":
        return hf_default_inv_freq(base, rd, exponent_dim), 1.0
    if sc == "linear":
        inv = hf_default_inv_freq(base, rd, exponent_dim)
        inv /= a.factor
        return inv, 1.0
    if sc == "dynamic":
        L, f = a.max_position_embeddings, a.factor
        if seq_len is None:
            # init: seq_len = max_position_embeddings, Python double arithmetic
            b = base * ((f * L / L) - (f - 1)) ** (rd / (rd - 2))
        else:
            # run time (@dynamic_rope_update): seq_len = torch.max(position_ids) + 1, a 0-d int64 tensor
            b = base * ((f * seq_len / L) - (f - 1)) ** (rd / (rd - 2))
        return 1.0 / (b ** (torch.arange(0, rd, 2, dtype=torch.int64).float() / exponent_dim)), 1.0
    if sc == "yarn":
        f = a.yarn_factor
        af = 0.1 * math.log(f) + 1.0 if f > 1 else 1.0
        pos_freqs = base ** (torch.arange(0, rd, 2).float() / exponent_dim)
        extrap = 1.0 / pos_freqs
        interp = 1.0 / (f * pos_freqs)
        low, high = yarn_correction_range(32, 1, rd, base, a.yarn_orig)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(rd // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        ext_factor = 1 - ramp.float()
        return interp * (1 - ext_factor) + extrap * ext_factor, af
    if sc == "llama3":
        inv = hf_default_inv_freq(base, rd, exponent_dim)
        f, lo, hi, old = a.factor, a.low_freq_factor, a.high_freq_factor, a.original_max_position_embeddings
        low_wl, high_wl = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / f, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_l / f + smooth * inv_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        return torch.where(medium, smoothed, inv_l), 1.0
    raise AssertionError(sc)


def meta_frequencies(a, base, dim):
    # freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    if a.scaling == "llama3":
        # Meta's apply_scaling (Llama 3.1 model.py), one 0-d fp32 tensor per frequency
        f, lo, hi, old = a.factor, a.low_freq_factor, a.high_freq_factor, a.original_max_position_embeddings
        low_wl, high_wl = old / lo, old / hi
        new = []
        for freq in freqs:
            wavelen = 2 * math.pi / freq
            if wavelen < high_wl:
                new.append(freq)
            elif wavelen > low_wl:
                new.append(freq / f)
            else:
                smooth = (old / wavelen - lo) / (hi - lo)
                new.append((1 - smooth) * freq / f + smooth * freq)
        freqs = torch.tensor(new, dtype=freqs.dtype)
    return freqs


# ----------------------------------------------------------------------------------------------
# A cheap sin/cos (the `fast_sincos` bug): fp32 range reduction to [-pi/4, pi/4], then
# sin r ~ r - r^3/6 and cos r ~ 1 - r^2/2 + r^4/24 (absolute error up to ~2.5e-3 and ~3e-4).
# ----------------------------------------------------------------------------------------------
PIO2_HI = 1.5703125                    # 8 significant bits: k * PIO2_HI is exact for k < 2^16
PIO2_LO = float(np.float32(math.pi / 2 - 1.5703125))


def fast_sincos(angle):
    a = angle.float()
    k = torch.round(a * float(np.float32(2 / math.pi)))
    r = (a - k * PIO2_HI) - k * PIO2_LO
    r2 = r * r
    s = r * (1 - r2 * (1.0 / 6))
    c = 1 - r2 * (0.5 - r2 * (1.0 / 24))
    q = torch.remainder(k.to(torch.int64), 4)
    sin = torch.where(q == 0, s, torch.where(q == 1, c, torch.where(q == 2, -s, -c)))
    cos = torch.where(q == 0, c, torch.where(q == 1, -s, torch.where(q == 2, -c, s)))
    return cos, sin


# ----------------------------------------------------------------------------------------------
# Layout helpers (for `layout_swapped`: run an implementation on the other pairing)
# ----------------------------------------------------------------------------------------------
def interleaved_to_halfsplit(x, rd):
    """Reorder the first rd coordinates so interleaved pairs (2i, 2i+1) become (i, i+rd/2)."""
    rot = x[..., :rd]
    return torch.cat((rot[..., 0::2], rot[..., 1::2], x[..., rd:]), dim=-1)


def halfsplit_to_interleaved(x, rd):
    """Inverse of interleaved_to_halfsplit."""
    h = rd // 2
    rot = torch.stack((x[..., :h], x[..., h:rd]), dim=-1).flatten(-2)
    return torch.cat((rot, x[..., rd:]), dim=-1)


# ----------------------------------------------------------------------------------------------
# The implementations. x: [T, H, D] in the dump dtype; positions: int64 [T].
# Each returns y [T, H, D] (x.dtype), cos, sin (the rows used, as held), inv_freq (fp32 as used).
# ----------------------------------------------------------------------------------------------
def run_hf(a, x, positions):
    bug = a.bug
    D = a.head_dim
    rd = a.rotary_dim
    base = WRONG_BASE if bug == "wrong_base" else a.base
    exponent_dim = D if bug == "partial_over_head_dim" else rd
    seq_len = None
    if a.scaling == "dynamic":
        cur = torch.max(positions) + 1  # @dynamic_rope_update: seq_len = torch.max(position_ids) + 1
        if bug == "dynamic_ntk_not_reset":
            # An earlier sequence of length 4 * max_position_embeddings grew the cache; the reset to
            # the original frequencies for this shorter sequence is skipped.
            seq_len = torch.tensor(4 * a.max_position_embeddings, dtype=torch.int64)
        elif int(cur) > a.max_position_embeddings:
            seq_len = cur
    if bug == "scaling_missing":
        # The config's rope_scaling is ignored: the plain schedule, no attention factor.
        plain = argparse.Namespace(**vars(a))
        plain.scaling = "default"
        inv_freq, af = hf_frequencies(plain, base, rd, exponent_dim, None)
    else:
        inv_freq, af = hf_frequencies(a, base, rd, exponent_dim, seq_len)
    if bug == "yarn_factor_missing":
        af = 1.0
    if bug == "inv_freq_bf16":
        inv_freq = inv_freq.to(torch.bfloat16).float()

    position_ids = positions[None, :]  # [1, T] int64
    if bug == "offset_by_one":
        position_ids = position_ids + 1
    elif bug == "decode_at_zero":
        position_ids = torch.zeros_like(position_ids)
    elif bug == "kv_decode_off_by_one":
        # A KV cache: the prompt (positions < 64) is prefilled right, every decoded key after it is
        # rotated one position ahead (the position counter advanced before the rotation).
        position_ids = torch.where(position_ids >= 64, position_ids + 1, position_ids)

    # LlamaRotaryEmbedding.forward (autocast disabled: everything below is fp32)
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    pos_f = position_ids[:, None, :]
    if bug == "bf16_positions":
        pos_f = pos_f.to(torch.bfloat16)
    pos_f = pos_f.float()
    freqs = (inv_freq_expanded.float() @ pos_f.float()).transpose(1, 2)  # [1, T, rd/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    if bug == "fast_sincos":
        c, s = fast_sincos(emb)
    else:
        c, s = emb.cos(), emb.sin()
    cos = c * af
    sin = s * af
    if bug == "yarn_factor_doubled":
        cos = cos * af
        sin = sin * af
    cache_dtype = x.dtype
    if bug == "cos_sin_bf16":
        cache_dtype = torch.bfloat16
    cos = cos.to(dtype=cache_dtype)
    sin = sin.to(dtype=cache_dtype)
    cos_held, sin_held = cos[0], sin[0]  # [T, rd]
    if bug == "cos_sin_bf16":
        cos, sin = cos.float(), sin.float()

    # apply_rotary_pos_emb on q: [B, H, T, D], cos/sin unsqueezed at dim 1
    q = x.permute(1, 0, 2)[None]  # [1, H, T, D]
    if bug == "layout_swapped":
        q = interleaved_to_halfsplit(q, rd)
    cos_u, sin_u = cos.unsqueeze(1), sin.unsqueeze(1)
    q_rot, q_pass = q[..., :rd], q[..., rd:]

    q_embed = (q_rot * cos_u) + (rotate_half(q_rot) * sin_u)
    out = torch.cat((q_embed, q_pass), dim=-1)
    if bug == "layout_swapped":
        out = halfsplit_to_interleaved(out, rd)
    y = out[0].permute(1, 0, 2).contiguous()
    return y, cos_held.contiguous(), sin_held.contiguous(), inv_freq.float().contiguous()


def llama_cos_sin(a, positions, dtype):
    """LlamaRotaryEmbedding.forward for the default rule: fp32 angles, cat(freqs, freqs), cast to dtype."""
    inv_freq = hf_default_inv_freq(a.base, a.rotary_dim, a.rotary_dim)
    cos, sin = hf_cos_sin(inv_freq, positions, dtype)  # scale 1: cos * 1.0 is exact, the same bits
    return cos, sin, inv_freq.float().contiguous()


def run_glm(a, x, positions):
    rd = a.rotary_dim
    cos, sin, inv_freq = llama_cos_sin(a, positions, x.dtype)
    cos_held, sin_held = cos[0].contiguous(), sin[0].contiguous()
    q = x.permute(1, 0, 2)[None]  # [1, H, T, D]
    cos_u, sin_u = cos.unsqueeze(1), sin.unsqueeze(1)
    # Interleave them instead of the usual shape (GLM-4's apply_rotary_pos_emb)
    cos_u = cos_u[..., : cos_u.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin_u = sin_u[..., : sin_u.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_rot, q_pass = q[..., :rd], q[..., rd:]

    q_embed = (q_rot * cos_u) + (rotate_half_interleaved(q_rot) * sin_u)
    out = torch.cat((q_embed, q_pass), dim=-1)
    return out[0].permute(1, 0, 2).contiguous(), cos_held, sin_held, inv_freq


def run_deepseek(a, x, positions):
    cos, sin, inv_freq = llama_cos_sin(a, positions, x.dtype)
    cos_held, sin_held = cos[0].contiguous(), sin[0].contiguous()
    q = x.permute(1, 0, 2)[None]  # [1, H, T, D]
    cos_u, sin_u = cos.unsqueeze(1), sin.unsqueeze(1)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)

    out = (q * cos_u) + (rotate_half(q) * sin_u)
    if a.bug == "outputs_in_place":
        # A kernel that rotates the interleaved pairs right but writes each back where it was read.
        out = halfsplit_to_interleaved(out, d)
    return out[0].permute(1, 0, 2).contiguous(), cos_held, sin_held, inv_freq


def run_meta(a, x, positions):
    bug = a.bug
    D = a.head_dim
    base = WRONG_BASE if bug == "wrong_base" else a.base
    freqs = meta_frequencies(a, base, D)
    if bug == "inv_freq_bf16":
        freqs = freqs.to(torch.bfloat16).float()
    inv_freq = freqs

    pos = positions
    if bug == "offset_by_one":
        pos = pos + 1
    elif bug == "decode_at_zero":
        pos = torch.zeros_like(pos)
    # Meta: t = torch.arange(end, dtype=torch.float32) sliced at start_pos: the same values as
    # the positions held in float32.
    t = pos.to(torch.bfloat16).to(torch.float32) if bug == "bf16_positions" else pos.to(torch.float32)
    ang = torch.outer(t, freqs).float()  # [T, D/2]
    if bug == "fast_sincos":
        c, s = fast_sincos(ang)
        freqs_cis = torch.complex(c, s)
    else:
        freqs_cis = torch.polar(torch.ones_like(ang), ang)  # complex64
    cos_held, sin_held = freqs_cis.real.contiguous(), freqs_cis.imag.contiguous()
    if bug == "cos_sin_bf16":
        cos_held, sin_held = cos_held.to(torch.bfloat16), sin_held.to(torch.bfloat16)
        freqs_cis = torch.complex(cos_held.float(), sin_held.float())

    # apply_rotary_emb on xq: [B, T, H, D]
    xq = x[None]
    if bug == "layout_swapped":
        xq = halfsplit_to_interleaved(xq, D)  # the half-split pairs (i, i+D/2) land next to each other
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])  # reshape_for_broadcast
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    out = xq_out.type_as(xq)
    if bug == "layout_swapped":
        out = interleaved_to_halfsplit(out, D)
    return out[0].contiguous(), cos_held, sin_held, inv_freq.float().contiguous()


# ----------------------------------------------------------------------------------------------
# The claimed convention in float64 (for --self-check)
# ----------------------------------------------------------------------------------------------
def exact_inv_freq(a, positions):
    rd, base = a.rotary_dim, float(a.base)
    e = torch.arange(0, rd, 2, dtype=torch.float64) / rd
    inv = base ** (-e)
    af = 1.0
    if a.scaling == "linear":
        inv = inv / a.factor
    elif a.scaling == "dynamic":
        seq = int(positions.max()) + 1
        if seq > a.max_position_embeddings:
            f, L = a.factor, a.max_position_embeddings
            b = base * ((f * seq / L) - (f - 1)) ** (rd / (rd - 2))
            inv = b ** (-e)
    elif a.scaling == "yarn":
        f = a.yarn_factor
        af = 0.1 * math.log(f) + 1.0 if f > 1 else 1.0
        low, high = yarn_correction_range(32, 1, rd, base, a.yarn_orig)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(rd // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
        inv = (inv / f) * ramp + inv * (1 - ramp)
    elif a.scaling == "llama3":
        f, lo, hi, old = a.factor, a.low_freq_factor, a.high_freq_factor, a.original_max_position_embeddings
        wl = 2 * math.pi / inv
        smooth = (old / wl - lo) / (hi - lo)
        inv = torch.where(wl < old / hi, inv,
                          torch.where(wl > old / lo, inv / f, (1 - smooth) * inv / f + smooth * inv))
    return inv, af


def exact_rotation(a, x, positions):
    inv, af = exact_inv_freq(a, positions)
    ang = positions.to(torch.float64)[:, None] * inv[None, :]  # [T, rd/2]
    c, s = (torch.cos(ang) * af)[:, None, :], (torch.sin(ang) * af)[:, None, :]
    return rotate_pairs64(x, c, s, a.layout)


def claimed_config(a):
    cfg = {
        "head_dim": a.head_dim,
        "hidden_size": a.head_dim * a.heads,
        "num_attention_heads": a.heads,
        "rope_theta": float(a.base),
        "max_position_embeddings": a.max_position_embeddings,
    }
    if a.rotary_fraction != 1.0:
        cfg["partial_rotary_factor"] = a.rotary_fraction
    if a.scaling == "linear":
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": float(a.factor)}
    elif a.scaling == "dynamic":
        cfg["rope_scaling"] = {"rope_type": "dynamic", "factor": float(a.factor)}
    elif a.scaling == "yarn":
        rs = {"rope_type": "yarn", "factor": float(a.yarn_factor)}
        if a.original_max_position_embeddings is not None:
            rs["original_max_position_embeddings"] = a.original_max_position_embeddings
        cfg["rope_scaling"] = rs
    elif a.scaling == "llama3":
        cfg["rope_scaling"] = {
            "rope_type": "llama3",
            "factor": float(a.factor),
            "low_freq_factor": float(a.low_freq_factor),
            "high_freq_factor": float(a.high_freq_factor),
            "original_max_position_embeddings": a.original_max_position_embeddings,
        }
    if a.impl == "glm":
        # GLM-4's config.json: the layout comes from model_type (ropecheck's architecture facts).
        cfg = {"architectures": ["Glm4ForCausalLM"], "model_type": "glm4", **cfg}
    elif a.impl == "deepseek":
        # DeepSeek-V3's: the rotary head is qk_rope_head_dim; rope_interleave true.
        cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
               "qk_rope_head_dim": cfg.pop("head_dim"), "qk_nope_head_dim": 128, "rope_interleave": True, **cfg}
    elif a.layout == "interleaved":
        # Meta's reference code has no HF model_type: the convention is declared (ropecheck never assumes one).
        cfg["ropecheck_layout"] = "interleaved"
    elif a.rotary_fraction == 1.0:
        # HF's rotate_half over the whole head is Llama's code (transformers models/llama/modeling_llama.py).
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **cfg}
    else:
        # Partial rotate_half on q[..., :rotary_dim] with partial_rotary_factor: Nemotron's code
        # (transformers models/nemotron/modeling_nemotron.py apply_rotary_pos_emb), standard rope types.
        cfg = {"architectures": ["NemotronForCausalLM"], "model_type": "nemotron", **cfg}
    return cfg


def canonical_command(a):
    """The command that reproduces the dump (every option explicit; --out and --self-check left out)."""
    parts = ["tools/dump/torch_rope_dump.py", "--impl", a.impl, "--dtype", a.dtype, "--bug", a.bug,
             "--base", repr(float(a.base)), "--head-dim", str(a.head_dim), "--heads", str(a.heads),
             "--rotary-fraction", repr(a.rotary_fraction), "--scaling", a.scaling]
    if a.factor is not None:
        parts += ["--factor", repr(a.factor)]
    if a.original_max_position_embeddings is not None:
        parts += ["--original-max-position-embeddings", str(a.original_max_position_embeddings)]
    if a.scaling == "llama3":
        parts += ["--low-freq-factor", repr(a.low_freq_factor), "--high-freq-factor", repr(a.high_freq_factor)]
    parts += ["--max-position-embeddings", str(a.max_position_embeddings), "--positions", a.positions,
              "--seed", str(a.seed), "--format", a.format]
    if a.layer is not None:
        parts += ["--layer", str(a.layer)]
    return " ".join(parts)


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def build_parser():
    p = argparse.ArgumentParser(
        prog="torch_rope_dump.py",
        description="Dump a real torch RoPE implementation (HF Llama, Meta llama, HF GLM-4, HF DeepSeek-V3) in "
                    "ropecheck audit's format.")
    p.add_argument("--impl", choices=("hf", "meta", "glm", "deepseek"), required=True)
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32", help="x/y dtype (the audited dtype)")
    p.add_argument("--bug", choices=BUGS, default="none", help="inject one known bug (config.json still claims the correct convention)")
    p.add_argument("--base", type=float, default=500000.0, help="rope_theta (default 500000)")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--rotary-fraction", type=float, default=1.0, help="HF partial_rotary_factor")
    p.add_argument("--scaling", choices=("default", "linear", "dynamic", "yarn", "llama3"), default="default")
    p.add_argument("--factor", type=float, default=None)
    p.add_argument("--original-max-position-embeddings", type=int, default=None)
    p.add_argument("--low-freq-factor", type=float, default=1.0, help="llama3 (default 1)")
    p.add_argument("--high-freq-factor", type=float, default=4.0, help="llama3 (default 4)")
    p.add_argument("--max-position-embeddings", type=int, default=131072)
    p.add_argument("--positions", default="default",
                   help="'default' (0..63, 96 log-spaced to max_position_embeddings-1, 255..258, 2047..2049, "
                        "65504, 65505) or comma-separated N | A..B | A..B/N (N log-spaced)")
    add_output_options(p, no_cache=False, before_out=lambda p: p.add_argument(
        "--layer", type=int, default=None,
        help="record __metadata__ \"layer\" (the decoder layer the dump stands for; the audit reads "
             "that layer's convention from a per-layer config.json)"))
    return p


def validate(p, a):
    err = p.error
    if a.head_dim < 2 or a.head_dim % 2:
        err("--head-dim must be even and >= 2")
    check_sizes(err, a)
    if not (0 < a.rotary_fraction <= 1):
        err("--rotary-fraction must be in (0, 1]")
    a.rotary_dim = int(a.head_dim * a.rotary_fraction)  # HF's truncation
    if a.rotary_dim < 2 or a.rotary_dim % 2:
        err(f"--rotary-fraction {a.rotary_fraction} gives rotary_dim int({a.head_dim} * {a.rotary_fraction}) = "
            f"{a.rotary_dim}; it must be even and >= 2")
    if a.impl == "meta":
        if a.rotary_fraction != 1.0:
            err("--impl meta rotates the whole head (Meta's llama has no partial rotary): --rotary-fraction must be 1")
        if a.scaling not in ("default", "llama3"):
            err(f"--impl meta supports --scaling default or llama3 (Meta's apply_scaling), not {a.scaling}")
    if a.impl in ("glm", "deepseek"):
        if a.scaling != "default":
            err(f"--impl {a.impl} supports --scaling default only")
        if a.bug not in ("none", "outputs_in_place"):
            err(f"--impl {a.impl} supports --bug none{' or outputs_in_place' if a.impl == 'deepseek' else ''}")
        if a.impl == "deepseek" and a.rotary_fraction != 1.0:
            err("--impl deepseek rotates the whole qk_rope_head_dim (= --head-dim): --rotary-fraction must be 1")
    if a.bug == "outputs_in_place" and a.impl != "deepseek":
        err("--bug outputs_in_place needs --impl deepseek")
    # scaling parameters
    if a.factor is not None and not (a.factor > 0 and math.isfinite(a.factor)):
        err("--factor must be a finite number > 0")
    if a.scaling in ("linear", "dynamic", "llama3") and a.factor is None:
        err(f"--scaling {a.scaling} needs --factor")
    if a.scaling == "dynamic" and a.factor < 1:
        err("--scaling dynamic needs --factor >= 1")
    if a.scaling == "llama3":
        if a.original_max_position_embeddings is None:
            err("--scaling llama3 needs --original-max-position-embeddings (the pre-training length)")
        if not (0 < a.low_freq_factor < a.high_freq_factor):
            err("--scaling llama3 needs 0 < --low-freq-factor < --high-freq-factor")
    a.yarn_factor, a.yarn_orig = None, None
    if a.scaling == "yarn":
        o = a.original_max_position_embeddings
        if a.factor is None and o is None:
            err("--scaling yarn needs --factor and/or --original-max-position-embeddings")
        if o is not None:
            implicit = a.max_position_embeddings / o
            if a.factor is not None and a.factor != implicit:
                err(f"--scaling yarn: --factor {a.factor} differs from max_position_embeddings / "
                    f"original_max_position_embeddings = {implicit}; transformers 4.4x-4.5x and v5 would read "
                    "that config differently, so give consistent values")
            a.yarn_factor = implicit if a.factor is None else a.factor
            a.yarn_orig = o
        else:
            a.yarn_factor = a.factor
            a.yarn_orig = a.max_position_embeddings
        if a.yarn_factor < 1:
            err("--scaling yarn needs a factor >= 1")
    if a.original_max_position_embeddings is not None:
        if a.scaling not in ("yarn", "llama3"):
            err("--original-max-position-embeddings is only read by --scaling yarn or llama3")
        if a.original_max_position_embeddings < 1:
            err("--original-max-position-embeddings must be >= 1")
    if a.factor is not None and a.scaling == "default":
        err("--factor needs a --scaling rule (linear, dynamic, yarn, llama3)")
    # bugs
    b = a.bug
    if b == "wrong_base" and a.base == WRONG_BASE:
        err(f"--bug wrong_base uses base {WRONG_BASE:g}; claim another --base")
    if b == "cos_sin_bf16" and a.dtype != "float32":
        err("--bug cos_sin_bf16 is an fp32 model whose cos/sin cache is bf16: use --dtype float32")
    if b == "partial_over_head_dim":
        if a.impl != "hf":
            err("--bug partial_over_head_dim needs --impl hf (Meta's llama has no partial rotary)")
        if a.rotary_fraction >= 1:
            err("--bug partial_over_head_dim needs --rotary-fraction < 1")
    if b in ("yarn_factor_missing", "yarn_factor_doubled"):
        if a.impl != "hf" or a.scaling != "yarn":
            err(f"--bug {b} needs --impl hf --scaling yarn")
    if b == "kv_decode_off_by_one" and a.impl != "hf":
        err("--bug kv_decode_off_by_one needs --impl hf")
    if b == "scaling_missing" and (a.impl != "hf" or a.scaling in ("default", "dynamic")):
        err("--bug scaling_missing needs --impl hf and --scaling linear, yarn or llama3")
    if b == "dynamic_ntk_not_reset" and (a.impl != "hf" or a.scaling != "dynamic"):
        err("--bug dynamic_ntk_not_reset needs --impl hf --scaling dynamic")
    if a.scaling == "dynamic" and a.impl != "hf":
        err("--scaling dynamic is HF's dynamic NTK: use --impl hf")
    # positions
    try:
        a.position_list = parse_positions(a.positions, a.max_position_embeddings)
    except argparse.ArgumentTypeError as e:
        err(str(e))
    if b == "dynamic_ntk_not_reset" and a.position_list[-1] + 1 > a.max_position_embeddings:
        err("--bug dynamic_ntk_not_reset needs a short dump: every position < --max-position-embeddings")
    if b in ("offset_by_one",) and a.position_list[-1] + 1 >= 2 ** 53:
        err("--bug offset_by_one: positions must stay below 2^53 - 1")
    a.layout = "interleaved" if a.impl in ("meta", "glm", "deepseek") else "half_split"


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)

    positions = torch.tensor(a.position_list, dtype=torch.int64)
    run = {"hf": run_hf, "meta": run_meta, "glm": run_glm, "deepseek": run_deepseek}[a.impl]
    x, (y, cos, sin, inv_freq) = run_kernel(a, run, positions)

    tensors = [("positions", positions), ("inv_freq", inv_freq), ("x", x), ("y", y), ("cos", cos), ("sin", sin)]
    write_dump(a, "impl", tensors, claimed_config(a), canonical_command(a),
               metadata=None if a.layer is None else {"layer": str(a.layer)})

    if a.self_check:
        y_exact = exact_rotation(a, x, positions)
        if a.impl == "deepseek":
            y_exact = interleaved_to_halfsplit(y_exact, a.rotary_dim)  # rope_interleave's output order
        inv64, _ = exact_inv_freq(a, positions)
        # What fp32 angle formation alone may cost: one rounding of p*theta (2^-24 |p theta|, rad).
        angle_u = float((positions.to(torch.float64).max() * inv64.max()) * 2.0 ** -24)
        print_self_check(y, y_exact, x, positions, a.dtype, a.bug,
                         f"; one fp32 rounding of the largest angle = {angle_u:.3g} rad")
    return 0


if __name__ == "__main__":
    sys.exit(main())
