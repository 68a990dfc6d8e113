"""python/examples/test_rope.py — the README's example ("Checking a PyTorch RoPE in pytest"): a user's RoPE with a
real bug, checked by the `ropecheck` fixture. Run from this folder (README.md runs it so, in the docs label):

    PYTHONPATH=.. /usr/bin/python3 -m pytest -p ropecheck.pytest test_rope.py

config.json here is a Llama-style attention (head_dim 128, rope_theta 500000, no scaling). my_rope is
transformers' half-split rotation (modeling_llama.py, rotate_half / apply_rotary_pos_emb) with the bug of
autocast before transformers pull request 29285: the positions are rounded to x's dtype (bfloat16 holds integers
exactly only up to 256) before the angles are formed.
"""
import torch


def my_rope(x, positions):  # x [tokens, heads, 128], positions int64 [tokens]
    inv_freq = 1.0 / 500000.0 ** (torch.arange(0, 128, 2).float() / 128)
    angles = positions.to(x.dtype).float()[:, None] * inv_freq  # the bug: positions in x's dtype
    cos, sin = torch.cat((angles, angles), -1).cos()[:, None], torch.cat((angles, angles), -1).sin()[:, None]
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)


def test_rope(ropecheck):
    ropecheck.assert_conforms(my_rope, config="config.json", dtype=torch.bfloat16)
