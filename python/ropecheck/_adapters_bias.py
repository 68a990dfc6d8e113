"""Adapters for score-matrix biases (ALiBi, T5's buckets): the attention form `fn(q, k, v, q_positions,
k_positions) -> o` of check_attention() made of a flash-attn kernel with `alibi_slopes`, or of an eager attention
with an additive bias the user's code builds. Re-exported by ropecheck.adapters.

The probe of a bias claim (`ropecheck probe --form attention` on a BLOOM, MPT, Falcon-ALiBi or T5 config) calls
fn with one query per call at q_positions [1] and keys at contiguous positions k_positions [Tk] (ending at the
query for a causal claim; for a bidirectional T5 claim keys may lie after it). These adapters only reshape and
pass positions: the bias is always computed by the wrapped code (the user's slopes, builder or module), never here.
"""

import inspect
from typing import Callable, Optional

import torch

from .errors import KernelOutputError, RopecheckError


def _name(obj) -> str:
    inner = getattr(obj, "func", None)
    target = inner if inner is not None and callable(inner) else obj
    return getattr(target, "__qualname__", None) or type(target).__qualname__


def _mark(fn: Callable, adapter: str, kernel: str, assumes: str) -> Callable:
    fn.ropecheck_adapter = adapter
    fn.ropecheck_kernel = kernel
    fn.ropecheck_assumes = assumes
    return fn


def _contiguous_keys(k_positions: torch.Tensor, who: str) -> int:
    """The first key position of a call whose keys are contiguous, else RopecheckError naming the adapter."""
    if k_positions.dim() != 1 or k_positions.numel() < 1:
        raise RopecheckError(f"{who}: k_positions is int64 [keys]; got shape {list(k_positions.shape)}")
    p0 = int(k_positions[0])
    expected = torch.arange(p0, p0 + k_positions.numel(), device=k_positions.device, dtype=k_positions.dtype)
    if not torch.equal(k_positions, expected):
        raise RopecheckError(f"{who} indexes keys by their row in the call: the keys must be at contiguous positions "
                             f"(got {k_positions.tolist()[:8]}{' ...' if k_positions.numel() > 8 else ''})")
    return p0


def _one_query_position(q_positions: torch.Tensor, who: str) -> int:
    if q_positions.dim() != 1 or q_positions.numel() < 1 or not bool(torch.all(q_positions == q_positions[0])):
        raise RopecheckError(f"{who}: a call's queries are at one position; got {q_positions.tolist()[:8]}")
    return int(q_positions[0])


def flash_attn_alibi(flash_attn_func: Callable, alibi_slopes, *, causal: bool, softmax_scale=None) -> Callable:
    """flash-attn's ALiBi: `flash_attn_func(q, k, v, softmax_scale=, causal=, alibi_slopes=)`, for check_attention().

    From flash_attn/flash_attn_interface.py (Dao-AILab/flash-attention; flash_attn_func, flash_attn_varlen_func and
    flash_attn_with_kvcache say the same): q (batch, seqlen, nheads, headdim), k and v (batch, seqlen, nheads_k,
    headdim); "alibi_slopes: (nheads,) or (batch_size, nheads), fp32. A bias of (-alibi_slope * |i + seqlen_k -
    seqlen_q - j|) is added to the attention score of query i and key j"; causal aligns the mask to the bottom
    right. The kernel computes the bias from row indices: the positions never reach it.

    alibi_slopes: the caller's slopes, one per query head the kernel holds (a tensor-parallel rank: its own heads'
    slopes, as vLLM's falcon.py and bloom.py slice them); the adapter hands them over as given (moved to q's
    device, never recomputed). causal: as the engine passes it (True for BLOOM, MPT, Falcon). softmax_scale: as
    the engine passes it (None: the kernel's 1/sqrt(headdim)).

    How a probe call is laid out: causal=True, one query (seqlen_q 1) and the call's keys (seqlen_k Tk) as given;
    the bias of key j is -slope * (Tk - 1 - j), i.e. -slope (m - n) when the keys are contiguous and end at the
    query's position m, which the adapter checks (else a RopecheckError: that call is not what a causal kernel
    with a KV cache is ever given). causal=False (a bidirectional ALiBi): the query is placed at its key row r = m -
    p0 of a q of Tk rows (the other rows zeros, their outputs dropped), so that |i + seqlen_k - seqlen_q - j| =
    |r - j| = |m - n|; the query's position must lie within the call's contiguous keys.
    """
    if not isinstance(causal, bool):
        raise RopecheckError(f"flash_attn_alibi(..., causal={causal!r}): True or False, as the engine passes it")
    if not isinstance(alibi_slopes, torch.Tensor) or alibi_slopes.dim() not in (1, 2) \
            or alibi_slopes.dtype != torch.float32:
        got = (f"{alibi_slopes.dtype} {list(alibi_slopes.shape)}" if isinstance(alibi_slopes, torch.Tensor)
               else type(alibi_slopes).__name__)
        raise RopecheckError(f"flash_attn_alibi(flash_attn_func, alibi_slopes): alibi_slopes is a float32 tensor "
                             f"(nheads,) or (1, nheads) as flash-attn takes it, the caller's own; got {got}")
    if alibi_slopes.dim() == 2 and alibi_slopes.shape[0] != 1:
        raise RopecheckError(f"flash_attn_alibi: alibi_slopes {list(alibi_slopes.shape)}: the probe calls with "
                             "batch 1, so (1, nheads) or (nheads,)")
    who = "flash_attn_alibi"
    moved = {}

    def call(q, k, v, q_positions, k_positions):
        heads = q.shape[1]
        if alibi_slopes.shape[-1] != heads:
            raise RopecheckError(f"{who}: alibi_slopes has {alibi_slopes.shape[-1]} slopes but the check gives "
                                 f"{heads} query heads: one slope per head the kernel holds (check_attention(..., "
                                 "heads=) as the kernel's head count)")
        m = _one_query_position(q_positions, who)
        p0 = _contiguous_keys(k_positions, who)
        last = p0 + k_positions.numel() - 1
        if causal and m != last:
            raise RopecheckError(f"{who}(causal=True): flash-attn aligns a causal call to the bottom right, so the "
                                 f"query must be at the last key's position; got the query at {m}, keys {p0}..{last}")
        if not causal and not p0 <= m <= last:
            raise RopecheckError(f"{who}(causal=False) places the query at its row among the keys: its position {m} "
                                 f"must lie within the keys {p0}..{last}")
        if q.device not in moved:
            moved[q.device] = alibi_slopes.to(q.device)
        slopes = moved[q.device]
        nq = q.shape[0]
        if causal:
            qq = q.unsqueeze(0)
        else:
            qq = torch.zeros((1, k.shape[0] * nq, *q.shape[1:]), dtype=q.dtype, device=q.device)
            for i in range(nq):  # one query per call in the probe; several at one position go one per block
                qq[0, i * k.shape[0] + (m - p0)] = q[i]
        outs = []
        blocks = [qq] if causal else [qq[:, i * k.shape[0]:(i + 1) * k.shape[0]] for i in range(nq)]
        for block in blocks:
            out = flash_attn_func(block, k.unsqueeze(0), v.unsqueeze(0), softmax_scale=softmax_scale, causal=causal,
                                  alibi_slopes=slopes)
            if isinstance(out, (tuple, list)):
                out = out[0]
            if not isinstance(out, torch.Tensor) or out.dim() != 4 or out.shape[0] != 1 \
                    or out.shape[1] != block.shape[1]:
                got = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise KernelOutputError(f"flash_attn_func returned {got}, expected out (1, {block.shape[1]}, "
                                        f"{heads}, {v.shape[2]})")
            outs.append(out[0] if causal else out[0, m - p0:m - p0 + 1])
        return torch.cat(outs, dim=0)

    return _mark(call, "flash_attn_alibi", f"flash_attn_alibi({_name(flash_attn_func)}, causal={causal})",
                 f"flash_attn_func(q [1, Tq, HQ, D], k [1, Tk, HK, D], v [1, Tk, HK, DV], softmax_scale="
                 f"{softmax_scale}, causal={causal}, alibi_slopes=the caller's float32 (HQ,)) returns out "
                 "[1, Tq, HQ, DV] without changing its inputs")


def additive_bias_attention(attn: Callable, bias_fn: Callable, *, module=None) -> Callable:
    """An eager attention with an additive score bias the user's code builds, for check_attention().

    `bias_fn(q_positions, k_positions) -> bias [heads, Tq, Tk]` is the user's bias builder at the call's positions
    (adapters.alibi_tensor, mpt_alibi_tensor and t5_bias wrap transformers' builders into one). Then, with
    module=None, `attn(q, k, v, bias=bias) -> o` on [T, H, D] tensors (adapters.eager_attention's attn signature:
    q [Tq, HQ, D], k [Tk, HK, D], v [Tk, HK, DV], the bias now per head [HQ, Tq, Tk]; its own scale), o [Tq, HQ, DV].
    module=: `attn` is transformers' eager_attention_forward(module, query, key, value, attention_mask, scaling,
    dropout=0.0) (models/llama/modeling_llama.py: `attn_weights = matmul(query, key^T) * scaling`, then `+
    attention_mask[:, :, :, :Tk]`), called with q, k, v as [1, H, T, D] and the bias as the additive mask [1, HQ, Tq,
    Tk], scaling=module.scaling; o is attn_output[0]. The bias is added after the scale, as BLOOM's baddbmm(alibi,
    q, k^T, beta=1, alpha=inv_norm_factor) does; a family scaling its bias too (Falcon: (scores + alibi) *
    inv_norm_factor) puts the scale in its bias_fn or attn, where its own code has it.
    """
    if not callable(attn) or not callable(bias_fn):
        raise RopecheckError("additive_bias_attention(attn, bias_fn): attn is an attention callable and bias_fn the "
                             "bias builder bias_fn(q_positions, k_positions) -> [heads, Tq, Tk]")
    if module is not None and not hasattr(module, "scaling"):
        raise RopecheckError("additive_bias_attention(eager_attention_forward, bias_fn, module=...): the module has "
                             "no 'scaling' (transformers' attention modules set it in __init__)")

    def call(q, k, v, q_positions, k_positions):
        bias = bias_fn(q_positions, k_positions)
        want = (q.shape[1], q.shape[0], k.shape[0])
        if not isinstance(bias, torch.Tensor) or tuple(bias.shape) != want:
            got = list(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__
            raise KernelOutputError(f"bias_fn(q_positions, k_positions) returned {got}, expected [heads, Tq, Tk] = "
                                    f"{list(want)}")
        if module is None:
            return attn(q, k, v, bias=bias)
        out = attn(module, *(t.transpose(0, 1).unsqueeze(0) for t in (q, k, v)), bias.unsqueeze(0),
                   scaling=module.scaling, dropout=0.0)
        o = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(o, torch.Tensor) or o.dim() != 4 or o.shape[0] != 1:
            got = list(o.shape) if isinstance(o, torch.Tensor) else type(o).__name__
            raise KernelOutputError(f"eager_attention_forward returned attn_output {got}, expected [1, Tq, HQ, DV]")
        return o[0]

    how = ("attn(q, k, v, bias=[HQ, Tq, Tk])" if module is None else
           "eager_attention_forward(module, q [1, HQ, Tq, D], k, v [1, HK, Tk, D], bias [1, HQ, Tq, Tk], "
           "scaling=module.scaling)")
    return _mark(call, "additive_bias_attention", f"additive_bias_attention({_name(attn)}, {_name(bias_fn)})",
                 f"bias_fn(q_positions, k_positions) returns the bias [HQ, Tq, Tk], then {how} returns o of q's "
                 "dtype without changing its inputs")


def _from_key_columns(full: torch.Tensor, heads: int, q_positions, k_positions, who: str) -> torch.Tensor:
    """[heads, 1 or L, L] -> the columns at k_positions, broadcast over the call's queries: [heads, Tq, Tk]."""
    if full.dim() != 3 or full.shape[0] != heads:
        raise KernelOutputError(f"{who} returned {list(full.shape)}, expected [{heads}, 1, L]")
    cols = full[:, -1:, :].index_select(2, k_positions.to(full.device))
    return cols.expand(heads, q_positions.numel(), k_positions.numel())


def alibi_tensor(build_alibi_tensor: Callable, num_heads: int, dtype) -> Callable:
    """bias_fn of BLOOM's or Falcon's `build_alibi_tensor(attention_mask, num_heads, dtype)` for
    additive_bias_attention.

    From transformers models/bloom/modeling_bloom.py (build_alibi_tensor; Falcon's models/falcon/modeling_falcon.py
    has its own copy with the slopes in bf16): attention_mask [batch, seq] -> alibi [batch * num_heads, 1, seq],
    slope x (cumsum(mask) - 1) x mask, i.e. slope x key position for a mask of ones, cast to dtype. The adapter
    passes a mask of ones over positions 0 .. last key (batch 1) and takes the columns at k_positions (BLOOM's
    convention: slope x key position, which differs from -slope (m - n) by slope x m, a per-row constant softmax
    removes). Keys at negative positions cannot be expressed: RopecheckError.
    """

    def bias_fn(q_positions, k_positions):
        if int(k_positions.min()) < 0:
            raise RopecheckError("alibi_tensor: build_alibi_tensor numbers keys from 0 by the attention mask; the "
                                 f"call's keys start at {int(k_positions.min())}")
        mask = torch.ones((1, int(k_positions.max()) + 1), dtype=torch.long, device=k_positions.device)
        full = build_alibi_tensor(mask, num_heads, dtype)
        return _from_key_columns(full, num_heads, q_positions, k_positions, "build_alibi_tensor")

    bias_fn.__qualname__ = f"alibi_tensor({_name(build_alibi_tensor)})"
    return bias_fn


def mpt_alibi_tensor(build_mpt_alibi_tensor: Callable, num_heads: int, alibi_bias_max=8) -> Callable:
    """bias_fn of MPT's `build_mpt_alibi_tensor(num_heads, sequence_length, alibi_bias_max=8, device=None)`.

    From transformers models/mpt/modeling_mpt.py: returns [num_heads, 1, sequence_length], column c the slope x
    (c - (sequence_length - 1)) (arange(1 - L, 1) times gen_slopes' slopes). The adapter asks for L = last key + 1
    and takes the columns at k_positions: slope x (n - L + 1), a per-row constant away from -slope (m - n).
    alibi_bias_max: as the model's config passes it (attn_config.alibi_bias_max).
    """

    def bias_fn(q_positions, k_positions):
        if int(k_positions.min()) < 0:
            raise RopecheckError(f"mpt_alibi_tensor: keys start at {int(k_positions.min())}; MPT numbers them from 0")
        full = build_mpt_alibi_tensor(num_heads, int(k_positions.max()) + 1, alibi_bias_max=alibi_bias_max,
                                      device=k_positions.device)
        return _from_key_columns(full, num_heads, q_positions, k_positions, "build_mpt_alibi_tensor")

    bias_fn.__qualname__ = f"mpt_alibi_tensor({_name(build_mpt_alibi_tensor)})"
    return bias_fn


def t5_bias(compute_bias: Callable) -> Callable:
    """bias_fn of T5's `T5Attention.compute_bias(query_length, key_length, device=None, cache_position=None)`
    (a bound method of the user's module: its relative_attention_bias table, is_decoder, bucket count and distance).

    From transformers models/t5/modeling_t5.py (compute_bias; mT5, UMT5 and LongT5 carry copies): context_position
    is cache_position[:, None] when given, else arange(query_length)[:, None]; memory_position arange(key_length);
    the bucket of memory - context; returns [1, heads, query_length, key_length]. A probe call maps onto it as:
    key_length = last key + 1 (keys numbered from 0 as memory positions), cache_position = q_positions (the
    query's own position), then the columns at k_positions. A compute_bias without cache_position (transformers
    before the cache refactor) is asked for query_length = query position + 1 and its row at the query's position.
    """
    try:
        takes_cache = "cache_position" in inspect.signature(compute_bias).parameters
    except (TypeError, ValueError):
        takes_cache = False

    def bias_fn(q_positions, k_positions):
        if int(k_positions.min()) < 0 or int(q_positions.min()) < 0:
            raise RopecheckError("t5_bias: compute_bias numbers positions from 0; the call has negative positions")
        key_length = int(k_positions.max()) + 1
        if takes_cache:
            values = compute_bias(q_positions.numel(), key_length, device=q_positions.device,
                                  cache_position=q_positions)
            rows = torch.arange(q_positions.numel(), device=q_positions.device)
        else:
            values = compute_bias(int(q_positions.max()) + 1, key_length, device=q_positions.device)
            rows = q_positions
        if not isinstance(values, torch.Tensor) or values.dim() != 4 or values.shape[0] != 1:
            got = list(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
            raise KernelOutputError(f"compute_bias returned {got}, expected [1, heads, query_length, key_length]")
        return values[0].index_select(1, rows.to(values.device)).index_select(2, k_positions.to(values.device))

    bias_fn.__qualname__ = f"t5_bias({_name(compute_bias)})"
    return bias_fn


__all__ = ["flash_attn_alibi", "additive_bias_attention", "alibi_tensor", "mpt_alibi_tensor", "t5_bias"]
