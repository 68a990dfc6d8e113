"""Rules whose frequencies depend on each call's sequence length (transformers' dynamic_rope_update: seq_len =
max(position_ids) + 1 of the call): LongRoPE's short/long factors and dynamic NTK's base. The probe's plan has
calls of many lengths, so the door judges each group of calls at its own length (tools/audit/probe_outputs.hpp
seq_len_groups). A correct kernel in transformers' style passes; the real bugs of these rules fail: the long
factors used for every call (a caller that picks them once for the model's longest context) and dynamic NTK
never applied. The claims are real config.json files of tests/data/configs/ (Phi-3-mini-128k: LongRoPE over an
original 4096; a Llama-2 with dynamic NTK x2 over 4096).
"""

from pathlib import Path

import pytest
import torch

import hf_style
import ropecheck as rc

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "configs"
PHI3, DYNAMIC = CONFIGS / "phi3_mini_128k.json", CONFIGS / "dynamic_ntk.json"
ALLOWED_WARNINGS = {"angle_drift_fp32"}  # what a correct fp32 kernel earns (test_adapters_pass.py)


def _kernel(config, **bugs):
    return rc.adapters.hf(hf_style.RotaryEmbedding(str(config), **bugs), hf_style.apply_rotary_pos_emb)


def _check(ropecheck, config, dtype, **bugs):
    return ropecheck.check(_kernel(config, **bugs), config=str(config), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("config", [PHI3, DYNAMIC], ids=["longrope", "dynamic"])
def test_correct_per_call_rule_passes_in_groups(ropecheck, config, dtype):
    v = _check(ropecheck, config, dtype)
    assert v.passed, f"a correct kernel switching per call's length failed:\n{v}"
    assert not [f for f in v.warnings if f.bug_class not in ALLOWED_WARNINGS], str(v)
    # Both regimes were asked and judged apart: the note names the groups (short and long lengths).
    groups = [n for n in v.notes if n.startswith("judged in ")]
    assert groups, f"no group note:\n{v}"


def test_longrope_long_factors_for_every_call_fail(ropecheck):
    v = _check(ropecheck, PHI3, torch.float32, longrope_always_long=True)
    assert not v.passed, f"LongRoPE's long factors at short lengths passed:\n{v}"
    # The failure is in the calls of short length (up to the original 4096), not in the long ones.
    failing = [f for f in v.findings if f.bug_class not in ALLOWED_WARNINGS]
    assert failing and all("calls of sequence length" in f.sentence for f in failing), str(v)
    assert all(int(f.sentence.split("calls of sequence length ")[1].split(" ")[0].split("..")[-1]) <= 4096
               for f in failing), f"a failure outside the short calls:\n{v}"


def test_dynamic_ntk_never_reset_is_named_first_with_its_base(ropecheck):
    """transformers' _dynamic_frequency_update without its reset: the base a long call grew is kept, so the same
    prefill calls give other outputs the second time. Under a dynamic NTK claim that carried state is
    dynamic_ntk_not_reset, named first (not nondeterministic), with the base the decode calls fit (issue 34)."""
    v = _check(ropecheck, DYNAMIC, torch.float32, dynamic_no_reset=True)
    assert not v.passed and v.first_class == "dynamic_ntk_not_reset", f"named {v.first_class!r} first:\n{v}"
    assert "base" in v.findings[0].sentence, v.findings[0].sentence
    assert not [f for f in v.findings if f.bug_class == "nondeterministic"], str(v)


def test_dynamic_ntk_never_applied_fails(ropecheck):
    v = _check(ropecheck, DYNAMIC, torch.float32, dynamic_never=True)
    assert not v.passed, f"dynamic NTK never applied passed:\n{v}"
