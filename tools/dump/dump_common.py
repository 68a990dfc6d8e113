"""tools/dump/dump_common.py: what the torch dump scripts (torch_rope_dump.py, torch_family_dump.py,
torch_vllm_dump.py, torch_mrope_dump.py) share:

  DTYPES, write_safetensors, write_npy_dir   the dtypes and the writers of the format `ropecheck audit` reads
  add_output_options                         --seed, --format, --no-cache, --out, --self-check
  take_defaults, check_sizes                 validation: a family's / style's defaults and bugs, the sizes
  random_input, run_kernel                   x ~ N(0, 1) from the seed, and the kernel run on it
  write_files, write_dump                    the end of main: __metadata__, the dump, config.json, "wrote ..."
  rotate_pairs64, print_self_check           --self-check: the claim's rotation in float64, the summary line

Not a script; stdlib, torch and numpy only. Everything written is deterministic.
"""

import json
import math
import os
import struct

import numpy as np
import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
ST_DTYPE = {torch.float32: "F32", torch.float64: "F64", torch.bfloat16: "BF16", torch.float16: "F16",
            torch.int64: "I64", torch.int32: "I32"}


# ----------------------------------------------------------------------------------------------
# Writers
# ----------------------------------------------------------------------------------------------
def to_numpy_le(t):
    """(numpy array in little-endian file layout, safetensors dtype, npy-storable array)."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy().view(np.uint16).astype("<u2")
    else:
        arr = t.numpy()
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr, ST_DTYPE[t.dtype]


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        arr, dt = to_numpy_le(t)
        data = arr.tobytes(order="C")
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_npy_dir(path, tensors, metadata):
    os.makedirs(path, exist_ok=True)
    any_bf16 = False
    for name, t in tensors:
        arr, dt = to_numpy_le(t)
        any_bf16 |= dt == "BF16"
        with open(os.path.join(path, name + ".npy"), "wb") as f:
            np.save(f, arr, allow_pickle=False)
    # The sidecar: bf16 declared, and what safetensors' __metadata__ would say that the audit reads.
    side = {"bfloat16": any_bf16}
    read = {k: v for k, v in metadata.items() if k in ("layer", "part")}
    if read:
        side["metadata"] = read
    with open(os.path.join(path, "ropecheck.json"), "w") as f:
        json.dump(side, f)
        f.write("\n")
    with open(os.path.join(path, "metadata.json"), "w") as f:
        json.dump(metadata, f, indent=2)
        f.write("\n")


# ----------------------------------------------------------------------------------------------
# The output options and the end of main
# ----------------------------------------------------------------------------------------------
def add_output_options(p, no_cache=True, before_out=None):
    """Add, in this order: --seed, --format, --no-cache (unless no_cache is False), the script's own options
    (before_out(p), when given), --out, --self-check."""
    p.add_argument("--seed", type=int, default=0, help="x ~ N(0,1) from torch.Generator(seed), cast to --dtype")
    p.add_argument("--format", choices=("safetensors", "npy"), default="safetensors")
    if no_cache:
        p.add_argument("--no-cache", action="store_true", help="leave cos, sin and inv_freq out of the dump")
    if before_out is not None:
        before_out(p)
    p.add_argument("--out", required=True, help="output folder: dump.safetensors or dump/ (npy), and config.json")
    p.add_argument("--self-check", action="store_true",
                   help="print the max |y - y_exact| against the claimed convention in float64")


def take_defaults(err, a, kind, bugs, defaults):
    """For a script whose --<kind> (family, style) names the bugs it has and the defaults it takes: refuse (err)
    a --bug that is not one of bugs[a.<kind>]; --base, --head-dim and --max-position-embeddings left out take
    defaults[a.<kind>]'s "base", "head_dim" and "mpe"."""
    name = getattr(a, kind)
    if a.bug not in bugs[name]:
        err(f"--bug {a.bug} is not a bug of --{kind} {name} (its bugs: {', '.join(bugs[name][1:])})")
    d = defaults[name]
    if a.base is None:
        a.base = d["base"]
    if a.head_dim is None:
        a.head_dim = d["head_dim"]
    if a.max_position_embeddings is None:
        a.max_position_embeddings = d["mpe"]


def check_sizes(err, a):
    """err unless --heads >= 1, --base is a finite number > 1 and --max-position-embeddings >= 2."""
    if a.heads < 1:
        err("--heads must be >= 1")
    if not (a.base > 1 and math.isfinite(a.base)):
        err("--base must be a finite number > 1")
    if a.max_position_embeddings < 2:
        err("--max-position-embeddings must be >= 2")


def random_input(shape, seed, dtype):
    """x ~ N(0, 1) from torch.Generator().manual_seed(seed), drawn in fp32 and cast to dtype."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)


def run_kernel(a, run, positions):
    """One thread and deterministic algorithms; x = random_input([tokens, a.heads, a.head_dim], a.seed, a.dtype)
    (tokens: the last dimension of positions); (y, cos, sin, inv_freq) = run(a, x, positions) without grad, y
    checked to have x's dtype and shape. Returns x, (y, cos, sin, inv_freq)."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x = random_input((positions.shape[-1], a.heads, a.head_dim), a.seed, DTYPES[a.dtype])
    with torch.no_grad():
        out = run(a, x, positions)
    y = out[0]
    assert y.dtype == x.dtype and y.shape == x.shape
    return x, out


def write_files(out, tensors, metadata, config, fmt="safetensors", config_name="config.json"):
    """out/dump.safetensors (fmt "safetensors") or out/dump/ (fmt "npy": one .npy a tensor, ropecheck.json,
    metadata.json), then out/<config_name> (indent 2). tensors: [(name, tensor)] in file order.
    Returns (dump path, config path)."""
    os.makedirs(out, exist_ok=True)
    if fmt == "safetensors":
        dump_path = os.path.join(out, "dump.safetensors")
        write_safetensors(dump_path, tensors, metadata)
    else:
        dump_path = os.path.join(out, "dump")
        write_npy_dir(dump_path, tensors, metadata)
    cfg_path = os.path.join(out, config_name)
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    return dump_path, cfg_path


def write_dump(a, kind, tensors, config, command, generator=None, metadata=None, show_positions=False, note=""):
    """The end of main for options a (a.out, a.format, a.dtype, a.bug, a.seed and a.<kind>): __metadata__
    {generator (when given), <kind>: a.<kind>, dtype, bug, torch_version, seed, command, then metadata's keys},
    written by write_files, then the line "wrote DUMP (T tokens x H heads x D dims, DTYPE, KIND NAME, bug BUG
    [, positions MIN..MAX]) and CONFIG" + note, where T, H, D is the shape of the tensor "x" and MIN, MAX those
    of "positions" (with show_positions)."""
    md = {} if generator is None else {"generator": generator}
    md.update({kind: getattr(a, kind), "dtype": a.dtype, "bug": a.bug, "torch_version": torch.__version__,
               "seed": str(a.seed), "command": command})
    md.update(metadata or {})
    dump_path, cfg_path = write_files(a.out, tensors, md, config, a.format)
    named = dict(tensors)
    T, H, D = named["x"].shape
    shown = ""
    if show_positions:
        shown = f", positions {int(named['positions'].min())}..{int(named['positions'].max())}"
    print(f"wrote {dump_path} ({T} tokens x {H} heads x {D} dims, {a.dtype}, {kind} {getattr(a, kind)}, "
          f"bug {a.bug}{shown}) and {cfg_path}" + note)


# ----------------------------------------------------------------------------------------------
# Formulas the frameworks share (each written from their code, cited where used)
# ----------------------------------------------------------------------------------------------
def rotate_half(t):
    """cat(-x2, x1) over the halves: HF's rotate_half (transformers models/llama/modeling_llama.py), vLLM's
    rotate_neox (vllm/model_executor/layers/rotary_embedding/common.py). Half-split pairs (i, i + r/2)."""
    h = t.shape[-1] // 2
    return torch.cat((-t[..., h:], t[..., :h]), dim=-1)


def rotate_half_interleaved(t):
    """(x[2i], x[2i+1]) -> (-x[2i+1], x[2i]): GLM's rotate_half_llm (transformers models/glm/modeling_glm.py),
    vLLM's rotate_gptj (common.py). Interleaved pairs (2i, 2i + 1)."""
    return torch.stack((-t[..., 1::2], t[..., 0::2]), dim=-1).flatten(-2)


def yarn_correction_range(beta_fast, beta_slow, dim, base, orig_len):
    """YaRN's correction range with truncation (floor / ceil), clamped to [0, dim - 1], in Python doubles:
    transformers modeling_rope_utils.py find_correction_range (truncate true, its default) and vLLM's
    common.py yarn_find_correction_range compute the same."""
    def cdim(rot):
        return (dim * math.log(orig_len / (rot * 2 * math.pi))) / (2 * math.log(base))
    low, high = math.floor(cdim(beta_fast)), math.ceil(cdim(beta_slow))
    return max(low, 0), min(high, dim - 1)


def hf_default_inv_freq(base, rd, exponent_dim):
    """HF's default rule: 1 / base ** (arange(0, rd, 2, int64).float() / exponent_dim), fp32."""
    return 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.int64).float() / exponent_dim))


def hf_cos_sin(inv_freq, positions, dtype, scale=1.0):
    """The HF rotary forward: fp32 freqs = inv_freq @ position_ids (autocast off), emb = cat(freqs,
    freqs), cos/sin times the scale in fp32, cast to the model dtype. Returns [1, T, 2 * bands]."""
    position_ids = positions[None, :]
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos() * scale
    sin = emb.sin() * scale
    return cos.to(dtype=dtype), sin.to(dtype=dtype)


# ----------------------------------------------------------------------------------------------
# --self-check
# ----------------------------------------------------------------------------------------------
def rotate_pairs64(x, c, s, layout):
    """x in float64 with the pairs of its first rd = 2 * c.shape[-1] coordinates turned by (c, s) (broadcast
    over the pairs' coordinates): pair i is (2i, 2i+1) for layout "interleaved", else (i, i + rd/2); y_a =
    x_a c - x_b s, y_b = x_a s + x_b c. The other coordinates are copied."""
    x64 = x.to(torch.float64)
    y = x64.clone()
    rd = 2 * c.shape[-1]
    h = rd // 2
    ia, ib = (slice(0, rd, 2), slice(1, rd, 2)) if layout == "interleaved" else (slice(0, h), slice(h, rd))
    xa, xb = x64[..., ia], x64[..., ib]
    y[..., ia] = xa * c - xb * s
    y[..., ib] = xa * s + xb * c
    return y


def print_self_check(y, y_exact, x, positions, dtype, bug, extra=""):
    """Print max |y - y_exact| (y, y_exact, x [tokens, heads, head_dim]), the position of the worst token, the
    max at positions < 64, eps of dtype (a DTYPES name), then extra and, for a bug other than "none", a note
    that a large difference is expected. positions: [tokens], or [rows, tokens] (a token's largest row)."""
    diff = (y.to(torch.float64) - y_exact).abs()
    t_idx = int(diff.amax(dim=(1, 2)).argmax())
    p0 = positions if positions.dim() == 1 else positions.max(dim=0).values
    small = p0 < 64
    small_max = float(diff[small].max()) if bool(small.any()) else 0.0
    print(f"self-check: max |y - y_exact| = {float(diff.max()):.3e} at position {int(p0[t_idx])} "
          f"(max |x| = {float(x.abs().max()):.3g}); at positions < 64: {small_max:.3e}; "
          f"eps({dtype}) = {torch.finfo(DTYPES[dtype]).eps:.3g}{extra}"
          + ("" if bug == "none" else f"  [bug {bug}: a large difference is expected]"))
