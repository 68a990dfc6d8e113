"""ropecheck.capture.capture_scores on a running transformers-style model (toys/llama_eager.py: a two-layer Llama with
GQA, eager attention and a KV cache, in plain torch; transformers is not installed here): per attention call the
queries and keys before RoPE, their positions and the eager weights, written as `ropecheck audit --scores` dumps and
judged with ropecheck.audit(..., scores=True) (docs/capture.md, "At the score").

Each capture is a prefill of PROMPT tokens then 2 decode steps (whose weights reach the prefill's keys through the
cache): 2 layers x 3 forward passes = 6 files. A correct model passes in float32 and bfloat16, also at positions from
70000; each planted bug (config.json keeps claiming rope_theta 500000) is named first in every file. Weights from
torch.manual_seed(WEIGHTS_SEED), tokens from torch.Generator().manual_seed(TOKENS_SEED): printed by every test.
"""

import json
import os
from pathlib import Path

import pytest
import torch

import llama_eager
import ropecheck
from ropecheck import _safetensors as st
from ropecheck.capture import CaptureError, capture_scores

WEIGHTS_SEED, TOKENS_SEED = 0, 1
PROMPT, STEPS = 40, 2
FILES = 2 * (STEPS + 1)
DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.bfloat16, id="bfloat16")]


def _seeds():
    print(f"[ropecheck] seeds: weights torch.manual_seed({WEIGHTS_SEED}), tokens Generator().manual_seed({TOKENS_SEED})")


def _capture(out, dtype, bug="none", first=0, batch=1, prompt=PROMPT, **kw):
    """The toy's generate under capture_scores into out; returns (model, index.json, logits without, logits with)."""
    _seeds()
    torch.set_num_threads(1)
    model = llama_eager.build(dtype, bug, seed=WEIGHTS_SEED)
    plain = llama_eager.generate(model, prompt, STEPS, first=first, batch=batch, seed=TOKENS_SEED)
    with capture_scores(llama_eager, "apply_rotary_pos_emb", out=out, model=model, quiet=True, **kw):
        captured = llama_eager.generate(model, prompt, STEPS, first=first, batch=batch, seed=TOKENS_SEED)
    index = json.loads((Path(out) / "index.json").read_text())
    return model, index, plain, captured


def _audits(out, index):
    """Every file's Verdict, judged at the layer its metadata names (the scores door reads no layer from the file)."""
    config = os.path.join(out, "config.json")
    return [(f["file"], ropecheck.audit(os.path.join(out, f["file"]), config=config, layer=f["layer"], scores=True))
            for f in index["files"]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("first", [0, 70000])
def test_a_correct_model_passes_at_the_score_and_its_logits_are_unchanged(tmp_path, dtype, first):
    _, index, plain, captured = _capture(tmp_path, dtype, first=first)
    assert all(torch.equal(a, b) for a, b in zip(plain, captured)), "the capture changed the model's logits"
    assert len(index["files"]) == FILES, index["files"]
    for name, v in _audits(tmp_path, index):
        assert v.passed, f"{name}\n{v}"
        assert v.json["kind"] == "scores" and v.json["scores"]["judged"] > 0, name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bug, expected", [
    ("base_10000", "base_wrong"),              # rope_theta 10000 in the module, 500000 in config.json
    ("keys_one_ahead", "key_positions_wrong"),  # every key rotated one position ahead
])
def test_each_planted_bug_is_named_first_in_every_file(tmp_path, dtype, bug, expected):
    _, index, _, _ = _capture(tmp_path, dtype, bug)
    assert len(index["files"]) == FILES
    for name, v in _audits(tmp_path, index):
        assert not v.passed, f"{bug}: {name} passed\n{v}"
        assert v.first_class == expected, f"{bug}: {name}: expected {expected}\n{v}"


# What the judge gets wrong today on these captures (the report of issue 31 item 4 gives the rerun commands): the
# files are right (a float64 fit of the weights prefers the bug's prediction 30 times over), the verdict is not.
# strict: when the judge is fixed these XPASS and fail, and the marks go.
@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="judge: in bfloat16 from position 70000 the scores door passes keys one position ahead "
                          "(noise_rms ~1 < 3, worst ~0.3 of the allowance)")
def test_keys_one_ahead_at_positions_from_70000_in_bfloat16_is_named(tmp_path):
    _, index, _, _ = _capture(tmp_path, torch.bfloat16, "keys_one_ahead", first=70000)
    for name, v in _audits(tmp_path, index):
        assert v.first_class == "key_positions_wrong", f"{name}\n{v}"


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="judge: base 10000 under a 500000 claim, a 300-token prefill at positions from 100000: the "
                          "prefill files fail as unexplained (base fitted 6309.57, though 10000 fits the weights to their "
                          "rounding), not base_wrong; the decode files name it")
@pytest.mark.parametrize("dtype", DTYPES)
def test_base_10000_on_a_long_prefill_at_positions_from_100000_is_named_base_wrong(tmp_path, dtype):
    _, index, _, _ = _capture(tmp_path, dtype, "base_10000", first=100000, prompt=300)
    for name, v in _audits(tmp_path, index):
        assert v.first_class == "base_wrong", f"{name}\n{v}"


def test_the_files_hold_q_and_k_before_rope_their_positions_and_the_model_s_weights(tmp_path):
    """Bitwise: q and k are the projections' outputs (before RoPE), a decode file's keys are the prefill's keys and its
    own, the weights are those the model returns with output_attentions, softmax_scale is the module's scaling."""
    _seeds()
    model = llama_eager.build(torch.bfloat16, seed=WEIGHTS_SEED)
    projected = {}
    for i, layer in enumerate(model.layers):
        for which in ("q_proj", "k_proj"):
            getattr(layer.self_attn, which).register_forward_hook(
                lambda m, a, out, key=(i, which): projected.setdefault(key, []).append(out.detach().clone()))
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(TOKENS_SEED))
    with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True) as cap:
        with torch.no_grad():
            _, cache, attentions = model(ids)  # output_attentions not passed: the capture asked the config for it
            _, _, attentions_decode = model(ids[:, -1:], past_key_values=cache)
    assert attentions is not None and attentions_decode is not None
    assert [f["file"] for f in cap.files] == ["call0000-layer0-scores.safetensors", "call0001-layer1-scores.safetensors",
                                             "call0002-layer0-scores.safetensors", "call0003-layer1-scores.safetensors"]
    d = 64
    for f, weights in zip(cap.files, list(attentions) + list(attentions_decode)):
        t, meta = st.read(tmp_path / f["file"])
        layer, step = f["layer"], f["forward"]
        q = projected[(layer, "q_proj")][step].view(1, -1, 4, d)
        k = torch.cat([projected[(layer, "k_proj")][s].view(1, -1, 2, d) for s in range(step + 1)], dim=1)
        for name, want in (("q", q), ("k", k), ("weights", weights)):
            assert t[name].dtype == "BF16" and list(t[name].array.shape) == list(want.shape), (f["file"], name)
            assert (t[name].array == want.contiguous().view(torch.int16).numpy().view("<u2")).all(), (f["file"], name)
        assert t["q_positions"].array.tolist() == ([list(range(12))] if step == 0 else [[12]])
        assert t["k_positions"].array.tolist() == [list(range(12 + step))]
        assert meta["softmax_scale"] == "0.125" and meta["layer"] == str(layer) and meta["forward"] == str(step)
    assert model.config.output_attentions is False, "output_attentions not restored"


def test_the_model_is_left_as_it_was_after_the_block_also_when_it_raises(tmp_path):
    _seeds()
    model = llama_eager.build(torch.float32, seed=WEIGHTS_SEED)
    original = llama_eager.apply_rotary_pos_emb
    ids = torch.randint(0, 97, (1, 8), generator=torch.Generator().manual_seed(TOKENS_SEED))
    with pytest.raises(KeyError):
        with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True):
            assert llama_eager.apply_rotary_pos_emb is not original and model.config.output_attentions is True
            with torch.no_grad():
                model(ids)
            raise KeyError("the user's code raised")
    assert llama_eager.apply_rotary_pos_emb is original
    assert model.config.output_attentions is False
    attn = model.layers[0].self_attn
    assert not attn._forward_hooks and not attn._forward_pre_hooks and not model._forward_pre_hooks
    assert "forward" not in vars(model.rotary_emb)
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["completed"] is False and len(index["files"]) == 2 and index["kind"] == "scores"


def test_batch_rows_are_written_one_file_each_and_pass(tmp_path):
    _, index, _, _ = _capture(tmp_path, torch.float32, batch=2)
    assert len(index["files"]) == 2 * FILES
    assert sorted({f["row"] for f in index["files"]}) == [0, 1]
    assert index["files"][0]["file"] == "call0000-layer0-row0-scores.safetensors"
    for name, v in _audits(tmp_path, index):
        assert v.passed, f"{name}\n{v}"


def test_layers_and_max_calls_limit_what_is_written(tmp_path):
    _, index, _, _ = _capture(tmp_path / "one", torch.float32, layers=[1])
    assert [f["layer"] for f in index["files"]] == [1, 1, 1]
    assert [f["k_shape"][1] for f in index["files"]] == [PROMPT, PROMPT + 1, PROMPT + 2]  # the cache's keys kept
    for name, v in _audits(tmp_path / "one", index):
        assert v.passed, f"{name}\n{v}"
    _, index, _, _ = _capture(tmp_path / "two", torch.float32, max_calls=2)
    assert [f["file"] for f in index["files"]] == ["call0000-layer0-scores.safetensors",
                                                   "call0001-layer1-scores.safetensors"]


def test_a_second_sequence_in_the_same_block_starts_its_keys_again(tmp_path):
    """Two generate calls under one capture: the second prefill's weights hold its own keys only (Tk = Tq), so the
    keys kept from the first sequence are dropped, and every file of both sequences passes."""
    _seeds()
    model = llama_eager.build(torch.float32, seed=WEIGHTS_SEED)
    with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True) as cap:
        llama_eager.generate(model, PROMPT, STEPS, seed=TOKENS_SEED)
        llama_eager.generate(model, PROMPT, STEPS, seed=TOKENS_SEED + 1)
    index = json.loads((tmp_path / "index.json").read_text())
    assert [f["k_shape"][1] for f in cap.files] == [PROMPT, PROMPT, PROMPT + 1, PROMPT + 1, PROMPT + 2, PROMPT + 2] * 2
    for name, v in _audits(tmp_path, index):
        assert v.passed, f"{name}\n{v}"


def test_an_attention_that_is_not_eager_is_refused_before_anything_is_patched(tmp_path):
    _seeds()
    model = llama_eager.build(torch.float32, seed=WEIGHTS_SEED, attn_implementation="sdpa")
    with pytest.raises(CaptureError, match=r"_attn_implementation is 'sdpa'.*attn_implementation=\"eager\""):
        with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True):
            pass
    assert llama_eager.apply_rotary_pos_emb.__module__ == "llama_eager" and not model._forward_pre_hooks


def test_an_attention_returning_no_weights_is_an_error_naming_the_module(tmp_path, monkeypatch):
    _seeds()
    model = llama_eager.build(torch.float32, seed=WEIGHTS_SEED)
    monkeypatch.setitem(llama_eager.ALL_ATTENTION_FUNCTIONS, "flash_toy", llama_eager.sdpa_attention_forward)
    ids = torch.randint(0, 97, (1, 8), generator=torch.Generator().manual_seed(TOKENS_SEED))
    with pytest.raises(CaptureError, match=r"layers\.0\.self_attn \(layer 0\) returned no attention weights"):
        with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True):
            model.config._attn_implementation = "flash_toy"  # switched after the check: what the hook sees
            with torch.no_grad():
                model(ids)
    model.config._attn_implementation = "eager"
    assert model.config.output_attentions is False


def test_what_it_cannot_capture_is_refused_with_what_to_pass(tmp_path):
    _seeds()
    model = llama_eager.build(torch.float32, seed=WEIGHTS_SEED)
    with pytest.raises(CaptureError, match="needs model="):
        capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=None)
    with pytest.raises(CaptureError, match="no attention module"):
        with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model.rotary_emb, quiet=True):
            pass

    class VllmRotary(torch.nn.Module):
        def forward(self, positions, query, key=None):
            return query, key

    with pytest.raises(CaptureError, match="vLLM's parameters"):
        with capture_scores(VllmRotary(), "forward", out=tmp_path, model=model, quiet=True):
            pass
