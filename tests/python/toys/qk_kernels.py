"""Toy qk RoPE kernels, fn(q, k, positions) -> (q_out, k_out), for the qk form's tests (tests/python/test_qk.py,
test_drive_qk.py): q [tokens, HQ, D] and k [tokens, HK, D] with HK dividing HQ (grouped-query attention),
positions int64 [tokens]. Written from what the engines do (read, not copied):

- hf_qk: transformers' src/transformers/models/llama/modeling_llama.py (at 5dd4a635): LlamaRotaryEmbedding.forward
  forms inv_freq @ position_ids in fp32 (autocast off), emb = cat(freqs, freqs), cos/sin cast to x.dtype;
  apply_rotary_pos_emb(q, k, cos, sin) is q * cos + rotate_half(q) * sin (rotate_half: cat(-x2, x1)) and the same
  for k, in the model dtype, the head counts of q and k each their own (cos/sin broadcast over heads).
- meta_qk: Meta's llama/model.py (meta-llama/llama, 0504cf44): precompute_freqs_cis is torch.polar(ones,
  outer(t, freqs)) in complex64; apply_rotary_emb(xq, xk, freqs_cis) views xq.float() [bsz, seqlen, heads, dim]
  as complex pairs (x[2i], x[2i+1]) with view_as_complex, multiplies by freqs_cis broadcast over batch and heads
  (reshape_for_broadcast), and returns view_as_real(...).flatten(3).type_as(xq): the interleaved layout. Here the
  angles are formed at the given positions instead of sliced from a table of 0 .. 2 * max_seq_len - 1.

Bug switches of hf_qk (keywords; all off is correct for the claim's base and layout, half-split):
  base=B              q and k both rotated with rope_theta B (a caller passing 10000 where the model says 500000)
  crossed_halves      hpcaitech/ColossalAI issue 6428 (colossalai/kernel/triton/fused_rotary_embedding.py,
                      fused_rotary_emb): `out_q1 = k_0 * sin + k_1 * cos` and `out_k0 = q_0 * cos - q_1 * sin`:
                      q_out's second half computed from k's input (here the key head query head h reads,
                      h // (HQ // HK)), k_out's first half from q's (query head g for key head g, the one index the
                      Triton kernel uses for both); the other halves right
  k_base=B            k rotated with rope_theta B, q with the claim's
  k_layout_swapped    k rotated in GPT-J pairs (2i, 2i+1), q in halves
  k_offset=N          k rotated at positions + N, q at the positions
  k_decode_at_zero    in a call of one token (a decode step) k rotated at position 0, q at its position
"""

import torch

BASE = 500000.0  # the claim the tests make (Llama 3's rope_theta)


def inv_freq(dim, base, device=None):
    """1 / base ** (arange(0, dim, 2) / dim) in fp32, [dim / 2] (transformers' _compute_default_rope_parameters)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim))


def angles(positions, dim, base):
    """The fp32 angles positions * inv_freq, [tokens, dim / 2] (inv_freq @ position_ids, autocast off)."""
    return positions.float()[:, None] * inv_freq(dim, base, positions.device)[None, :]


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the last dimension's halves (transformers' rotate_half)."""
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotate_every_two(x):
    """Pairs (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]): rotate_half of the interleaved (GPT-J) layout."""
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def _cos_sin(positions, dim, base, dtype, interleaved=False):
    """cos, sin [tokens, 1, dim] in dtype: each band's angle over its two coordinates (cat(freqs, freqs) for
    halves, repeat_interleave for pairs), to broadcast over heads."""
    f = angles(positions, dim, base)
    emb = torch.repeat_interleave(f, 2, dim=-1) if interleaved else torch.cat((f, f), dim=-1)
    return emb.cos().to(dtype)[:, None, :], emb.sin().to(dtype)[:, None, :]


def _rope(x, positions, base, interleaved=False):
    cos, sin = _cos_sin(positions, x.shape[-1], base, x.dtype, interleaved)
    return x * cos + (rotate_every_two(x) if interleaved else rotate_half(x)) * sin


def hf_qk(q, k, positions, *, base=BASE, crossed_halves=False, k_base=None, k_layout_swapped=False, k_offset=0,
          k_decode_at_zero=False):
    """transformers' apply_rotary_pos_emb over q [T, HQ, D] and k [T, HK, D] with cos/sin of `base`; the
    keywords are the bug switches of the module docstring. Returns new (q_out, k_out) in the inputs' dtype."""
    q_out = _rope(q, positions, base)
    k_pos = positions + k_offset
    if k_decode_at_zero and positions.shape[-1] == 1:
        k_pos = torch.zeros_like(positions)
    k_out = _rope(k, k_pos, base if k_base is None else k_base, interleaved=k_layout_swapped)
    if crossed_halves:
        h = q.shape[-1] // 2
        n_rep = q.shape[1] // k.shape[1]
        k_read = torch.repeat_interleave(k, n_rep, dim=1)  # [T, HQ, D]: the key head of each query head
        q_read = q[:, : k.shape[1]]  # [T, HK, D]: query head g for key head g
        q_out = torch.cat((q_out[..., :h], _rope(k_read, positions, base)[..., h:]), dim=-1)
        k_out = torch.cat((_rope(q_read, positions, base)[..., :h], k_out[..., h:]), dim=-1)
    return q_out, k_out


def make_hf_qk(name="hf_qk", **bugs):
    """hf_qk with the given bug switches, named `name` (the verdict shows the name)."""

    def fn(q, k, positions):
        return hf_qk(q, k, positions, **bugs)

    fn.__name__ = fn.__qualname__ = name
    return fn


def hf_qk_(q, k, positions, **bugs):
    """hf_qk written into q and k (in place, as a fused kernel writing over its inputs); returns None."""
    q_out, k_out = hf_qk(q, k, positions, **bugs)
    q.copy_(q_out)
    k.copy_(k_out)


def _freqs_cis(positions, dim, base):
    """Meta's precompute_freqs_cis at the given positions: torch.polar(1, angle), complex64 [tokens, dim / 2]."""
    f = angles(positions, dim, base)
    return torch.polar(torch.ones_like(f), f)


def _broadcast(freqs_cis, x):
    """Meta's reshape_for_broadcast: freqs_cis [seqlen, dim / 2] viewed to broadcast over x's batch and heads
    (x [bsz, seqlen, heads, dim / 2] complex)."""
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    return freqs_cis.view(*[d if i in (1, x.ndim - 1) else 1 for i, d in enumerate(x.shape)])


def apply_rotary_emb(xq, xk, freqs_cis):
    """Meta's apply_rotary_emb: xq [bsz, seqlen, HQ, D], xk [bsz, seqlen, HK, D] as complex pairs times freqs_cis,
    back to real, type_as the inputs."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = _broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def meta_qk(q, k, positions, *, base=BASE):
    """Meta's form as a qk kernel: q, k as [1, T, H, D] (batch 1), freqs_cis at the positions."""
    xq_out, xk_out = apply_rotary_emb(q.unsqueeze(0), k.unsqueeze(0), _freqs_cis(positions, q.shape[-1], base))
    return xq_out[0], xk_out[0]
