"""A toy RoPE in flash-attn's style, for the tests of the Python door (tests/python/).

Written from what flash-attn does (read, not copied): flash_attn/layers/rotary.py
- `rotate_half(x, interleaved)` and `apply_rotary_emb_torch(x, cos, sin, interleaved)` (the reference the Triton
  kernel is tested against): x (batch, seqlen, nheads, headdim), cos/sin (seqlen, rotary_dim / 2) repeated to
  rotary_dim over the halves ("... d -> ... 1 (2 d)") or over the pairs ("... d -> ... 1 (d 2)", interleaved),
  x[..., :ro_dim] * cos + rotate_half(x[..., :ro_dim]) * sin, the rest of the head passed through;
- `apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0, ...)`: the Triton kernel
  reads rows seqlen_offsets .. seqlen_offsets + seqlen - 1 of the caller's cos/sin (seqlen_rotary, rotary_dim/2);
  inplace=True writes into x and returns it;
- `RotaryEmbedding._update_cos_sin_cache`: t = arange(seqlen) in fp32 ("bf16 would lose a lot of precision"),
  inv_freq recomputed in fp32 if the buffer was downcast, freqs = outer(t, inv_freq), cos/sin cast to the
  model dtype. `cos_sin_cache` below builds that table for a caller.
einops is not a dependency here: repeat(...) is written with torch.cat / repeat_interleave.

Bug switches (keywords of cos_sin_cache; the layout bug is the caller passing interleaved= of the other
convention to apply_rotary_emb):
  bf16_positions   t rounded to bfloat16 before the outer product (the precision loss the comment warns of)
  cos_sin_bf16     the table built in bfloat16 and cast to the model dtype afterwards (apply_rotary asserts
                   x.dtype == cos.dtype, so a caller holding a bf16 table under an fp32 model casts it: the
                   rounding stays)
"""

import torch


def rotate_half(x, interleaved=False):
    """Halves (x1, x2) -> (-x2, x1), or pairs (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]) when interleaved."""
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_emb_torch(x, cos, sin, interleaved=False):
    """x: (batch, seqlen, nheads, headdim); cos, sin: (seqlen, rotary_dim / 2) or (batch, seqlen, rotary_dim / 2),
    rotary_dim <= headdim. Returns the rotated x (a new tensor)."""
    ro_dim = cos.shape[-1] * 2
    assert ro_dim <= x.shape[-1], f"rotary_dim {ro_dim} > headdim {x.shape[-1]}"
    if interleaved:
        cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    else:
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)  # over the heads
    x_rot = x[..., :ro_dim]
    return torch.cat([x_rot * cos + rotate_half(x_rot, interleaved) * sin, x[..., ro_dim:]], dim=-1)


def apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0):
    """flash-attn's entry: x (batch, seqlen, nheads, headdim); cos/sin (seqlen_rotary, rotary_dim / 2), read from
    row seqlen_offsets (an int, or a (batch,) tensor) on; seqlen_offsets + seqlen <= seqlen_rotary. Like the Triton
    kernel (flash_attn/ops/triton/rotary.py rotary_kernel: every load .to(tl.float32)), the rotation runs in fp32
    and the result is stored in x.dtype; as its wrapper `apply_rotary`, cos/sin must have x's dtype."""
    assert cos.dtype == sin.dtype == x.dtype, f"x and cos/sin must have the same dtype, got {x.dtype}, {cos.dtype}"
    batch, seqlen = x.shape[0], x.shape[1]
    if isinstance(seqlen_offsets, torch.Tensor):
        rows = seqlen_offsets.view(-1, 1) + torch.arange(seqlen, device=x.device)  # (batch, seqlen)
        c, s = cos[rows], sin[rows]
    else:
        assert seqlen_offsets + seqlen <= cos.shape[0], "the cos/sin cache is shorter than the positions"
        c, s = cos[seqlen_offsets:seqlen_offsets + seqlen], sin[seqlen_offsets:seqlen_offsets + seqlen]
        c, s = c.expand(batch, -1, -1), s.expand(batch, -1, -1)
    out = apply_rotary_emb_torch(x.float(), c.float(), s.float(), interleaved).to(x.dtype)
    if inplace:
        x.copy_(out)
        return x
    return out


def cos_sin_cache(dim, seqlen, base=10000.0, device=None, dtype=torch.float32, *, bf16_positions=False,
                  cos_sin_bf16=False):
    """The caller's (cos, sin) table as RotaryEmbedding._update_cos_sin_cache builds it: (seqlen, dim / 2) each,
    of positions 0 .. seqlen - 1, in `dtype` (the model's). The keywords are the bug switches."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    t = torch.arange(seqlen, device=device, dtype=torch.float32)
    if bf16_positions:
        t = t.to(torch.bfloat16).float()
    freqs = torch.outer(t, inv_freq)
    cos, sin = torch.cos(freqs), torch.sin(freqs)
    if cos_sin_bf16:
        cos, sin = cos.to(torch.bfloat16), sin.to(torch.bfloat16)
    return cos.to(dtype), sin.to(dtype)
