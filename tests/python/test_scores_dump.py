"""`ropecheck audit --scores` on the weights an eager attention returns with output_attentions, and the inputs before
RoPE: what a user captures from a transformers-style model (docs/scores.md, "Scores and weights as data").

The attention is written here from transformers' Llama eager path (src/transformers/models/llama/modeling_llama.py at
5dd4a635: apply_rotary_pos_emb with rotate_half, repeat_kv so query head h reads key head h // n_rep,
eager_attention_forward: logits = q k^T * scaling, an additive causal mask of finfo.min, softmax in fp32 cast to the
query's dtype). Correct in float32 and bfloat16, also with a per-row constant added to the logits (BLOOM's slope
times the key position is one: softmax removes it), must pass; each planted bug is named first by its class. The
inputs are drawn from a fixed seed, printed.
"""

import math

import numpy as np
import pytest
import torch

import ropecheck
from ropecheck import _safetensors as st

SEED = 20261205
HEADS, KV_HEADS, D, T = 4, 2, 64, 48
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_attention_heads": HEADS,
          "num_key_value_heads": KV_HEADS, "head_dim": D, "rope_theta": 500000.0, "max_position_embeddings": 131072,
          "rope_scaling": None}


def _rope(x, positions, base):
    """transformers' half-split RoPE: fp32 inv_freq and angles, cos/sin cast to x's dtype. x [T, H, D]."""
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    freqs = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :].to(x.dtype), emb.sin()[:, None, :].to(x.dtype)
    rotated = torch.cat((-x[..., D // 2:], x[..., :D // 2]), dim=-1)
    return x * cos + rotated * sin


def _dump(tmp_path, dtype, first=0, base=500000.0, key_shift=0, scale=D ** -0.5, row_bias=0.0, what="weights"):
    print(f"[ropecheck] seed {SEED}")
    g = torch.Generator().manual_seed(SEED)
    q = (torch.randint(-64, 65, (T, HEADS, D), generator=g).float() / 64).to(dtype)
    k = (torch.randint(-64, 65, (T, KV_HEADS, D), generator=g).float() / 64).to(dtype)
    pos = torch.arange(first, first + T)
    q2, k2 = _rope(q, pos, base), _rope(k, pos + key_shift, base)
    k2 = k2.repeat_interleave(HEADS // KV_HEADS, dim=1)  # repeat_kv
    logits = torch.einsum("thd,shd->hts", q2, k2) * scale
    logits = logits + row_bias * torch.arange(T, dtype=logits.dtype)[None, :, None]  # a constant per row
    mask = torch.full((T, T), torch.finfo(logits.dtype).min, dtype=logits.dtype).triu(1)  # in the model dtype, as HF makes it
    logits = logits + mask
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32).to(dtype)
    values = weights if what == "weights" else logits

    def arr(t):
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return st.Tensor("BF16", t.view(torch.int16).numpy().view(np.uint16))
        return t.numpy()

    path = tmp_path / f"scores_{what}.safetensors"
    st.write(path, {"q": arr(q), "k": arr(k), "q_positions": pos.numpy(), "k_positions": pos.numpy(), what: arr(values)})
    return path


DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.bfloat16, id="bfloat16")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("first", [0, 70000])
def test_eager_weights_of_a_correct_model_pass(tmp_path, dtype, first):
    v = ropecheck.audit(_dump(tmp_path, dtype, first), config=CONFIG, scores=True)
    assert v.passed, str(v)
    assert v.json["kind"] == "scores" and v.json["scores"]["judged"] > HEADS * T * T // 4


@pytest.mark.parametrize("dtype", DTYPES)
def test_logits_with_a_per_row_constant_are_the_same_attention(tmp_path, dtype):
    v = ropecheck.audit(_dump(tmp_path, dtype, row_bias=0.25, what="logits"), config=CONFIG, scores=True)
    assert v.passed, str(v)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bug, kwargs, expected", [
    ("keys rotated one position ahead", {"key_shift": 1}, "key_positions_wrong"),
    ("rope_theta 10000 in the model", {"base": 10000.0}, "base_wrong"),
    ("softmax scale 1/d", {"scale": 1.0 / D}, "score_scale_wrong"),
    ("YaRN's temperature on the logits twice", {"scale": D ** -0.5 * (1 + 0.1 * math.log(4)) ** 2}, "score_scale_wrong"),
])
def test_each_bug_is_named_first(tmp_path, dtype, bug, kwargs, expected):
    v = ropecheck.audit(_dump(tmp_path, dtype, **kwargs), config=CONFIG, scores=True)
    assert not v.passed, f"{bug}: passed\n{v}"
    assert v.first_class == expected, f"{bug}: expected {expected}\n{v}"


def test_a_dump_with_weights_of_the_wrong_shape_is_bad_input(tmp_path):
    path = tmp_path / "bad.safetensors"
    q = np.ones((T, HEADS, D), np.float32)
    st.write(path, {"q": q, "k": np.ones((T, KV_HEADS, D), np.float32), "q_positions": np.arange(T),
                    "k_positions": np.arange(T), "weights": np.ones((HEADS, T, T + 1), np.float32)})
    with pytest.raises(ropecheck.RopecheckError, match=r"weights is .* expected \[4, 48, 48\]"):
        ropecheck.audit(path, config=CONFIG, scores=True)
