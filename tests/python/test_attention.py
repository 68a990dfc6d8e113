"""check_attention() end to end: `ropecheck probe --form attention`, the attention driver, `ropecheck audit` of its
outputs file (the scores read back from o).

(a) Correct attention kernels pass in float32, bfloat16 and float16 with 8 query heads and 2 key heads:
    transformers' half-split RoPE then eager attention (adapters.eager_attention over the [T, H, D] toy and over
    eager_attention_forward with module=), the same under YaRN, Meta's complex form (interleaved, under an
    interleaved claim), and flash-attn's flash_attn_with_kvcache (the pure-torch emulation, toys/flash_kvcache.py)
    through adapters.flash_attn_kvcache with the rotary_interleaved the claim needs.
(b) Each bug is named FIRST by its class; the expected class is the bug's, never what the judge happens to say (a
    bug named under another class is a finding to report, not an expectation to change).
(c) Bad kernels and bad arguments: the package's errors, raised from the public entry; a probe too narrow to see
    RoPE must not pass a wrong kernel.

The claim is a Llama-3-like config.json with GQA (8 heads, 2 key-value heads, head_dim 64, rope_theta 500000,
8192 positions; the same with YaRN x4 over 2048), or for Meta's form the flags {"head_dim": 64, "base": 500000,
"layout": "interleaved"}. The probe's inputs are drawn from its seed, which every failure message prints.
"""

import math
import traceback
from pathlib import Path

import pytest
import torch

import attention_kernels
import flash_kvcache
import hf_style
import ropecheck as rc
from ropecheck import _safetensors

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
DTYPES = [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16"), pytest.param(F16, id="float16")]
HEADS, KV_HEADS, HEAD_DIM = 8, 2, 64
LLAMA_GQA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512,
             "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
             "rope_theta": 500000.0, "max_position_embeddings": 8192, "rope_scaling": None}
YARN_GQA = dict(LLAMA_GQA, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048})
META = {"head_dim": HEAD_DIM, "base": 500000, "layout": "interleaved"}
# YaRN's temperature: sqrt(1/t) = 0.1 ln s + 1 (transformers' attention factor on cos and sin, so the logits carry
# (0.1 ln s + 1)^2 = 1/t once); a kernel applying 1/t on the logits as well has it twice.
YARN_TEMPERATURE = (0.1 * math.log(4.0) + 1) ** 2
# Warnings a correct kernel may get on a pass: its fp32 angles drift from exact ones at large positions.
ALLOWED_WARNINGS = {"angle_drift_fp32"}
PACKAGE = Path(rc.__file__).resolve().parent


def _claim(which):
    return {"claim": META} if which == "meta" else {"config": YARN_GQA if which == "yarn" else LLAMA_GQA}


def _seed(v):
    return (v.json.get("metadata") or {}).get("seed", "?")


def _explain(v):
    return f"(probe seed {_seed(v)})\n{v}"


def hf_rotary(config, **bugs):
    """transformers' RoPE (hf_style's LlamaRotaryEmbedding and apply_rotary_pos_emb) in check()'s form."""
    return rc.adapters.hf(hf_style.RotaryEmbedding(config, **bugs), hf_style.apply_rotary_pos_emb)


def flash(dtype, rotary_interleaved, **bugs):
    """flash_attn_with_kvcache (the emulation, with bug switches) with the caller's tables of 8192 rows, base 500000,
    in the model dtype, through adapters.flash_attn_kvcache."""
    cos, sin = flash_kvcache.rotary_tables(HEAD_DIM, 8192, 500000.0, dtype)
    return rc.adapters.flash_attn_kvcache(flash_kvcache.make(**bugs), cos, sin, rotary_interleaved=rotary_interleaved)


# id -> (builder(dtype) -> fn, claim)
CORRECT = {
    "hf_eager": (lambda dtype: rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA)), "llama"),
    "hf_eager_attention_forward": (
        lambda dtype: rc.adapters.eager_attention(attention_kernels.eager_attention_forward, hf_rotary(LLAMA_GQA),
                                                  module=attention_kernels.Module(HEADS, KV_HEADS, HEAD_DIM)),
        "llama"),
    "hf_yarn": (lambda dtype: rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(YARN_GQA)), "yarn"),
    "meta_complex": (lambda dtype: attention_kernels.meta_attention, "meta"),
    "flash_kvcache_half_split": (lambda dtype: flash(dtype, rotary_interleaved=False), "llama"),
    "flash_kvcache_interleaved": (lambda dtype: flash(dtype, rotary_interleaved=True), "meta"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", list(CORRECT))
def test_a_correct_attention_kernel_passes(ropecheck, kernel, dtype):
    build, claim = CORRECT[kernel]
    fn = build(dtype)
    v = ropecheck.check_attention(fn, dtype=dtype, heads=HEADS, kv_heads=KV_HEADS, **_claim(claim))
    assert v.passed and v.exit_code == 0 and v.first_class is None, f"a correct {kernel} failed {_explain(v)}"
    unexpected = [f for f in v.warnings if f.bug_class not in ALLOWED_WARNINGS]
    assert not unexpected, f"a correct {kernel} passed with unexpected warnings {unexpected} {_explain(v)}"
    assert v.forms == ["attention"] and v.attention == (HEADS, KV_HEADS, HEAD_DIM), (v.forms, v.attention)
    assert v.json.get("form") == "attention", f"the judge's JSON is not of the attention form: {sorted(v.json)}"
    tensors, meta = _safetensors.read(v.dump)
    queries = tensors["attention.q"].array.shape[0]
    assert tensors["attention.o"].array.shape == tensors["attention.o_again"].array.shape == (queries, HEADS,
                                                                                               HEAD_DIM)
    assert meta["adapter"] == getattr(fn, "ropecheck_adapter", "plain") and meta["form"] == "attention", meta


# id -> (builder(dtype) -> fn, claim, the class named first)
BUGS = {
    # flash-attn called with its default rotary_interleaved=True on a half-split (GPT-NeoX / transformers) model.
    "flash_wrong_rotary_interleaved": (lambda dtype: flash(dtype, rotary_interleaved=True), "llama",
                                       "layout_swapped"),
    # a fused kernel whose layout flag is read backwards (the caller passes the right one).
    "flash_layout_flag_inverted": (lambda dtype: flash(dtype, rotary_interleaved=False, interleaved_flipped=True),
                                   "llama", "layout_swapped"),
    # the kernel rotates the keys it writes at their cache index + 1 (the query at its own).
    "keys_at_positions_plus_one": (lambda dtype: flash(dtype, rotary_interleaved=False, k_offset=1), "llama",
                                   "key_positions_wrong"),
    # Llama 2's rope_theta where the model (and the claim) says 500000.
    "base_10000": (lambda dtype: rc.adapters.eager_attention(attention_kernels.eager,
                                                             hf_rotary(LLAMA_GQA, base=10000.0)), "llama",
                   "base_wrong"),
    # YaRN: cos/sin carry the attention factor (the temperature once) and the logits are multiplied by 1/t again.
    "yarn_temperature_twice": (
        lambda dtype: rc.adapters.eager_attention(
            attention_kernels.make_eager("eager_temperature_again", logit_factor=YARN_TEMPERATURE),
            hf_rotary(YARN_GQA)), "yarn", "score_scale_wrong"),
    # softmax scale 1 / head_dim instead of head_dim ** -0.5.
    "softmax_scale_one_over_d": (
        lambda dtype: rc.adapters.eager_attention(attention_kernels.make_eager("eager_scale_1_over_d",
                                                                               scale_one_over_d=True),
                                                  hf_rotary(LLAMA_GQA)), "llama", "score_scale_wrong"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bug", list(BUGS))
def test_an_attention_bug_is_named_first(ropecheck, bug, dtype):
    build, claim, expected = BUGS[bug]
    v = ropecheck.check_attention(build(dtype), dtype=dtype, heads=HEADS, kv_heads=KV_HEADS, **_claim(claim))
    assert not v.passed and v.exit_code == 1, f"{bug}: not caught {_explain(v)}"
    assert v.first_class == expected, f"{bug}: named {v.first_class!r} first, expected {expected!r} {_explain(v)}"
    assert f"[{expected}]" in str(v) and str(v).rstrip().endswith(v.rerun), str(v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_skipped_fails(ropecheck, dtype):
    """A kernel that forgets RoPE: the scores do not depend on m - n; any failing class (the judge says which)."""
    v = ropecheck.check_attention(rc.adapters.eager_attention(attention_kernels.eager, attention_kernels.no_rope),
                                  config=LLAMA_GQA, dtype=dtype)
    assert not v.passed and v.exit_code == 1 and v.first_class, f"RoPE skipped: not caught {_explain(v)}"


def test_the_verdict_is_the_audit_of_its_outputs_file(ropecheck):
    """check_attention()'s verdict equals `ropecheck audit` of the outputs file it names, with the claim it carries."""
    v = ropecheck.check_attention(flash(F32, rotary_interleaved=False, k_offset=1), config=LLAMA_GQA, dtype=F32)
    again = ropecheck.audit(v.dump)
    assert (again.passed, again.exit_code) == (v.passed, v.exit_code) and not v.passed, f"{v}\n---\n{again}"
    assert [f.bug_class for f in again.findings] == [f.bug_class for f in v.findings], f"{v}\n---\n{again}"
    assert again.attention == v.attention and again.forms == ["attention"], (again.attention, again.forms)


def test_assert_attention_conforms_raises_assertion_with_the_verdict(tmp_path):
    fn = rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA, base=10000.0))
    with pytest.raises(AssertionError) as ei:
        rc.assert_attention_conforms(fn, config=LLAMA_GQA, dtype=F32, dump_dir=tmp_path)
    assert not isinstance(ei.value, rc.RopecheckError)
    msg = str(ei.value)
    assert "[base_wrong]" in msg and " audit " in msg.splitlines()[-1], msg
    good = rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA))
    v = rc.assert_attention_conforms(good, config=LLAMA_GQA, dtype=F32, dump_dir=tmp_path / "good")
    assert v.passed and "attention calls (queries 8 heads, keys 2 heads, values 64 wide)" in str(v), str(v)


def test_a_callable_s_ropecheck_attention_is_checked():
    class Layer:
        """An object carrying its attention-form adapter (as a user's module wrapper may)."""

        def __call__(self, *args):
            raise AssertionError("the object itself must not be called: its ropecheck_attention is the kernel")

    layer = Layer()
    layer.ropecheck_attention = rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA))
    v = rc.check_attention(layer, config=LLAMA_GQA, dtype=F32)
    assert v.passed and v.kernel.startswith("eager_attention("), _explain(v)


def assert_clean(excinfo, error, *needles):
    """excinfo holds an `error` whose message has every needle, raised from None, with no traceback frame inside
    python/ropecheck but the public entry (check_attention). Returns the message."""
    e = excinfo.value
    assert type(e) is error, f"raised {type(e).__name__}: {e}; expected {error.__name__}"
    msg = str(e)
    for needle in needles:
        assert needle in msg, f"{error.__name__}'s message does not say {needle!r}:\n{msg}"
    assert e.__suppress_context__ and e.__cause__ is None, f"{error.__name__} was not raised `from None`"
    inside = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve().is_relative_to(PACKAGE)]
    assert inside and all(f.name == "check_attention" for f in inside), \
        "frames inside the package besides its public entry: " + ", ".join(f"{f.name} ({f.lineno})" for f in inside)
    return msg


def _correct():
    return rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA))


def _check(fn, tmp_path, **kw):
    kw.setdefault("dtype", F32)
    return rc.check_attention(fn, config=LLAMA_GQA, dump_dir=tmp_path, **kw)


def test_o_of_another_shape(tmp_path):
    with pytest.raises(rc.KernelOutputError) as ei:
        _check(lambda *a: _correct()(*a).unsqueeze(0), tmp_path)
    assert_clean(ei, rc.KernelOutputError, "attention call 0 of", "o of shape [1, 8, 8, 64], expected [8, 8, 64]",
                 "[queries, heads, value_dim]")


def test_o_of_another_dtype(tmp_path):
    with pytest.raises(rc.KernelOutputError) as ei:
        _check(lambda *a: _correct()(*a).float(), tmp_path, dtype=BF16)
    assert_clean(ei, rc.KernelOutputError, "o of dtype float32, expected bfloat16", "o.to(q.dtype)")


def test_o_with_its_softmax_lse(tmp_path):
    with pytest.raises(rc.KernelOutputError) as ei:
        _check(lambda *a: (_correct()(*a), torch.zeros(1)), tmp_path)
    assert_clean(ei, rc.KernelOutputError, "a tuple of 2 items", "wrapped to return o alone")


def test_o_independent_of_v(tmp_path):
    def attends_to_keys(q, k, v, qp, kp):  # o = softmax(...) k: the values never read
        return attention_kernels.eager(q, k, k[..., : v.shape[-1]])

    with pytest.raises(rc.KernelOutputError) as ei:
        _check(attends_to_keys, tmp_path)
    assert_clean(ei, rc.KernelOutputError, "did not change when v did", "o must be computed from v")


@pytest.mark.parametrize("name", ["q", "k"])
def test_an_input_changed_in_place(tmp_path, name):
    def rotates_in_place(q, k, v, qp, kp):
        o = _correct()(q, k, v, qp, kp)
        (q if name == "q" else k).mul_(-1)
        return o

    with pytest.raises(rc.InputMutatedError) as ei:
        _check(rotates_in_place, tmp_path)
    assert_clean(ei, rc.InputMutatedError, f"changed {name} in place", f"fn({'q.clone(), k.clone()'}, v, qp, kp)")


def test_value_dim_narrower_than_the_keys_a_call_needs_is_refused(tmp_path):
    """The brief's protocol: a call of the probe needs more keys than value_dim=2 holds (two keys are the zero key
    and the query's own: no relative distance but 0 is read); the probe refuses and says how many keys fit."""
    with pytest.raises(rc.ClaimError) as ei:
        _check(_correct(), tmp_path, value_dim=2)
    msg = assert_clean(ei, rc.ClaimError, "value")
    assert any(ch.isdigit() for ch in msg.split("value", 1)[1]), f"the refusal does not say how many keys fit:\n{msg}"


def test_a_probe_too_narrow_to_see_rope_does_not_pass_a_wrong_kernel(tmp_path):
    """Whatever the probe does with value_dim=2 (refuse, or judge what two keys show), base 10000 under a 500000
    claim must not pass."""
    wrong = rc.adapters.eager_attention(attention_kernels.eager, hf_rotary(LLAMA_GQA, base=10000.0))
    try:
        v = _check(wrong, tmp_path, value_dim=2)
    except rc.ClaimError:
        return
    assert not v.passed, f"base 10000 passed under a 500000 claim with value_dim=2 {_explain(v)}"


@pytest.mark.parametrize("heads, kv_heads, needle", [(8, 3, "must divide heads"), (3, 1, "even number of query heads"),
                                                     (7, 7, "even number of query heads")])
def test_heads_the_attention_form_cannot_take(tmp_path, heads, kv_heads, needle):
    with pytest.raises(rc.ClaimError) as ei:
        _check(_correct(), tmp_path, heads=heads, kv_heads=kv_heads)
    assert_clean(ei, rc.ClaimError, f"heads={heads}", needle)


def test_value_dim_must_be_a_positive_integer(tmp_path):
    with pytest.raises(rc.ClaimError) as ei:
        _check(_correct(), tmp_path, value_dim=0)
    assert_clean(ei, rc.ClaimError, "value_dim=0", "positive integer")


def test_a_flash_kernel_past_its_table(tmp_path):
    """flash_attn_kvcache declares its table's last row: the probe stays within it; a max_position past it is the
    adapter's own error saying so."""
    fn = flash(F32, rotary_interleaved=False)
    v = _check(fn, tmp_path / "within")
    assert v.passed and int(v.json["metadata"]["max_position"]) == 8191, _explain(v)
    with pytest.raises(rc.RopecheckError) as ei:
        _check(fn, tmp_path / "past", max_position=2 ** 24 + 8)
    assert_clean(ei, rc.RopecheckError, "past rotary_cos's last row 8191", "max_position=8191")
