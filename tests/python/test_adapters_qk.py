"""The adapters' qk forms (`ropecheck_qk`) call the wrapped code the way the engines call it, without the `ropecheck`
program: fakes of transformers' and vLLM's entry points record the shapes, values and positions they are given and
return outputs that say which input they came from (q * 2, k * 3, exact in float32), so a q and k swapped,
merged or laid out wrongly shows. The toys' real arithmetic is checked end to end in test_qk.py.
"""

import os

import pytest
import torch

import hf_style
import plain_style
import qk_kernels
import vllm_style
import ropecheck as rc

T, HQ, HK, D = 5, 8, 2, 16
SEED = int(os.environ.get("ROPECHECK_TEST_SEED", "31"))


@pytest.fixture
def qkp():
    print(f"seed {SEED}")  # random inputs: ROPECHECK_TEST_SEED=<seed> reruns them
    gen = torch.Generator().manual_seed(SEED)
    q = torch.randint(-127, 128, (T, HQ, D), generator=gen).float() / 128
    k = torch.randint(-127, 128, (T, HK, D), generator=gen).float() / 128
    return q, k, torch.tensor([0, 1, 2, 4096, 2 ** 24 + 3])


class FakeRotaryEmbedding:
    """transformers' rotary_emb(x, position_ids) -> cos, sin [bs, seq, D] (ones and zeros), recording its call."""

    def __init__(self):
        self.calls = []

    def __call__(self, x, position_ids):
        self.calls.append((tuple(x.shape), position_ids.clone()))
        shape = (*position_ids.shape, D)
        return torch.ones(shape, dtype=x.dtype), torch.zeros(shape, dtype=x.dtype)


def test_hf_qk_passes_distinct_q_and_k_as_the_attention_lays_them(qkp):
    q, k, positions = qkp
    seen = []

    def apply_rotary_pos_emb(q4, k4, cos, sin, unsqueeze_dim=1):
        seen.append((tuple(q4.shape), tuple(k4.shape), unsqueeze_dim, q4.clone(), k4.clone()))
        return q4 * 2, k4 * 3

    for unsqueeze_dim, q_shape, k_shape in ((1, (1, HQ, T, D), (1, HK, T, D)), (2, (1, T, HQ, D), (1, T, HK, D))):
        rotary = FakeRotaryEmbedding()
        fn = rc.adapters.hf(rotary, apply_rotary_pos_emb, unsqueeze_dim=unsqueeze_dim)
        q_out, k_out = fn.ropecheck_qk(q, k, positions)
        got_q, got_k, got_dim, q4, k4 = seen[-1]
        assert (got_q, got_k, got_dim) == (q_shape, k_shape, unsqueeze_dim), seen[-1][:3]
        back = (lambda t: t[0].transpose(0, 1)) if unsqueeze_dim == 1 else (lambda t: t[0])
        assert torch.equal(back(q4), q) and torch.equal(back(k4), k), "q and k were not passed as given"
        assert rotary.calls[-1][0] == (1, HQ, T, D) and torch.equal(rotary.calls[-1][1], positions[None, :]), \
            "rotary_emb is given q [1, HQ, T, D] and position_ids [1, T]"
        assert torch.equal(q_out, q * 2) and torch.equal(k_out, k * 3), "q_embed and k_embed came back swapped"
        assert fn.ropecheck_qk.ropecheck_adapter == "hf" and "apply_rotary_pos_emb" in fn.ropecheck_qk.ropecheck_kernel


def test_hf_qk_an_output_that_is_not_a_tensor(qkp):
    fn = rc.adapters.hf(FakeRotaryEmbedding(), lambda q4, k4, cos, sin: (q4, None))
    with pytest.raises(rc.KernelOutputError, match=r"returned \(Tensor, NoneType\)"):
        fn.ropecheck_qk(*qkp)


class FakeVllmRotary:
    """vLLM's rotary_emb(positions, query, key): query rotated in place (x2, as forward_cuda) and None returned for
    it, key returned new (x3, as forward_native); records the shapes it is given."""

    def __init__(self):
        self.calls = []
        self.cos_sin_cache = torch.zeros(8192, D)

    def __call__(self, positions, query, key):
        self.calls.append((positions.clone(), tuple(query.shape), tuple(key.shape)))
        query.mul_(2)
        return None, key * 3


@pytest.mark.parametrize("heads_axis", [False, True])
def test_vllm_qk_flattens_each_with_its_own_head_count(qkp, heads_axis):
    q, k, positions = qkp
    rotary = FakeVllmRotary()
    fn = rc.adapters.vllm(rotary, heads_axis=heads_axis)
    q_before, k_before = q.clone(), k.clone()
    q_out, k_out = fn.ropecheck_qk(q, k, positions)
    pos, q_shape, k_shape = rotary.calls[-1]
    assert (q_shape, k_shape) == (((T, HQ, D), (T, HK, D)) if heads_axis else ((T, HQ * D), (T, HK * D)))
    assert torch.equal(pos, positions)
    assert torch.equal(q_out, q * 2) and torch.equal(k_out, k * 3), "in place and returned outputs mixed up"
    assert torch.equal(q, q_before) and torch.equal(k, k_before), "the caller's q or k was handed over"
    assert fn.ropecheck_qk.ropecheck_max_position == 8191 == fn.ropecheck_max_position


def test_vllm_qk_a_key_of_the_query_s_size_is_a_kernel_output_error(qkp):
    fn = rc.adapters.vllm(lambda positions, query, key: (query, query.clone()))
    with pytest.raises(rc.KernelOutputError, match=r"returned a key of shape \[5, 128\], expected \[5, 32\]"):
        fn.ropecheck_qk(*qkp)


def test_plain_and_inplace_qk_apply_one_kernel_to_q_and_to_k(qkp):
    q, k, positions = qkp
    expected = (plain_style.rope(q, positions), plain_style.rope(k, positions))
    for fn in (rc.adapters.plain(plain_style.rope), rc.adapters.inplace(plain_style.rope_)):
        q_before, k_before = q.clone(), k.clone()
        q_out, k_out = fn.ropecheck_qk(q, k, positions)
        assert torch.equal(q_out, expected[0]) and torch.equal(k_out, expected[1]), fn.ropecheck_adapter
        assert torch.equal(q, q_before) and torch.equal(k, k_before), f"{fn.ropecheck_adapter} changed its input"


def test_inplace_qk_gives_copies_and_returns_them(qkp):
    q, k, positions = qkp
    q_before, k_before = q.clone(), k.clone()
    fn = rc.adapters.inplace_qk(qk_kernels.hf_qk_)
    q_out, k_out = fn(q, k, positions)
    ref = qk_kernels.hf_qk(q, k, positions)
    assert torch.equal(q_out, ref[0]) and torch.equal(k_out, ref[1])
    assert torch.equal(q, q_before) and torch.equal(k, k_before), "inplace_qk handed over the caller's q or k"
    assert fn.ropecheck_adapter == "inplace_qk" and fn.ropecheck_kernel == "hf_qk_"


def test_the_toys_behind_the_adapters_agree_with_the_qk_toy(qkp):
    """transformers' and vLLM's toys through the adapters' qk forms rotate q and k as qk_kernels.hf_qk does
    (within fp32 rounding: the toys form their angles by a matmul and a cos/sin table, hf_qk by a product)."""
    q, k, positions = qkp
    config = {"head_dim": D, "rope_theta": qk_kernels.BASE, "max_position_embeddings": 2 ** 24 + 4}
    ref = qk_kernels.hf_qk(q, k, positions)
    hf = rc.adapters.hf(hf_style.RotaryEmbedding(config), hf_style.apply_rotary_pos_emb)
    small = dict(config, max_position_embeddings=8192)
    vllm = rc.adapters.vllm(vllm_style.from_config(small, torch.float32))
    for name, fn, keep in (("hf", hf, slice(None)), ("vllm", vllm, slice(0, 4))):
        q_out, k_out = fn.ropecheck_qk(q[keep], k[keep], positions[keep])
        torch.testing.assert_close(q_out, ref[0][keep], rtol=0, atol=2e-5, msg=f"{name}: q_out")
        torch.testing.assert_close(k_out, ref[1][keep], rtol=0, atol=2e-5, msg=f"{name}: k_out")
