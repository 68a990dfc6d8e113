"""check_qk() end to end: `ropecheck probe --form qk`, the qk driver, `ropecheck audit` of its outputs file.

(a) Correct qk kernels pass in float32, bfloat16 and float16 with 8 query heads and 2 key heads: transformers'
    apply_rotary_pos_emb over distinct q and k (qk_kernels.hf_qk, and hf_style's module through adapters.hf),
    vLLM's rotary_emb over flattened [T, H*D] query and key (vllm_style through adapters.vllm), Meta's complex form
    in the interleaved layout (qk_kernels.meta_qk), a one-tensor kernel applied to q and to k (adapters.plain) and
    a fused kernel rotating q and k in place (adapters.inplace_qk).
(b) Each qk bug, planted in qk_kernels.hf_qk, is named FIRST by its class; the expected class is the bug's, never
    what the judge happens to say (a bug named under another class is a finding to report, not an expectation to
    change).
(c) Bad kernels and bad heads: the package's errors, raised from the public entry.

The claim is a Llama-3-like config.json with GQA (8 heads, 2 key-value heads, head_dim 64, rope_theta 500000,
8192 positions), or for Meta's form the flags {"head_dim": 64, "base": 500000, "layout": "interleaved"}. The
probe's inputs are drawn from its seed, which every failure message prints.
"""

import traceback
from pathlib import Path

import pytest
import torch

import hf_style
import plain_style
import qk_kernels
import vllm_style
import ropecheck as rc
from ropecheck import _safetensors

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
DTYPES = [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16"), pytest.param(F16, id="float16")]
HEADS, KV_HEADS = 8, 2
LLAMA_GQA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512,
             "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": 64, "rope_theta": 500000.0,
             "max_position_embeddings": 8192, "rope_scaling": None}
META = {"head_dim": 64, "base": 500000, "layout": "interleaved"}
# Warnings a correct kernel may get on a pass: its fp32 angles drift from exact ones at large positions.
ALLOWED_WARNINGS = {"angle_drift_fp32"}
PACKAGE = Path(rc.__file__).resolve().parent


def _claim(which):
    return {"config": LLAMA_GQA} if which == "llama" else {"claim": META}


def _seed(v):
    return (v.json.get("metadata") or {}).get("seed", "?")


def _explain(v):
    return f"(probe seed {_seed(v)})\n{v}"


# id -> (builder(dtype) -> fn, claim)
CORRECT = {
    "hf_qk": (lambda dtype: qk_kernels.make_hf_qk(), "llama"),
    "hf_module": (lambda dtype: rc.adapters.hf(hf_style.RotaryEmbedding(LLAMA_GQA), hf_style.apply_rotary_pos_emb),
                  "llama"),
    "vllm_flattened": (lambda dtype: rc.adapters.vllm(vllm_style.from_config(LLAMA_GQA, dtype)), "llama"),
    "meta_complex": (lambda dtype: qk_kernels.meta_qk, "meta"),
    "plain_on_q_and_k": (lambda dtype: rc.adapters.plain(plain_style.rope), "llama"),
    "fused_in_place": (lambda dtype: rc.adapters.inplace_qk(qk_kernels.hf_qk_), "llama"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", list(CORRECT))
def test_a_correct_qk_kernel_passes(ropecheck, kernel, dtype):
    build, claim = CORRECT[kernel]
    v = ropecheck.check_qk(build(dtype), dtype=dtype, heads=HEADS, kv_heads=KV_HEADS, **_claim(claim))
    assert v.passed and v.exit_code == 0 and v.first_class is None, f"a correct {kernel} failed {_explain(v)}"
    unexpected = [f for f in v.warnings if f.bug_class not in ALLOWED_WARNINGS]
    assert not unexpected, f"a correct {kernel} passed with unexpected warnings {unexpected} {_explain(v)}"
    assert set(v.forms) == {"prefill", "decode"} and v.qk_heads == (HEADS, KV_HEADS), (v.forms, v.qk_heads)
    assert v.json.get("form") == "qk", f"the judge's JSON is not of the qk form: {sorted(v.json)}"
    tensors, meta = _safetensors.read(v.dump)
    assert {"prefill.q_out", "decode.k_out", "prefill.q_out_kalt", "prefill.k_out_qalt"} <= set(tensors)
    assert tensors["q"].array.shape[1:] == (HEADS, 64) and tensors["k"].array.shape[1:] == (KV_HEADS, 64)
    assert meta["adapter"] == getattr(build(dtype), "ropecheck_adapter", "plain")


# id -> (bug switches of qk_kernels.hf_qk, claim, the class named first, the form of that finding)
BUGS = {
    # hpcaitech/ColossalAI issue 6428: q_out's second half from k's input, k_out's first half from q's. Named first
    # by the prefill plan's runs with other keys and other queries, which only prefill has (the outputs' fit to
    # the other tensor's rotated inputs names it in both forms: test_a_crossing_is_seen_in_decode_calls_too).
    "crossed_halves": ({"crossed_halves": True}, "qk_crossed", "prefill"),
    # k with Llama 2's rope_theta, q with the claim's 500000.
    "k_base_10000": ({"k_base": 10000.0}, "key_convention_wrong", "both"),
    # k in GPT-J pairs, q in halves as claimed.
    "k_layout_swapped": ({"k_layout_swapped": True}, "key_convention_wrong", "both"),
    # k one position ahead of q.
    "k_positions_plus_one": ({"k_offset": 1}, "key_positions_wrong", "both"),
    # a decode step rotating its key at position 0 (a cache index forgotten); prefill right.
    "k_decode_at_zero": ({"k_decode_at_zero": True}, "key_positions_wrong", "decode"),
    # both with base 10000: not a key fault but the base.
    "both_base_10000": ({"base": 10000.0}, "base_wrong", "both"),
}


@pytest.mark.parametrize("dtype", [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16")])
@pytest.mark.parametrize("bug", list(BUGS))
def test_a_qk_bug_is_named_first(ropecheck, bug, dtype):
    switches, expected, form = BUGS[bug]
    v = ropecheck.check_qk(qk_kernels.make_hf_qk(f"hf_qk_{bug}", **switches), config=LLAMA_GQA, dtype=dtype,
                           heads=HEADS, kv_heads=KV_HEADS)
    assert not v.passed and v.exit_code == 1, f"{bug}: not caught {_explain(v)}"
    assert v.first_class == expected, f"{bug}: named {v.first_class!r} first, expected {expected!r} {_explain(v)}"
    assert v.findings[0].form == form, \
        f"{bug}: first finding in form {v.findings[0].form!r}, expected {form!r} {_explain(v)}"
    assert f"[{expected}]" in str(v) and str(v).rstrip().endswith(v.rerun), str(v)
    if form == "decode":
        prefill = v.json["forms"]["prefill"]
        assert prefill["pass"], f"{bug}: prefill calls are right but failed: {prefill.get('findings')}"


def test_a_crossing_is_seen_in_decode_calls_too(ropecheck):
    """Decode calls have no runs with other inputs: their crossing is seen in the outputs themselves, q's second
    half the rotation of k's inputs. A qk_crossed finding must cover decode calls ("both" forms)."""
    v = ropecheck.check_qk(qk_kernels.make_hf_qk("hf_qk_crossed", crossed_halves=True), config=LLAMA_GQA, dtype=F32)
    forms = [f.form for f in v.findings if f.bug_class == "qk_crossed"]
    assert "both" in forms or "decode" in forms, f"no qk_crossed finding in decode calls ({forms}) {_explain(v)}"


def test_the_verdict_is_the_audit_of_its_outputs_file(ropecheck):
    """check_qk()'s verdict equals `ropecheck audit` of the outputs file it names, with the claim it carries."""
    v = ropecheck.check_qk(qk_kernels.make_hf_qk(k_offset=1), config=LLAMA_GQA, dtype=F32)
    again = ropecheck.audit(v.dump)
    assert (again.passed, again.exit_code) == (v.passed, v.exit_code) and not v.passed, f"{v}\n---\n{again}"
    assert [f.bug_class for f in again.findings] == [f.bug_class for f in v.findings], f"{v}\n---\n{again}"


def test_assert_qk_conforms_raises_assertion_with_the_verdict(tmp_path):
    fn = qk_kernels.make_hf_qk("hf_qk_k_base_10000", k_base=10000.0)
    with pytest.raises(AssertionError) as ei:
        rc.assert_qk_conforms(fn, config=LLAMA_GQA, dtype=F32, dump_dir=tmp_path)
    assert not isinstance(ei.value, rc.RopecheckError)
    msg = str(ei.value)
    assert "[key_convention_wrong]" in msg and " audit " in msg.splitlines()[-1], msg
    v = rc.assert_qk_conforms(qk_kernels.make_hf_qk(), config=LLAMA_GQA, dtype=F32, dump_dir=tmp_path / "good")
    assert v.passed, str(v)


def assert_clean(excinfo, error, *needles):
    """excinfo holds an `error` whose message has every needle, raised from None, with no traceback frame inside
    python/ropecheck but the public entry (check_qk / assert_qk_conforms). Returns the message."""
    e = excinfo.value
    assert type(e) is error, f"raised {type(e).__name__}: {e}; expected {error.__name__}"
    msg = str(e)
    for needle in needles:
        assert needle in msg, f"{error.__name__}'s message does not say {needle!r}:\n{msg}"
    assert e.__suppress_context__ and e.__cause__ is None, f"{error.__name__} was not raised `from None`"
    inside = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve().is_relative_to(PACKAGE)]
    assert inside and all(f.name in ("check_qk", "assert_qk_conforms") for f in inside), \
        "frames inside the package besides its public entry: " + ", ".join(f"{f.name} ({f.lineno})" for f in inside)
    return msg


def _check(fn, tmp_path, **kw):
    return rc.check_qk(fn, config=LLAMA_GQA, dtype=F32, dump_dir=tmp_path, **kw)


def test_one_tensor(tmp_path):
    with pytest.raises(rc.KernelOutputError) as ei:
        _check(lambda q, k, positions: qk_kernels.hf_qk(q, k, positions)[0], tmp_path)
    assert_clean(ei, rc.KernelOutputError, "a qk kernel returning one tensor", "prefill call 0 of", "positions 0..")


def test_wrong_shapes(tmp_path):
    def k_with_query_heads(q, k, positions):
        q_out, _ = qk_kernels.hf_qk(q, k, positions)
        return q_out, q_out.clone()  # k_out [T, 8, 64] where k is [T, 2, 64]

    with pytest.raises(rc.KernelOutputError) as ei:
        _check(k_with_query_heads, tmp_path)
    assert_clean(ei, rc.KernelOutputError, "k_out has shape", "8, 64]", "2, 64]")


@pytest.mark.parametrize("heads, kv_heads", [(8, 3), (8, 0), (4, 8)])
def test_kv_heads_must_divide_heads(tmp_path, heads, kv_heads):
    with pytest.raises(rc.ClaimError) as ei:
        _check(qk_kernels.make_hf_qk(), tmp_path, heads=heads, kv_heads=kv_heads)
    assert_clean(ei, rc.ClaimError, f"kv_heads={kv_heads}", "must divide heads")


def test_an_input_changed_in_place(tmp_path):
    with pytest.raises(rc.InputMutatedError) as ei:
        _check(lambda q, k, positions: qk_kernels.hf_qk_(q, k, positions), tmp_path)
    assert_clean(ei, rc.InputMutatedError, "changed q in place", "inplace_qk(fn)")


def test_a_one_tensor_kernel_given_bare(tmp_path):
    """plain_style.rope(x, positions) is not a qk kernel: the call fails before its first line, and the message says
    what check_qk() calls."""
    with pytest.raises(rc.KernelError) as ei:
        _check(plain_style.rope, tmp_path)
    assert_clean(ei, rc.KernelError, "TypeError", "before any line of the wrapped code ran", "fn(q, k, positions)")


def test_no_claim(tmp_path):
    with pytest.raises(rc.ClaimError) as ei:
        rc.check_qk(qk_kernels.make_hf_qk(), dtype=F32, dump_dir=tmp_path)
    assert_clean(ei, rc.ClaimError, "config=", "claim=")
