"""adapters.hf driven with M-RoPE (issue 34): transformers' Qwen2-VL layout hands rotary_emb position_ids [3, 1, T]
(rows, batch, tokens); the probe's multimodal tokens (rows that differ) must reach each section's row. A toy written
as transformers computes it (toys/qwen2_vl_style.py) passes under the Qwen2.5-VL config; the same toy with its
sections in another order is named.
"""

import functools
from pathlib import Path

import torch

import ropecheck
import qwen2_vl_style as q2

CONFIG = Path(__file__).resolve().parent.parent / "data" / "configs" / "qwen2_5_vl_7b.json"


def kernel(section):
    return ropecheck.adapters.hf(q2.Qwen2VLRotaryEmbedding(128, 1000000.0),
                                 functools.partial(q2.apply_multimodal_rotary_pos_emb, mrope_section=section))


def test_qwen2_vl_style_mrope_through_adapters_hf_passes(tmp_path):
    v = ropecheck.check(kernel([16, 24, 24]), CONFIG, dtype=torch.float32, dump_dir=tmp_path)
    assert v, str(v)
    assert v.json["mrope"]["position_rows"] == 3 and v.json["mrope"]["multimodal_tokens"] > 0, v.json["mrope"]


def test_another_section_split_through_adapters_hf_is_named(tmp_path):
    v = ropecheck.check(kernel([24, 24, 16]), CONFIG, dtype=torch.float32, dump_dir=tmp_path)
    assert not v, str(v)
    assert v.first_class in ("mrope_section_wrong", "mrope_rows_swapped"), str(v)
