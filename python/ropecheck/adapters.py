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

For check_attention(), which drives `fn(q, k, v, q_positions, k_positions) -> o` (RoPE applied inside attention,
a call's queries at one position, its keys at contiguous positions ending there), eager_attention joins a
one-tensor RoPE and an eager attention (transformers' pieces), and flash_attn_kvcache calls flash-attn's
flash_attn_with_kvcache with its rotary arguments as prefill and decode steps do.

For score-matrix biases (ALiBi, T5; same attention form, no RoPE inside), flash_attn_alibi calls flash-attn with
the caller's alibi_slopes, and additive_bias_attention an eager attention with the bias the caller's builder makes
(alibi_tensor, mpt_alibi_tensor, t5_bias wrap transformers' builders): ropecheck/_adapters_bias.py.
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


def eager_attention(attn: Callable, rotary: Callable, *, module=None) -> Callable:
    """RoPE then eager attention, as transformers' attention layers compute it: for check_attention().

    `rotary(x, positions) -> x'` is any RoPE of check()'s form (x [tokens, heads, head_dim], positions int64
    [tokens]; e.g. ropecheck.adapters.hf(model.rotary_emb, apply_rotary_pos_emb) or adapters.plain(my_rope)), applied
    to q at q_positions and to k at k_positions (each call of it a new tensor; q and k are not handed over to be
    changed). Then, with module=None, `attn(q', k', v) -> o` is an eager attention on [T, H, D] tensors with the
    signature attn(q, k, v, bias=None, scale=None) (q [Tq, HQ, D], k [Tk, HK, D], v [Tk, HK, DV], an additive bias
    [Tq, Tk], scale None: its own, head_dim ** -0.5), o [Tq, HQ, DV] in q's dtype. It is called with q', k', v
    alone: no mask (every key of a call is at or before its query) and its own scale, which the judge reads.

    module=: `attn` is transformers' `eager_attention_forward(module, query, key, value, attention_mask, scaling,
    dropout=0.0, **kwargs)` (src/transformers/models/llama/modeling_llama.py at 5dd4a635: query [bs, HQ, Tq, D],
    key and value [bs, HK, Tk, D] with `repeat_kv(key, module.num_key_value_groups)` inside (query head h reads key
    head h // n_rep), `torch.matmul(query, key_states.transpose(2, 3)) * scaling`, softmax in fp32 cast back to the
    query's dtype, `attn_output.transpose(1, 2)` [bs, Tq, HQ, D], returning (attn_output, attn_weights)), called
    as LlamaAttention.forward calls it (`scaling=self.scaling`, dropout 0.0 when not training): q', k', v as
    [1, H, T, D], attention_mask None, scaling=module.scaling; o is attn_output[0]. The module gives
    num_key_value_groups (heads // kv_heads of the check) and scaling.
    max_position: rotary's (ropecheck_max_position), if it declares one.
    """
    if not callable(attn) or not callable(rotary):
        raise RopecheckError("eager_attention(attn, rotary): attn is an attention callable and rotary a RoPE "
                             "callable rotary(x, positions) -> x' (e.g. ropecheck.adapters.hf(...))")
    if module is not None:
        for name in ("num_key_value_groups", "scaling"):
            if not hasattr(module, name):
                raise RopecheckError(f"eager_attention(eager_attention_forward, rotary, module=...): the module has "
                                     f"no {name!r} (transformers' attention modules set num_key_value_groups and "
                                     "scaling in __init__)")

    def rotate(x, positions, which):
        out = rotary(x, positions)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape:
            got = f"shape {list(out.shape)}" if isinstance(out, torch.Tensor) else type(out).__name__
            raise KernelOutputError(f"rotary(x, positions) returned {got} for {which} {list(x.shape)}, expected a "
                                    "tensor of its shape (rotary is a RoPE of check()'s form)")
        return out

    def call(q, k, v, q_positions, k_positions):
        q_rot, k_rot = rotate(q, q_positions, "q"), rotate(k, k_positions, "k")
        if module is None:
            return attn(q_rot, k_rot, v)
        groups = q.shape[1] // k.shape[1]
        if int(module.num_key_value_groups) != groups:
            raise RopecheckError(f"the module's num_key_value_groups is {module.num_key_value_groups}, but the check "
                                 f"gives {q.shape[1]} query heads and {k.shape[1]} key heads ({groups} per key head): "
                                 "check_attention(..., heads=, kv_heads=) as the module's config says")
        out = attn(module, *(t.transpose(0, 1).unsqueeze(0) for t in (q_rot, k_rot, v)), None,
                   scaling=module.scaling, dropout=0.0)
        attn_output = out[0] if isinstance(out, (tuple, list)) else out  # (attn_output, attn_weights)
        if not isinstance(attn_output, torch.Tensor) or attn_output.dim() != 4 or attn_output.shape[0] != 1:
            got = list(attn_output.shape) if isinstance(attn_output, torch.Tensor) else type(attn_output).__name__
            raise KernelOutputError(f"eager_attention_forward returned attn_output {got}, expected [1, Tq, HQ, DV] "
                                    "(transformers' attn_output.transpose(1, 2))")
        return attn_output[0]

    rotary_name = getattr(rotary, "ropecheck_kernel", None) or _name(rotary)
    how = ("attn(q', k', v) on [T, H, D] tensors" if module is None else
           "eager_attention_forward(module, q' [1, HQ, Tq, D], k' [1, HK, Tk, D], v [1, HK, Tk, DV], None, "
           "scaling=module.scaling) returning (attn_output [1, Tq, HQ, DV], attn_weights)")
    return _mark(call, "eager_attention", f"eager_attention({_name(attn)}, {rotary_name})",
                 f"rotary(q, q_positions) and rotary(k, k_positions) return new tensors of their input's shape and "
                 f"leave q and k alone, then {how} returns o of q's dtype without changing its inputs",
                 getattr(rotary, "ropecheck_max_position", None))


def flash_attn_kvcache(flash_attn_with_kvcache: Callable, rotary_cos, rotary_sin, *,
                       rotary_interleaved: bool) -> Callable:
    """flash-attn's attention with RoPE inside, `flash_attn_with_kvcache(q, k_cache, v_cache, k=, v=, rotary_cos=,
    rotary_sin=, cache_seqlens=, causal=True, window_size=, rotary_interleaved=)`, called as an engine's decode
    step: for check_attention().

    From flash_attn/flash_attn_interface.py (Dao-AILab/flash-attention at 0251105a): q (batch, seqlen, nheads,
    headdim), k_cache / v_cache (batch_size_cache, seqlen_cache, nheads_k, headdim) "updated *inplace* with the
    new values from k and v", k and v concatenated "starting at the indices specified by cache_seqlens"; "The key
    @k will be rotated by rotary_cos and rotary_sin at indices cache_seqlens, cache_seqlens + 1, etc. If causal or
    local ..., the query @q will be rotated ... at indices cache_seqlens, cache_seqlens + 1, etc." (not causal: at
    cache_seqlens only; csrc/flash_attn/flash_api.cpp mha_fwd_kvcache also drops causal when seqlen_q == 1);
    rotary_cos / rotary_sin (seqlen_ro, rotary_dim / 2), checked there to have at least as many rows as the cache;
    GQA: query head h reads kv head h // (nheads / nheads_k); the causal mask aligned to the bottom right.

    So a query is rotated at cache_seqlens, not at the position of the last key written with it. The adapter calls
    the kernel as an engine does, prefill then decode: the call's keys before the query's own (positions
    p0 .. p - 1) written first, `flash_attn_with_kvcache(q, k_cache, v_cache, k=those keys, v=their values,
    cache_seqlens=p0, ...)` (its output dropped), then the decode step with the query's own key and value,
    cache_seqlens=p, whose output is o. The cache is new for each call, zeros, sized p + 1 rows (batch 1): the
    kernel's own writes are what the decode step reads, so the keys are rotated by the kernel at its cache indices
    p0 .. p. Its rows 0 .. p0 - 1 are not keys of the call: both steps pass window_size=(p - p0, 0), as an engine
    serving a sliding-window model does ("Query at position i will only attend to keys between [i + seqlen_k -
    seqlen_q - window_size[0], i + seqlen_k - seqlen_q + window_size[1]] inclusive": keys p0 .. p for the decode
    step), so the query attends exactly its call's keys and o's row is their softmax weights, as the judge
    requires (zeros attended would take a share of every row).

    rotary_interleaved has no default here, although flash-attn's is True: True rotates GPT-J pairs (0 & 1, 2 & 3,
    ...), False GPT-NeoX halves (0 & rotary_dim / 2, ...), which transformers' Llama (rotate_half) and most
    checkpoints need. Calling flash-attn with its default on a half-split model is the layout bug this check exists
    to find, so the adapter makes its caller say which one the engine passes.

    rotary_cos, rotary_sin: the caller's tables (seqlen_ro, rotary_dim / 2) in the model dtype (flash-attn checks
    they have q's dtype); max_position = rotary_cos.shape[0] - 1, declared as ropecheck_max_position so the probe
    stays within the table. Calls have keys at contiguous positions ending at their queries' position (the probe's
    attention calls), else a RopecheckError; a call of several queries at that position makes one decode step per
    query, on the cache the first step wrote.
    """
    if not isinstance(rotary_interleaved, bool):
        raise RopecheckError(f"flash_attn_kvcache(..., rotary_interleaved={rotary_interleaved!r}): True (GPT-J pairs) "
                             "or False (GPT-NeoX halves, transformers' rotate_half), as the engine passes it")
    if not isinstance(rotary_cos, torch.Tensor) or not isinstance(rotary_sin, torch.Tensor) \
            or rotary_cos.shape != rotary_sin.shape or rotary_cos.dim() != 2 or rotary_cos.shape[0] < 1:
        raise RopecheckError("flash_attn_kvcache(flash_attn_with_kvcache, rotary_cos, rotary_sin): rotary_cos and "
                             "rotary_sin are tensors of one shape (seqlen_ro, rotary_dim / 2), the caller's tables")
    last = rotary_cos.shape[0] - 1
    tables = {}

    def call(q, k, v, q_positions, k_positions):
        nq, nk = q.shape[0], k.shape[0]
        if nq < 1 or nk < 1 or q_positions.dim() != 1 or k_positions.dim() != 1:
            raise RopecheckError(f"flash_attn_kvcache calls the kernel as decode steps: queries and their keys; got "
                                 f"{nq} queries and {nk} keys")
        p = int(k_positions[-1])
        p0 = p - nk + 1
        expected = torch.arange(p0, p + 1, device=k_positions.device, dtype=k_positions.dtype)
        if not torch.equal(k_positions, expected) or not bool(torch.all(q_positions == p)):
            raise RopecheckError(f"flash_attn_kvcache writes a call's keys at cache indices = their positions and "
                                 "runs each query as the decode step of the last: the keys must be contiguous and "
                                 f"end at the queries' position (got queries at {q_positions.tolist()[:4]}, keys at "
                                 f"{k_positions.tolist()[:8]}{' ...' if nk > 8 else ''})")
        if p > last:
            raise RopecheckError(f"the query's position {p} is past rotary_cos's last row {last}: check_attention(..., "
                                 f"max_position={last}) keeps the probe within the table (the adapter declares it)")
        if q.device not in tables:
            tables[q.device] = (rotary_cos.to(q.device), rotary_sin.to(q.device))
        cos, sin = tables[q.device]
        k_cache = torch.zeros((1, p + 1, *k.shape[1:]), dtype=k.dtype, device=k.device)
        v_cache = torch.zeros((1, p + 1, *v.shape[1:]), dtype=v.dtype, device=v.device)

        def step(query, start, stop, seqlen):
            return flash_attn_with_kvcache(query.unsqueeze(0), k_cache, v_cache, k=k[start:stop].unsqueeze(0),
                                           v=v[start:stop].unsqueeze(0), rotary_cos=cos, rotary_sin=sin,
                                           cache_seqlens=torch.tensor([seqlen], dtype=torch.int32, device=q.device),
                                           causal=True, window_size=(nk - 1, 0), rotary_interleaved=rotary_interleaved)

        if nk > 1:
            step(q[:1], 0, nk - 1, p0)  # the keys before the queries', as earlier steps wrote them (output not used)
        outs = []
        for i in range(nq):  # each query the decode step of the last key (each writes that same key at row p)
            out = step(q[i:i + 1], nk - 1, nk, p)
            if not isinstance(out, torch.Tensor):
                raise KernelOutputError(f"flash_attn_with_kvcache returned {type(out).__name__}, expected out (1, 1, "
                                        f"{q.shape[1]}, {v.shape[2]}) (return_softmax_lse is left False)")
            if out.dim() != 4 or out.shape[:2] != (1, 1):
                raise KernelOutputError(f"flash_attn_with_kvcache returned out {list(out.shape)}, expected (1, 1, "
                                        f"{q.shape[1]}, {v.shape[2]})")
            outs.append(out[0])
        return torch.cat(outs, dim=0)

    style = "interleaved (GPT-J)" if rotary_interleaved else "half-split (GPT-NeoX)"
    return _mark(call, "flash_attn_kvcache", f"flash_attn_kvcache({_name(flash_attn_with_kvcache)}, {style})",
                 f"flash_attn_with_kvcache(q [1, 1, HQ, D], k_cache, v_cache, k=, v=, rotary_cos=, rotary_sin=, "
                 f"cache_seqlens=, causal=True, window_size=(keys - 1, 0), rotary_interleaved={rotary_interleaved}) "
                 "writes the new keys into the adapter's cache and returns out [1, 1, HQ, DV] without changing q, k "
                 "or v", last)


KV_SHIFT_LAYOUTS = ("half_split", "interleaved")


def kv_shift(rotate: Callable, *, layout: Optional[str] = None) -> Callable:
    """The engine's K-shift for check_qk(kv_shift=...), made of a one-tensor RoPE rotate(x, positions) -> y.

    kv_shift(k_cached, positions, delta) returns rotate(k_cached, delta at every row): keys rotated at n, rotated
    again by delta, are at n + delta (R(delta) R(n) = R(n + delta)). That is llama.cpp's K-shift
    (src/llama-kv-cache.cpp, build_rope_shift: ggml_rope_ext over the cached K with each cell's shift as its
    position); transformers' SinkCache (src/transformers/cache_utils.py, _get_rerotation_cos_sin) forms the same
    rotation as the cos/sin of the difference of the old and new angles. The rounding is the engines': the rotated
    keys are rounded to the cache's dtype twice, once when written and once when shifted.

    rotate gets positions int64 [n], all delta, which is negative for a context shift. A rotate that cannot take
    a negative position (a cos/sin table indexed by position, as vLLM's cos_sin_cache) needs `layout`
    ("half_split" or "interleaved"): a negative delta is then applied as F R(-delta) F, F negating the second
    coordinate of each rotary pair (x[d/2:] of the half-split layout, x[1::2] of the interleaved one), which is
    R(delta); the reflection assumes rotary_dim = head_dim. rotate applies its rule's attention factor (YaRN's
    mscale) again on every call, and the cached keys already carry it: give a rotate without it.
    """
    if not callable(rotate):
        raise RopecheckError(f"kv_shift(rotate): rotate is a callable rotate(x, positions) -> y; got "
                             f"{type(rotate).__name__}")
    if layout is not None and layout not in KV_SHIFT_LAYOUTS:
        raise RopecheckError(f"kv_shift(rotate, layout={layout!r}): the layouts are {', '.join(KV_SHIFT_LAYOUTS)}")

    def reflect(x):
        y = x.clone()
        if layout == "interleaved":
            y[..., 1::2] = -y[..., 1::2]
        else:
            y[..., x.shape[-1] // 2:] = -y[..., x.shape[-1] // 2:]
        return y

    def shift(k_cached, positions, delta):
        d = int(delta)
        if layout is None or d >= 0:
            return rotate(k_cached, torch.full_like(positions, d))
        out = rotate(reflect(k_cached), torch.full_like(positions, -d))
        return None if out is None else reflect(out)

    return _mark(shift, "kv_shift", f"kv_shift({_name(rotate)})",
                 "rotate(k_cached, positions all delta) returns a new tensor of k_cached's shape and dtype, the keys "
                 "rotated by delta" + ("" if layout is None else f" (a negative delta by reflection, {layout})"))


from ._adapters_bias import (additive_bias_attention, alibi_tensor, flash_attn_alibi,  # noqa: E402 (score biases)
                             mpt_alibi_tensor, t5_bias)

__all__ = ["plain", "inplace", "inplace_qk", "hf", "vllm", "flash_attn", "eager_attention", "flash_attn_kvcache",
           "kv_shift", "flash_attn_alibi", "additive_bias_attention", "alibi_tensor", "mpt_alibi_tensor", "t5_bias"]
