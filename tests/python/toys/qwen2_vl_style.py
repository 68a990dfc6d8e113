"""A Qwen2-VL-style M-RoPE in plain torch, as transformers computes it (for tests/python/test_mrope_hf.py):
transformers models/qwen2_vl/modeling_qwen2_vl.py Qwen2VLRotaryEmbedding.forward(x, position_ids [3, bs, seq]):
inv_freq[None, None, :, None].float().expand(3, bs, -1, 1) @ position_ids[:, :, None, :].float(), transposed to
[3, bs, seq, dim/2], emb = cat(freqs, freqs), cos/sin in fp32 cast to x's dtype; apply_multimodal_rotary_pos_emb(q, k,
cos, sin, mrope_section, unsqueeze_dim=1): mrope_section * 2, cos.split(...) taking chunk i from row i % 3, then
q * cos + rotate_half(q) * sin.
"""

import torch


class Qwen2VLRotaryEmbedding(torch.nn.Module):
    def __init__(self, head_dim=128, base=1000000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(2, 3)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    mrope_section = mrope_section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)
