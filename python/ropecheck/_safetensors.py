"""A small safetensors reader and writer on numpy (no dependency on the safetensors package).

The format (https://github.com/huggingface/safetensors, README "Format"): 8 bytes little-endian header length N,
then N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
then the data buffer; offsets are relative to the buffer's start, data is little-endian and C-ordered.

BF16 has no numpy dtype: it is read and written as uint16 arrays holding the raw bits, and the tensor's safetensors
dtype string travels with the array (a `Tensor` pair) so that it is written back as BF16.
"""

import json
import os
from typing import Dict, NamedTuple, Tuple

import numpy as np

# safetensors dtype string -> numpy dtype of the array holding it (BF16: its bits in uint16).
_NUMPY = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
# (numpy kind, itemsize) -> safetensors dtype string, for arrays given without one (any byte order).
_FROM_NUMPY = {("f", 8): "F64", ("f", 4): "F32", ("f", 2): "F16", ("i", 8): "I64", ("i", 4): "I32",
               ("i", 2): "I16", ("i", 1): "I8", ("u", 1): "U8", ("b", 1): "BOOL"}

# The probe's dtype names (its __metadata__ "dtype") and their safetensors strings.
DTYPE_NAMES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16", "float64": "F64"}


class Tensor(NamedTuple):
    """One tensor of a file: its safetensors dtype string and a numpy array (BF16: uint16 bits)."""

    dtype: str
    array: np.ndarray


def read(path) -> Tuple[Dict[str, Tensor], Dict[str, str]]:
    """Read a whole safetensors file; returns ({name: Tensor}, metadata) in the file's order.

    Assumes the file fits in memory (probe files are a few MB). Raises ValueError naming the file and the fault.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise ValueError(f"{path}: truncated (header length {n} but {len(data) - 8} bytes follow)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: the header is not JSON ({e})") from None
    buf = memoryview(data)[8 + n:]
    meta = dict(header.pop("__metadata__", None) or {})
    out: Dict[str, Tensor] = {}
    for name, desc in header.items():
        st = desc.get("dtype")
        if st not in _NUMPY:
            raise ValueError(f"{path}: tensor '{name}' has dtype {st!r}, which this reader does not know")
        shape = tuple(int(d) for d in desc["shape"])
        begin, end = (int(o) for o in desc["data_offsets"])
        dt = _NUMPY[st]
        if end > len(buf) or begin > end or (end - begin) != dt.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: tensor '{name}': data_offsets [{begin}, {end}) disagree with shape "
                             f"{list(shape)} "
                             f"of {st} or with the buffer of {len(buf)} bytes")
        arr = np.frombuffer(buf[begin:end], dtype=dt).reshape(shape)
        out[name] = Tensor(st, arr)
    return out, meta


def read_metadata(path) -> Dict[str, str]:
    """The __metadata__ of a safetensors file ({} when it is not one or has none); reads the header only."""
    try:
        with open(os.fspath(path), "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if n <= 0 or n > 100 * 1024 * 1024:
                return {}
            header = json.loads(f.read(n).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}


def as_tensor(value) -> Tensor:
    """A Tensor from a Tensor or a numpy array of a dtype safetensors has (not BF16: pass Tensor("BF16", u16))."""
    if isinstance(value, Tensor):
        return value
    arr = np.asarray(value)
    st = _FROM_NUMPY.get((arr.dtype.kind, arr.dtype.itemsize))
    if st is None:
        raise ValueError(f"numpy dtype {arr.dtype} has no safetensors dtype here "
                         "(BF16: pass Tensor('BF16', uint16 bits))")
    return Tensor(st, arr)


def write(path, tensors: Dict[str, object], metadata: Dict[str, str] = None) -> None:
    """Write tensors ({name: Tensor or numpy array}) and string metadata as a safetensors file, in the given order.

    The header is padded with spaces to a multiple of 8 bytes (as the safetensors library writes it); the file is
    written to a temporary name and renamed, so a reader never sees half of it.
    """
    path = os.fspath(path)
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(v, str):
                raise ValueError(f"safetensors metadata values are strings; '{k}' is {type(v).__name__}")
        header["__metadata__"] = dict(metadata)
    chunks = []
    offset = 0
    for name, value in tensors.items():
        t = as_tensor(value)
        dt = _NUMPY[t.dtype]
        arr = np.ascontiguousarray(t.array)
        if arr.dtype != dt:
            if (arr.dtype.kind, arr.dtype.itemsize) == (dt.kind, dt.itemsize):
                arr = arr.astype(dt)  # the same type in the other byte order
            elif t.dtype == "BF16" and arr.dtype.itemsize == 2 and arr.dtype.kind in "iu":
                arr = arr.view(dt)  # bf16 bits held as int16
            else:
                raise ValueError(f"tensor '{name}': an array of {arr.dtype} cannot be written as {t.dtype}")
        raw = arr.tobytes()
        header[name] = {"dtype": t.dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)
