"""check_attention() on score-matrix biases (ALiBi, T5's buckets): `ropecheck probe --form attention` of a bias claim
(a BLOOM, MPT, Falcon-ALiBi or T5 config.json), the attention driver, `ropecheck audit` of the outputs file.

(a) Correct conventions pass in float32 and bfloat16: BLOOM (slope x key position in the model dtype; 16 heads and
    12, a non-power-of-two count), its builder through adapters.additive_bias_attention + alibi_tensor, MPT
    (gen_slopes, alibi_bias_max 8; 32 heads and 12), transformers' Falcon (bf16 slopes, bias scaled by 1/sqrt(d))
    under the transformers reading, vLLM's Falcon (fp32 slopes) under claim {"engine": "vllm"}, flash-attn's
    alibi_slopes (relative, fp32) through adapters.flash_attn_alibi, a tensor-parallel rank (rank 1 of 2: claim
    {"head_offset": 16, "local_heads": 16}), T5's encoder (bidirectional) and decoder ({"stack": "decoder"}: causal)
    through adapters.t5_bias over a T5Attention-like compute_bias with a seeded random table.
(b) Each bug is named FIRST by its class (the class is the bug's, never what the judge happens to say), and where a
    figure is fitted (a scale, an alibi_bias_max) the sentence carries it.
(c) Bias flags on a claim that has no bias: ClaimError naming the flag.

The toys are tests/python/toys/bias_kernels.py (their biases are checked against independent formulas, without the
binary, by test_bias_toys.py). Heads: the probe is asked for the heads the kernel holds (heads = kv_heads = the
config's, or local_heads for a rank), as these families' attention is multi-head.
"""

import re

import pytest
import torch

import bias_kernels as bk
import ropecheck as rc

F32, BF16 = torch.float32, torch.bfloat16
DTYPES = [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16")]


def bloom_config(heads):
    # transformers BloomConfig: n_head, hidden_size (head_dim = hidden_size / n_head), n_layer
    return {"model_type": "bloom", "architectures": ["BloomForCausalLM"], "hidden_size": 64 * heads, "n_head": heads,
            "n_layer": 2}


def mpt_config(heads):
    # transformers MptConfig: d_model, n_heads, attn_config {alibi, alibi_bias_max} (MPT-7B: 4096, 32, 8)
    return {"model_type": "mpt", "architectures": ["MPTForCausalLM"], "d_model": 128 * heads, "n_heads": heads,
            "n_layers": 2, "max_seq_len": 2048, "attn_config": {"alibi": True, "alibi_bias_max": 8}}


FALCON_RW = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "alibi": True, "hidden_size": 2048,
             "num_attention_heads": 32, "num_hidden_layers": 2, "multi_query": False,
             "new_decoder_architecture": False, "parallel_attn": False, "bias": True}
T5_SMALL = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "d_model": 512, "d_kv": 64,
            "d_ff": 2048, "num_heads": 8, "num_layers": 6, "num_decoder_layers": 6, "is_encoder_decoder": True,
            "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128, "feed_forward_proj": "relu"}
RANK1 = {"head_offset": 16, "local_heads": 16}
DECODER = {"stack": "decoder"}
VLLM = {"engine": "vllm"}


def _explain(v):
    return f"(probe seed {(v.json.get('metadata') or {}).get('seed', '?')})\n{v}"


def flash_mpt(heads):
    """flash-attn with the caller's fp32 MPT slopes (gen_slopes, alibi_bias_max 8), causal, as an engine passes them."""
    slopes = bk.mpt_slopes(heads).to(F32)
    return rc.adapters.flash_attn_alibi(bk.flash_attn_func, slopes, causal=True)


def bloom_builder(heads):
    """BLOOM's build_alibi_tensor's rule (the toy's own) through alibi_tensor + additive_bias_attention."""
    def build_alibi_tensor(attention_mask, num_heads, dtype):
        slopes = bk.paper_slopes(num_heads).to(F32)
        positions = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
        return (slopes[None, :, None] * positions).reshape(-1, 1, attention_mask.shape[1]).to(dtype)

    def fn(dtype):
        return rc.adapters.additive_bias_attention(bk.eager, rc.adapters.alibi_tensor(build_alibi_tensor, heads,
                                                                                      dtype))
    return fn


def t5(decoder, **bug):
    module = bk.T5LikeAttention(heads=8, is_decoder=decoder, seed=7, **bug)
    return rc.adapters.additive_bias_attention(bk.t5_eager, rc.adapters.t5_bias(module.compute_bias))


def t5_table(decoder=False):
    """The learned table of t5(decoder)'s module (the same seed): relative_attention_bias.weight [32, 8]."""
    return bk.T5LikeAttention(heads=8, is_decoder=decoder, seed=7).relative_attention_bias.weight


def t5_scaled(decoder, factor):
    """T5 with its bias multiplied by `factor` (a port adding it inside the scaled scores)."""
    module = bk.T5LikeAttention(heads=8, is_decoder=decoder, seed=7)

    def compute_bias(query_length, key_length, device=None, cache_position=None):  # the signature t5_bias reads
        return module.compute_bias(query_length, key_length, device=device, cache_position=cache_position) * factor
    return rc.adapters.additive_bias_attention(bk.t5_eager, rc.adapters.t5_bias(compute_bias))


# id -> (builder(dtype) -> fn, config, claim, heads)
CORRECT = {
    "bloom_16": (lambda dtype: bk.bloom(), bloom_config(16), None, 16),
    "bloom_12": (lambda dtype: bk.bloom(), bloom_config(12), None, 12),
    "bloom_builder_12": (bloom_builder(12), bloom_config(12), None, 12),
    "mpt_32": (lambda dtype: bk.mpt(), mpt_config(32), None, 32),
    "mpt_12": (lambda dtype: bk.mpt(), mpt_config(12), None, 12),
    "hf_falcon": (lambda dtype: bk.hf_falcon(), FALCON_RW, None, 32),
    "vllm_falcon": (lambda dtype: bk.vllm_falcon(), FALCON_RW, VLLM, 32),
    "flash_alibi_mpt_12": (lambda dtype: flash_mpt(12), mpt_config(12), None, 12),
    "bloom_tp_rank1": (lambda dtype: bk.bloom(total_heads=32, head_offset=16), bloom_config(32), RANK1, 16),
    "vllm_falcon_tp_rank1": (lambda dtype: bk.vllm_falcon(total_heads=32, head_offset=16), FALCON_RW,
                             dict(VLLM, **RANK1), 16),
    "t5_encoder": (lambda dtype: t5(False), T5_SMALL, None, 8),
    "t5_decoder": (lambda dtype: t5(True), T5_SMALL, DECODER, 8),
    "t5_encoder_table_given": (lambda dtype: t5(False), T5_SMALL, {"t5_table": t5_table()}, 8),
    "t5_decoder_table_given": (lambda dtype: t5(True), T5_SMALL, dict(DECODER, t5_table=t5_table(True)), 8),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", list(CORRECT))
def test_a_correct_bias_convention_passes(ropecheck, kernel, dtype):
    build, config, claim, heads = CORRECT[kernel]
    v = ropecheck.check_attention(build(dtype), config=config, claim=claim, dtype=dtype, heads=heads, kv_heads=heads)
    assert v.passed and v.exit_code == 0 and v.first_class is None, f"a correct {kernel} failed {_explain(v)}"
    assert v.forms == ["attention"] and v.attention[:2] == (heads, heads), (v.forms, v.attention)


def _figures(sentence):
    """The numbers of a sentence (decimals, and fractions a/b as their value)."""
    out = [float(a) / float(b) for a, b in re.findall(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)", sentence)]
    out += [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", sentence)]
    return out


# id -> (builder(dtype) -> fn, config, claim, heads, the class named first, a figure its sentence fits or None)
BUGS = {
    # mlx's create_alibi_slope before PR 3071: (2^8)^(-k/H) for every H; for H = 12 not the paper's slopes.
    "uniform_slopes_h12": (lambda dtype: bk.bloom(bk.uniform_slopes), bloom_config(12), None, 12,
                           "alibi_slopes_wrong", None),
    # head 0's slope 1 (powers 0 .. H - 1; aprender PR 2143).
    "exponent_off_by_one": (lambda dtype: bk.bloom(lambda h: bk.paper_slopes(h, exponent_shift=-1)),
                            bloom_config(16), None, 16, "alibi_slopes_wrong", None),
    # the paper's 12 slopes sorted (descending) instead of interleaved.
    "slopes_sorted_h12": (lambda dtype: bk.bloom(bk.sorted_slopes), bloom_config(12), None, 12,
                          "alibi_slopes_wrong", None),
    # MPT's gen_slopes with alibi_bias_max 16 under a config saying 8.
    "mpt_bias_max_16": (lambda dtype: bk.mpt(alibi_bias_max=16.0), mpt_config(12), None, 12, "alibi_slopes_wrong",
                        16.0),
    # rank 1 of TP 2 computing rank 0's slopes (Megatron-DeepSpeed issue 227).
    "tp_rank1_with_rank0_slopes": (lambda dtype: bk.bloom(total_heads=32, head_offset=0), bloom_config(32), RANK1,
                                   16, "alibi_slopes_wrong", None),
    # rank 1 computing slopes from its local head count (FlashInfer issue 1606).
    "tp_rank1_local_head_count": (lambda dtype: bk.bloom(), bloom_config(32), RANK1, 16, "alibi_slopes_wrong", None),
    # a bias growing with distance.
    "sign_flipped": (lambda dtype: bk.bloom(sign=-1.0), bloom_config(16), None, 16, "bias_sign_wrong", None),
    # BLOOM's bias scaled by 1/sqrt(head_dim) as Falcon's is: 1/8 of the claim's at head_dim 64.
    "bloom_bias_scaled": (lambda dtype: bk.bloom(scale_bias=True), bloom_config(16), None, 16, "bias_scaled", 0.125),
    # Falcon's bias added without its 1/sqrt(head_dim): 8 times the claim's.
    "falcon_scale_missing": (lambda dtype: bk.hf_falcon(scale_missing=True), FALCON_RW, None, 32, "bias_scaled",
                             8.0),
    # T5's decoder: the bias applied on prefill and dropped when one query attends a cache.
    "t5_decoder_bias_dropped_on_decode": (lambda dtype: bk.t5_dropped_on_decode(
        bk.T5LikeAttention(heads=8, is_decoder=True, seed=7)), T5_SMALL, DECODER, 8, "bias_missing", None),
    # the encoder bucketed as a decoder (causal buckets under a bidirectional claim), and the reverse.
    "t5_causal_buckets_in_encoder": (lambda dtype: t5(False, bidirectional_override=False), T5_SMALL, None, 8,
                                     "t5_buckets_wrong", None),
    "t5_bidirectional_buckets_in_decoder": (lambda dtype: t5(True, bidirectional_override=True), T5_SMALL, DECODER,
                                            8, "t5_buckets_wrong", None),
    # the table given: the bias scaled by 1/sqrt(d_kv) with q.k (T5 scales nothing), the partition right.
    "t5_table_scaled": (lambda dtype: t5_scaled(False, 0.125), T5_SMALL, {"t5_table": t5_table()}, 8,
                        "bias_scaled", 0.125),
    # the table given: the bias subtracted.
    "t5_table_negated": (lambda dtype: t5_scaled(False, -1.0), T5_SMALL, {"t5_table": t5_table()}, 8,
                         "bias_sign_wrong", None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bug", list(BUGS))
def test_a_bias_bug_is_named_first(ropecheck, bug, dtype):
    build, config, claim, heads, expected, figure = BUGS[bug]
    v = ropecheck.check_attention(build(dtype), config=config, claim=claim, dtype=dtype, heads=heads, kv_heads=heads)
    assert not v.passed and v.exit_code == 1, f"{bug}: not caught {_explain(v)}"
    assert v.first_class == expected, f"{bug}: named {v.first_class!r} first, expected {expected!r} {_explain(v)}"
    if figure is not None:
        sentence = v.findings[0].sentence
        assert any(abs(x - figure) <= 0.02 * figure for x in _figures(sentence)), \
            f"{bug}: the sentence does not carry the fitted {figure}: {sentence!r}"


def test_a_bias_held_in_bf16_is_named_under_fp32_inputs(ropecheck):
    """vLLM's Falcon with its bias -slope (m - n) held in bf16 (fp32 q, k, v): at long distance neighbouring keys
    share a score (bf16 spacing 32 at a bias of ~4096): bias_low_precision, not a pass."""
    v = ropecheck.check_attention(bk.vllm_falcon(bias_dtype=BF16), config=FALCON_RW, claim=VLLM, dtype=F32, heads=32,
                                  kv_heads=32)
    assert not v.passed and v.first_class == "bias_low_precision", _explain(v)


@pytest.mark.parametrize("claim, flag", [(DECODER, "--stack"), (RANK1, "--head-offset")])
def test_bias_flags_on_a_rope_claim_are_refused(ropecheck, claim, flag):
    llama = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
             "head_dim": 64, "rope_theta": 10000.0, "max_position_embeddings": 4096}
    with pytest.raises(rc.ClaimError, match=flag):
        ropecheck.check_attention(bk.bloom(), config=llama, claim=claim, dtype=F32, heads=8, kv_heads=8)


def test_stack_on_a_decoder_only_bias_family_is_refused(ropecheck):
    with pytest.raises(rc.ClaimError, match="stack"):
        ropecheck.check_attention(bk.bloom(), config=bloom_config(16), claim=DECODER, dtype=F32, heads=16,
                                  kv_heads=16)


@pytest.mark.parametrize("table, match", [(lambda: t5_table().T, r"--t5-table: .*shape \[8, 32\].*transposed"),
                                          (lambda: t5_table()[:, :4], r"--t5-table: .*shape \[32, 4\]"),
                                          (lambda: t5_table()[0], r"t5_table: shape \[8\]")])
def test_a_t5_table_of_another_shape_is_refused(ropecheck, table, match):
    with pytest.raises(rc.ClaimError, match=match):
        ropecheck.check_attention(t5(False), config=T5_SMALL, claim={"t5_table": table()}, dtype=F32, heads=8,
                                  kv_heads=8)


def test_a_t5_table_on_an_alibi_claim_is_refused(ropecheck):
    with pytest.raises(rc.ClaimError, match="--t5-table: .*ALiBi"):
        ropecheck.check_attention(bk.bloom(), config=bloom_config(16), claim={"t5_table": t5_table()}, dtype=F32,
                                  heads=16, kv_heads=16)
