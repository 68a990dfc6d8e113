"""The table door (ropecheck.check_table; docs/tables.md) on toy position embeddings written as the families' code
computes them (toys/table_kernels.py): each family's correct table passes, each port's bug is named.
"""

import pytest
import torch

import ropecheck
import table_kernels as tk

M2M100 = {"model_type": "m2m_100", "d_model": 64, "max_position_embeddings": 1024, "pad_token_id": 1}
DISTILBERT = {"model_type": "distilbert", "dim": 64, "max_position_embeddings": 512, "sinusoidal_pos_embds": True}
OPT = {"model_type": "opt", "hidden_size": 32, "max_position_embeddings": 128, "pad_token_id": 1}
ROBERTA = {"model_type": "roberta", "hidden_size": 32, "max_position_embeddings": 130, "pad_token_id": 1}
WHISPER = {"model_type": "whisper", "d_model": 16, "max_source_positions": 1500, "max_target_positions": 448}


def first(v):
    return v.first_class


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_m2m100_as_its_code_computes_it_passes(tmp_path, dtype):
    v = ropecheck.check_table(tk.M2M100Positions(dtype=dtype), M2M100, dtype=dtype, dump_dir=tmp_path)
    assert v, str(v)


def test_m2m100_without_its_offset_of_two_is_positions_offset(tmp_path):
    v = ropecheck.check_table(tk.M2M100Positions(no_offset=True), M2M100, dump_dir=tmp_path)
    assert not v and first(v) == "positions_offset", str(v)


def test_m2m100_counting_left_padding_is_named(tmp_path):
    v = ropecheck.check_table(tk.M2M100Positions(count_padding=True), M2M100, dump_dir=tmp_path)
    assert not v and first(v) == "positions_offset", str(v)
    assert "left padding is counted" in v.findings[0].sentence


def test_fairseq_denominator_under_a_paper_claim_is_named(tmp_path):
    fn = tk.SinusoidPositions(offset=0, interleave=True)  # fairseq's frequencies, the paper's layout
    v = ropecheck.check_table(fn, claim={"scheme": "sinusoidal", "layout": "interleaved"}, dump_dir=tmp_path)
    assert not v and first(v) == "sinusoid_frequencies_wrong", str(v)
    assert "d/2 - 1" in v.findings[0].sentence


def test_distilbert_sinusoid_passes_and_a_concatenated_port_is_layout_wrong(tmp_path):
    assert ropecheck.check_table(tk.DistilBertSinusoid(), DISTILBERT, dump_dir=tmp_path / "ok")
    v = ropecheck.check_table(tk.DistilBertSinusoid(concatenate=True), DISTILBERT, dump_dir=tmp_path / "bug")
    assert not v and first(v) == "sinusoid_layout_wrong", str(v)


def test_positions_in_bf16_are_named(tmp_path):
    fn = tk.SinusoidPositions(positions_bf16=True)
    claim = {"scheme": "sinusoidal", "layout": "concatenated", "denominator": 31, "offset": 2}
    assert ropecheck.check_table(tk.SinusoidPositions(), claim=claim, dump_dir=tmp_path / "ok")
    v = ropecheck.check_table(fn, claim=claim, dump_dir=tmp_path / "bug")
    assert not v and first(v) == "positions_low_precision", str(v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_opt_passes_and_indexed_from_zero_is_positions_offset(tmp_path, dtype):
    ok = tk.OptPositions(dtype=dtype)
    assert ropecheck.check_table(ok, OPT, weights=ok.weight, dtype=dtype, dump_dir=tmp_path / "ok")
    bug = tk.OptPositions(dtype=dtype, no_offset=True)
    v = ropecheck.check_table(bug, OPT, weights=bug.weight, dtype=dtype, dump_dir=tmp_path / "bug")
    assert not v and first(v) == "positions_offset", str(v)


def test_roberta_passes_and_left_padding_ignored_is_named(tmp_path):
    ok = tk.RobertaPositions()
    assert ropecheck.check_table(ok, ROBERTA, weights=ok.weight, dump_dir=tmp_path / "ok")
    bug = tk.RobertaPositions(count_padding=True)
    v = ropecheck.check_table(bug, ROBERTA, weights=bug.weight, dump_dir=tmp_path / "bug")
    assert not v and first(v) == "positions_offset", str(v)
    assert "left padding is counted" in v.findings[0].sentence


def test_whisper_decoder_clamped_past_448_is_named_and_the_refusing_table_passes(tmp_path):
    ok = tk.LearnedTable(448, 16, seed=4)
    v = ropecheck.check_table(ok, WHISPER, stack="decoder", weights=ok.weight, dump_dir=tmp_path / "ok")
    assert v, str(v)
    bug = tk.LearnedTable(448, 16, seed=4, clamp=True)
    v = ropecheck.check_table(bug, WHISPER, stack="decoder", weights=bug.weight, dump_dir=tmp_path / "bug")
    assert not v and first(v) == "positions_past_table", str(v)
    assert "clamped to the last row (row 447)" in v.findings[0].sentence


def test_a_learned_claim_without_its_length_is_refused_naming_it(tmp_path):
    with pytest.raises(ropecheck.RopecheckError, match="--table-rows"):
        ropecheck.check_table(tk.LearnedTable(8, 4), claim={"scheme": "learned"}, dump_dir=tmp_path)


def test_a_learned_claim_without_its_weights_is_refused_naming_them(tmp_path):
    with pytest.raises(ropecheck.RopecheckError, match="--table-weights"):
        ropecheck.check_table(tk.LearnedTable(450, 16), WHISPER, stack="decoder", dump_dir=tmp_path)


# Every family of docs/tables.md with its rule as the family's code computes it (toys/table_kernels.py), at a small
# width: each passes under the claim its config gives.
FAMILIES = [
    ("gpt2", {"model_type": "gpt2", "n_embd": 16, "n_positions": 64}, None, lambda: tk.LearnedTable(64, 16)),
    ("gpt_bigcode", {"model_type": "gpt_bigcode", "n_embd": 16, "n_positions": 64}, None, lambda: tk.GPTBigCodePositions()),
    ("bert", {"model_type": "bert", "hidden_size": 16, "max_position_embeddings": 64}, None, lambda: tk.LearnedTable(64, 16)),
    ("roberta", {"model_type": "roberta", "hidden_size": 32, "max_position_embeddings": 130}, None, lambda: tk.RobertaPositions()),
    ("distilbert", {"model_type": "distilbert", "dim": 16, "max_position_embeddings": 64, "sinusoidal_pos_embds": False},
     None, lambda: tk.LearnedTable(64, 16)),
    ("opt", {"model_type": "opt", "hidden_size": 32, "max_position_embeddings": 128}, None, lambda: tk.OptPositions()),
    ("biogpt", {"model_type": "biogpt", "hidden_size": 32, "max_position_embeddings": 128}, None, lambda: tk.OptPositions()),
    ("bart", {"model_type": "bart", "d_model": 16, "max_position_embeddings": 64}, "decoder", lambda: tk.LearnedTable(66, 16, index_offset=2)),
    ("mbart", {"model_type": "mbart", "d_model": 16, "max_position_embeddings": 64}, None, lambda: tk.LearnedTable(66, 16, index_offset=2)),
    ("plbart", {"model_type": "plbart", "d_model": 16, "max_position_embeddings": 64}, None, lambda: tk.LearnedTable(66, 16, index_offset=2)),
    ("blenderbot", {"model_type": "blenderbot", "d_model": 16}, None, lambda: tk.LearnedTable(128, 16)),
    ("blenderbot-small", {"model_type": "blenderbot-small", "d_model": 16, "max_position_embeddings": 64}, None,
     lambda: tk.LearnedTable(64, 16)),
    ("whisper decoder", {"model_type": "whisper", "d_model": 16}, "decoder", lambda: tk.LearnedTable(448, 16)),
    ("whisper encoder", {"model_type": "whisper", "d_model": 16}, "encoder", lambda: tk.WhisperEncoderTable()),
    ("marian", {"model_type": "marian", "d_model": 16, "max_position_embeddings": 64}, None,
     lambda: tk.DistilBertSinusoid(64, 16, concatenate=True)),
    ("pegasus", {"model_type": "pegasus", "d_model": 16, "max_position_embeddings": 64}, "decoder",
     lambda: tk.DistilBertSinusoid(64, 16, concatenate=True)),
    ("distilbert sinusoid", {"model_type": "distilbert", "dim": 16, "max_position_embeddings": 64, "sinusoidal_pos_embds": True},
     None, lambda: tk.DistilBertSinusoid(64, 16)),
    ("m2m_100", {"model_type": "m2m_100", "d_model": 16}, None, lambda: tk.M2M100Positions(d=16)),
    ("speech_to_text", {"model_type": "speech_to_text", "d_model": 16}, "decoder", lambda: tk.M2M100Positions(d=16)),
    ("xglm", {"model_type": "xglm", "d_model": 16}, None, lambda: tk.SinusoidPositions(d=16, offset=2)),
]


@pytest.mark.parametrize("name,config,stack,make", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_familys_table_as_its_code_computes_it_passes(tmp_path, name, config, stack, make):
    fn = make()
    weights = getattr(fn, "weight", None)
    v = ropecheck.check_table(fn, config, stack=stack, weights=weights, dump_dir=tmp_path)
    assert v, f"{name}: {v}"
