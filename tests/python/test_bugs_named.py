"""Each known RoPE bug, planted in one of the toys, is named FIRST by check() (verdict.first_class).

The expected class is the bug's, never what the judge happens to say: a bug named under another class is a
failure to report, not an expectation to change. The controls (the same toys without the bug, under the same
claims) pass in test_adapters_pass.py.
"""

import os
import shlex

import pytest
import torch

F32, BF16 = torch.float32, torch.bfloat16

# id -> (builder(kernels, configs) -> fn, dtype, claim ("llama" or "yarn"), expected first class, its form)
# form: the call form the first finding must be in ("both": every form shows it; "decode": decode calls only).
BUGS = {
    # transformers before pull request 29285: autocast ran inv_freq @ position_ids in bf16.
    "hf_bf16_positions": (lambda k, c: k.hf(c["llama"], bf16_positions=True), F32, "llama",
                          "positions_low_precision", "both"),
    "hf_bf16_positions_bf16_model": (lambda k, c: k.hf(c["llama"], bf16_positions=True), BF16, "llama",
                                     "positions_low_precision", "both"),
    "flash_bf16_positions": (lambda k, c: k.flash(c["llama"], F32, bf16_positions=True), F32, "llama",
                             "positions_low_precision", "both"),
    # vLLM builds cos_sin_cache in the model dtype: here a bf16 table under an fp32 model.
    "vllm_cos_sin_bf16": (lambda k, c: k.vllm(c["llama"], F32, cos_sin_bf16=True), F32, "llama",
                          "cos_sin_low_precision", "both"),
    "hf_cos_sin_bf16": (lambda k, c: k.hf(c["llama"], cos_sin_bf16=True), F32, "llama",
                        "cos_sin_low_precision", "both"),
    # rope_theta 10000 (Llama 2's) in the kernel, 500000 in the claim.
    "hf_base_10000": (lambda k, c: k.hf(c["llama"], base=10000.0), F32, "llama", "base_wrong", "both"),
    "plain_base_10000": (lambda k, c: k.plain("rope_base_10000", base=10000.0), F32, "llama", "base_wrong", "both"),
    # GPT-J pairs where the claim (HF Llama) is half-split.
    "flash_interleaved": (lambda k, c: k.flash(c["llama"], F32, interleaved=True), F32, "llama",
                          "layout_swapped", "both"),
    "vllm_layout_swapped": (lambda k, c: k.vllm(c["llama"], F32, layout_swapped=True), F32, "llama",
                            "layout_swapped", "both"),
    # A one-token call (decode step) rotated at position + 1; prefill calls are right.
    "hf_decode_one_ahead": (lambda k, c: k.hf(c["llama"], decode_one_ahead=True), F32, "llama",
                            "positions_offset", "decode"),
    "plain_decode_one_ahead_bf16": (lambda k, c: k.plain("rope_decode_one_ahead", decode_one_ahead=True), BF16,
                                    "llama", "positions_offset", "decode"),
    # YaRN's frequencies right, its attention factor 0.1 ln(4) + 1 not applied to cos/sin.
    "hf_yarn_factor_missing": (lambda k, c: k.hf(c["yarn"], yarn_factor_missing=True), F32, "yarn",
                               "attention_factor_wrong", "both"),
}


@pytest.fixture(scope="module")
def configs(llama_config, yarn_config):
    return {"llama": llama_config, "yarn": yarn_config}


@pytest.mark.parametrize("bug", list(BUGS))
def test_bug_is_named_first(ropecheck, kernels, configs, bug):
    build, dtype, claim, expected, form = BUGS[bug]
    v = ropecheck.check(build(kernels, configs), config=configs[claim], dtype=dtype)
    text = str(v)
    assert not v.passed and v.exit_code == 1, f"{bug}: the bug was not caught:\n{text}"
    assert v.first_class == expected, f"{bug}: named {v.first_class!r} first, expected {expected!r}:\n{text}"
    assert v.findings[0].form == form, f"{bug}: first finding in form {v.findings[0].form!r}, expected {form!r}"
    assert f"[{expected}]" in text, f"{bug}: str(verdict) does not show the class:\n{text}"
    # The rerun command: `<the program run> audit <the outputs file> <claim args>`, shown last (the program is
    # named "ropecheck" when PATH finds that one, else by its path: here $ROPECHECK_BIN, the built CLI).
    words = shlex.split(v.rerun)
    assert words[0] in ("ropecheck", os.environ.get("ROPECHECK_BIN")) and words[1] == "audit" and v.dump in words, f"{bug}: rerun {v.rerun!r} is not the judge's"
    assert configs[claim] in words, f"{bug}: rerun {v.rerun!r} does not carry the claim --config {configs[claim]}"
    assert text.rstrip().endswith(v.rerun), f"{bug}: str(verdict) does not end with the rerun command:\n{text}"
    if form == "decode":
        prefill = v.json["forms"]["prefill"]
        assert prefill["pass"], f"{bug}: prefill calls are right but failed: {prefill['findings']}"


def test_a_failing_vllm_kernel_is_told_vllm_s_reading_only_where_it_differs(ropecheck, kernels, configs, tmp_path):
    """The vLLM adapter under transformers' reading of the config: where vLLM reads the config another way (dynamic
    NTK: one static base), a failure notes vLLM's reading and claim={'engine': 'vllm'}; where the two readings agree
    (Llama's plain RoPE), a failure is not about the reading and carries no such note; with that claim, or on a pass,
    none either."""
    import json
    from ropecheck.check import VLLM_READING_NOTE

    def noted(v):
        return [n for n in v.notes if n.startswith(VLLM_READING_NOTE)]

    llama = json.loads(open(configs["llama"]).read())
    dynamic = tmp_path / "dynamic.json"
    dynamic.write_text(json.dumps(dict(llama, rope_scaling={"rope_type": "dynamic", "factor": 4.0})))
    swapped = kernels.vllm(configs["llama"], F32, layout_swapped=True)
    same = ropecheck.check(swapped, config=configs["llama"], dtype=F32)
    assert not same.passed and not noted(same), str(same)
    other = ropecheck.check(swapped, config=str(dynamic), dtype=F32)
    assert not other.passed and len(noted(other)) == 1 and noted(other)[0] in str(other), str(other)
    assert "claim={'engine': 'vllm'}" in noted(other)[0] and "base" in noted(other)[0], noted(other)
    declared = ropecheck.check(swapped, config=str(dynamic), dtype=F32, claim={"engine": "vllm"})
    assert not declared.passed and not noted(declared), str(declared)
    good = ropecheck.check(kernels.vllm(configs["llama"], F32), config=configs["llama"], dtype=F32)
    assert good.passed and not noted(good), str(good)

