"""Adapters: turn other projects' RoPE calling conventions into the `fn(x, positions) -> y` that check() drives.

check() gives fn x [tokens, heads, head_dim] and positions int64 [tokens] ([rows, tokens] for M-RoPE), both on the
check's device, and expects y of x's shape and dtype, x and positions left alone. Each adapter returns such a
callable with the attributes `ropecheck_adapter` (its name), `ropecheck_assumes` (what it assumes, one sentence;
quoted by InputMutatedError), `ropecheck_kernel` (a readable name of what it wraps) and, where the wrapped object
says it, `ropecheck_max_position` (the last position its cache holds).

For check_qk(), which drives `fn(q, k, positions) -> (q_out, k_out)` with distinct queries q [tokens, heads,
head_dim] and keys k [tokens, kv_heads, head_dim], the callables of plain, inplace, hf and vllm carry
`ropecheck_qk`: the same wrapped code called with q and k, the way the engines call it, carrying the same
attributes. inplace_qk wraps a kernel that rotates q and k in place.
"""

import functools
from typing import Callable, Optional

import torch

from .errors import KernelOutputError, RopecheckError


def _name(obj) -> str:
    inner = getattr(obj, "func", None)  # functools.partial
    target = inner if inner is not None and callable(inner) else obj
    return getattr(target, "__qualname__", None) or type(target).__qualname__


def _mark(fn: Callable, adapter: str, kernel: str, assumes: str, max_position: Optional[int] = None) -> Callable:
    fn.ropecheck_adapter = adapter
    fn.ropecheck_kernel = kernel
    fn.ropecheck_assumes = assumes
    if max_position is not None:
        fn.ropecheck_max_position = int(max_position)
    return fn


def plain(fn: Callable) -> Callable:
    """fn(x, positions) -> y as it is: x [tokens, heads, head_dim], positions int64 [tokens] or [rows, tokens];
    returns a new tensor of x's shape and dtype and changes neither input (check() verifies that).
    Its `ropecheck_qk` applies fn to q and to k, (fn(q, positions), fn(k, positions)), as a model calling one
    rope function on each does."""

    @functools.wraps(fn)
    def call(x, positions):
        return fn(x, positions)

    def call_qk(q, k, positions):
        return fn(q, positions), fn(k, positions)

    max_position = getattr(fn, "ropecheck_max_position", None)
    call.ropecheck_qk = _mark(call_qk, "plain", _name(fn),
                              "fn(q, positions) and fn(k, positions) return new tensors of their input's shape and "
                              "dtype and leave q, k and positions unchanged", max_position)
    return _mark(call, "plain", _name(fn),
                 "fn(x, positions) returns a new y of x's shape and dtype and leaves x and positions unchanged",
                 max_position)


def inplace(fn: Callable) -> Callable:
    """A kernel that rotates x in place, fn(x, positions) -> None or x: it is given a copy of x (and of the
    positions), and the rotated copy is the output. Its `ropecheck_qk` does the same to a copy of q and to a copy
    of k."""

    @functools.wraps(fn)
    def call(x, positions):
        work = x.clone()
        out = fn(work, positions.clone())
        return work if out is None else out

    def call_qk(q, k, positions):
        return call(q, positions), call(k, positions)

    max_position = getattr(fn, "ropecheck_max_position", None)
    call.ropecheck_qk = _mark(call_qk, "inplace", _name(fn),
                              "fn(x, positions) rotates its (copied) x in place, called on a copy of q and on a "
                              "copy of k, and returns None or that x", max_position)
    return _mark(call, "inplace", _name(fn),
                 "fn(x, positions) rotates its (copied) x in place and returns None or that x", max_position)


def inplace_qk(fn: Callable) -> Callable:
    """A qk kernel that rotates queries and keys in place, fn(q, k, positions) -> None or (q, k) (a fused qk
    kernel writing its outputs over its inputs, as vLLM's forward_cuda does): it is given copies of q, k and the
    positions, and the rotated copies (or what it returns in their place) are the outputs. For check_qk()."""

    @functools.wraps(fn)
    def call(q, k, positions):
        work_q, work_k = q.clone(), k.clone()
        out = fn(work_q, work_k, positions.clone())
        if out is None:
            return work_q, work_k
        if isinstance(out, (tuple, list)) and len(out) == 2:
            return (work_q if out[0] is None else out[0]), (work_k if out[1] is None else out[1])
        return out  # anything else: the driver says what came back

    return _mark(call, "inplace_qk", _name(fn),
                 "fn(q, k, positions) rotates its (copied) q and k in place and returns None or (q, k)",
                 getattr(fn, "ropecheck_max_position", None))


def hf(rotary_emb: Callable, apply_rotary_pos_emb: Callable, *, unsqueeze_dim: int = 1) -> Callable:
    """transformers' convention: `cos, sin = rotary_emb(x_like, position_ids)` then
    `q_out, k_out = apply_rotary_pos_emb(q, k, cos, sin)`.

    From transformers src/transformers/models/llama/modeling_llama.py: LlamaRotaryEmbedding.forward(x, position_ids)
    reads only x's device and dtype (x: [bs, num_attention_heads, seq_len, head_size]) and returns cos, sin
    [bs, seq_len, head_dim] in x.dtype; apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1)
    unsqueezes cos/sin at unsqueeze_dim (1: q, k are [bs, heads, seq, head_dim]; 2: [bs, seq, heads, head_dim]).
    M-RoPE rotary embeddings (Qwen2-VL's) take position_ids [rows, bs, seq]: give
    functools.partial(apply_multimodal_rotary_pos_emb, mrope_section=...) as apply_rotary_pos_emb.
    q and k are both x (k a copy); k_out must equal q_out bitwise, else a KernelOutputError.

    `ropecheck_qk(q, k, positions)` calls it as the attention does (LlamaAttention.forward in the same file, at
    transformers 5dd4a635: query_states `view(hidden_shape).transpose(1, 2)` is [bs, num_attention_heads, T, D],
    key_states [bs, num_key_value_heads, T, D], then apply_rotary_pos_emb(query_states, key_states, cos, sin), and
    repeat_kv only after): q as [1, HQ, T, D] and k as [1, HK, T, D] (unsqueeze_dim=2: [1, T, H, D]), distinct,
    with cos, sin = rotary_emb(q, position_ids); returns (q_embed, k_embed) as [T, H, D].
    """
    if unsqueeze_dim not in (1, 2):
        raise RopecheckError(f"hf(..., unsqueeze_dim={unsqueeze_dim!r}): transformers uses 1 ([bs, heads, seq, dim]) "
                             "or 2 ([bs, seq, heads, dim])")

    def rotate(q, k, positions):
        """apply_rotary_pos_emb of q [T, HQ, D] and k [T, HK, D] laid out as transformers' attention lays them
        (batch 1); returns (q_out, k_out) as [T, H, D]."""
        # position_ids: [1, T] (batch 1), or [R, 1, T] for M-RoPE (transformers' Qwen2-VL layout).
        position_ids = positions.unsqueeze(0) if positions.dim() == 1 else positions.unsqueeze(1)
        q_like = q.transpose(0, 1).unsqueeze(0)  # [1, HQ, T, D]: rotary_emb reads its device and dtype
        cos, sin = rotary_emb(q_like, position_ids)
        q4, k4 = (t.transpose(0, 1).unsqueeze(0) if unsqueeze_dim == 1 else t.unsqueeze(0) for t in (q, k))
        if unsqueeze_dim == 1:
            q_out, k_out = apply_rotary_pos_emb(q4, k4, cos, sin)
        else:
            q_out, k_out = apply_rotary_pos_emb(q4, k4, cos, sin, unsqueeze_dim=2)
        if not isinstance(q_out, torch.Tensor) or not isinstance(k_out, torch.Tensor):
            raise KernelOutputError(f"apply_rotary_pos_emb returned ({type(q_out).__name__}, {type(k_out).__name__}),"
                                    " expected (q_embed, k_embed) tensors")
        for name, out, given in (("q", q_out, q4), ("k", k_out, k4)):
            if out.dim() != 4 or out.shape[0] != 1:
                raise KernelOutputError(f"apply_rotary_pos_emb returned shape {list(out.shape)}, expected "
                                        f"{list(given.shape)} (its {name}'s shape)")
        return tuple((t[0].transpose(0, 1) if unsqueeze_dim == 1 else t[0]).contiguous() for t in (q_out, k_out))

    def call(x, positions):
        q_out, k_out = rotate(x, x.clone(), positions)
        if q_out.shape != k_out.shape or q_out.dtype != k_out.dtype or not torch.equal(q_out, k_out):
            raise KernelOutputError("q and k were rotated differently by apply_rotary_pos_emb although both were x "
                                    "with the same cos/sin: the rotation must not depend on which of q and k it is")
        return q_out

    kernel = f"hf({_name(rotary_emb)}, {_name(apply_rotary_pos_emb)})"
    layout = "[1, H, T, D]" if unsqueeze_dim == 1 else "[1, T, H, D]"
    qk_layout = ("q [1, HQ, T, D], k [1, HK, T, D]" if unsqueeze_dim == 1 else "q [1, T, HQ, D], k [1, T, HK, D]")
    call.ropecheck_qk = _mark(rotate, "hf", kernel,
                              f"cos, sin = rotary_emb(q, position_ids [1, T]) and apply_rotary_pos_emb(q, k, cos, sin) "
                              f"with {qk_layout} return new tensors and leave q and k alone (transformers' "
                              "LlamaAttention.forward)")
    return _mark(call, "hf", kernel,
                 f"cos, sin = rotary_emb(q, position_ids [1, T]) and apply_rotary_pos_emb(q, k, cos, sin) with q = k = "
                 f"x as {layout} return new tensors and leave x alone (transformers' LlamaRotaryEmbedding convention)")


def vllm(rotary_emb: Callable, *, which: str = "query", heads_axis: bool = False) -> Callable:
    """vLLM's convention: `query, key = rotary_emb(positions, query, key)` (RotaryEmbedding.forward, a CustomOp).

    From vllm/model_executor/layers/rotary_embedding/base.py: forward_native(positions, query, key=None,
    offsets=None) flattens positions to [num_tokens], views query/key as [num_tokens, -1, head_size] and returns new
    (query, key); forward_cuda rotates query and key in place (ops.rotary_embedding) and returns them. The adapter
    passes copies of x flattened to [T, H*D] as both query and key (heads_axis=True: as [T, H, D], for classes whose
    callers pass 3-D tensors, e.g. deepseek_scaling_rope.py DeepseekScalingRotaryEmbedding under the MLA attention
    of models/deepseek_v2.py), uses the returned tensors when not None and the rotated copies otherwise, and returns
    `which` ("query" or "key"). M-RoPE (MRotaryEmbedding) takes positions [3, T] as given. max_position:
    cos_sin_cache.shape[0] - 1 (cos_sin_cache [max_position, rotary_dim]), else max_position_embeddings - 1 (the
    attribute base.py keeps; Phi3LongRoPEScaledRotaryEmbedding keeps its cache as long_short_cos_sin_cache, its
    short rows first, and takes positions up to max_position_embeddings - 1), except a Phi-3 class built for a
    max_model_len within original_max_position_embeddings (use_long_rope False): original - 1.

    `ropecheck_qk(q, k, positions)` calls it as vLLM's attention does (models/llama.py LlamaAttention.forward:
    `q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)`, q_size = num_heads * head_dim,
    kv_size = num_kv_heads * head_dim, then `q, k = self.rotary_emb(positions, q, k)`; base.py views each as
    [num_tokens, -1, head_size], so the key has its own head count): copies of q as query [T, HQ*D] and of k as
    key [T, HK*D] (heads_axis=True: [T, H, D]), the returned tensors used when not None, else the rotated copies.
    """
    if which not in ("query", "key"):
        raise RopecheckError(f"vllm(..., which={which!r}): which is 'query' or 'key'")

    def rotate(q, k, positions, sides=("query", "key")):
        """rotary_emb(positions, query, key) with copies of q [T, HQ, D] and k [T, HK, D] flattened as vLLM's
        attention passes them; returns {side: its output as [T, H, D]} for the sides asked (only those checked)."""
        given = {}
        for side, x in (("query", q), ("key", k)):
            given[side] = (x if heads_axis else x.reshape(x.shape[0], -1)).clone()
        out = rotary_emb(positions, given["query"], given["key"])
        returned = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        got = {}
        for i, (side, x) in enumerate((("query", q), ("key", k))):
            if side not in sides:
                continue
            y = returned[i] if i < len(returned) else None
            if y is None:  # forward_cuda: the rotation done in place, in the copy
                y = given[side]
            if not isinstance(y, torch.Tensor):
                raise KernelOutputError(f"the vLLM rotary embedding returned {type(y).__name__} for the {side}, "
                                        "expected a tensor (or None with the rotation done in place)")
            if y.numel() != x.numel():
                hint = ("" if heads_axis else "; a class whose callers pass [num_tokens, num_heads, head_size] "
                        "(DeepSeek's MLA rope) takes vllm(rotary_emb, heads_axis=True)")
                raise KernelOutputError(f"the vLLM rotary embedding returned a {side} of shape {list(y.shape)}, "
                                        f"expected {list(given[side].shape)}{hint}")
            got[side] = y.reshape(x.shape)
        return got

    def call(x, positions):
        return rotate(x, x, positions, (which,))[which]

    def call_qk(q, k, positions):
        got = rotate(q, k, positions)
        return got["query"], got["key"]

    cache = getattr(rotary_emb, "cos_sin_cache", None)
    limit = getattr(rotary_emb, "max_position_embeddings", None)
    original = getattr(rotary_emb, "original_max_position_embeddings", None)
    if isinstance(cache, torch.Tensor) and cache.dim() >= 1:
        max_position = cache.shape[0] - 1
    elif getattr(rotary_emb, "use_long_rope", None) is False and isinstance(original, int) and original > 0:
        # Phi3LongRoPEScaledRotaryEmbedding with max_model_len <= original_max_position_embeddings: its forward
        # indexes long_short_cos_sin_cache at the positions themselves, whose first `original` rows are the short
        # factors' (phi3_long_rope_scaled_rope.py __init__ use_long_rope, forward); later rows are the long table's.
        max_position = original - 1
    else:
        max_position = int(limit) - 1 if isinstance(limit, int) and limit > 0 else None
    layout = "[T, H, D]" if heads_axis else "[T, H*D]"
    qk_layout = "query [T, HQ, D], key [T, HK, D]" if heads_axis else "query [T, HQ*D], key [T, HK*D]"
    call.ropecheck_qk = _mark(call_qk, "vllm", f"vllm({_name(rotary_emb)})",
                              f"rotary_emb(positions [T], {qk_layout}) rotates copies of q and k (in place or "
                              "returned); the caller's q and k are never handed over", max_position)
    return _mark(call, "vllm", f"vllm({_name(rotary_emb)}, {which})",
                 f"rotary_emb(positions [T], query {layout}, key {layout}) rotates copies of x (in place or returned); "
                 "the caller's x is never handed over", max_position)


def flash_attn(apply_rotary_emb: Callable, cos, sin, *, interleaved: bool = False) -> Callable:
    """flash-attn's convention: `apply_rotary_emb(x, cos, sin, interleaved=...)`.

    From flash_attn/layers/rotary.py: apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False,
    seqlen_offsets=0, cu_seqlens=None, max_seqlen=None) takes x (batch, seqlen, nheads, headdim) and cos, sin
    (seqlen_rotary, rotary_dim / 2), rotating row i of x by cos/sin row i + seqlen_offsets; the Triton version
    (flash_attn/ops/triton/rotary.py apply_rotary) asserts x.dtype == cos.dtype; the pure-torch reference
    apply_rotary_emb_torch(x, cos, sin, interleaved=False) in the same file takes no more. The adapter gathers the rows of
    the caller's cos/sin cache [seqlen_max, rotary_dim / 2] at the call's positions (cos[positions]) and calls with
    x as [1, n, H, D]: what is judged is the kernel's rotation at those rows together with the caller's cache.
    max_position = cos.shape[0] - 1.
    """
    if not isinstance(cos, torch.Tensor) or not isinstance(sin, torch.Tensor) or cos.shape != sin.shape \
            or cos.dim() != 2:
        raise RopecheckError("flash_attn(apply_rotary_emb, cos, sin): cos and sin are tensors of one shape "
                             "[seqlen_max, rotary_dim / 2], the caller's cache")
    tables = {}

    def call(x, positions):
        if positions.dim() != 1:
            raise RopecheckError(f"flash-attn's apply_rotary_emb takes one position per token; got positions "
                                 f"{list(positions.shape)} (M-RoPE): use a plain wrapper instead")
        if positions.device not in tables:
            tables[positions.device] = (cos.to(positions.device), sin.to(positions.device))
        c, s = tables[positions.device]
        rows_c, rows_s = c.index_select(0, positions), s.index_select(0, positions)
        # seqlen_offsets is left at its default 0: apply_rotary_emb_torch (the pure-torch reference in the same
        # file, the one that runs without Triton) takes only (x, cos, sin, interleaved).
        out = apply_rotary_emb(x.unsqueeze(0), rows_c, rows_s, interleaved=interleaved)
        if not isinstance(out, torch.Tensor):
            raise KernelOutputError(f"apply_rotary_emb returned {type(out).__name__}, expected a tensor "
                                    f"[1, {x.shape[0]}, {x.shape[1]}, {x.shape[2]}]")
        return out[0] if out.dim() == 4 and out.shape[0] == 1 else out

    style = "interleaved (GPT-J)" if interleaved else "half-split (GPT-NeoX)"
    return _mark(call, "flash_attn", f"flash_attn({_name(apply_rotary_emb)}, {style})",
                 f"apply_rotary_emb(x [1, n, H, D], cos[positions], sin[positions], interleaved={interleaved}) "
                 "returns a new tensor (inplace=False); this checks the kernel's rotation at the cache rows of the "
                 "call's positions, together with the caller's cos/sin cache", cos.shape[0] - 1)


__all__ = ["plain", "inplace", "inplace_qk", "hf", "vllm", "flash_attn"]
