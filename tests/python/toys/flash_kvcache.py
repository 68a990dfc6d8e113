"""A pure-torch emulation of flash-attn's flash_attn_with_kvcache with its rotary arguments, for the attention form's
tests (flash-attn is a CUDA extension, not installed here). Written from its documented semantics (read, not
copied), Dao-AILab/flash-attention at 0251105a:

- flash_attn/flash_attn_interface.py, flash_attn_with_kvcache's docstring: q (batch, seqlen, nheads, headdim);
  k_cache, v_cache (batch_size_cache, seqlen_cache, nheads_k, headdim) "updated *inplace* with the new values
  from k and v", k concatenated "starting at the indices specified by cache_seqlens"; "The key @k will be rotated
  by rotary_cos and rotary_sin at indices cache_seqlens, cache_seqlens + 1, etc. If causal or local ..., the query
  @q will be rotated by rotary_cos and rotary_sin at indices cache_seqlens, cache_seqlens + 1, etc. If not causal
  and not local, the query @q will be rotated ... at indices cache_seqlens only"; rotary_interleaved True combines
  dimensions 0 & 1, 2 & 3 (its default), False 0 & rotary_dim / 2 (GPT-NeoX); GQA head h reads kv head
  h // (nheads / nheads_k); the causal mask aligned to the bottom right; a local window: "Query at position i
  will only attend to keys between [i + seqlen_k - seqlen_q - window_size[0], i + seqlen_k - seqlen_q +
  window_size[1]] inclusive"; softmax_scale defaults to q.shape[-1] ** (-0.5); the output (batch, seqlen, nheads,
  headdim).
- csrc/flash_attn/flash_api.cpp, mha_fwd_kvcache: the checks this emulation repeats (k_cache and v_cache of q's
  dtype and head size, num_heads divisible by num_heads_k, rotary only with new k, rotary_dim <= headdim and a
  multiple of 16, `seqlen_ro >= seqlen_k` "cos/sin seqlen must be at least the seqlen of KV cache", rotary_cos of
  q's dtype); causal dropped when seqlen_q == 1 (without alibi), and then (causal) window_size[1] = 0; a
  window side >= seqlen_k is none (-1).
- tests/test_flash_attn.py, test_flash_attn_kvcache and attention_ref (the reference the kernel is tested
  against): q and k rotated by flash_attn.layers.rotary.apply_rotary_emb with seqlen_offsets=cache_seqlens, the
  rotated k stored in the cache (`k_cache_ref[update_mask] = ... k_ro`), then scores `einsum(q / sqrt(d), k)`,
  softmax and `einsum(attention, v)` computed in fp32 (upcast=True) and cast to q's dtype.

The rotation is flash_style.apply_rotary_emb (fp32 arithmetic stored in the dtype, as the Triton kernel). Unlike
flash-attn (fp16 and bf16 only), float32 is accepted, so the adapter is tested in every probe dtype. Only the
arguments the adapter passes are emulated (no cache_batch_idx, cache_leftpad, block_table, softcap, alibi).

Bug switches (keywords of make(); all off is the documented behaviour):
  interleaved_flipped  the rotary layout read backwards: pairs (2i, 2i+1) when rotary_interleaved=False, halves
                       when True (a kernel whose flag is inverted)
  k_offset=N           the new keys rotated at cache indices cache_seqlens + i + N (the query at cache_seqlens + i):
                       an off-by-one in the kernel's key rotation
"""

import torch

import flash_style


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False, *,
                            interleaved_flipped=False, k_offset=0):
    """flash_attn_with_kvcache's signature and semantics (module docstring); the keywords after * are bugs."""
    if cache_batch_idx is not None or cache_leftpad is not None or block_table is not None or softcap \
            or alibi_slopes is not None:
        raise NotImplementedError("the emulation has no cache_batch_idx, cache_leftpad, block_table, softcap or alibi")
    batch, seqlen_q, nheads, d = q.shape
    seqlen_k, nheads_k = k_cache.shape[1], k_cache.shape[2]
    if k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        raise RuntimeError("query and key must have the same dtype")
    if k_cache.shape[-1] != d or v_cache.shape[-1] != d:
        raise RuntimeError(f"k_cache and v_cache must have shape (batch, seqlen_k, nheads_k, {d}), the head size of q")
    if nheads % nheads_k:
        raise RuntimeError("Number of heads in key/value must divide number of heads in query")
    if softmax_scale is None:
        softmax_scale = d ** (-0.5)
    if isinstance(cache_seqlens, int):
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32, device=k_cache.device)
    if cache_seqlens is None:
        cache_seqlens = torch.zeros((batch,), dtype=torch.int32, device=k_cache.device)
    if seqlen_q == 1:
        causal = False  # flash-attention csrc/flash_attn/flash_api.cpp: "causal=true is the same as causal=false in this case"
    left, right = (int(w) for w in window_size)
    if causal:
        right = 0
    left, right = (-1 if w >= seqlen_k else w for w in (left, right))
    local = (left, right) != (-1, -1)
    q_ro = q
    seqlen_new = 0
    if rotary_cos is not None:
        if k is None:
            raise RuntimeError("If rotary cos/sin are provided, new key / value to be appended to KV cache must also "
                               "be provided")
        rotary_dim = rotary_cos.shape[1] * 2
        if rotary_dim > d or rotary_dim % 16:
            raise RuntimeError("rotary_dim must be <= headdim and divisible by 16")
        if rotary_cos.shape[0] < seqlen_k:
            raise RuntimeError("cos/sin seqlen must be at least the seqlen of KV cache")
        if rotary_cos.dtype != q.dtype or rotary_sin.dtype != q.dtype:
            raise RuntimeError("rotary_cos must have the same dtype as query")
    interleaved = rotary_interleaved != interleaved_flipped
    offsets = cache_seqlens.to(torch.int64)
    if k is not None:
        seqlen_new = k.shape[1]
        k_ro = k
        if rotary_cos is not None:
            k_ro = flash_style.apply_rotary_emb(k, rotary_cos, rotary_sin, interleaved=interleaved,
                                                seqlen_offsets=offsets + k_offset)
            if causal or local:
                q_ro = flash_style.apply_rotary_emb(q, rotary_cos, rotary_sin, interleaved=interleaved,
                                                    seqlen_offsets=offsets)
            else:  # neither causal nor local: every query token at cache_seqlens
                flat = q.reshape(batch, 1, seqlen_q * nheads, d)
                q_ro = flash_style.apply_rotary_emb(flat, rotary_cos, rotary_sin, interleaved=interleaved,
                                                    seqlen_offsets=offsets).reshape(q.shape)
        for b in range(batch):  # the in-place write: the cache holds the rotated keys
            s = int(cache_seqlens[b])
            k_cache[b, s:s + seqlen_new] = k_ro[b]
            v_cache[b, s:s + seqlen_new] = v[b]
    outs = []
    for b in range(batch):
        sk = int(cache_seqlens[b]) + seqlen_new
        # Keys left of every query's window get weight 0: only the columns from the first visible one are computed
        # (the same softmax, without the cost of a long cache of which a call sees a few rows).
        lo = max(0, sk - seqlen_q - left) if local and left >= 0 else 0
        keys = k_cache[b, lo:sk].float().repeat_interleave(nheads // nheads_k, dim=1)  # (sk - lo, nheads, d)
        values = v_cache[b, lo:sk].float().repeat_interleave(nheads // nheads_k, dim=1)
        scores = torch.einsum("thd,shd->hts", q_ro[b].float() * softmax_scale, keys)
        row = torch.arange(seqlen_q, device=q.device)[:, None] + sk - seqlen_q  # bottom-right alignment
        col = torch.arange(lo, sk, device=q.device)[None, :]
        if causal:  # query i sees keys j <= i + sk - seqlen_q
            scores = scores.masked_fill(col > row, float("-inf"))
        if local:  # keys in [i + sk - seqlen_q - left, i + sk - seqlen_q + right]; -1: unbounded on that side
            outside = ((col < row - left) if left >= 0 else torch.zeros_like(col > row)) | \
                ((col > row + right) if right >= 0 else torch.zeros_like(col > row))
            scores = scores.masked_fill(outside, float("-inf"))
        attention = torch.softmax(scores, dim=-1)
        outs.append(torch.einsum("hts,shd->thd", attention, values))
    out = torch.stack(outs).to(q.dtype)
    if return_softmax_lse:
        raise NotImplementedError("the emulation does not return softmax_lse")
    return out


def make(name="flash_attn_with_kvcache", **bugs):
    """flash_attn_with_kvcache with the given bug switches, named `name` (the verdict shows the name)."""

    def fn(*args, **kwargs):
        return flash_attn_with_kvcache(*args, **kwargs, **bugs)

    fn.__name__ = fn.__qualname__ = name
    return fn


def rotary_tables(head_dim, seqlen, base, dtype, device=None):
    """The caller's rotary_cos, rotary_sin (seqlen, head_dim / 2) in dtype, as flash-attn's RotaryEmbedding builds
    them (flash_style.cos_sin_cache: fp32 positions and angles, cast to the model dtype)."""
    return flash_style.cos_sin_cache(head_dim, seqlen, base, device=device, dtype=dtype)


__all__ = ["flash_attn_with_kvcache", "make", "rotary_tables"]
