"""A toy RoPE in vLLM's style, for the tests of the Python door (tests/python/).

Written from what vLLM does (read, not copied): vllm/model_executor/layers/rotary_embedding/base.py
`RotaryEmbedding(head_size, rotary_dim, max_position_embeddings, base, is_neox_style, dtype)`:
`_compute_inv_freq` (1 / base ** (arange(0, rotary_dim, 2, float) / rotary_dim)), `_compute_cos_sin_cache`
(t = arange(max_position_embeddings) in fp32, einsum("i,j -> ij", t, inv_freq), cat(cos, sin): a
[max_position, rotary_dim] table) cast to the model dtype `dtype` and registered as the buffer `cos_sin_cache`;
`forward_native(positions, query, key=None, offsets=None)`: positions flattened, the table rows gathered with
index_select and chunked into cos, sin; query/key [num_tokens, heads * head_size] viewed [num_tokens, -1,
head_size], the first rotary_dim coordinates rotated, the rest passed through, returned as (query, key) of the
input shape; and common.py `apply_rotary_emb_torch` (cos/sin unsqueezed over heads and cast to x.dtype;
is_neox_style: halves (x1, x2) = chunk(x, 2), else GPT-J pairs x[..., ::2], x[..., 1::2] re-interleaved by
stack + flatten). forward_cuda's custom op rotates query and key in place instead (inplace=True here).

Bug switches (constructor keywords; all False is vLLM's behaviour):
  cos_sin_bf16      the cos/sin cache stored in bfloat16 whatever the model dtype (an fp32 model's table rounded)
  layout_swapped    rotates GPT-J pairs when is_neox_style says halves, or halves when it says pairs
  decode_one_ahead  a one-token call (a decode step) gathers the row of position + 1: the KV-cache off-by-one of
                    a decode step whose position is taken from the sequence length that already counts it
"""

import torch
from torch import nn


def apply_rotary_emb_torch(x, cos, sin, is_neox_style):
    """x: [num_tokens, heads, rotary_dim]; cos, sin: [num_tokens, rotary_dim / 2]. Returns the rotated x."""
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


class RotaryEmbedding(nn.Module):
    """vLLM's RotaryEmbedding: forward(positions, query, key) -> (query, key) over flattened
    [num_tokens, heads * head_size] tensors. Assumes positions < max_position_embeddings (the table's rows).
    inplace=True writes into query/key (as forward_cuda's op does) and returns them."""

    def __init__(self, head_size, rotary_dim, max_position_embeddings, base, is_neox_style, dtype, *,
                 inplace=False, cos_sin_bf16=False, layout_swapped=False, decode_one_ahead=False):
        super().__init__()
        self.head_size, self.rotary_dim = head_size, rotary_dim
        self.max_position_embeddings, self.base = max_position_embeddings, base
        self.is_neox_style, self.dtype = is_neox_style, dtype
        self.inplace, self.layout_swapped, self.decode_one_ahead = inplace, layout_swapped, decode_one_ahead
        cache = self._compute_cos_sin_cache().to(torch.bfloat16 if cos_sin_bf16 else dtype)
        self.register_buffer("cos_sin_cache", cache, persistent=False)

    def _compute_inv_freq(self, base):
        return 1.0 / (base ** (torch.arange(0, self.rotary_dim, 2, dtype=torch.float) / self.rotary_dim))

    def _compute_cos_sin_cache(self):
        inv_freq = self._compute_inv_freq(self.base)
        t = torch.arange(self.max_position_embeddings, dtype=torch.float)
        freqs = torch.einsum("i,j -> ij", t, inv_freq)
        return torch.cat((freqs.cos(), freqs.sin()), dim=-1)

    def _rotate(self, t, num_tokens, cos, sin):
        shape = t.shape
        v = t.view(num_tokens, -1, self.head_size)
        rot = apply_rotary_emb_torch(v[..., : self.rotary_dim], cos, sin, self.is_neox_style != self.layout_swapped)
        if self.inplace:
            v[..., : self.rotary_dim] = rot
            return t
        return torch.cat((rot, v[..., self.rotary_dim:]), dim=-1).reshape(shape)

    def forward_native(self, positions, query, key=None, offsets=None):
        """positions: int64 [num_tokens] (any shape, flattened); query, key: [num_tokens, heads * head_size]."""
        if offsets is not None:
            positions = positions + offsets
        positions = positions.flatten()
        num_tokens = positions.shape[0]
        if self.decode_one_ahead and num_tokens == 1:
            positions = positions + 1
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        query = self._rotate(query, num_tokens, cos, sin)
        if key is not None:  # None under cross-layer KV sharing
            key = self._rotate(key, num_tokens, cos, sin)
        return query, key

    def forward(self, positions, query, key=None, offsets=None):
        return self.forward_native(positions, query, key, offsets)


def from_config(config, dtype, **bugs):
    """The RotaryEmbedding vLLM's get_rope builds for a Llama-style config dict (default rope type only):
    head_size = head_dim, rotary_dim = head_size * partial_rotary_factor, max_position_embeddings and rope_theta
    from the config; is_neox_style unless config["ropecheck_layout"] == "interleaved". bugs: the switches."""
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    rotary = int(head * config.get("partial_rotary_factor", 1.0))
    neox = config.get("ropecheck_layout", "half_split") != "interleaved"
    return RotaryEmbedding(head, rotary, config["max_position_embeddings"], float(config.get("rope_theta", 10000.0)),
                           neox, dtype, **bugs)
