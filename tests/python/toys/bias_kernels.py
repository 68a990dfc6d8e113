"""Toy attention kernels with a score-matrix bias (ALiBi, T5's buckets) in check_attention()'s form fn(q, k, v,
q_positions, k_positions) -> o (q [Tq, H, D], k and v [Tk, HK, D]; no RoPE), for tests/python/test_bias.py and
test_bias_toys.py. Written from what the families' code does (read, not copied):

- BLOOM: transformers src/transformers/models/bloom/modeling_bloom.py, build_alibi_tensor(attention_mask,
  num_heads, dtype): the paper's slopes (closest power of two P = 2^floor(log2 H): base 2^(-8/P), powers 1..P; the
  rest from 2P's sequence at the odd powers 1, 3, ...), times arange_tensor = (cumsum(mask) - 1) * mask (the key's
  position), `.to(dtype)`: the bias slope x key position in the model dtype. BloomAttention adds it by
  `baddbmm(alibi, q, k^T, beta=1.0, alpha=inv_norm_factor)`: the q.k product scaled by 1/sqrt(head_dim), the bias not.
- MPT: models/mpt/modeling_mpt.py, build_mpt_alibi_tensor(num_heads, sequence_length, alibi_bias_max=8): P =
  2^ceil(log2 H) slopes 2^(-k alibi_bias_max / P), k = 1..P, for H < P the strided `concat([s[1::2], s[::2]])[:H]`,
  times arange(1 - L, 1): slope x (n - (L - 1)). MptAttention: `matmul(q, k^T) * softmax_scale + position_bias`.
- HF Falcon (alibi: true): models/falcon/modeling_falcon.py build_alibi_tensor: the same slopes, but
  `slopes[..., None].bfloat16() * arange_tensor` (bf16 slopes, a bf16 product); FalconAttention: the scores in fp32,
  `attention_logits = attention_scores + alibi.view(...)`, `attention_logits *= self.inv_norm_factor`: the bias
  scaled by 1/sqrt(head_dim) together with q.k.
- vLLM Falcon / BLOOM: vllm/model_executor/models/falcon.py FalconAttention.__init__ (use_alibi: `alibi_slopes =
  _get_alibi_slopes(self.total_num_heads) * self.inv_norm_factor`, sliced [tp_rank * num_heads:(tp_rank + 1) *
  num_heads], `.tolist()` into Attention(alibi_slopes=...)); bloom.py the same without the factor. The attention
  backend adds slope x (n - m) in fp32 (relative) -- the backends' kernels were not read here: the toy assumes it.
- flash-attn: flash_attn/flash_attn_interface.py, flash_attn_func(..., causal, alibi_slopes): the bias
  -slope |i + seqlen_k - seqlen_q - j| from row indices, fp32, causal aligned to the bottom right. `flash_attn_func`
  below emulates that in torch, [batch, seqlen, heads, dim], for adapters.flash_attn_alibi.
- T5: models/t5/modeling_t5.py T5Attention._relative_position_bucket (bidirectional: half the buckets per sign;
  max_exact = buckets / 2; larger offsets log-spaced up to max_distance, in float32, truncated) and compute_bias
  (cache_position or arange as context, arange(key_length) as memory, bucket of memory - context, the
  relative_attention_bias table [buckets, heads]); T5Attention.forward: `scores = matmul(q, k^T)` (no 1/sqrt(d)),
  `scores += position_bias`, `softmax(scores.float()).type_as(scores)`. T5LikeAttention below is a module with that
  compute_bias (a seeded random table) for adapters.t5_bias.

The bugs (emulations; sources in each function): mlx's ALiBi.create_alibi_slope (python/mlx/nn/layers/
positional_encoding.py before PR 3071, read in the fork adonath/mlx at 49e8503e: `x = (2**8) ** (1 / num_heads)`,
slopes x^-(1..H), one geometric sequence for every H; ml-explore/mlx at 05ddf3ff has the paper's alibi_get_slopes
instead; both cast the bias `.astype(dtype)` of the scores, a bias in bf16 under a bf16 model), the exponent off by one, slopes sorted, alibi_bias_max 16, rank 1 using rank 0's
slopes, T5's decoder bias dropped on decode, causal buckets in the encoder, the bias in bf16, BLOOM's bias scaled,
Falcon's scale missing, the sign flipped.
"""

import math

import torch

F32 = torch.float32


# --- slopes -----------------------------------------------------------------------------------------------------

def paper_slopes(heads, exponent_shift=0):
    """BLOOM's (the paper's get_slopes) slopes of `heads` heads, float64. exponent_shift=-1: the off-by-one bug
    (powers 0 .. P - 1, head 0's slope 1; aprender PR 2143)."""
    p = 2 ** int(math.floor(math.log2(heads)))
    base = 2.0 ** (-8.0 / p)
    slopes = [base ** (k + exponent_shift) for k in range(1, p + 1)]
    if p != heads:
        extra = 2.0 ** (-8.0 / (2 * p))
        slopes += [extra ** (k + exponent_shift) for k in range(1, 2 * (heads - p), 2)]
    return torch.tensor(slopes, dtype=torch.float64)


def mpt_slopes(heads, alibi_bias_max=8.0):
    """MPT's gen_slopes: 2^ceil(log2 H) slopes 2^(-k bias_max / P), the strided concatenation when H < P."""
    p = 2 ** int(math.ceil(math.log2(heads)))
    s = torch.tensor([2.0 ** (-k * alibi_bias_max / p) for k in range(1, p + 1)], dtype=torch.float64)
    if p != heads:
        s = torch.cat([s[1::2], s[::2]])[:heads]
    return s


def uniform_slopes(heads):
    """mlx's create_alibi_slope before PR 3071 (adonath/mlx 49e8503e, python/mlx/nn/layers/positional_encoding.py):
    (2^8)^(-k/H), k = 1..H, for every H (right only for powers of 2)."""
    return torch.tensor([2.0 ** (-8.0 * k / heads) for k in range(1, heads + 1)], dtype=torch.float64)


def sorted_slopes(heads):
    """The paper's slopes in descending order instead of the interleave (differs for a non-power-of-two H)."""
    return torch.sort(paper_slopes(heads), descending=True).values


# --- the attention around a bias --------------------------------------------------------------------------------

def matmul(a, b):
    """torch 1.13's CPU has no float16 bmm: compute in fp32 and round once, as a GPU GEMM returns it."""
    if a.dtype == torch.float16:
        return torch.matmul(a.float(), b.float()).to(torch.float16)
    return torch.matmul(a, b)


def _heads_first(q, k, v):
    """[T, H, D] -> [H, T, D]; keys and values repeated to q's heads (query head h reads key head h // n_rep)."""
    rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    return q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)


def attend(q, k, v, bias, *, scale, bias_scale=1.0, fp32_scores=False):
    """softmax(scale q k^T + bias_scale bias) v on [T, H, D] tensors, bias [H, Tq, Tk] (any dtype; added as it is
    promoted), the softmax in fp32 cast back to q's dtype; o [Tq, H, DV]."""
    qh, kh, vh = _heads_first(q, k, v)
    scores = matmul(qh, kh.transpose(1, 2))
    if fp32_scores:
        scores = scores.float()
    if bias_scale == 1.0:
        logits = scores * scale + bias
    else:  # Falcon: (scores + alibi) * inv_norm_factor
        logits = (scores + bias) * bias_scale
    weights = torch.softmax(logits.float(), dim=-1).to(q.dtype)
    return matmul(weights, vh).transpose(0, 1).contiguous()


def eager(q, k, v, bias=None, scale=None):
    """An eager attention of adapters.additive_bias_attention's attn signature: softmax(scale q k^T + bias) v, scale
    None: head_dim ** -0.5 (BLOOM's inv_norm_factor, MPT's softmax_scale default), bias [H, Tq, Tk] added unscaled."""
    zero = torch.zeros((q.shape[1], q.shape[0], k.shape[0]), dtype=q.dtype, device=q.device)
    return attend(q, k, v, zero if bias is None else bias, scale=q.shape[2] ** -0.5 if scale is None else scale)


# --- ALiBi kernels ----------------------------------------------------------------------------------------------

def bloom(slopes_rule=paper_slopes, *, sign=1.0, scale_bias=False, head_offset=0, total_heads=None):
    """BLOOM: slope x key position in the model dtype, added unscaled (baddbmm beta 1). Bugs: slopes_rule,
    sign=-1 (a bias growing with distance), scale_bias (the bias scaled by 1/sqrt(d) as well), head_offset /
    total_heads (a tensor-parallel rank's slice of total_heads' slopes, starting at head_offset)."""

    def fn(q, k, v, q_positions, k_positions):
        heads = q.shape[1]
        slopes = slopes_rule(total_heads or heads)[head_offset:head_offset + heads].to(F32)
        bias = (sign * slopes[:, None] * k_positions.to(F32)[None, :]).to(q.dtype)  # build_alibi_tensor .to(dtype)
        bias = bias[:, None, :].expand(heads, q.shape[0], k.shape[0])
        inv = q.shape[2] ** -0.5
        if scale_bias:
            return attend(q, k, v, bias, scale=inv, bias_scale=inv)
        return attend(q, k, v, bias, scale=inv)
    return fn


def mpt(alibi_bias_max=8.0):
    """MPT: slope x (n - (L - 1)) with L = last key + 1 (fp32 slopes times an int32 arange), then to q's dtype."""

    def fn(q, k, v, q_positions, k_positions):
        heads = q.shape[1]
        slopes = mpt_slopes(heads, alibi_bias_max).to(F32)
        length = int(k_positions.max()) + 1
        bias = (slopes[:, None] * (k_positions - (length - 1)).to(F32)[None, :]).to(q.dtype)
        return attend(q, k, v, bias[:, None, :].expand(heads, q.shape[0], k.shape[0]), scale=q.shape[2] ** -0.5)
    return fn


def hf_falcon(*, scale_missing=False):
    """transformers' Falcon with alibi: bf16 slopes times the key position (a bf16 product), scores in fp32,
    (scores + alibi) * inv_norm_factor. Bug: scale_missing (q.k scaled, the bias added unscaled)."""

    def fn(q, k, v, q_positions, k_positions):
        heads = q.shape[1]
        slopes = paper_slopes(heads).to(F32).bfloat16()
        bias = (slopes[:, None] * k_positions[None, :]).to(q.dtype)  # bf16 x int64 -> bf16, then .to(dtype)
        bias = bias[:, None, :].expand(heads, q.shape[0], k.shape[0]).float()
        inv = q.shape[2] ** -0.5
        if scale_missing:
            return attend(q, k, v, bias, scale=inv, fp32_scores=True)
        return attend(q, k, v, bias, scale=inv, bias_scale=inv, fp32_scores=True)
    return fn


def vllm_falcon(*, bias_dtype=F32, head_offset=0, total_heads=None):
    """vLLM's Falcon: fp32 slopes x inv_norm_factor into the backend, which adds slope x (n - m) in fp32 to the
    scaled scores. bias_dtype=bf16: the bug of a bias held in bf16 (at long distance neighbouring keys collide)."""

    def fn(q, k, v, q_positions, k_positions):
        heads = q.shape[1]
        inv = q.shape[2] ** -0.5
        slopes = paper_slopes(total_heads or heads)[head_offset:head_offset + heads].to(F32) * inv
        rel = (k_positions[None, :] - q_positions[:, None]).to(F32)  # [Tq, Tk]
        bias = (slopes[:, None, None] * rel[None]).to(bias_dtype).float()
        return attend(q, k, v, bias, scale=inv)
    return fn


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, alibi_slopes=None):
    """A torch emulation of flash-attn's flash_attn_func with alibi_slopes (docstring of flash_attn_interface.py):
    q [B, Sq, H, D], k, v [B, Sk, HK, D]; bias -slope |i + Sk - Sq - j| in fp32; causal: keys j <= i + Sk - Sq."""
    b, sq, h, d = q.shape
    sk = k.shape[1]
    scale = d ** -0.5 if softmax_scale is None else softmax_scale
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    shift = (i + sk - sq - j).to(F32)
    outs = []
    for bi in range(b):
        slopes = alibi_slopes if alibi_slopes is None or alibi_slopes.dim() == 1 else alibi_slopes[bi]
        bias = torch.zeros((h, sq, sk), dtype=F32, device=q.device)
        if slopes is not None:
            bias = -slopes.to(F32)[:, None, None] * shift.abs()[None]
        if causal:
            bias = bias.masked_fill((j > i + sk - sq)[None], float("-inf"))
        outs.append(attend(q[bi], k[bi], v[bi], bias, scale=scale, fp32_scores=True))
    return torch.stack(outs)


# --- T5 ---------------------------------------------------------------------------------------------------------

def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of relative_position = memory - context (int64 tensor), HF's arithmetic (float32 log)."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        rel = relative_position.abs()
    else:
        rel = -torch.minimum(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.minimum(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(small, rel, large)


class T5LikeAttention(torch.nn.Module):
    """The parts of transformers' T5Attention that the bias needs: relative_attention_bias (an Embedding [buckets,
    heads], seeded random), is_decoder, compute_bias(query_length, key_length, device=None, cache_position=None).
    bidirectional_override: the bug of buckets of the other direction (None: not is_decoder, as T5)."""

    def __init__(self, heads=8, num_buckets=32, max_distance=128, is_decoder=False, seed=0,
                 bidirectional_override=None):
        super().__init__()
        self.n_heads, self.is_decoder = heads, is_decoder
        self.relative_attention_num_buckets, self.relative_attention_max_distance = num_buckets, max_distance
        self.relative_attention_bias = torch.nn.Embedding(num_buckets, heads)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.relative_attention_bias.weight.copy_(torch.randn((num_buckets, heads), generator=gen) * 2.0)
        self.bidirectional = (not is_decoder) if bidirectional_override is None else bidirectional_override

    def compute_bias(self, query_length, key_length, device=None, cache_position=None):
        device = self.relative_attention_bias.weight.device if device is None else device
        if cache_position is None:
            context = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        else:
            context = cache_position[:, None].to(device)
        memory = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        bucket = relative_position_bucket(memory - context, self.bidirectional, self.relative_attention_num_buckets,
                                          self.relative_attention_max_distance)
        return self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)


def t5_eager(q, k, v, bias=None, scale=None):
    """T5Attention.forward's arithmetic on [T, H, D]: matmul(q, k^T) unscaled, + position_bias (in the scores'
    dtype, as `scores += position_bias_masked` keeps it), softmax(float).type_as, matmul v."""
    qh, kh, vh = _heads_first(q, k, v)
    scores = matmul(qh, kh.transpose(1, 2))
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
    return matmul(weights, vh).transpose(0, 1).contiguous()


def t5_dropped_on_decode(module):
    """The bug: the decoder's bias applied only without a cache (a call whose only key is the query's own, the
    prefill of one token) and dropped when one query attends a cache (TensorRT-LLM PR 13870's review; candle PR
    899). In the attention form, as a kernel over compute_bias."""

    def fn(q, k, v, q_positions, k_positions):
        if k.shape[0] > q.shape[0]:  # a cache: the bias forgotten
            return t5_eager(q, k, v)
        m = int(q_positions.max())
        bias = module.compute_bias(q.shape[0], m + 1, device=q.device, cache_position=q_positions)[0]
        return t5_eager(q, k, v, bias=bias.index_select(2, k_positions))
    return fn
