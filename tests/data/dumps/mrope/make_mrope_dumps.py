#!/usr/bin/env python3
"""Small M-RoPE dumps for the `ropecheck audit` command-line tests (stdlib only; run with /usr/bin/python3).

Positions as transformers' Qwen2VLModel.get_rope_index lays them out (models/qwen2_vl/modeling_qwen2_vl.py):
text tokens 0..23 (three equal rows), an image of 1 x 4 x 4 patches from 24 (temporal 24, height 24 + row,
width 24 + column), text again from 24 + 4 = 28, then a spread of larger text positions. head_dim 32, base
1e6, contiguous sections [4, 6, 6] (Qwen2-VL's rule on 16 bands: band i takes row 0 for i < 4, 1 for
i < 10, else 2). Angles in double, outputs rounded to fp32.

Outputs (committed; regenerate with `/usr/bin/python3 make_mrope_dumps.py` in this folder):
  mrope_good.safetensors          correct; positions [3, T], x and y [T, 2, 32]
  mrope_hf_batch.safetensors      the same as HF holds it: positions [3, 1, T], x and y [1, 2, T, 32]
  mrope_rows_swapped.safetensors  height and width rows swapped by the implementation
  mrope_text_only.safetensors     the text tokens only, positions [T] (a text-only M-RoPE dump)
  mrope_four_rows.safetensors     positions [4, T]: more rows than the claim's sections
  config.json                     HF style, rope_scaling {"type": "mrope", "mrope_section": [4, 6, 6]}
"""
import json, math, os, random, struct, sys

# f32 rounding, flattening and the safetensors writer of the 1-D dumps' generator (one writer).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from make_dumps import f32, flat, safetensors  # noqa: E402

D, H = 32, 2
BASE = 1000000.0
SECTION = [4, 6, 6]


def rows():
    t, h, w = [], [], []
    for p in range(24):
        t.append(p), h.append(p), w.append(p)
    for i in range(4):
        for j in range(4):
            t.append(24), h.append(24 + i), w.append(24 + j)
    for p in list(range(28, 40)) + [100, 1000, 4097, 65537, 100000]:
        t.append(p), h.append(p), w.append(p)
    return [t, h, w]


def band_row(i):
    end = 0
    for r, s in enumerate(SECTION):
        end += s
        if i < end:
            return r
    return len(SECTION) - 1


def rope(x, R):
    y = []
    for t in range(len(R[0])):
        for hd in range(H):
            v = x[t][hd]
            out = list(v)
            for i in range(D // 2):
                th = R[band_row(i)][t] * BASE ** (-2.0 * i / D)
                c, s = math.cos(th), math.sin(th)
                a, b = v[i], v[i + D // 2]
                out[i] = f32(a * c - b * s)
                out[i + D // 2] = f32(a * s + b * c)
            y.append(out)
    return y


def main():
    rnd = random.Random(2027)
    R = rows()
    T = len(R[0])
    x = [[[rnd.choice([k for k in range(-128, 129) if k]) / 64.0 for _ in range(D)] for _ in range(H)] for _ in range(T)]
    xf = flat([flat(t) for t in x])
    shape = [T, H, D]
    good = flat(rope(x, R))
    swapped = flat(rope(x, [R[0], R[2], R[1]]))
    pos = ('I64', [3, T], flat(R))
    safetensors('mrope_good.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, good)})
    safetensors('mrope_rows_swapped.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, swapped)})
    safetensors('mrope_four_rows.safetensors', {'positions': ('I64', [4, T], flat(R) + R[0]), 'x': ('F32', shape, xf),
                                                'y': ('F32', shape, good)})

    def hf_order(v):  # [T, H, D] -> [1, H, T, D]
        return [v[(t * H + hd) * D + k] for hd in range(H) for t in range(T) for k in range(D)]
    safetensors('mrope_hf_batch.safetensors', {'positions': ('I64', [3, 1, T], flat(R)), 'x': ('F32', [1, H, T, D], hf_order(xf)),
                                               'y': ('F32', [1, H, T, D], hf_order(good))})
    text = [t for t in range(T) if R[0][t] == R[1][t] == R[2][t]]
    row = H * D
    safetensors('mrope_text_only.safetensors', {
        'positions': ('I64', [len(text)], [R[0][t] for t in text]),
        'x': ('F32', [len(text), H, D], [v for t in text for v in xf[t * row:(t + 1) * row]]),
        'y': ('F32', [len(text), H, D], [v for t in text for v in good[t * row:(t + 1) * row]])})
    with open('config.json', 'w') as f:
        json.dump({'architectures': ['Qwen2_5_VLForConditionalGeneration'], 'model_type': 'qwen2_5_vl', 'hidden_size': 64,
                   'num_attention_heads': 2, 'head_dim': D, 'rope_theta': BASE, 'max_position_embeddings': 128000,
                   'rope_scaling': {'type': 'mrope', 'mrope_section': SECTION}}, f, indent=2)
        f.write('\n')


if __name__ == '__main__':
    main()
