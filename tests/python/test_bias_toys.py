"""The bias toys (toys/bias_kernels.py) and the bias adapters (ropecheck/_adapters_bias.py), without the binary.

Each toy's bias is read back from its output as the judge reads it (zero queries, so the scores are the bias alone;
one-hot values, so o's row is the softmax weights; log-weight differences are bias differences, the per-row
constant gone) and compared with an independent formula: the ALiBi paper's get_slopes (ofirpress/
attention_with_linear_biases, written here from its rule in numpy, as a list), MPT's gen_slopes, T5's
_relative_position_bucket as a scalar function in double precision. Each bug's toy must differ from the correct
rule in the way its class says (so that test_bias.py's expectations are about real differences). The adapters:
their reshaping (the wrapped kernel sees what an engine passes) and their refusals.
"""

import math

import numpy as np
import pytest
import torch

import bias_kernels as bk
import ropecheck.adapters as ad
from ropecheck.check import claim_flags
from ropecheck.errors import KernelOutputError, RopecheckError

F32 = torch.float32


# --- independent formulas ---------------------------------------------------------------------------------------

def np_get_slopes(n):
    """The paper's get_slopes, from its rule: for a power of two n, start = 2^(-2^-(log2 n - 3)), slope i =
    start^(i + 1); else the slopes of the closest power of two P, then every other slope of 2P's."""
    def pow2(n):
        start = 2.0 ** (-2.0 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    p = 2 ** math.floor(math.log2(n))
    return pow2(p) + np_get_slopes(2 * p)[0::2][:n - p]


def np_gen_slopes(n, bias_max=8):
    p = 2 ** math.ceil(math.log2(n))
    m = np.arange(1, p + 1, dtype=np.float64) * (bias_max / p)
    s = 1.0 / np.power(2.0, m)
    if p != n:
        s = np.concatenate([s[1::2], s[::2]])[:n]
    return s


def np_t5_bucket(rel, bidirectional, num_buckets=32, max_distance=128):
    """T5's bucket of relative position rel = key - query (mesh-tensorflow's rule), in double; also returns how
    close the log term is to an integer (float32 arithmetic may round there)."""
    ret, n = 0, -rel
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if n < 0 else 0
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n, 1.0
    x = math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    return ret + min(max_exact + int(x), num_buckets - 1), abs(x - round(x))


# --- reading a kernel's bias back -------------------------------------------------------------------------------

def read_bias(fn, heads, q_pos, k_pos, dtype=F32, head_dim=16):
    """The bias differences fn applies (minus key 0's), [heads, keys], from o with zero queries and one-hot values."""
    nk = len(k_pos)
    q = torch.zeros((1, heads, head_dim), dtype=dtype)
    k = torch.randn((nk, heads, head_dim), generator=torch.Generator().manual_seed(1)).to(dtype)
    v = torch.eye(nk, dtype=dtype)[:, None, :].expand(nk, heads, nk).contiguous()
    with torch.no_grad():  # as the driver calls it (a module's table requires grad)
        o = fn(q, k, v, torch.tensor([q_pos]), torch.tensor(k_pos))
    logw = torch.log(o[0].double())  # [heads, keys]
    return (logw - logw[:, :1]).numpy()


def relative_alibi(slopes, q_pos, k_pos, scale=1.0):
    s = np.asarray(slopes, dtype=np.float64)[:, None]
    b = -s * (q_pos - np.asarray(k_pos, dtype=np.float64))[None, :] * scale
    return b - b[:, :1]


KEYS = list(range(100, 121))  # 21 contiguous keys ending at the query
QUERY = 120
# HF Falcon's bias: a bf16 slope times a key position <= QUERY, rounded to bf16; two of them in a difference
BF16_PRODUCT = 2 * 2.0 ** -8 * QUERY


# --- slopes -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("heads", list(range(1, 65)))
def test_paper_and_mpt_slopes_match_the_papers_rule(heads):
    np.testing.assert_allclose(bk.paper_slopes(heads).numpy(), np_get_slopes(heads), rtol=1e-15)
    np.testing.assert_allclose(bk.mpt_slopes(heads).numpy(), np_gen_slopes(heads), rtol=1e-15)
    # MPT's gen_slopes with alibi_bias_max 8 reaches BLOOM's slopes by another route (mosaicml/examples PR 307)
    np.testing.assert_allclose(bk.mpt_slopes(heads).numpy(), np_get_slopes(heads), rtol=1e-14)


def test_the_slope_bugs_differ_where_their_classes_say():
    paper12 = np.array(np_get_slopes(12))
    assert not np.allclose(bk.uniform_slopes(12).numpy(), paper12)  # mlx before PR 3071: wrong for H = 12
    np.testing.assert_allclose(bk.uniform_slopes(16).numpy(), np_get_slopes(16), rtol=1e-14)  # right for 2^k
    assert bk.paper_slopes(12, exponent_shift=-1)[0].item() == 1.0  # head 0's slope 1
    srt = bk.sorted_slopes(12).numpy()
    np.testing.assert_allclose(sorted(srt), sorted(paper12), rtol=1e-14)
    assert not np.allclose(srt, paper12)  # same slopes, another order
    assert not np.allclose(bk.mpt_slopes(32, 16).numpy(), np_gen_slopes(32, 8))
    assert not np.allclose(bk.mpt_slopes(12, 16).numpy(), np_gen_slopes(12, 8))


# --- ALiBi kernels ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("heads", [12, 16])
def test_bloom_bias_is_relative_alibi_up_to_a_row_constant(heads):
    got = read_bias(bk.bloom(), heads, QUERY, KEYS)
    np.testing.assert_allclose(got, relative_alibi(np_get_slopes(heads), QUERY, KEYS), atol=2e-5)


@pytest.mark.parametrize("heads", [12, 32])
def test_mpt_bias(heads):
    got = read_bias(bk.mpt(), heads, QUERY, KEYS)
    np.testing.assert_allclose(got, relative_alibi(np_gen_slopes(heads), QUERY, KEYS), atol=2e-5)


def test_hf_falcon_bias_is_scaled_and_from_bf16_slopes():
    heads, d = 32, 64
    got = read_bias(bk.hf_falcon(), heads, QUERY, KEYS, head_dim=d)
    slopes_bf16 = torch.tensor(np_get_slopes(heads), dtype=F32).bfloat16().double().numpy()
    # key positions <= 120 times a bf16 slope: the bf16 product rounds to 8 significant bits (half an ulp: at most
    # 2^-8 of the value, <= 120 x 2^-8 here), and a difference of two such products errs by twice that
    want = relative_alibi(slopes_bf16, QUERY, KEYS, scale=d ** -0.5)
    np.testing.assert_allclose(got, want, atol=BF16_PRODUCT * d ** -0.5 + 1e-5)
    assert not np.allclose(got, relative_alibi(np_get_slopes(heads), QUERY, KEYS), atol=1e-3)  # the scale is there


def test_vllm_falcon_bias_is_scaled_fp32():
    heads, d = 32, 64
    got = read_bias(bk.vllm_falcon(), heads, QUERY, KEYS, head_dim=d)
    np.testing.assert_allclose(got, relative_alibi(np_get_slopes(heads), QUERY, KEYS, scale=d ** -0.5), atol=2e-5)


def test_alibi_bugs_read_back_as_their_classes():
    paper16 = np_get_slopes(16)
    right = relative_alibi(paper16, QUERY, KEYS)
    np.testing.assert_allclose(read_bias(bk.bloom(sign=-1.0), 16, QUERY, KEYS), -right, atol=2e-5)  # sign
    np.testing.assert_allclose(read_bias(bk.bloom(scale_bias=True), 16, QUERY, KEYS, head_dim=64),
                               right / 8.0, atol=2e-5)  # BLOOM's bias scaled by 1/sqrt(64)
    np.testing.assert_allclose(read_bias(bk.hf_falcon(scale_missing=True), 16, QUERY, KEYS, head_dim=64), right,
                               atol=BF16_PRODUCT + 1e-4)  # Falcon's scale missing: sqrt(d) x the claim's
    np.testing.assert_allclose(read_bias(bk.bloom(bk.uniform_slopes), 12, QUERY, KEYS),
                               relative_alibi(2.0 ** (-8.0 * np.arange(1, 13) / 12), QUERY, KEYS), atol=2e-5)
    rank1 = relative_alibi(np_get_slopes(32)[16:], QUERY, KEYS)
    np.testing.assert_allclose(read_bias(bk.bloom(total_heads=32, head_offset=16), 16, QUERY, KEYS), rank1, atol=2e-5)
    rank0 = read_bias(bk.bloom(total_heads=32, head_offset=0), 16, QUERY, KEYS)
    assert not np.allclose(rank0, rank1, atol=1e-3)


def test_bias_in_bf16_collides_at_long_distance():
    """At distance ~65600 with head 0's scaled slope 2^-1 / sqrt(64) = 2^-4 (8 heads), the bias is ~ -4100, where
    bf16's spacing is 32: the neighbouring far keys, 2^-4 apart in fp32, get one score in bf16."""
    heads, m = 8, 70000
    keys = list(range(m - 65600, m - 65590))
    good = read_bias(bk.vllm_falcon(), heads, m, keys, head_dim=64)
    bad = read_bias(bk.vllm_falcon(bias_dtype=torch.bfloat16), heads, m, keys, head_dim=64)
    want = relative_alibi(np_get_slopes(heads), m, keys, scale=0.125)
    np.testing.assert_allclose(good, want, atol=2 * 2.0 ** -24 * 4100 + 1e-5)  # two fp32 roundings of ~4100
    np.testing.assert_allclose(bad[0], 0.0, atol=1e-6)  # head 0: every far key one score
    assert want[0, -1] == pytest.approx(9 * 2.0 ** -4)


# --- flash-attn style -------------------------------------------------------------------------------------------

def test_flash_attn_alibi_causal_gives_relative_bias():
    slopes = torch.tensor(np_get_slopes(12), dtype=F32)
    fn = ad.flash_attn_alibi(bk.flash_attn_func, slopes, causal=True)
    np.testing.assert_allclose(read_bias(fn, 12, QUERY, KEYS), relative_alibi(np_get_slopes(12), QUERY, KEYS),
                               atol=2e-5)
    assert fn.ropecheck_adapter == "flash_attn_alibi" and "causal=True" in fn.ropecheck_assumes


def test_flash_attn_alibi_bidirectional_places_the_query_among_its_keys():
    """Non-causal: the call's query (random, not zero: its row must be the one read) at row m - p0 among the keys
    gets -slope |m - n|; o equals softmax(q k^T / sqrt(d) - slope |m - n|) v computed here."""
    heads, d, m, keys = 8, 16, 60, torch.arange(50, 71)
    slopes = torch.tensor(np_get_slopes(heads), dtype=F32)
    fn = ad.flash_attn_alibi(bk.flash_attn_func, slopes, causal=False)
    gen = torch.Generator().manual_seed(4)
    q, k = torch.randn((1, heads, d), generator=gen), torch.randn((21, heads, d), generator=gen)
    v = torch.randn((21, heads, 5), generator=gen)
    o = fn(q, k, v, torch.tensor([m]), keys)
    scores = torch.einsum("hd,khd->hk", q[0].double(), k.double()) * d ** -0.5
    scores = scores - slopes.double()[:, None] * (m - keys).abs().double()[None, :]
    want = torch.einsum("hk,khe->he", torch.softmax(scores, dim=-1), v.double())
    np.testing.assert_allclose(o[0].double().numpy(), want.numpy(), atol=1e-5)


def test_flash_attn_alibi_refusals():
    slopes = torch.tensor(np_get_slopes(8), dtype=F32)
    fn = ad.flash_attn_alibi(bk.flash_attn_func, slopes, causal=True)
    q, k = torch.zeros((1, 8, 16)), torch.zeros((4, 8, 16))
    with pytest.raises(RopecheckError, match="bottom right"):
        fn(q, k, k, torch.tensor([10]), torch.tensor([5, 6, 7, 8]))  # keys end before the query
    with pytest.raises(RopecheckError, match="contiguous"):
        fn(q, k, k, torch.tensor([8]), torch.tensor([1, 2, 7, 8]))
    with pytest.raises(RopecheckError, match="4 slopes"):
        ad.flash_attn_alibi(bk.flash_attn_func, slopes[:4], causal=True)(q, k, k, torch.tensor([8]),
                                                                         torch.tensor([5, 6, 7, 8]))
    with pytest.raises(RopecheckError, match="float32"):
        ad.flash_attn_alibi(bk.flash_attn_func, slopes.bfloat16(), causal=True)
    with pytest.raises(RopecheckError, match="True or False"):
        ad.flash_attn_alibi(bk.flash_attn_func, slopes, causal=1)
    with pytest.raises(RopecheckError, match="within the keys"):
        ad.flash_attn_alibi(bk.flash_attn_func, slopes, causal=False)(q, k, k, torch.tensor([20]),
                                                                      torch.tensor([5, 6, 7, 8]))


def test_flash_attn_alibi_hands_the_slopes_over_untouched():
    seen = {}

    def kernel(q, k, v, softmax_scale=None, causal=False, alibi_slopes=None):
        seen.update(q=q.shape, k=k.shape, causal=causal, slopes=alibi_slopes, scale=softmax_scale)
        return torch.zeros((1, q.shape[1], q.shape[2], v.shape[3]))
    slopes = torch.tensor([0.3, 0.1], dtype=F32)
    fn = ad.flash_attn_alibi(kernel, slopes, causal=True, softmax_scale=0.5)
    out = fn(torch.zeros((1, 2, 4)), torch.zeros((3, 1, 4)), torch.zeros((3, 1, 3)), torch.tensor([7]),
             torch.tensor([5, 6, 7]))
    assert out.shape == (1, 2, 3)
    assert seen["q"] == (1, 1, 2, 4) and seen["k"] == (1, 3, 1, 4) and seen["causal"] and seen["scale"] == 0.5
    assert torch.equal(seen["slopes"], slopes)


# --- eager with an additive bias, transformers' builders --------------------------------------------------------

def bloom_like_build_alibi_tensor(attention_mask, num_heads, dtype):
    """BLOOM's builder's contract (modeling_bloom.py build_alibi_tensor), written here from its rule."""
    slopes = torch.tensor(np_get_slopes(num_heads), dtype=F32)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[None, :, None] * arange_tensor
    return alibi.reshape(attention_mask.shape[0] * num_heads, 1, attention_mask.shape[1]).to(dtype)


def mpt_like_build(num_heads, sequence_length, alibi_bias_max=8, device=None):
    s = torch.tensor(np_gen_slopes(num_heads, alibi_bias_max), dtype=F32)
    return torch.arange(1 - sequence_length, 1, dtype=torch.int32)[None, None, :] * s[:, None, None]


@pytest.mark.parametrize("heads", [12, 16])
def test_additive_bias_attention_over_bloom_builder(heads):
    fn = ad.additive_bias_attention(bk.t5_eager, ad.alibi_tensor(bloom_like_build_alibi_tensor, heads, F32))
    np.testing.assert_allclose(read_bias(fn, heads, QUERY, KEYS), relative_alibi(np_get_slopes(heads), QUERY, KEYS),
                               atol=2e-5)


def test_additive_bias_attention_over_mpt_builder():
    fn = ad.additive_bias_attention(bk.t5_eager, ad.mpt_alibi_tensor(mpt_like_build, 12, alibi_bias_max=8))
    np.testing.assert_allclose(read_bias(fn, 12, QUERY, KEYS), relative_alibi(np_gen_slopes(12), QUERY, KEYS),
                               atol=2e-5)


def test_the_builders_columns_are_the_keys_positions():
    """alibi_tensor and mpt_alibi_tensor take the builder's columns at the keys' positions (not its first columns):
    shown on keys that are not contiguous, where the two differ."""
    kp, qp = torch.tensor([2, 5, 9]), torch.tensor([9])
    bloom = ad.alibi_tensor(bloom_like_build_alibi_tensor, 4, F32)(qp, kp)
    np.testing.assert_allclose(bloom[:, 0].numpy(), np.array(np_get_slopes(4))[:, None] * np.array([2, 5, 9]),
                               rtol=1e-6)
    mpt = ad.mpt_alibi_tensor(mpt_like_build, 4)(qp, kp)
    np.testing.assert_allclose(mpt[:, 0].numpy(), np_gen_slopes(4)[:, None] * np.array([-7, -4, 0]), rtol=1e-6)
    t5 = bk.T5LikeAttention(seed=2)
    got = ad.t5_bias(t5.compute_bias)(qp, kp).detach()
    table = t5.relative_attention_bias.weight.detach()
    want = torch.stack([table[np_t5_bucket(n - 9, True)[0]] for n in (2, 5, 9)], dim=1)
    assert torch.equal(got[:, 0], want)


def test_additive_bias_attention_module_form():
    class Module:
        scaling = 0.25
    seen = {}

    def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
        seen.update(q=query.shape, mask=attention_mask.shape, scaling=scaling)
        return torch.zeros((1, query.shape[2], query.shape[1], value.shape[3])), None
    bias_fn = ad.alibi_tensor(bloom_like_build_alibi_tensor, 4, F32)
    fn = ad.additive_bias_attention(eager_attention_forward, bias_fn, module=Module())
    out = fn(torch.zeros((1, 4, 8)), torch.zeros((5, 4, 8)), torch.zeros((5, 4, 5)), torch.tensor([9]),
             torch.arange(5, 10))
    assert out.shape == (1, 4, 5) and seen == {"q": (1, 4, 1, 8), "mask": (1, 4, 1, 5), "scaling": 0.25}


def test_additive_bias_attention_refusals():
    with pytest.raises(RopecheckError, match="bias builder"):
        ad.additive_bias_attention(bk.t5_eager, None)
    with pytest.raises(RopecheckError, match="scaling"):
        ad.additive_bias_attention(bk.t5_eager, lambda a, b: None, module=object())
    fn = ad.additive_bias_attention(bk.t5_eager, lambda qp, kp: torch.zeros((3, 1, len(kp))))
    with pytest.raises(KernelOutputError, match=r"\[heads, Tq, Tk\]"):
        fn(torch.zeros((1, 4, 8)), torch.zeros((5, 4, 8)), torch.zeros((5, 4, 5)), torch.tensor([9]),
           torch.arange(5, 10))
    bloom_fn = ad.alibi_tensor(bloom_like_build_alibi_tensor, 4, F32)
    with pytest.raises(RopecheckError, match="from 0"):
        bloom_fn(torch.tensor([2]), torch.tensor([-1, 0, 1, 2]))


# --- T5 ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bucket_matches_the_rule(bidirectional):
    rel = torch.arange(-400, 401)
    got = bk.relative_position_bucket(rel, bidirectional).tolist()
    near = 0
    for r, g in zip(rel.tolist(), got):
        want, margin = np_t5_bucket(r, bidirectional)
        if margin < 1e-5:  # float32's log may round across the integer; HF's float32 value is the rule there
            near += 1
            assert abs(g - want) <= 1
        else:
            assert g == want, (r, g, want)
    assert near < 20
    fixed = {0: 0, 1: 17, -1: 1, -7: 7, -8: 8, 8: 24, -1000: 15, 1000: 31} if bidirectional else \
        {0: 0, 5: 0, -1: 1, -15: 15, -16: 16, -1000: 31}
    for r, b in fixed.items():
        assert bk.relative_position_bucket(torch.tensor([r]), bidirectional).item() == b, r


@pytest.mark.parametrize("decoder", [False, True])
def test_t5_bias_adapter_maps_a_call_onto_compute_bias(decoder):
    module = bk.T5LikeAttention(is_decoder=decoder, seed=3)
    table = module.relative_attention_bias.weight.detach().double().numpy()  # [buckets, heads]
    fn = ad.additive_bias_attention(bk.t5_eager, ad.t5_bias(module.compute_bias))
    keys = list(range(40, 260)) if not decoder else list(range(0, 201))
    q_pos = 200
    got = read_bias(fn, 8, q_pos, keys, head_dim=8)
    want = np.stack([table[np_t5_bucket(n - q_pos, not decoder)[0]] for n in keys], axis=1)  # [heads, keys]
    np.testing.assert_allclose(got, want - want[:, :1], atol=1e-4)


def test_t5_bias_without_cache_position():
    module = bk.T5LikeAttention(seed=5)

    def old_compute_bias(query_length, key_length, device=None):  # transformers before cache_position
        return module.compute_bias(query_length, key_length, device=device)
    new = ad.t5_bias(module.compute_bias)(torch.tensor([30]), torch.arange(10, 50))
    old = ad.t5_bias(old_compute_bias)(torch.tensor([30]), torch.arange(10, 50))
    assert old.shape == (8, 1, 40) and torch.equal(new, old)


def test_t5_bugs_differ():
    enc = bk.T5LikeAttention(seed=3)
    causal = bk.T5LikeAttention(seed=3, bidirectional_override=False)
    keys = torch.arange(0, 60)
    a = ad.t5_bias(enc.compute_bias)(torch.tensor([20]), keys)
    b = ad.t5_bias(causal.compute_bias)(torch.tensor([20]), keys)
    assert not torch.equal(a, b)  # causal: 32 buckets for the past (bidirectional: 16 each side)
    after = b[:, 0, 21:]  # keys after the query: causal buckets put them all in bucket 0, the query's own
    assert torch.equal(after, b[:, 0, 20:21].expand_as(after)) and not torch.equal(a[:, 0, 21:], a[:, 0, 20:21].expand(8, 39))
    dec = bk.T5LikeAttention(is_decoder=True, seed=3)
    dropped = bk.t5_dropped_on_decode(dec)
    got = read_bias(dropped, 8, 30, list(range(0, 31)), head_dim=8)
    np.testing.assert_allclose(got, 0.0, atol=1e-5)  # no bias on a call with a cache
    right = read_bias(ad.additive_bias_attention(bk.t5_eager, ad.t5_bias(dec.compute_bias)), 8, 30,
                      list(range(0, 31)), head_dim=8)
    assert np.abs(right).max() > 0.1


def test_claim_keys_of_sharded_and_stacked_claims_become_flags():
    assert claim_flags({"stack": "decoder"}) == ["--stack", "decoder"]
    assert claim_flags({"head_offset": 16, "local_heads": 16}) == ["--head-offset", "16", "--local-heads", "16"]
