"""The KV cache as part of the qk probe: check_qk() with a kernel's own cache (`ropecheck_cache`: reset() and
read_keys(positions)) and with the engine's context shift (kv_shift=).

(a) Correct kernels pass through every form, the keys read back from their cache and the kept tail shifted by -32,
    in float32, bfloat16 and float16 (8 query heads, 2 key heads): transformers' half-split apply_rotary_pos_emb
    (qk_kernels.hf_qk), vLLM's rotary_emb over flattened heads (vllm_style through adapters.vllm; its table takes no
    negative position, so its K-shift rotates by reflection), Meta's complex form in the interleaved layout
    (qk_kernels.meta_qk); each written into a vLLM-style paged cache (kv_cache.CachedQK), its K-shift made by
    adapters.kv_shift. transformers' dynamic NTK with a cache (each key at the base of the call that wrote it, as a
    DynamicCache keeps it) passes too.
(b) Each KV-cache bug is named FIRST by its class, in the form it is in: a context shift that does not re-rotate
    the cached keys and an eviction that does not renumber them (key_positions_wrong, the shift), decode keys
    written at position 0 and read back from the cache (key_positions_wrong, decode calls), dynamic NTK's keys
    cached under the base of an earlier, shorter call (key_convention_wrong, decode calls).
(c) Bad K-shifts and caches: the package's errors, naming the call.

Every check draws its probe from a seed that its failure message prints (the probe's, or the fixed SEED of (c)).
"""

from pathlib import Path

import pytest
import torch

import kv_cache
import plain_style
import qk_kernels
import vllm_style
import ropecheck as rc
from ropecheck import _safetensors

from test_qk import ALLOWED_WARNINGS, HEADS, KV_HEADS, LLAMA_GQA, _claim, _explain

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
DTYPES = [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16"), pytest.param(F16, id="float16")]
DYNAMIC = str(Path(__file__).resolve().parent.parent / "data" / "configs" / "dynamic_ntk.json")
SEED = 20260105  # (c)'s checks raise before any verdict: their probe seed is fixed and said


def _meta_rotate(x, positions):
    """Meta's complex form on one tensor (its key side), for the K-shift."""
    return qk_kernels.meta_qk(x, x, positions)[1]


def _vllm_qk(dtype):
    return rc.adapters.vllm(vllm_style.from_config(LLAMA_GQA, dtype))


# id -> (builder(dtype) -> (the cached kernel, its kv_shift), claim)
CORRECT = {
    "hf_half_split": (lambda dtype: (kv_cache.CachedQK(qk_kernels.hf_qk, "cached(hf_qk)"),
                                     rc.adapters.kv_shift(plain_style.rope)), "llama"),
    "vllm_flattened": (lambda dtype: (kv_cache.CachedQK(_vllm_qk(dtype).ropecheck_qk, "cached(vllm)"),
                                      rc.adapters.kv_shift(_vllm_qk(dtype), layout="half_split")), "llama"),
    "meta_interleaved": (lambda dtype: (kv_cache.CachedQK(qk_kernels.meta_qk, "cached(meta_qk)"),
                                        rc.adapters.kv_shift(_meta_rotate)), "meta"),
}


def _worst(v):
    """The worst error/allowance of each judged part, for the failure message and the log."""
    out = {}
    for form, o in (v.json.get("forms") or {}).items():
        for side in ("queries", "keys"):
            r = (((o.get(side) or {}).get("distance") or {}).get("exact") or {}).get("worst_error_over_allowance")
            if r is not None:
                out[f"{form}.{side}"] = round(float(r), 3)
    if v.json.get("shift"):
        out["shift"] = round(float(v.json["shift"]["worst_error_over_allowance"]), 3)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", list(CORRECT))
def test_a_correct_cached_kernel_passes_through_prefill_decode_and_the_shift(ropecheck, kernel, dtype):
    build, claim = CORRECT[kernel]
    fn, shift = build(dtype)
    v = ropecheck.check_qk(fn, dtype=dtype, heads=HEADS, kv_heads=KV_HEADS, kv_shift=shift, **_claim(claim))
    print(f"{kernel} {dtype}: worst error/allowance {_worst(v)} (probe seed in the verdict's metadata)")
    assert v.passed and v.first_class is None, f"a correct {kernel} failed {_explain(v)}"
    unexpected = [f for f in v.warnings if f.bug_class not in ALLOWED_WARNINGS]
    assert not unexpected, f"a correct {kernel} passed with unexpected warnings {unexpected} {_explain(v)}"
    assert v.forms == ["prefill", "decode", "shift"], v.forms
    shift_json = v.json.get("shift") or {}
    assert shift_json.get("delta") == -32 and shift_json.get("pass"), f"{shift_json} {_explain(v)}"
    # The outputs file holds the shift (the C++ reads it; no note calls it foreign to the contract).
    tensors, meta = _safetensors.read(v.dump)
    assert {"shift.token", "shift.positions", "shift.k_out"} <= set(tensors) and meta["shift_delta"] == "-32"
    assert not [n for n in v.notes if "not part of the dump contract" in n], _explain(v)
    assert any(n.startswith("keys read back from the kernel's cache") for n in v.notes), _explain(v)


@pytest.mark.parametrize("dtype", [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16")])
def test_dynamic_ntk_keys_cached_at_their_own_calls_base_pass(ropecheck, dtype):
    fn = kv_cache.CachedQK(kv_cache.dynamic_qk(DYNAMIC), "cached(dynamic_qk)")
    v = ropecheck.check_qk(fn, config=DYNAMIC, dtype=dtype, heads=HEADS, kv_heads=KV_HEADS)
    print(f"dynamic NTK {dtype}: worst error/allowance {_worst(v)}")
    assert v.passed, f"transformers' dynamic NTK with a cache failed {_explain(v)}"
    assert not [f for f in v.warnings if f.bug_class not in ALLOWED_WARNINGS], _explain(v)
    # The claim's reading of a cache under dynamic NTK is said, never guessed silently.
    assert any(n.startswith("dynamic NTK with a cache") for n in v.notes), _explain(v)


# id -> (builder() -> (fn, kv_shift or None), claim config, the class named first, the form it is found in)
BUGS = {
    "shift_not_rerotated": (lambda: (qk_kernels.make_hf_qk(), kv_cache.shift_not_rerotated), LLAMA_GQA,
                            "key_positions_wrong", "shift"),
    "evict_not_renumbered": (lambda: (kv_cache.CachedQK(qk_kernels.hf_qk, "cached(hf_qk)"),
                                      kv_cache.evict_not_renumbered), LLAMA_GQA, "key_positions_wrong", "shift"),
    "decode_keys_at_zero_in_cache": (lambda: (kv_cache.CachedQK(qk_kernels.hf_qk, "cached(hf_qk)",
                                                                decode_keys_at_zero=True), None), LLAMA_GQA,
                                     "key_positions_wrong", "decode"),
    "dynamic_keys_at_an_old_base": (lambda: (kv_cache.CachedQK(kv_cache.dynamic_qk(DYNAMIC), "cached(dynamic_qk)",
                                                               stale_dynamic_base=True), None), DYNAMIC,
                                    "key_convention_wrong", "decode"),
}


@pytest.mark.parametrize("dtype", [pytest.param(F32, id="float32"), pytest.param(BF16, id="bfloat16")])
@pytest.mark.parametrize("bug", list(BUGS))
def test_a_kv_cache_bug_is_named_first_in_its_form(ropecheck, bug, dtype):
    build, config, expected, form = BUGS[bug]
    fn, shift = build()
    v = ropecheck.check_qk(fn, config=config, dtype=dtype, heads=HEADS, kv_heads=KV_HEADS, kv_shift=shift)
    print(f"{bug} {dtype}: {v.first_class} in {v.findings[0].form if v.findings else '-'}; {_worst(v)}")
    assert not v.passed, f"{bug} passed {_explain(v)}"
    assert v.first_class == expected, f"{bug}: expected {expected} first, got {v.first_class} {_explain(v)}"
    assert v.findings[0].form == form, f"{bug}: named in the form {v.findings[0].form!r}, not {form!r} {_explain(v)}"
    if form == "shift":
        assert "after a context shift of -32" in v.findings[0].sentence, _explain(v)


@pytest.mark.parametrize("dtype, said", [
    pytest.param(F32, "no scaling is applied although the claim has dynamic scaling", id="float32"),
    pytest.param(BF16, "rope_theta unscaled, the base of a sequence of at most 4096 tokens", id="bfloat16"),
])
def test_the_dynamic_base_bug_names_the_keys_base(ropecheck, dtype, said):
    """The stale keys' base is said: they were written at the first decode call's length (1 token), whose dynamic
    base is rope_theta unscaled, the base of every length up to 4096. The first failing group (length 4097) says it
    as no scaling (float32), or fits rope_theta ~9995 under the claim's rule and says that is the unscaled base
    (bfloat16, judge/src/pass_frequencies.cpp dynamic_effective_base)."""
    fn = kv_cache.CachedQK(kv_cache.dynamic_qk(DYNAMIC), "cached(dynamic_qk)", stale_dynamic_base=True)
    v = ropecheck.check_qk(fn, config=DYNAMIC, dtype=dtype, heads=HEADS, kv_heads=KV_HEADS)
    first = v.findings[0]
    assert first.bug_class == "key_convention_wrong" and first.form == "decode", _explain(v)
    assert said in first.sentence, _explain(v)


# (c) Bad K-shifts and caches.
def _hf_with(shift, tmp_path, fn=None):
    return rc.check_qk(fn or qk_kernels.make_hf_qk(), config=LLAMA_GQA, dtype=F32, heads=HEADS, kv_heads=KV_HEADS,
                       kv_shift=shift, seed=SEED, dump_dir=tmp_path)


@pytest.mark.parametrize("returned, words", [
    (lambda k, p, d: None, ["kv_shift returned NoneType", "a shift done in place returns k_cached"]),
    (lambda k, p, d: k[:-1].clone(), ["kv_shift returned shape", "expected"]),
    (lambda k, p, d: k.to(torch.float16), ["kv_shift returned dtype float16", "expected float32"]),
    (lambda k, p, d: (k, p), ["kv_shift returned tuple"]),
], ids=["none", "shape", "dtype", "tuple"])
def test_a_bad_kv_shift_result_is_a_kernel_output_error_naming_the_shift(tmp_path, returned, words):
    with pytest.raises(rc.KernelOutputError) as ei:
        _hf_with(returned, tmp_path)
    text = str(ei.value)
    assert "the context shift kv_shift(k_cached, positions, delta=-32)" in text, f"(seed {SEED}) {text}"
    for w in words:
        assert w in text, f"(seed {SEED}) {w!r} not in: {text}"


def test_a_kv_shift_that_raises_is_a_kernel_error_naming_the_shift(tmp_path):
    def shift(k, p, d):
        raise RuntimeError("no rope shift for this cache type")

    with pytest.raises(rc.KernelError) as ei:
        _hf_with(shift, tmp_path)
    assert "the context shift kv_shift" in str(ei.value) and "no rope shift" in str(ei.value), str(ei.value)


def test_a_kv_shift_changing_positions_is_an_input_mutated_error(tmp_path):
    def shift(k, p, d):
        p.add_(d)
        return k.clone()

    with pytest.raises(rc.InputMutatedError) as ei:
        _hf_with(shift, tmp_path)
    assert "kv_shift changed positions in place" in str(ei.value), str(ei.value)


def test_a_kv_shift_that_is_not_callable_is_refused(tmp_path):
    with pytest.raises(rc.RopecheckError) as ei:
        _hf_with(-32, tmp_path)
    assert "kv_shift= takes a callable" in str(ei.value), str(ei.value)


def test_kv_shift_under_a_per_call_length_rule_is_refused_not_guessed(tmp_path):
    """Dynamic NTK's cached keys carry the bases of the calls that wrote them: no one K-shift rule is claimed."""
    fn = kv_cache.CachedQK(kv_cache.dynamic_qk(DYNAMIC), "cached(dynamic_qk)")
    with pytest.raises(rc.ClaimError) as ei:
        rc.check_qk(fn, config=DYNAMIC, dtype=F32, heads=HEADS, kv_heads=KV_HEADS, seed=SEED, dump_dir=tmp_path,
                    kv_shift=kv_cache.shift_not_rerotated)
    assert "depend on each call's length" in str(ei.value) and "claim={'engine': 'vllm'}" in str(ei.value), str(ei.value)


def test_a_cache_without_read_keys_is_refused(tmp_path):
    class ResetOnly:
        def reset(self):
            pass

    fn = kv_cache.CachedQK(qk_kernels.hf_qk, "cached(hf_qk)")
    fn.ropecheck_cache = ResetOnly()
    with pytest.raises(rc.RopecheckError) as ei:
        _hf_with(None, tmp_path, fn)
    assert "has no callable read_keys" in str(ei.value), str(ei.value)


def test_read_keys_of_another_shape_is_a_kernel_output_error_naming_the_call(tmp_path):
    class Short(kv_cache.CachedQK):
        def read_keys(self, positions):
            return super().read_keys(positions)[:, :1]

    with pytest.raises(rc.KernelOutputError) as ei:
        _hf_with(None, tmp_path, Short(qk_kernels.hf_qk, "short"))
    text = str(ei.value)
    assert "prefill call 0 of" in text and "reading its keys back from the cache" in text, text
    assert "ropecheck_cache.read_keys(positions) returned shape" in text, text


def test_a_kernel_without_a_cache_returning_no_keys_is_still_an_error(tmp_path):
    def no_keys(q, k, positions):
        return qk_kernels.hf_qk(q, k, positions)[0], None

    with pytest.raises(rc.KernelOutputError) as ei:
        _hf_with(None, tmp_path, no_keys)
    assert "NoneType as k_out" in str(ei.value), str(ei.value)
