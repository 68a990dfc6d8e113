#!/usr/bin/python3
"""tools/dump/torch_mrope_dump.py: run Hugging Face's multimodal RoPE (M-RoPE) with torch ops as HF's
code does and dump it in the format `ropecheck audit` reads (positions [3, 1, tokens], q as HF holds it
[1, heads, tokens, head_dim]), with the model's config.json.

Styles (written from transformers' code, run with the installed torch):
  qwen2vl  Qwen2-VL / Qwen2.5-VL (models/qwen2_vl/modeling_qwen2_vl.py): Qwen2VLRotaryEmbedding.forward
           (inv_freq[None, None, :, None] expanded to 3 rows, freqs = (inv_freq @ position_ids.float())
           .transpose(2, 3) with autocast off, emb = cat(freqs, freqs), cos/sin cast to x.dtype), then
           apply_multimodal_rotary_pos_emb: cos.split(mrope_section * 2, -1), chunk i from row i % 3,
           q * cos + rotate_half(q) * sin. config.json: Qwen2.5-VL's, rope_scaling {"type": "mrope",
           "mrope_section": [16, 24, 24]}.
  qwen3vl  Qwen3-VL (models/qwen3_vl/modeling_qwen3_vl.py): the same freqs, then apply_interleaved_mrope
           (freqs[0] with freqs_t[..., offset:3*section[dim]:3] = freqs[dim, ...] for dim 1, 2), emb =
           cat(freqs_t, freqs_t). config.json: Qwen3-VL's text_config, rope_scaling {"rope_type":
           "default", "mrope_section": [24, 20, 20], "mrope_interleaved": true}, rope_theta 5e6.

Positions as Qwen2VLModel.get_rope_index builds them: text tokens 0..n-1 (three equal rows), an image
of t x h x w LLM grid patches (temporal st + t_index, height st + row, width st + column), a video
after it (temporal index times --video-t-step, as Qwen2.5-VL scales it by second_per_grid_t *
tokens_per_second), text again from max + 1, then a few far text positions (up to 100000).

--bug NAME injects one known bug; config.json always claims the correct convention:
  rows_swapped      the height and width rows exchanged
  section_wrong     the other family's band split (qwen2vl: Qwen3-VL's interleaved [24, 20, 20];
                    qwen3vl: contiguous blocks of the same sections)
  text_positions    every band turned by the temporal row (image/video tokens at their text position)
  cos_sin_downcast  sglang (2026): the M-RoPE cos/sin cache cast to bf16 while q stays fp32 (needs
                    --dtype float32)
Run with /usr/bin/python3 (Debian's python3-torch); stdlib, torch and numpy only; deterministic.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_rope_dump import write_safetensors  # noqa: E402  (the dump writer of the 1-D script)

BUGS = ("none", "rows_swapped", "section_wrong", "text_positions", "cos_sin_downcast")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
STYLE = {"qwen2vl": {"section": [16, 24, 24], "base": 1000000.0},
         "qwen3vl": {"section": [24, 20, 20], "base": 5000000.0}}


def grid(spec):
    t, h, w = (int(v) for v in spec.lower().split("x"))
    return t, h, w


def rope_index(a):
    """[3, tokens] int64 as get_rope_index lays out text, one image, one video, text."""
    rows = [[], [], []]

    def text(ps):
        for p in ps:
            for r in rows:
                r.append(p)
    text(range(a.text_before))
    st = a.text_before
    for (t, h, w), t_step in ((grid(a.image), 1), (grid(a.video), a.video_t_step)):
        for ti in range(t):
            for hi in range(h):
                for wi in range(w):
                    rows[0].append(st + ti * t_step), rows[1].append(st + hi), rows[2].append(st + wi)
        st = max(max(r) for r in rows) + 1
    text(range(st, st + a.text_after))
    text(p for p in (1000, 4097, 32769, 100000) if p >= st + a.text_after)
    return torch.tensor(rows, dtype=torch.int64)


def inv_freq_of(base, dim):
    # Qwen2VLRotaryEmbedding / Qwen3VLTextRotaryEmbedding default rope parameters
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def freqs_of(inv_freq, position_ids):
    """[3, bs, tokens, dim/2] fp32: inv_freq expanded to 3 rows, matmul with the float positions."""
    inv = inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
    pos = position_ids[:, :, None, :].float()
    return (inv.float() @ pos.float()).transpose(2, 3)


def contiguous_cos_sin(freqs, section):
    emb = torch.cat((freqs, freqs), dim=-1)  # [3, bs, T, dim]
    cos, sin = emb.cos(), emb.sin()
    split = section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(split, dim=-1))], dim=-1)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(split, dim=-1))], dim=-1)
    return cos, sin  # [bs, T, dim]


def interleaved_cos_sin(freqs, section):
    freqs_t = freqs[0].clone()
    for dim, offset in enumerate((1, 2), start=1):
        length = section[dim] * 3
        idx = slice(offset, length, 3)
        freqs_t[..., idx] = freqs[dim, ..., idx]
    emb = torch.cat((freqs_t, freqs_t), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def run(a, q, position_ids):
    style = STYLE[a.style]
    section = list(style["section"])
    kind = "contiguous" if a.style == "qwen2vl" else "interleaved"
    used = position_ids
    if a.bug == "rows_swapped":
        used = position_ids[[0, 2, 1]]
    elif a.bug == "text_positions":
        used = position_ids[[0, 0, 0]]
    elif a.bug == "section_wrong":
        kind = "interleaved" if kind == "contiguous" else "contiguous"
        section = [24, 20, 20] if a.style == "qwen2vl" else section
    device_type = "cpu"
    with torch.autocast(device_type=device_type, enabled=False):  # HF: force float32
        freqs = freqs_of(inv_freq_of(a.base, a.head_dim), used)
        cos, sin = contiguous_cos_sin(freqs, section) if kind == "contiguous" else interleaved_cos_sin(freqs, section)
    cache_dtype = torch.bfloat16 if a.bug == "cos_sin_downcast" else q.dtype
    cos, sin = cos.to(cache_dtype), sin.to(cache_dtype)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # unsqueeze_dim=1 over [bs, heads, T, dim]
    return (q * cos) + (rotate_half(q) * sin)


def exact(a, q, position_ids):
    """float64 rotation of the claimed convention (for --self-check)."""
    style = STYLE[a.style]
    section = style["section"]
    nb = a.head_dim // 2
    if a.style == "qwen2vl":
        row = [next(r for r in range(3) if b < sum(section[:r + 1])) for b in range(nb)]
    else:
        row = [1 if b % 3 == 1 and b < 3 * section[1] else 2 if b % 3 == 2 and b < 3 * section[2] else 0 for b in range(nb)]
    th = torch.tensor([a.base ** (-2.0 * b / a.head_dim) for b in range(nb)], dtype=torch.float64)
    pos = position_ids[:, 0, :].to(torch.float64)  # [3, T]
    ang = torch.stack([pos[row[b]] * th[b] for b in range(nb)], dim=-1)  # [T, nb]
    emb = torch.cat((ang, ang), dim=-1)[None, None]
    x = q.to(torch.float64)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def config_json(a):
    style = STYLE[a.style]
    if a.style == "qwen2vl":
        return {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
                "hidden_size": a.heads * a.head_dim, "num_attention_heads": a.heads, "num_key_value_heads": a.heads,
                "rope_theta": a.base, "max_position_embeddings": 128000,
                "rope_scaling": {"type": "mrope", "mrope_section": style["section"]}}
    return {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
            "text_config": {"model_type": "qwen3_vl_text", "hidden_size": a.heads * a.head_dim, "head_dim": a.head_dim,
                            "num_attention_heads": a.heads, "num_key_value_heads": a.heads, "rope_theta": a.base,
                            "max_position_embeddings": 262144,
                            "rope_scaling": {"rope_type": "default", "mrope_section": style["section"],
                                             "mrope_interleaved": True}}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--style", choices=tuple(STYLE), default="qwen2vl")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    p.add_argument("--bug", choices=BUGS, default="none")
    p.add_argument("--base", type=float, default=None, help="rope_theta (default: the style's)")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--text-before", type=int, default=64)
    p.add_argument("--image", default="1x8x8", help="image LLM grid t x h x w (after the spatial merge)")
    p.add_argument("--video", default="2x4x4", help="video LLM grid t x h x w")
    p.add_argument("--video-t-step", type=int, default=2, help="temporal step per video frame")
    p.add_argument("--text-after", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--config-file", default="config.json",
                   help="name of the config.json written in --out (another name keeps `ropecheck audit` from reading it)")
    p.add_argument("--self-check", action="store_true", help="print the float64 distance of the output")
    a = p.parse_args()
    if a.base is None:
        a.base = STYLE[a.style]["base"]
    if a.bug == "cos_sin_downcast" and a.dtype != "float32":
        p.error("--bug cos_sin_downcast needs --dtype float32 (a bf16 cache under fp32 q)")
    position_ids = rope_index(a)[:, None, :]  # [3, 1, T]
    T = position_ids.shape[-1]
    g = torch.Generator().manual_seed(a.seed)
    q = torch.randn((1, a.heads, T, a.head_dim), generator=g, dtype=torch.float32).to(DTYPES[a.dtype])
    y = run(a, q, position_ids)
    os.makedirs(a.out, exist_ok=True)
    meta = {"generator": "tools/dump/torch_mrope_dump.py", "style": a.style, "bug": a.bug, "torch": torch.__version__}
    write_safetensors(os.path.join(a.out, "dump.safetensors"),
                      [("positions", position_ids), ("x", q), ("y", y.to(DTYPES[a.dtype]))], meta)
    with open(os.path.join(a.out, a.config_file), "w") as f:
        json.dump(config_json(a), f, indent=2)
        f.write("\n")
    if a.self_check:
        d = (y.to(torch.float64) - exact(a, q, position_ids)).abs().max().item()
        print(f"self-check: max |y - float64 rotation of the claim| = {d:.3g} over {T} tokens ({a.bug})")


if __name__ == "__main__":
    main()
