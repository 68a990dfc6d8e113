"""A toy RoPE in transformers' style, for the tests of the Python door (tests/python/).

Written from what transformers does (read, not copied):
- src/transformers/modeling_rope_utils.py: `_compute_default_rope_parameters` (inv_freq = 1 / base **
  (arange(0, dim, 2).float() / dim), dim = head_dim * partial_rotary_factor, attention factor 1) and
  `_compute_yarn_parameters` (pos_freqs = base ** (arange(0, dim, 2) / dim); extrapolation 1 / pos_freqs,
  interpolation 1 / (factor * pos_freqs); `find_correction_range(beta_fast, beta_slow, dim, base,
  original_max_position_embeddings)` with math.log, floored/ceiled and clamped to [0, dim - 1];
  `linear_ramp_factor` (max += 0.001 when min == max, clamp(0, 1)); inv_freq blends the two by
  1 - ramp; attention_factor = get_mscale(factor) = 0.1 ln(factor) + 1 unless the config gives one).
- src/transformers/models/llama/modeling_llama.py: `LlamaRotaryEmbedding` (inv_freq a non-persistent fp32
  buffer, `forward(x, position_ids)`: inv_freq[None, :, None] @ position_ids[:, None, :].float() with autocast
  disabled ("force float32"), emb = cat(freqs, freqs), cos/sin times attention_scaling, cast to x.dtype),
  `rotate_half` and `apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1)`.
- src/transformers/modeling_rope_utils.py: `_compute_longrope_parameters` (ext_factors = long_factor when the
  call's seq_len > original_max_position_embeddings, else short_factor; inv_freq = 1 / (ext_factors *
  base ** (arange(0, dim, 2) / dim)); attention factor sqrt(1 + ln(factor) / ln(original)) with factor =
  max_position_embeddings / original unless the config gives one), `_compute_dynamic_ntk_parameters`
  (base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2)), seq_len at
  least max_position_embeddings) and `dynamic_rope_update` (seq_len = torch.max(position_ids) + 1 of each
  forward call; the frequencies recomputed for it). This toy recomputes them every call (stateless): the same
  frequencies as transformers' cached update on calls in ascending length, as the probe's plan makes them.

Bug switches (constructor keywords of RotaryEmbedding; each False/None is the correct code):
  base=B               inv_freq from rope_theta B instead of the config's (the claim keeps the config's)
  bf16_positions       position_ids rounded to bfloat16 before the product (what autocast did to the matmul
                       before transformers pull request 29285 forced it to fp32)
  cos_sin_bf16         cos/sin returned in bfloat16 whatever x's dtype (an fp32 model gets bf16 tables)
  decode_one_ahead     a call of one token (a decode step) rotates at position + 1: a cache_position
                       off-by-one of a hand-written decode loop; calls of two tokens or more are right
  yarn_factor_missing  YaRN's inv_freq right but cos/sin not multiplied by the attention factor (mscale)
  longrope_always_long LongRoPE's long factors whatever the call's length (the factors chosen once, for the
                       model's longest context)
  dynamic_never        dynamic NTK's base left at rope_theta whatever the call's length
  dynamic_no_reset     dynamic NTK's base grown by the longest call so far and kept (transformers'
                       _dynamic_frequency_update without its reset branch: `if seq_len < original_max_seq_len and
                       max_seq_len_cached > original_max_seq_len` restores the original inv_freq)
"""

import json
import math
import os

import torch
from torch import nn


def _load_config(config):
    """A config.json path or a dict -> dict. Assumes the HF Llama fields (head_dim or hidden_size and
    num_attention_heads, rope_theta, optional partial_rotary_factor and rope_scaling)."""
    if isinstance(config, (str, os.PathLike)):
        with open(config) as f:
            return json.load(f)
    return dict(config)


def _head_dim(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def compute_default_parameters(config, base=None):
    """inv_freq (fp32, [dim/2]) and attention factor 1.0 of the default rope type (base overrides rope_theta)."""
    base = config.get("rope_theta", 10000.0) if base is None else base
    dim = int(_head_dim(config) * config.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return inv_freq, 1.0


def compute_yarn_parameters(config, base=None):
    """inv_freq (fp32) and attention factor of rope_type "yarn". Assumes config["rope_scaling"] holds "factor" and
    "original_max_position_embeddings" (else the ratio max_position_embeddings / original is the factor)."""
    rs = config["rope_scaling"]
    base = config.get("rope_theta", 10000.0) if base is None else base
    dim = int(_head_dim(config) * config.get("partial_rotary_factor", 1.0))
    original = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
    factor = rs.get("factor") or config["max_position_embeddings"] / original
    attention_factor = rs.get("attention_factor")
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001  # as transformers: no division by zero
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    keep = 1 - ramp  # "inv_freq_extrapolation_factor"
    return interpolation * (1 - keep) + extrapolation * keep, attention_factor


def compute_longrope_parameters(config, seq_len, base=None):
    """inv_freq (fp32) and attention factor of rope_type "longrope" for a call of sequence length seq_len."""
    rs = config["rope_scaling"]
    base = config.get("rope_theta", 10000.0) if base is None else base
    dim = int(_head_dim(config) * config.get("partial_rotary_factor", 1.0))
    original = config.get("original_max_position_embeddings") or config["max_position_embeddings"]
    factor = config["max_position_embeddings"] / original if config.get("original_max_position_embeddings") \
        else rs.get("factor", 1.0)
    attention_factor = rs.get("attention_factor")
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    ext = torch.tensor(rs["long_factor"] if seq_len > original else rs["short_factor"], dtype=torch.float32)
    inv_freq = 1.0 / (ext * base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return inv_freq, attention_factor


def compute_dynamic_ntk_parameters(config, seq_len, base=None):
    """inv_freq (fp32) and attention factor 1 of rope_type "dynamic" for a call of sequence length seq_len."""
    base = config.get("rope_theta", 10000.0) if base is None else base
    dim = int(_head_dim(config) * config.get("partial_rotary_factor", 1.0))
    factor, limit = config["rope_scaling"]["factor"], config["max_position_embeddings"]
    seq_len = max(seq_len, limit)
    base = base * ((factor * seq_len / limit) - (factor - 1)) ** (dim / (dim - 2))
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0


class RotaryEmbedding(nn.Module):
    """LlamaRotaryEmbedding's shape: RotaryEmbedding(config)(x, position_ids) -> (cos, sin), each
    [batch, seq, head_dim] in x.dtype. config: a dict or a config.json path; rope_type "default", "yarn",
    "longrope" or "dynamic" (the last two recomputed for each call's length).
    The keywords are the bug switches of the module docstring (all off: transformers' behaviour)."""

    def __init__(self, config, device=None, *, base=None, bf16_positions=False, cos_sin_bf16=False,
                 decode_one_ahead=False, yarn_factor_missing=False, longrope_always_long=False, dynamic_never=False,
                 dynamic_no_reset=False):
        super().__init__()
        self.config = _load_config(config)
        rs = self.config.get("rope_scaling") or {}
        self.rope_type = rs.get("rope_type", rs.get("type", "default"))
        self.base, self.longrope_always_long, self.dynamic_never = base, longrope_always_long, dynamic_never
        self.dynamic_no_reset, self.longest_seen = dynamic_no_reset, 0
        if self.rope_type == "yarn":
            inv_freq, self.attention_scaling = compute_yarn_parameters(self.config, base)
        elif self.rope_type == "default":
            inv_freq, self.attention_scaling = compute_default_parameters(self.config, base)
        elif self.rope_type in ("longrope", "dynamic"):
            inv_freq, self.attention_scaling = self._per_call(self.config.get("max_position_embeddings"))
        else:
            raise ValueError(f"hf_style toy: rope_type {self.rope_type!r} is not implemented "
                             "(default, yarn, longrope, dynamic)")
        if yarn_factor_missing:
            self.attention_scaling = 1.0
        self.register_buffer("inv_freq", inv_freq.to(device), persistent=False)
        self.bf16_positions, self.cos_sin_bf16, self.decode_one_ahead = bf16_positions, cos_sin_bf16, decode_one_ahead

    def _per_call(self, seq_len):
        """LongRoPE's or dynamic NTK's (inv_freq, attention factor) for a call of length seq_len."""
        if self.rope_type == "longrope":
            longest = self.config["max_position_embeddings"] + 1
            return compute_longrope_parameters(self.config, longest if self.longrope_always_long else seq_len,
                                               self.base)
        if self.dynamic_never:
            return compute_default_parameters(self.config, self.base)
        if self.dynamic_no_reset:  # the state: the longest length seen so far, never forgotten
            self.longest_seen = max(self.longest_seen, seq_len or 0)
            seq_len = self.longest_seen
        return compute_dynamic_ntk_parameters(self.config, seq_len, self.base)

    @torch.no_grad()
    def forward(self, x, position_ids):
        """x: any tensor of the model dtype and device; position_ids: int64 [batch, seq]."""
        if self.decode_one_ahead and position_ids.shape[-1] == 1:
            position_ids = position_ids + 1
        if self.rope_type in ("longrope", "dynamic"):  # dynamic_rope_update: the call's length
            inv_freq, self.attention_scaling = self._per_call(int(torch.max(position_ids)) + 1)
            self.inv_freq = inv_freq.to(self.inv_freq.device)
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        if self.bf16_positions:
            position_ids_expanded = position_ids_expanded.to(torch.bfloat16).float()
        device_type = x.device.type if isinstance(x.device.type, str) and x.device.type != "mps" else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):  # the angles in fp32
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        dtype = torch.bfloat16 if self.cos_sin_bf16 else x.dtype
        return cos.to(dtype=dtype), sin.to(dtype=dtype)


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the last dimension's halves."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """q, k: [batch, heads, seq, head_dim] (unsqueeze_dim=1) or [batch, seq, heads, head_dim] (2); cos, sin:
    [batch, seq, head_dim]. position_ids is unused (kept for transformers' signature). Returns (q_embed, k_embed)."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed
