#!/usr/bin/python3
"""tools/dump/torch_mrope_dump.py: run Hugging Face's multimodal RoPE (M-RoPE) with torch ops as HF's
code does and dump it in the format `ropecheck audit` reads (positions [3, 1, tokens], q as HF holds it
[1, heads, tokens, head_dim]), with the model's config.json.

Styles (written from transformers' code, run with the installed torch):
  qwen2vl    Qwen2-VL / Qwen2.5-VL (models/qwen2_vl/modeling_qwen2_vl.py): Qwen2VLRotaryEmbedding.forward
             (inv_freq[None, None, :, None] expanded to 3 rows, freqs = (inv_freq @ position_ids.float())
             .transpose(2, 3) with autocast off, emb = cat(freqs, freqs), cos/sin cast to x.dtype), then
             apply_multimodal_rotary_pos_emb: cos.split(mrope_section * 2, -1), chunk i from row i % 3,
             q * cos + rotate_half(q) * sin. config.json: Qwen2.5-VL's, rope_scaling {"type": "mrope",
             "mrope_section": [16, 24, 24]}.
  qwen3vl    Qwen3-VL (models/qwen3_vl/modeling_qwen3_vl.py): the same freqs, then apply_interleaved_mrope
             (freqs[0] with freqs_t[..., offset:3*section[dim]:3] = freqs[dim, ...] for dim 1, 2), emb =
             cat(freqs_t, freqs_t). config.json: Qwen3-VL's text_config, rope_scaling {"rope_type":
             "default", "mrope_section": [24, 20, 20], "mrope_interleaved": true}, rope_theta 5e6.
  qwen3_5    Qwen3.5 (models/qwen3_5/modular_qwen3_5.py Qwen3_5TextRotaryEmbedding, which reuses
             models/qwen3_vl/modeling_qwen3_vl.py Qwen3VLTextRotaryEmbedding.apply_interleaved_mrope):
             partial rotary, rotary_dim = int(head_dim * partial_rotary_factor) (0.25: 64 of 256), inv_freq
             over rotary_dim (base ** (arange(0, rotary_dim, 2) / rotary_dim)), the interleaved merge over
             the rotary_dim/2 bands (band b: height row if b % 3 == 1 and b < 3*s1, width if b % 3 == 2
             and b < 3*s2, temporal otherwise), mrope_section [11, 11, 10]; the attention applies
             models/bamba/modeling_bamba.py apply_rotary_pos_emb (rotary_dim = cos.shape[-1]; q_rot, q_pass
             = q[..., :rotary_dim], q[..., rotary_dim:]; cat(q_rot*cos + rotate_half(q_rot)*sin, q_pass),
             rotate_half = cat(-x2, x1) inside the rotary part). config.json: model_type "qwen3_5",
             text_config "qwen3_5_text" with rope_parameters {rope_type "default", rope_theta 1e7,
             mrope_section, mrope_interleaved true, partial_rotary_factor}; 8 layers, every 4th full
             attention (layer_types, full_attention_interval 4): the dump is layer 3 (__metadata__ "layer").
  glm4v      GLM-4.1V (models/glm4v/modeling_glm4v.py Glm4vTextRotaryEmbedding.forward and
             apply_multimodal_rotary_pos_emb): the cat(freqs, freqs) table over rotary_dim =
             int(head_dim * 0.5) coordinates, cos/sin split by mrope_section * 2, chunk i from row i % 3
             (contiguous [8, 12, 12] for head_dim 128), then cos = cos[..., :cos.shape[-1] // 2]
             .repeat_interleave(2) (same for sin) and rotate_half_llm (x[..., 0::2], x[..., 1::2] ->
             stack((-x2, x1)).flatten(-2)) on q[..., :rotary_dim], the rest passed through: interleaved
             pairs (2j, 2j+1) within the rotary part, band j's row by contiguous sections. config.json:
             model_type "glm4v", text_config "glm4v_text", partial_rotary_factor 0.5, rope_theta 1e4,
             rope_scaling {"type": "default", "mrope_section": [8, 12, 12]}.
  glm4v_moe  GLM-4.5V (models/glm4v_moe/modular_glm4v_moe.py apply_multimodal_rotary_pos_emb): the same
             section merge WITHOUT the repeat_interleave step: q_rot*cos + rotate_half(q_rot)*sin with the
             half-split rotate_half on q[..., :rotary_dim] (pairs (j, j + rotary_dim/2)), partial 0.5,
             contiguous [8, 12, 12]. config.json: model_type "glm4v_moe", text_config "glm4v_moe_text",
             rope_scaling {"rope_type": "default", "mrope_section": [8, 12, 12]}.

Positions as Qwen2VLModel.get_rope_index builds them: text tokens 0..n-1 (three equal rows), an image
of t x h x w LLM grid patches (temporal st + t_index, height st + row, width st + column), a video
after it (temporal index times --video-t-step, as Qwen2.5-VL scales it by second_per_grid_t *
tokens_per_second), text again from max + 1, then a few far text positions (up to 100000).

--bug NAME injects one known bug; config.json always claims the correct convention:
  rows_swapped         the height and width rows exchanged
  section_wrong        the other kind of band split (qwen2vl: Qwen3-VL's interleaved [24, 20, 20];
                       qwen3vl, qwen3_5: contiguous blocks of the same sections; glm4v, glm4v_moe:
                       interleaved over the same sections)
  text_positions       every band turned by the temporal row (image/video tokens at their text position)
  cos_sin_downcast     sglang (2026): the M-RoPE cos/sin cache cast to bf16 while q stays fp32 (needs
                       --dtype float32)
  freqs_over_head_dim  partial styles (qwen3_5, glm4v, glm4v_moe): inv_freq's exponent over head_dim
                       instead of rotary_dim (base ** (arange(0, rotary_dim, 2) / head_dim))
  layout_swapped       glm4v: GLM-4.5V's half-split pairs (no repeat_interleave, rotate_half);
                       glm4v_moe: GLM-4.1V's interleaved pairs (repeat_interleave, rotate_half_llm)
Run with /usr/bin/python3 (Debian's python3-torch); stdlib, torch and numpy only; deterministic.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_common import (  # noqa: E402  (what every dump script shares)
    DTYPES, random_input, rotate_half, rotate_half_interleaved, rotate_pairs64, write_files)

BUGS = ("none", "rows_swapped", "section_wrong", "text_positions", "cos_sin_downcast", "freqs_over_head_dim",
        "layout_swapped")
# kind: how the bands take their position row; layout: the pairs inside the rotary part
# (half_split (j, j + r/2): rotate_half; interleaved (2j, 2j+1): repeat_interleave + rotate_half_llm).
STYLE = {"qwen2vl": {"section": [16, 24, 24], "base": 1000000.0, "head_dim": 128, "partial": 1.0,
                     "kind": "contiguous", "layout": "half_split"},
         "qwen3vl": {"section": [24, 20, 20], "base": 5000000.0, "head_dim": 128, "partial": 1.0,
                     "kind": "interleaved", "layout": "half_split"},
         "qwen3_5": {"section": [11, 11, 10], "base": 10000000.0, "head_dim": 256, "partial": 0.25,
                     "kind": "interleaved", "layout": "half_split", "layers": 8, "interval": 4, "layer": 3},
         "glm4v": {"section": [8, 12, 12], "base": 10000.0, "head_dim": 128, "partial": 0.5,
                   "kind": "contiguous", "layout": "interleaved"},
         "glm4v_moe": {"section": [8, 12, 12], "base": 10000.0, "head_dim": 128, "partial": 0.5,
                       "kind": "contiguous", "layout": "half_split"}}
PARTIAL_BUGS = ("freqs_over_head_dim",)
LAYOUT_BUG_STYLES = ("glm4v", "glm4v_moe")


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


def rotary_dim_of(a):
    # HF default rope init: dim = int(head_dim * partial_rotary_factor)
    return int(a.head_dim * STYLE[a.style]["partial"])


def inv_freq_of(base, dim, denominator=None):
    # Qwen2VLRotaryEmbedding / Qwen3VLTextRotaryEmbedding / Glm4vTextRotaryEmbedding default rope
    # parameters over dim = rotary_dim; `denominator` (the freqs_over_head_dim bug) replaces the exponent's
    # divisor
    den = dim if denominator is None else denominator
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / den))


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


def run(a, q, position_ids):
    style = STYLE[a.style]
    section = list(a.section)
    kind, layout = style["kind"], style["layout"]
    rotary_dim = rotary_dim_of(a)
    used = position_ids
    if a.bug == "rows_swapped":
        used = position_ids[[0, 2, 1]]
    elif a.bug == "text_positions":
        used = position_ids[[0, 0, 0]]
    elif a.bug == "section_wrong":
        kind = "interleaved" if kind == "contiguous" else "contiguous"
        section = [24, 20, 20] if a.style == "qwen2vl" else section
    elif a.bug == "layout_swapped":
        layout = "half_split" if layout == "interleaved" else "interleaved"
    denominator = a.head_dim if a.bug == "freqs_over_head_dim" else None
    device_type = "cpu"
    with torch.autocast(device_type=device_type, enabled=False):  # HF: force float32
        freqs = freqs_of(inv_freq_of(a.base, rotary_dim, denominator), used)
        cos, sin = contiguous_cos_sin(freqs, section) if kind == "contiguous" else interleaved_cos_sin(freqs, section)
    cache_dtype = torch.bfloat16 if a.bug == "cos_sin_downcast" else q.dtype
    cos, sin = cos.to(cache_dtype), sin.to(cache_dtype)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # unsqueeze_dim=1 over [bs, heads, T, dim]
    rot = rotate_half
    if layout == "interleaved":  # GLM-4.1V: "interleave them instead of usual shape"
        cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
        sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
        rot = rotate_half_interleaved
    if rotary_dim == a.head_dim:  # Qwen2-VL / Qwen3-VL: the whole head
        return (q * cos) + (rot(q) * sin)
    rd = cos.shape[-1]  # bamba / GLM-4V apply_rotary_pos_emb: rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rd], q[..., rd:]
    q_embed = (q_rot * cos) + (rot(q_rot) * sin)
    return torch.cat([q_embed, q_pass], dim=-1)


def band_rows(kind, section, nb):
    if kind == "contiguous":
        return [next(r for r in range(3) if b < sum(section[:r + 1])) for b in range(nb)]
    return [1 if b % 3 == 1 and b < 3 * section[1] else 2 if b % 3 == 2 and b < 3 * section[2] else 0
            for b in range(nb)]


def exact(a, q, position_ids):
    """float64 rotation of the claimed convention (for --self-check)."""
    style = STYLE[a.style]
    rd = rotary_dim_of(a)
    nb = rd // 2
    row = band_rows(style["kind"], a.section, nb)
    th = torch.tensor([a.base ** (-2.0 * b / rd) for b in range(nb)], dtype=torch.float64)
    pos = position_ids[:, 0, :].to(torch.float64)  # [3, T]
    ang = torch.stack([pos[row[b]] * th[b] for b in range(nb)], dim=-1)[None, None]  # [1, 1, T, nb]
    return rotate_pairs64(q, ang.cos(), ang.sin(), style["layout"])


def text_config(a, model_type, **rest):
    """A multimodal config's text_config: model_type, the attention's sizes (q heads = kv heads), then rest."""
    return {"model_type": model_type, "hidden_size": a.heads * a.head_dim, "head_dim": a.head_dim,
            "num_attention_heads": a.heads, "num_key_value_heads": a.heads, **rest}


def config_json(a):
    style = STYLE[a.style]
    section = list(a.section)
    if a.style == "qwen2vl":
        return {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
                "hidden_size": a.heads * a.head_dim, "num_attention_heads": a.heads, "num_key_value_heads": a.heads,
                "rope_theta": a.base, "max_position_embeddings": 128000,
                "rope_scaling": {"type": "mrope", "mrope_section": section}}
    if a.style == "qwen3vl":
        return {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
                "text_config": text_config(a, "qwen3_vl_text", rope_theta=a.base, max_position_embeddings=262144,
                                           rope_scaling={"rope_type": "default", "mrope_section": section,
                                                         "mrope_interleaved": True})}
    if a.style == "qwen3_5":
        n, k = style["layers"], style["interval"]
        layer_types = ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n)]
        return {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
                "text_config": text_config(a, "qwen3_5_text", num_hidden_layers=n, full_attention_interval=k,
                                           layer_types=layer_types, max_position_embeddings=262144,
                                           partial_rotary_factor=style["partial"],
                                           rope_parameters={"rope_type": "default", "rope_theta": a.base,
                                                            "mrope_section": section, "mrope_interleaved": True,
                                                            "partial_rotary_factor": style["partial"]})}
    # GLM-4.1V (glm4v) and GLM-4.5V (glm4v_moe): their rope_scaling spells the rule "type" / "rope_type"
    moe = a.style == "glm4v_moe"
    return {"architectures": ["Glm4vMoeForConditionalGeneration" if moe else "Glm4vForConditionalGeneration"],
            "model_type": a.style,
            "text_config": text_config(a, a.style + "_text", num_hidden_layers=4,
                                       max_position_embeddings=65536 if moe else 32768,
                                       partial_rotary_factor=style["partial"], rope_theta=a.base,
                                       rope_scaling={"rope_type" if moe else "type": "default",
                                                     "mrope_section": section})}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--style", choices=tuple(STYLE), default="qwen2vl")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    p.add_argument("--bug", choices=BUGS, default="none")
    p.add_argument("--base", type=float, default=None, help="rope_theta (default: the style's)")
    p.add_argument("--head-dim", type=int, default=None, help="default: the style's (256 for qwen3_5, else 128)")
    p.add_argument("--mrope-section", default=None,
                   help="bands per row t,h,w summing to rotary_dim/2 (default: the style's)")
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
    style = STYLE[a.style]
    if a.base is None:
        a.base = style["base"]
    if a.head_dim is None:
        a.head_dim = style["head_dim"]
    a.section = ([int(v) for v in a.mrope_section.replace(",", " ").split()] if a.mrope_section
                 else list(style["section"]))
    rd = rotary_dim_of(a)
    if len(a.section) != 3 or sum(a.section) != rd // 2 or rd % 2:
        p.error(f"--mrope-section {a.section} must be 3 numbers summing to rotary_dim/2 = {rd // 2}")
    if a.bug == "cos_sin_downcast" and a.dtype != "float32":
        p.error("--bug cos_sin_downcast needs --dtype float32 (a bf16 cache under fp32 q)")
    if a.bug in PARTIAL_BUGS and rd == a.head_dim:
        p.error(f"--bug {a.bug} needs a partial-rotary style (qwen3_5, glm4v, glm4v_moe)")
    if a.bug == "layout_swapped" and a.style not in LAYOUT_BUG_STYLES:
        p.error("--bug layout_swapped is for " + ", ".join(LAYOUT_BUG_STYLES))
    position_ids = rope_index(a)[:, None, :]  # [3, 1, T]
    T = position_ids.shape[-1]
    q = random_input((1, a.heads, T, a.head_dim), a.seed, DTYPES[a.dtype])
    y = run(a, q, position_ids)
    meta = {"generator": "tools/dump/torch_mrope_dump.py", "style": a.style, "bug": a.bug, "torch": torch.__version__}
    if "layer" in style:  # a hybrid: the decoder layer the dump stands for (a full-attention one)
        meta["layer"] = str(style["layer"])
    write_files(a.out, [("positions", position_ids), ("x", q), ("y", y.to(DTYPES[a.dtype]))], meta, config_json(a),
                config_name=a.config_file)
    if a.self_check:
        d = (y.to(torch.float64) - exact(a, q, position_ids)).abs().max().item()
        print(f"self-check: max |y - float64 rotation of the claim| = {d:.3g} over {T} tokens ({a.bug})")


if __name__ == "__main__":
    main()
