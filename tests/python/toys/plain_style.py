"""The simplest RoPE a user writes: rope(x, positions) -> y, for the tests of the Python door (tests/python/).

x [tokens, heads, head_dim], positions int64 [tokens]; the angles p * inv_freq and their cos/sin in fp32, the
rotation in fp32, the result cast back to x.dtype. Two ways of writing it:
- style="half_split": the halves (x1, x2) = (x[..., :d/2], x[..., d/2:]) rotated directly (GPT-NeoX / HF layout);
- style="complex": Meta's llama/model.py (meta-llama/llama: `precompute_freqs_cis` builds
  torch.polar(ones, outer(t, freqs)), `apply_rotary_emb` views x.float() as complex pairs (x[2i], x[2i+1]) with
  view_as_complex, multiplies and flattens view_as_real back, type_as(x)): the interleaved layout. Here the
  angles are formed at the given positions instead of sliced from a table of 0 .. end - 1 (read, not copied).

Bug switches (keywords; all off is correct for the claim base and layout):
  base=B            the frequencies of rope_theta B (a caller that passes 10000 while the model says 500000)
  bf16_positions    positions rounded to bfloat16 before the product
  layout_swapped    the other style's pairs: interleaved when half_split is written, halves when complex
  decode_one_ahead  a call of one token (a decode step) rotates at position + 1 (a KV-cache off-by-one)
`rope_` is the same kernel rotating x in place (returns None), for ropecheck.adapters.inplace.
"""

import torch


def _angles(positions, head_dim, base, bf16_positions, decode_one_ahead):
    p = positions
    if decode_one_ahead and p.shape[-1] == 1:
        p = p + 1
    p = p.float()
    if bf16_positions:
        p = p.to(torch.bfloat16).float()
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim))
    return torch.outer(p, inv_freq)  # [tokens, head_dim / 2], fp32


def rope(x, positions, *, base=500000.0, style="half_split", bf16_positions=False, layout_swapped=False,
         decode_one_ahead=False):
    """x: [tokens, heads, head_dim] (head_dim even); positions: int64 [tokens]. Returns a new tensor of x's dtype."""
    if style not in ("half_split", "complex"):
        raise ValueError(f"plain_style.rope: style {style!r} is half_split or complex")
    freqs = _angles(positions, x.shape[-1], base, bf16_positions, decode_one_ahead)
    complex_pairs = (style == "complex") != layout_swapped
    if complex_pairs:
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)[:, None, :]  # [tokens, 1, d/2] complex64
        x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)
    cos, sin = freqs.cos()[:, None, :], freqs.sin()[:, None, :]
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h].float(), x[..., h:].float()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


def rope_(x, positions, **switches):
    """rope(x, positions, **switches) written into x (in place); returns None."""
    x.copy_(rope(x, positions, **switches))


def make(name="rope", inplace=False, **switches):
    """A plain kernel fn(x, positions) with the given switches, named `name` (the verdict shows the name)."""
    kernel = rope_ if inplace else rope

    def fn(x, positions):
        return kernel(x, positions, **switches)

    fn.__name__ = fn.__qualname__ = name
    return fn
