#!/usr/bin/python3
"""fuzz/make_corpus.py — writes the seed corpus of the fuzz targets into fuzz/corpus/<target>/.

Run from anywhere with /usr/bin/python3 (stdlib only; when NumPy is importable, every valid .npy
seed is also loaded back with np.load and compared, so the seeds are files NumPy itself reads):

    /usr/bin/python3 fuzz/make_corpus.py

Each corpus folder is emptied and rewritten, so the output is a function of this script (and of
tests/data/configs/, copied into corpus/config_json/). Seeds are small valid files of every dtype
and header version, plus a few invalid ones next to each rule the readers enforce; the files are
written byte by byte the way NumPy / safetensors / transformers write them.
"""

import json
import math
import shutil
import struct
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"


def write_all(target, files):
    d = CORPUS / target
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


# ---- values of each dtype: special values included (signed zero, subnormals, extremes, inf, NaN) ----

BF16 = [0x3F80, 0x0001, 0x007F, 0x8000, 0x7F7F, 0x7F80, 0xFF80, 0x7FC1, 0x3F81]  # bit patterns
F16 = [0x3C00, 0x0001, 0x03FF, 0x8000, 0x7BFF, 0x7C00, 0xFE00]
F32 = [1.0, 2.0**-149, 1.0 + 2.0**-23, 3.4028234663852886e38, -0.0, math.inf, math.nan]
F64 = [0.1, 5e-324, -0.0, 1.7976931348623157e308, -math.inf, 10000.0]
I32 = [-(2**31), -1, 0, 2**31 - 1, 4095]
I64 = [0, 1, 2**53, -(2**53), 123456789012345, 131071]

PACK = {  # safetensors dtype -> (struct code, values, npy descr)
    "BF16": ("H", BF16, "<u2"),
    "F16": ("H", F16, "<f2"),
    "F32": ("f", F32, "<f4"),
    "F64": ("d", F64, "<f8"),
    "I32": ("i", I32, "<i4"),
    "I64": ("q", I64, "<i8"),
}


def pack(code, values):
    return struct.pack("<%d%s" % (len(values), code), *values)


# ---- safetensors ----

def safetensors(tensors, metadata=None, pad=True, gap=0):
    """tensors: [(name, dtype, shape, bytes)]; offsets laid out in order, `gap` bytes between them."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw + b"\0" * gap
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:  # safetensors pads the header with spaces to a multiple of 8
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_header(text, data=b""):
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    s = {}
    for dt, (code, values, _) in PACK.items():
        raw = pack(code, values)
        s["valid_%s.safetensors" % dt.lower()] = safetensors([("t", dt, [len(values)], raw)])
    s["valid_all_dtypes_metadata.safetensors"] = safetensors(
        [("x_" + dt.lower(), dt, [1, len(v)], pack(c, v)) for dt, (c, v, _) in PACK.items()],
        metadata={"format": "pt"})
    s["valid_2d_and_scalar_and_empty.safetensors"] = safetensors(
        [("q", "F32", [2, 3], pack("f", [1, 2, 3, 4, 5, 6])), ("theta", "F64", [], pack("d", [500000.0])),
         ("empty", "BF16", [0, 4], b"")])
    s["valid_gap_between_tensors.safetensors"] = safetensors(
        [("a", "I32", [2], pack("i", [1, 2])), ("b", "I64", [1], pack("q", [7]))], gap=4)
    s["valid_unpadded_header.safetensors"] = safetensors([("pos", "I64", [3], pack("q", [0, 1, 2]))], pad=False)
    # invalid, one per rule
    s["bad_i64_beyond_2p53.safetensors"] = safetensors([("pos", "I64", [1], pack("q", [2**53 + 1]))])
    s["bad_overlap.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}',
        bytes(12))
    s["bad_shape_disagrees.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}', bytes(16))
    s["bad_shape_wraps.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[4611686018427387904,1],"data_offsets":[0,16]}}', bytes(16))
    s["bad_out_of_buffer.safetensors"] = raw_header(
        '{"a":{"dtype":"F64","shape":[4],"data_offsets":[0,32]}}', bytes(16))
    s["bad_truncated_header.safetensors"] = struct.pack("<Q", 200) + b'{"a": {}}'
    s["bad_absurd_header_length.safetensors"] = struct.pack("<Q", 1 << 40) + b"{}"
    s["bad_json.safetensors"] = raw_header('{"a": {"dtype": "F32", "shape": [1', bytes(4))
    s["bad_unknown_dtype.safetensors"] = raw_header('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
    s["bad_metadata_not_string.safetensors"] = raw_header('{"__metadata__":{"k":1}}')
    s["bad_negative_dim.safetensors"] = raw_header('{"a":{"dtype":"F32","shape":[2,-2],"data_offsets":[0,16]}}',
                                                   bytes(16))
    return s


# ---- .npy ----

def npy(descr, shape, raw, major=1, fortran=False, quote="'", shape_text=None):
    """A .npy as numpy.lib.format writes it: dict padded with spaces and '\\n' to a multiple of 64."""
    q = quote
    if shape_text is None:
        shape_text = "()" if not shape else "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    d = "{%sdescr%s: %s%s%s, %sfortran_order%s: %s, %sshape%s: %s, }" % (
        q, q, q, descr, q, q, q, "True" if fortran else "False", q, q, shape_text)
    len_width = 2 if major == 1 else 4
    pre = 8 + len_width
    d += " " * (-(pre + len(d) + 1) % 64) + "\n"
    length = struct.pack("<H" if major == 1 else "<I", len(d))
    return b"\x93NUMPY" + bytes([major, 0]) + length + d.encode("latin1" if major < 3 else "utf8") + raw


def npy_seeds():
    s = {}
    for dt, (code, values, descr) in PACK.items():
        s["valid_%s_v1.npy" % descr[1:]] = npy(descr, [len(values)], pack(code, values))
    s["valid_f4_2x3_v2.npy"] = npy("<f4", [2, 3], pack("f", [1, 2, 3, 4, 5, 6]), major=2)
    s["valid_f8_scalar_v3_double_quotes.npy"] = npy("<f8", [], pack("d", [10000.0]), major=3, quote='"')
    s["valid_i8_positions_v3.npy"] = npy("<i8", [1, 4], pack("q", [0, 1, 4095, 2**40]), major=3)
    s["valid_u2_empty_v2.npy"] = npy("<u2", [0, 8], b"", major=2)
    s["valid_f2_python2_long.npy"] = npy("<f2", [1, 2], pack("H", [0x0001, 0xFC00]), shape_text="(1L, 2L)")
    # invalid, one per rule
    s["bad_fortran_order.npy"] = npy("<f4", [2, 2], bytes(16), fortran=True)
    s["bad_big_endian.npy"] = npy(">f4", [1], bytes(4))
    s["bad_trailing_bytes.npy"] = npy("<f8", [1], bytes(16))
    s["bad_truncated_data.npy"] = npy("<f8", [3], bytes(16))
    s["bad_truncated_header.npy"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", 500) + b"{'descr'"
    s["bad_absurd_header_length.npy"] = b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + b"{}"
    s["bad_version_4.npy"] = b"\x93NUMPY\x04\x00" + npy("<f4", [1], bytes(4))[8:]
    s["bad_structured_descr.npy"] = npy("<f4", [1], bytes(4)).replace(b"'<f4'", b"[('a', '<f4')]", 1)
    s["bad_complex_descr.npy"] = npy("<c8", [1], bytes(8))
    s["bad_shape_overflow.npy"] = npy("<f4", [4294967296, 4294967296], b"")
    s["bad_i8_beyond_2p53.npy"] = npy("<i8", [1], pack("q", [-(2**63)]))
    # Findings: inputs the fuzzer found, fixed in the reader and kept here so regeneration keeps them.
    # An empty float tensor (shape 0 x 2^32) once passed a null pointer to memcpy (fixed in b7b3e0c).
    s["finding_empty_f64_memcpy_null.npy"] = npy("<f8", [0, 4294967296], b"", shape_text="(0000000000, 4294967296)")
    return s


def check_with_numpy(files):
    try:
        import numpy as np
    except ImportError:
        print("make_corpus: NumPy not importable; .npy seeds not cross-checked")
        return
    import io
    for name, data in files.items():
        if not name.startswith("valid_"):
            continue
        a = np.load(io.BytesIO(data), allow_pickle=False)
        assert a.flags.c_contiguous and a.dtype.byteorder in "<=|", name
        # re-serialise what NumPy read and compare the data bytes
        assert a.tobytes() == data[len(data) - a.nbytes:], name


# ---- config.json ----

def cfg(model_type="llama", **kw):
    # Every seed names a family (ropecheck refuses a model type without facts before reading anything else).
    base = {"model_type": model_type, "hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 8192,
            "rope_theta": 10000.0}
    base.update(kw)
    return (json.dumps(base, indent=1) + "\n").encode()


def config_seeds():
    s = {}
    for src in sorted((ROOT / "tests/data/configs").glob("*.json")):
        s["hf_" + src.name] = src.read_bytes()
    for src in sorted((ROOT / "tests/data/configs/broken").glob("*.json")):
        s["broken_" + src.name] = src.read_bytes()
    # One config per family of src/ropecheck/families/ (the first case of tests/data/families/<type>.json),
    # compact: every family's geometry, layer rule and quirk is a path the fuzzer starts from.
    for src in sorted((ROOT / "tests/data/families").glob("*.json")):
        case = json.loads(src.read_text())["cases"][0]["config"]
        s["family_" + src.name] = (json.dumps(case, separators=(",", ":")) + "\n").encode()
    # v4 rope_scaling, one per rope type (head_dim 64: 32 bands)
    s["v4_default_null_scaling.json"] = cfg(rope_scaling=None)
    s["v4_linear.json"] = cfg(rope_scaling={"type": "linear", "factor": 4.0})
    s["v4_dynamic.json"] = cfg(rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    s["v4_ntk.json"] = cfg(rope_scaling={"rope_type": "ntk", "factor": 8.0})
    s["v4_yarn_deepseek_mscale.json"] = cfg(
        qk_rope_head_dim=64, rope_scaling={"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
                                           "mscale": 1.0, "mscale_all_dim": 1.0,
                                           "original_max_position_embeddings": 4096})
    s["v4_yarn_truncate_false_attention_factor.json"] = cfg(
        head_dim=64, rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                   "truncate": False, "attention_factor": 1.0,
                                   "original_max_position_embeddings": 4096})
    s["v4_yarn_ratio_no_factor.json"] = cfg(
        max_position_embeddings=131072, rope_scaling={"type": "yarn", "original_max_position_embeddings": 4096})
    s["v4_llama3.json"] = cfg(
        rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    s["v4_longrope_phi3_partial.json"] = cfg("phi3",
        partial_rotary_factor=0.5, original_max_position_embeddings=4096, max_position_embeddings=131072,
        rope_scaling={"type": "longrope", "short_factor": [1.0 + i / 16 for i in range(16)],
                      "long_factor": [1.0 + i for i in range(16)]})
    s["v4_su_legacy.json"] = cfg("phi3",
        original_max_position_embeddings=4096, rope_scaling={"type": "su", "short_factor": [1.0] * 32,
                                                             "long_factor": [2.0] * 32})
    s["v4_mrope.json"] = cfg("qwen2_vl", rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]})
    s["v4_gptneox_rotary_pct.json"] = cfg("gpt_neox", rotary_pct=0.25, rotary_emb_base=10000, rope_theta=None)
    s["v4_gptj_interleaved.json"] = (json.dumps({"model_type": "gptj", "n_embd": 512, "n_head": 8, "rotary_dim": 32, "n_positions": 2048,
                                                 "ropecheck_layout": "interleaved"}) + "\n").encode()
    # v5 rope_parameters
    s["v5_default.json"] = cfg(rope_theta=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    s["v5_linear_partial.json"] = cfg("nemotron",
        rope_theta=None, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0,
                                          "partial_rotary_factor": 0.5})
    s["v5_yarn.json"] = cfg(
        rope_theta=None, rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1000000.0,
                                          "original_max_position_embeddings": 2048, "beta_fast": 16.0})
    s["v5_llama3.json"] = cfg(
        rope_theta=None, rope_parameters={"rope_type": "llama3", "factor": 32.0, "rope_theta": 500000.0,
                                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                          "original_max_position_embeddings": 8192})
    s["v5_longrope.json"] = cfg("phi3",
        head_dim=16, rope_theta=None,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 2048,
                         "short_factor": [1.0] * 8, "long_factor": [1.5] * 8, "attention_factor": 1.2})
    s["v5_per_layer_single_entry.json"] = cfg(
        rope_theta=None, rope_parameters={"sliding_attention": {"rope_type": "dynamic", "factor": 2.0,
                                                                "rope_theta": 10000.0}})
    s["v5_same_as_v4.json"] = cfg(rope_scaling={"type": "linear", "factor": 2.0},
                                  rope_parameters={"type": "linear", "factor": 2.0})
    # invalid
    s["bad_v4_v5_contradict.json"] = cfg(rope_scaling={"type": "linear", "factor": 2.0},
                                         rope_parameters={"type": "linear", "factor": 3.0})
    s["bad_per_layer_no_full.json"] = cfg(rope_parameters={"a": {"rope_type": "default"}, "b": {"rope_type": "default"}})
    s["bad_yarn_beta_order.json"] = cfg(rope_scaling={"type": "yarn", "factor": 2.0, "beta_fast": 1.0,
                                                      "beta_slow": 32.0})
    s["bad_ntk_rotary_2.json"] = cfg(head_dim=2, rope_scaling={"type": "ntk", "factor": 2.0})
    s["bad_head_dim_huge.json"] = cfg(head_dim=2**40)
    s["bad_hidden_not_divisible.json"] = cfg(hidden_size=500, num_attention_heads=3)
    s["bad_not_object.json"] = b"[1, 2, 3]\n"
    # Findings in ropecheck/config_json.hpp / schedule.hpp (not fixed there yet), kept as
    # reproducers; a fix turns them into regression seeds. Deep nesting: describe() calls json::dump(), which recurses once per level and
    # overflows the stack (20000 levels crash the ASan build; ~100000 crash a release build). At
    # 40 KB it is longer than run.sh's -max_len, so the short run reads it truncated (invalid JSON);
    # replay it whole with build-fuzz/fuzz_config_json fuzz/corpus/config_json/finding_*.json.
    depth = 20000
    s["finding_deep_nesting_stack_overflow.json"] = b'{"head_dim": ' + b"[" * depth + b"]" * depth + b"}\n"
    # LongRoPE with a training length of 1: attention factor sqrt(1 + ln(s) / ln(1)) = inf, accepted
    # by validate() (HF raises ZeroDivisionError). A finding with ROPECHECK_FUZZ_FINITE=1.
    s["finding_longrope_training_length_1_infinite_attention.json"] = (json.dumps(
        {"head_dim": 4, "max_position_embeddings": 2, "original_max_position_embeddings": 1,
         "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0], "long_factor": [1.0, 1.0]}}) + "\n").encode()
    # Factors that validate() accepts (finite, > 0) but that overflow the schedule: inv_freq = inf.
    # Found by the fuzzer with ROPECHECK_FUZZ_FINITE=1 (a subnormal LongRoPE short factor).
    s["finding_longrope_subnormal_factor_infinite_inv_freq.json"] = (json.dumps(
        {"head_dim": 4, "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
         "rope_scaling": {"type": "longrope", "short_factor": [1.0, 5e-324], "long_factor": [1.0, 1.0]}}) + "\n").encode()
    s["finding_linear_tiny_factor_infinite_inv_freq.json"] = (json.dumps(
        {"head_dim": 4, "rope_scaling": {"type": "linear", "factor": 1e-320}}) + "\n").encode()
    return s


def main():
    st = safetensors_seeds()
    np_ = npy_seeds()
    check_with_numpy(np_)
    cj = config_seeds()
    total = 0
    for target, files in (("safetensors", st), ("npy", np_), ("config_json", cj)):
        d = write_all(target, files)
        size = sum(len(b) for b in files.values())
        total += size
        print("make_corpus: %-12s %3d files, %6d bytes -> %s" % (target, len(files), size, d.relative_to(ROOT)))
    print("make_corpus: total %d bytes" % total)
    if total > 200 * 1024:
        sys.exit("make_corpus: corpus larger than 200 KB")


if __name__ == "__main__":
    main()
