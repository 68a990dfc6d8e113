#!/usr/bin/env python3
"""Small dumps for the `ropecheck audit` command-line tests (stdlib only; run with /usr/bin/python3).

Outputs (committed; regenerate with `/usr/bin/python3 make_dumps.py` in this folder):
  good_f32.safetensors     a correct fp32 half-split RoPE (angles in double, outputs rounded to fp32)
  base_wrong.safetensors   the same computed with base 10000 (the config claims 500000)
  truncated.safetensors    good_f32 cut in the middle of its data
  lying_shape.safetensors  a header whose y shape disagrees with its byte range
  nan_x.safetensors        a NaN in the inputs
  float_positions.safetensors  positions stored as F32 with a non-integral value
  hf_layout.safetensors    good_f32 as HF holds q: x, y [1, heads, tokens, head_dim], positions [1, tokens]
  unknown_dtype.safetensors  y declared as F8_E4M3 (no audited dtype)
  xy_mismatch.safetensors  x [T, 2, 64] but y [T, 64, 2]
  npy_fortran/             positions.npy, x.npy, y.npy with y in Fortran order
  npy_bf16/                positions.npy, x.npy, y.npy (bf16 as <u2) with the sidecar ropecheck.json
  config.json              the claimed convention (head_dim 64, base 500000, max 131072)
"""
import json, math, os, random, struct

D, H = 64, 2
BASE = 500000.0
POS = list(range(24)) + [100, 257, 1000, 4097, 15962, 65537, 100000, 131071]


def f32(v):
    return struct.unpack('<f', struct.pack('<f', v))[0]


def bf16_bits(v):
    b = struct.unpack('<I', struct.pack('<f', v))[0]
    b += 0x7FFF + ((b >> 16) & 1)  # round to nearest even
    return (b >> 16) & 0xFFFF


def rope(x, base, round_to):
    y = []
    for t, p in enumerate(POS):
        for h in range(H):
            v = x[t][h]
            out = list(v)
            for i in range(D // 2):
                th = p * base ** (-2.0 * i / D)
                c, s = math.cos(th), math.sin(th)
                a, b = v[i], v[i + D // 2]
                out[i] = round_to(a * c - b * s)
                out[i + D // 2] = round_to(a * s + b * c)
            y.append(out)
    return y


def flat(rows):
    return [v for r in rows for v in (r if isinstance(r, list) else [r])]


def safetensors(path, tensors, cut=None, lie=None):
    header, blobs, off = {}, [], 0
    for name, (dt, shape, data) in tensors.items():
        fmt = {'F32': 'f', 'I64': 'q'}[dt]
        blob = struct.pack('<%d%s' % (len(data), fmt), *data)
        header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(blob)]}
        off += len(blob)
        blobs.append(blob)
    if lie:
        header[lie[0]]['shape'] = lie[1]
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    raw = struct.pack('<Q', len(h)) + h + b''.join(blobs)
    with open(path, 'wb') as f:
        f.write(raw[:cut] if cut else raw)


def npy(path, descr, shape, data, fmt):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ''.join('%d, ' % s for s in shape) if len(shape) != 1 else '%d,' % shape[0])
    hdr = hdr.encode()
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr += b' ' * pad + b'\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr)
        f.write(struct.pack('<%d%s' % (len(data), fmt), *data))


def main():
    rnd = random.Random(2026)
    # inputs k/64: exact in bf16 and fp32
    x = [[[rnd.choice([k for k in range(-128, 129) if k]) / 64.0 for _ in range(D)] for _ in range(H)] for _ in POS]
    xf = flat([flat(t) for t in x])
    shape = [len(POS), H, D]
    good = flat(rope(x, BASE, f32))
    wrong = flat(rope(x, 10000.0, f32))
    pos = ('I64', [len(POS)], POS)
    safetensors('good_f32.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, good)})
    safetensors('base_wrong.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, wrong)})
    safetensors('truncated.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, good)}, cut=3000)
    safetensors('lying_shape.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, good)},
                lie=('y', [len(POS), H, D * 2]))
    def hf_order(v):  # [T, H, D] -> [1, H, T, D]
        return [v[(t * H + h) * D + j] for h in range(H) for t in range(len(POS)) for j in range(D)]
    safetensors('hf_layout.safetensors', {'positions': ('I64', [1, len(POS)], POS),
                                           'x': ('F32', [1, H, len(POS), D], hf_order(xf)),
                                           'y': ('F32', [1, H, len(POS), D], hf_order(good))})
    # dtype unknown to the audit: the header names F8_E4M3 over y's bytes (4 per value, so the byte
    # count still matches neither); the reader must say which dtype it does not know.
    safetensors('unknown_dtype.safetensors', {'positions': pos, 'x': ('F32', shape, xf), 'y': ('F32', shape, good)})
    raw = open('unknown_dtype.safetensors', 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    hdr['y']['dtype'] = 'F8_E4M3'
    h = json.dumps(hdr).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open('unknown_dtype.safetensors', 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + raw[8 + n:])
    safetensors('xy_mismatch.safetensors', {'positions': pos, 'x': ('F32', shape, xf),
                                             'y': ('F32', [len(POS), D, H], good)})
    os.makedirs('npy_fortran', exist_ok=True)
    npy('npy_fortran/positions.npy', '<i8', [len(POS)], POS, 'q')
    npy('npy_fortran/x.npy', '<f4', shape, xf, 'f')
    npy('npy_fortran/y.npy', '<f4', shape, good, 'f')
    with open('npy_fortran/y.npy', 'r+b') as f:  # flip the flag in place (same length)
        b = f.read().replace(b"'fortran_order': False", b"'fortran_order': True ")
        f.seek(0)
        f.write(b)
    bad_x = list(xf)
    bad_x[5] = float('nan')
    safetensors('nan_x.safetensors', {'positions': pos, 'x': ('F32', shape, bad_x), 'y': ('F32', shape, good)})
    fpos = [float(p) for p in POS]
    fpos[3] = 3.5
    safetensors('float_positions.safetensors', {'positions': ('F32', [len(POS)], fpos), 'x': ('F32', shape, xf),
                                                 'y': ('F32', shape, good)})
    os.makedirs('npy_bf16', exist_ok=True)
    ybf = flat(rope(x, BASE, lambda v: v))
    npy('npy_bf16/positions.npy', '<i8', [len(POS)], POS, 'q')
    npy('npy_bf16/x.npy', '<u2', shape, [bf16_bits(v) for v in xf], 'H')
    npy('npy_bf16/y.npy', '<u2', shape, [bf16_bits(v) for v in ybf], 'H')
    with open('npy_bf16/ropecheck.json', 'w') as f:
        json.dump({'bfloat16': True}, f)
    with open('config.json', 'w') as f:
        json.dump({'head_dim': D, 'hidden_size': D * 8, 'num_attention_heads': 8, 'rope_theta': BASE,
                   'max_position_embeddings': 131072}, f, indent=2)


if __name__ == '__main__':
    main()
