"""The attention adapters (adapters.eager_attention, adapters.flash_attn_kvcache) call the wrapped code the way
transformers and an engine's decode step call it, without the `ropecheck` program: fakes record what they are
given, and the pure-torch emulation of flash_attn_with_kvcache (toys/flash_kvcache.py) is checked against eager
attention on the same call, so that the end-to-end tests (test_attention.py) rest on a faithful emulation.
"""

import os

import pytest
import torch

import attention_kernels
import flash_kvcache
import hf_style
import plain_style
import ropecheck as rc

HQ, HK, D = 8, 2, 64
SEED = int(os.environ.get("ROPECHECK_TEST_SEED", "31"))
LLAMA_GQA = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": HQ, "num_key_value_heads": HK,
             "head_dim": D, "rope_theta": 500000.0, "max_position_embeddings": 8192, "rope_scaling": None}


def _call(p=300, nk=12, nq=1, dtype=torch.float32, seed=SEED):
    """One attention call as the probe makes it: nq queries at p, keys p - nk + 1 .. p (the first all zeros), v
    one-hot per key."""
    print(f"seed {seed}")  # random inputs: ROPECHECK_TEST_SEED=<seed> reruns them
    gen = torch.Generator().manual_seed(seed)
    q = (torch.randint(-127, 128, (nq, HQ, D), generator=gen).float() / 128).to(dtype)
    k = (torch.randint(-127, 128, (nk, HK, D), generator=gen).float() / 128).to(dtype)
    k[0] = 0
    v = torch.zeros((nk, HK, D), dtype=dtype)
    v[torch.arange(nk), :, torch.arange(nk)] = 1
    return q, k, v, torch.full((nq,), p), torch.arange(p - nk + 1, p + 1)


def _hf_rotary():
    return rc.adapters.hf(hf_style.RotaryEmbedding(LLAMA_GQA), hf_style.apply_rotary_pos_emb)


def test_eager_attention_rotates_q_and_k_at_their_positions_then_attends():
    q, k, v, qp, kp = _call()
    rotated, attended = [], []

    def rotary(x, positions):
        rotated.append((x.clone(), positions.clone()))
        return x * 2

    def attn(q_, k_, v_, bias=None, scale=None):
        attended.append((q_.clone(), k_.clone(), v_.clone(), bias, scale))
        return torch.zeros(q_.shape[0], q_.shape[1], v_.shape[2], dtype=q_.dtype)

    fn = rc.adapters.eager_attention(attn, rotary)
    fn(q, k, v, qp, kp)
    assert [(torch.equal(x, t), torch.equal(p, pos)) for (x, p), t, pos in zip(rotated, (q, k), (qp, kp))] == \
        [(True, True), (True, True)], "rotary is called on q at q_positions, then on k at k_positions"
    a_q, a_k, a_v, bias, scale = attended[0]
    assert torch.equal(a_q, q * 2) and torch.equal(a_k, k * 2) and torch.equal(a_v, v) and (bias, scale) == (None, None)
    assert fn.ropecheck_adapter == "eager_attention" and fn.ropecheck_kernel.startswith("eager_attention(") \
        and "attn, " in fn.ropecheck_kernel and fn.ropecheck_kernel.endswith("rotary)"), fn.ropecheck_kernel


def test_eager_attention_with_transformers_eager_attention_forward():
    """module=: eager_attention_forward(module, query [1, HQ, Tq, D], key/value [1, HK, Tk, D], None,
    scaling=module.scaling) as LlamaAttention.forward calls it, attn_output[0] back as o; the same o as the
    [T, H, D] eager toy."""
    q, k, v, qp, kp = _call(nq=2)
    seen = []

    def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        seen.append((query.shape, key.shape, value.shape, attention_mask, scaling, dropout))
        return attention_kernels.eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout)

    module = attention_kernels.Module(HQ, HK, D)
    fn = rc.adapters.eager_attention(eager_attention_forward, _hf_rotary(), module=module)
    o = fn(q, k, v, qp, kp)
    assert seen == [((1, HQ, 2, D), (1, HK, 12, D), (1, HK, 12, D), None, D ** -0.5, 0.0)], seen
    reference = rc.adapters.eager_attention(attention_kernels.eager, _hf_rotary())(q, k, v, qp, kp)
    assert o.shape == (2, HQ, D) and torch.equal(o, reference), "the module path and the [T, H, D] path differ"
    with pytest.raises(rc.RopecheckError, match="num_key_value_groups is 2, but the check gives 8 query heads and 2"):
        rc.adapters.eager_attention(eager_attention_forward, _hf_rotary(),
                                    module=attention_kernels.Module(HQ, 4, D))(q, k, v, qp, kp)
    with pytest.raises(rc.RopecheckError, match="no 'num_key_value_groups'"):
        rc.adapters.eager_attention(eager_attention_forward, _hf_rotary(), module=object())


def test_eager_attention_declares_its_rotary_s_max_position():
    cos, sin = flash_kvcache.rotary_tables(D, 1000, 500000.0, torch.float32)
    rotary = rc.adapters.flash_attn(plain_style.rope, cos, sin)  # any x-form callable declaring a limit
    assert rc.adapters.eager_attention(attention_kernels.eager, rotary).ropecheck_max_position == 999
    assert not hasattr(rc.adapters.eager_attention(attention_kernels.eager, plain_style.rope),
                       "ropecheck_max_position")


class FakeFlash:
    """flash_attn_with_kvcache's signature, recording each call (cache shapes, the new keys' rows, cache_seqlens,
    causal, window, layout) and the cache object it wrote into; returns zeros (1, seqlen_q, HQ, DV)."""

    def __init__(self):
        self.calls = []

    def __call__(self, q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None,
                 causal=False, window_size=(-1, -1), rotary_interleaved=True, **rest):
        self.calls.append(dict(q=q.clone(), k_cache=k_cache, cache_shape=tuple(k_cache.shape),
                               v_cache_shape=tuple(v_cache.shape), k=k.clone(), v=v.clone(),
                               seqlens=cache_seqlens.tolist(), seqlens_dtype=cache_seqlens.dtype, causal=causal,
                               window=tuple(window_size), interleaved=rotary_interleaved, cos=rotary_cos, rest=rest))
        return torch.zeros(1, q.shape[1], q.shape[2], v_cache.shape[-1], dtype=q.dtype)


def test_flash_attn_kvcache_writes_the_earlier_keys_then_runs_the_decode_step():
    q, k, v, qp, kp = _call(p=300, nk=12, nq=2)
    cos, sin = flash_kvcache.rotary_tables(D, 8192, 500000.0, torch.float32)
    fake = FakeFlash()
    fn = rc.adapters.flash_attn_kvcache(fake, cos, sin, rotary_interleaved=False)
    o = fn(q, k, v, qp, kp)
    assert o.shape == (2, HQ, D) and len(fake.calls) == 3, "one write of the earlier keys, one decode step a query"
    first, *decodes = fake.calls
    assert first["cache_shape"] == (1, 301, HK, D) and first["v_cache_shape"] == (1, 301, HK, D)
    assert first["seqlens"] == [289] and torch.equal(first["k"], k[None, :11]) and torch.equal(first["v"], v[None, :11])
    for i, d in enumerate(decodes):
        assert d["seqlens"] == [300] and torch.equal(d["k"], k[None, 11:]) and torch.equal(d["q"], q[None, i:i + 1])
        assert d["k_cache"] is first["k_cache"], "the decode step reads the cache the first call wrote"
    for d in fake.calls:
        assert (d["causal"], d["window"], d["interleaved"], d["seqlens_dtype"]) == (True, (11, 0), False, torch.int32)
        assert d["cos"] is cos and d["rest"] == {}, "the caller's table is passed whole, nothing else"


def test_flash_attn_kvcache_with_one_key_is_one_decode_step():
    q, k, v, qp, kp = _call(p=0, nk=1)
    fake = FakeFlash()
    cos, sin = flash_kvcache.rotary_tables(D, 16, 500000.0, torch.float32)
    rc.adapters.flash_attn_kvcache(fake, cos, sin, rotary_interleaved=True)(q, k, v, qp, kp)
    assert [(c["seqlens"], c["cache_shape"], c["window"], c["interleaved"]) for c in fake.calls] == \
        [([0], (1, 1, HK, D), (0, 0), True)]


def test_flash_attn_kvcache_says_what_it_needs():
    cos, sin = flash_kvcache.rotary_tables(D, 256, 500000.0, torch.float32)
    with pytest.raises(TypeError, match="rotary_interleaved"):
        rc.adapters.flash_attn_kvcache(FakeFlash(), cos, sin)  # no default: flash-attn's True is GPT-J's pairs
    with pytest.raises(rc.RopecheckError, match="True \\(GPT-J pairs\\) or False"):
        rc.adapters.flash_attn_kvcache(FakeFlash(), cos, sin, rotary_interleaved="neox")
    with pytest.raises(rc.RopecheckError, match="one shape \\(seqlen_ro, rotary_dim / 2\\)"):
        rc.adapters.flash_attn_kvcache(FakeFlash(), cos, sin[:10], rotary_interleaved=False)
    fn = rc.adapters.flash_attn_kvcache(FakeFlash(), cos, sin, rotary_interleaved=False)
    assert fn.ropecheck_max_position == 255 and fn.ropecheck_adapter == "flash_attn_kvcache"
    q, k, v, qp, kp = _call(p=300)
    with pytest.raises(rc.RopecheckError, match="position 300 is past rotary_cos's last row 255: .*max_position=255"):
        fn(q, k, v, qp, kp)
    q, k, v, qp, kp = _call(p=100)
    with pytest.raises(rc.RopecheckError, match="must be contiguous and end at the queries' position"):
        fn(q, k, v, qp, kp.flip(0))
    with pytest.raises(rc.RopecheckError, match="must be contiguous and end at the queries' position"):
        fn(q, k, v, qp + 1, kp)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["float32", "bfloat16", "float16"])
def test_the_emulation_agrees_with_eager_attention(dtype):
    """flash_attn_kvcache over the emulation gives eager attention's o on the same call (transformers' rotation
    and softmax): to fp32 rounding in float32, to the dtype's rounding of the weights otherwise."""
    q, k, v, qp, kp = _call(p=4000, nk=40, nq=2, dtype=dtype)
    cos, sin = flash_kvcache.rotary_tables(D, 8192, 500000.0, dtype)
    flash = rc.adapters.flash_attn_kvcache(flash_kvcache.flash_attn_with_kvcache, cos, sin, rotary_interleaved=False)
    eager = rc.adapters.eager_attention(attention_kernels.eager, _hf_rotary())
    got, want = flash(q, k, v, qp, kp).float(), eager(q, k, v, qp, kp).float()
    tol = {torch.float32: 1e-6, torch.bfloat16: 2 ** -6, torch.float16: 2 ** -9}[dtype]
    assert (got - want).abs().max() <= tol, f"max |flash - eager| {(got - want).abs().max():.3g} > {tol:.3g}"
    assert torch.allclose(got.sum(-1), torch.ones(2, HQ), atol=64 * tol), "the weights sum to 1: the window works"


def test_the_emulation_in_the_interleaved_layout_agrees_with_meta_s_attention():
    q, k, v, qp, kp = _call(p=700, nk=20)
    cos, sin = flash_kvcache.rotary_tables(D, 1024, 500000.0, torch.float32)
    flash = rc.adapters.flash_attn_kvcache(flash_kvcache.flash_attn_with_kvcache, cos, sin, rotary_interleaved=True)
    got, want = flash(q, k, v, qp, kp), attention_kernels.meta_attention(q, k, v, qp, kp)
    assert (got - want).abs().max() <= 1e-6, f"max |flash - meta| {(got - want).abs().max():.3g}"


def test_the_emulation_writes_the_rotated_keys_into_the_cache_in_place():
    """The documented in-place write: after the call, k_cache rows cache_seqlens .. + n hold k rotated at those
    indices (flash_style's rotation), v_cache rows hold v."""
    _, k, v, _, _ = _call(p=50, nk=5)
    q = torch.ones(1, 1, HQ, D)
    cos, sin = flash_kvcache.rotary_tables(D, 64, 500000.0, torch.float32)
    k_cache, v_cache = torch.zeros(1, 64, HK, D), torch.zeros(1, 64, HK, D)
    flash_kvcache.flash_attn_with_kvcache(q, k_cache, v_cache, k=k[None], v=v[None], rotary_cos=cos, rotary_sin=sin,
                                          cache_seqlens=46, causal=True, rotary_interleaved=False)
    rotated = flash_kvcache.flash_style.apply_rotary_emb(k[None], cos, sin, seqlen_offsets=46)
    assert torch.equal(k_cache[:, 46:51], rotated) and torch.equal(v_cache[:, 46:51], v[None])
    assert not k_cache[:, :46].any() and not k_cache[:, 51:].any(), "rows outside the write were touched"


def test_the_emulation_s_bug_switches_change_its_output():
    q, k, v, qp, kp = _call(p=700, nk=20)
    cos, sin = flash_kvcache.rotary_tables(D, 1024, 500000.0, torch.float32)
    right = rc.adapters.flash_attn_kvcache(flash_kvcache.flash_attn_with_kvcache, cos, sin,
                                           rotary_interleaved=False)(q, k, v, qp, kp)
    for bugs in ({"interleaved_flipped": True}, {"k_offset": 1}):
        wrong = rc.adapters.flash_attn_kvcache(flash_kvcache.make(**bugs), cos, sin,
                                               rotary_interleaved=False)(q, k, v, qp, kp)
        assert (wrong - right).abs().max() > 1e-3, f"{bugs} did not change the output"
    flipped = rc.adapters.flash_attn_kvcache(flash_kvcache.make(interleaved_flipped=True), cos, sin,
                                             rotary_interleaved=True)(q, k, v, qp, kp)
    assert torch.equal(flipped, right), "interleaved_flipped with rotary_interleaved=True rotates halves"
