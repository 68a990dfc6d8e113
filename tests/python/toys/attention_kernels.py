"""Toy attention kernels with RoPE inside, for the attention form's tests (tests/python/test_attention.py,
test_drive_attention.py, test_adapters_attention.py). Written from what the engines do (read, not copied):

- eager_attention_forward, repeat_kv: transformers' src/transformers/models/llama/modeling_llama.py (at 5dd4a635):
  query [bs, HQ, Tq, D], key/value [bs, HK, Tk, D]; `repeat_kv(key, module.num_key_value_groups)` (x[:, :, None]
  expanded to n_rep and reshaped: query head h reads key head h // n_rep); `torch.matmul(query,
  key_states.transpose(2, 3)) * scaling` in the model dtype, an additive mask, `softmax(..., dtype=torch.float32)
  .to(query.dtype)`, `torch.matmul(attn_weights, value_states)`, `.transpose(1, 2).contiguous()`; returns
  (attn_output [bs, Tq, HQ, D], attn_weights). `Module` stands for LlamaAttention's attributes it reads
  (num_key_value_groups, scaling = head_dim ** -0.5, training).
- eager: the same arithmetic on [T, H, D] tensors with the signature adapters.eager_attention takes, attn(q, k, v,
  bias=None, scale=None), what a user writes around it; its bug switches are below.
- meta_attention: Meta's llama/model.py (meta-llama/llama3 at 0a3d7172): Attention.forward rotates xq and xk with
  apply_rotary_emb (complex pairs (x[2i], x[2i+1]) of x.float() times freqs_cis, type_as: the interleaved
  layout), writes xk into cache_k at start_pos, repeat_kv's the cached keys and values, `scores =
  torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)`, `F.softmax(scores.float(), dim=-1)
  .type_as(xq)`, `torch.matmul(scores, values)`. Here as a kernel over a KV cache: the keys before the query's
  are rotated and cached by an earlier step, the query and its own key by the decode step, each at its position;
  Meta's repeat_kv on [bs, slen, HK, D] is transformers' after the transpose (the same heads).

torch 1.13 on the CPU (Debian's) has no float16 matmul ("bmm" not implemented for 'Half'): `matmul` computes a
float16 product in fp32 and rounds it to float16 once, as a GPU's float16 GEMM accumulating in fp32 returns it.
Every other dtype is multiplied as the engines' code does, in its own dtype.

Bug switches of eager (keywords; all off is transformers' arithmetic):
  scale_one_over_d   the logits scaled by 1 / head_dim instead of head_dim ** -0.5 (scale given: that scale)
  logit_factor=F     the logits multiplied by F besides (e.g. YaRN's temperature 1/t = (0.1 ln s + 1)^2 applied
                     on the logits by a kernel whose cos/sin already carry 0.1 ln s + 1: applied twice)
"""

import math

import torch

import qk_kernels

BASE = qk_kernels.BASE


def matmul(a, b):
    """torch.matmul(a, b); float16 on the CPU in fp32, rounded to float16 (the module docstring says why)."""
    if a.dtype == torch.float16 and a.device.type == "cpu":
        return torch.matmul(a.float(), b.float()).to(torch.float16)
    return torch.matmul(a, b)


def repeat_kv(hidden_states, n_rep):
    """transformers' repeat_kv: [bs, HK, T, D] -> [bs, HK * n_rep, T, D], key head g repeated for query heads
    g * n_rep .. g * n_rep + n_rep - 1."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Module:
    """What eager_attention_forward reads of LlamaAttention: num_key_value_groups, scaling, training."""

    def __init__(self, heads, kv_heads, head_dim, training=False):
        self.num_key_value_groups = heads // kv_heads
        self.scaling = head_dim ** -0.5
        self.training = training


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager_attention_forward (dropout is not applied: the toy is never in training)."""
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
    attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def eager(q, k, v, bias=None, scale=None, *, scale_one_over_d=False, logit_factor=1.0):
    """eager_attention_forward's arithmetic on q [Tq, HQ, D], k [Tk, HK, D], v [Tk, HK, DV]: o [Tq, HQ, DV] in q's
    dtype. bias: additive [Tq, Tk]; scale None: head_dim ** -0.5. The keywords are the module docstring's bugs."""
    d = q.shape[-1]
    scaling = scale if scale is not None else (1.0 / d if scale_one_over_d else d ** -0.5)
    q4, k4, v4 = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    n_rep = q.shape[1] // k.shape[1]
    weights = matmul(q4, repeat_kv(k4, n_rep).transpose(2, 3)) * scaling
    if logit_factor != 1.0:
        weights = weights * logit_factor
    if bias is not None:
        weights = weights + bias
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return matmul(weights, repeat_kv(v4, n_rep))[0].transpose(0, 1).contiguous()


def make_eager(name="eager", **bugs):
    """eager with the given bug switches, named `name` (the verdict shows the name)."""

    def attn(q, k, v, bias=None, scale=None):
        return eager(q, k, v, bias, scale, **bugs)

    attn.__name__ = attn.__qualname__ = name
    return attn


def no_rope(x, positions):
    """A RoPE forgotten: x unchanged (a new tensor)."""
    return x.clone()


def _meta_rotate(x, positions, base):
    """Meta's apply_rotary_emb on one tensor x [T, H, D]: complex pairs of x.float() times freqs_cis at the
    positions, back to real, type_as(x)."""
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = qk_kernels._freqs_cis(positions, x.shape[-1], base)[:, None, :]
    return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)


def meta_attention(q, k, v, q_positions, k_positions, *, base=BASE):
    """Meta's Attention.forward as an attention kernel: q [nq, HQ, D] (nq queries at one position, a batch of nq
    decode steps, bsz = nq), k [Tk, HK, D] at k_positions (contiguous, the last one the queries' own), v
    [Tk, HK, DV]. The cached keys are rotated as the step that wrote them rotated its xk; each decode step rotates
    its xq and its own xk together (apply_rotary_emb) at the queries' position. Returns o [nq, HQ, DV]."""
    nq = q.shape[0]
    cached = _meta_rotate(k[:-1], k_positions[:-1], base)
    freqs_cis = qk_kernels._freqs_cis(q_positions[:1], q.shape[-1], base)  # [seqlen 1, D / 2]
    xq, xk = qk_kernels.apply_rotary_emb(q.unsqueeze(1), k[-1:].unsqueeze(0).expand(nq, -1, -1, -1), freqs_cis)
    keys = torch.cat((cached.unsqueeze(0).expand(nq, -1, -1, -1), xk), dim=1)  # (bs, cache_len + seqlen, HK, D)
    values = v.unsqueeze(0).expand(nq, -1, -1, -1)
    n_rep = q.shape[1] // k.shape[1]
    keys, values = (repeat_kv(t.transpose(1, 2), n_rep) for t in (keys, values))  # (bs, HQ, Tk, D)
    xq = xq.transpose(1, 2)  # (bs, HQ, 1, D)
    scores = matmul(xq, keys.transpose(2, 3)) / math.sqrt(q.shape[-1])
    scores = torch.nn.functional.softmax(scores.float(), dim=-1).type_as(xq)
    return matmul(scores, values)[:, :, 0].contiguous()  # (bs, HQ, DV): one token per decode step
