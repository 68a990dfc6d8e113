"""The table door: check the position vectors an implementation adds to the tokens at the input (docs/tables.md).

`check_table(fn, config)` runs `ropecheck probe --form table` for the claim (a sinusoid or a learned table, from a
config.json of such a family or claim={...}), calls the implementation on the probe's positions, writes the rows it
gave to an outputs file and has `ropecheck audit --table` judge them. Three forms of `fn`:
  "positions"  fn(positions) -> rows [N, width]               positions: int64 [N], each token's index in its sequence
  "add"        fn(x, positions) -> x + rows [N, width]         x: zeros [N, width] in `dtype` (the sum is the row)
  "ids"        fn(input_ids, attention_mask) -> rows [B, T, width]   a batch of two sequences, the second left-padded:
               for an embedding module that counts positions from the ids or the mask (RoBERTa, fairseq, OPT)
Positions past the table's end are asked one call each, last (on CUDA an out-of-range index may poison the context):
each must raise. torch is imported when a check runs.
"""

import inspect
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import _binary, _safetensors
from .check import _config_path, _judge, _new_dump_dir, claim_flags, dtype_name, _device
from .errors import ClaimError, KernelError, KernelOutputError, InputMutatedError, RopecheckError
from .verdict import Verdict

FORMS = ("positions", "add", "ids")
# The short keys of a table claim dict and the flags they stand for (the rest pass through claim_flags).
_SHORT = {"scheme": "table_scheme", "layout": "table_layout", "denominator": "table_denominator", "base": "table_base",
          "offset": "table_offset", "rows": "table_rows"}


def _table_claim(claim: Optional[Dict[str, Any]], weights, where: Path):
    """(claim flags, width or None): the dict's keys as --table-* flags; a tensor or array of weights written to
    where/table_weights.npy (--table-weights)."""
    if claim is None:
        claim = {}
    if not isinstance(claim, dict):
        raise ClaimError(f"claim= takes a dict, e.g. {{'scheme': 'sinusoidal', 'layout': 'interleaved'}}; got {type(claim).__name__}")
    claim = dict(claim)
    width = claim.pop("width", None)
    if "weights" in claim:
        if weights is not None:
            raise ClaimError("give the table's weights once: weights= or claim={'weights': ...}")
        weights = claim.pop("weights")
    flags: Dict[str, Any] = {}
    for k, v in claim.items():
        flags[_SHORT.get(k, k)] = v
    out = claim_flags(flags)
    if weights is not None:
        if isinstance(weights, (str, os.PathLike)):
            path = str(weights)
        else:
            import numpy as np

            w = weights
            if callable(getattr(w, "detach", None)):  # a torch tensor or Parameter (nn.Embedding.weight), any device/dtype
                w = w.detach().to("cpu").double().numpy()
            w = np.ascontiguousarray(w, dtype=np.float64)
            if w.ndim != 2:
                raise ClaimError(f"weights: shape {list(w.shape)}, a position table is [rows, width] (nn.Embedding.weight)")
            path = str(where / "table_weights.npy")
            np.save(path, w)
        out += ["--table-weights", path]
    return out, (int(width) if width is not None else None)


def _form_of(fn, form: Optional[str]) -> str:
    if form is None:
        form = getattr(fn, "ropecheck_table_form", None)
    if form is None:
        try:
            n = len([p for p in inspect.signature(fn).parameters.values()
                     if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
        except (TypeError, ValueError):
            n = 1
        form = "add" if n == 2 else "positions"
    if form not in FORMS:
        raise RopecheckError(f"form={form!r}: the table door's forms are {', '.join(FORMS)}")
    return form


def _rows_of(out, want_shape, torch_dtype, what: str):
    import torch

    if not isinstance(out, torch.Tensor):
        raise KernelOutputError(f"{what} returned {type(out).__name__}, not a tensor of rows {list(want_shape)}")
    if list(out.shape) != list(want_shape):
        raise KernelOutputError(f"{what} returned shape {list(out.shape)}, the rows asked are {list(want_shape)}")
    if out.dtype != torch_dtype:
        raise KernelOutputError(f"{what} returned {out.dtype}, the claim's dtype is {torch_dtype} (the table as the model holds it)")
    return out.detach().to("cpu")


def check_table(fn, config=None, *, claim=None, weights=None, stack=None, dtype="float32", device="cpu", form=None,
                strict=False, dump_dir=None) -> Verdict:
    """Check the absolute position vectors `fn` adds against the claimed table; returns the Verdict.

    The claim: config= (a config.json path, dict or PretrainedConfig of a family that adds a sinusoid or a learned
    table: `ropecheck explain --families`), stack= ("encoder" or "decoder" for encoder-decoder families), or
    claim={"scheme": "sinusoidal"|"learned", "layout": ..., "denominator": D, "base": B, "offset": o, "rows": R,
    "padding_idx": P, "width": d}. weights=: a learned table's weight (module.weight, an array, or a .npy path): the
    judge reads which row each position took from it. form=: "positions" (fn(positions) -> rows), "add" (fn(x,
    positions) -> x + rows) or "ids" (fn(input_ids, attention_mask) -> rows [B, T, d]); default from fn's arity.
    """
    if not callable(fn):
        raise RopecheckError(f"check_table takes a callable; got {type(fn).__name__}")
    import torch

    from ._drive import TORCH_DTYPES, kernel_name, to_numpy

    name = dtype_name(dtype)
    tdtype = TORCH_DTYPES[_safetensors.DTYPE_NAMES[name]]
    dev = _device(device)
    form = _form_of(fn, form)
    where = _new_dump_dir(dump_dir)
    args: List[str] = []
    if config is not None:
        args += ["--config", _config_path(config, where)]
    if stack is not None:
        args += ["--stack", str(stack)]
    flags, width = _table_claim(claim, weights, where)
    args += flags
    if config is None and not any(a == "--table-scheme" for a in flags):
        raise ClaimError("no claimed table: give config= (a config.json of a family adding absolute positions) or "
                         "claim={'scheme': 'sinusoidal'|'learned', ...}; ropecheck never judges against a default")
    kernel = kernel_name(fn)
    t0 = time.perf_counter()
    probe_path, outputs_path = where / "probe.safetensors", where / "outputs.safetensors"
    probe_args = ["probe", "--form", "table", *args, "--dtype", name, "--out", str(probe_path)]
    if config is None:
        if width is None:
            if form == "add":
                raise ClaimError("claim={'width': d}: the add form needs the rows' width to make x")
            if form == "ids":
                raise ClaimError("claim={'width': d}: the ids form needs the rows' width")
            try:
                width = int(fn(torch.zeros(1, dtype=torch.int64, device=dev)).shape[-1])
            except Exception as e:  # noqa: BLE001 - the kernel's own failure, reported as such
                raise KernelError(f"{kernel}(positions=[0]) raised {type(e).__name__}: {e}") from e
        probe_args += ["--table-width", str(width)]
    _binary.run(probe_args, what="ropecheck probe --form table")
    tensors, meta = _safetensors.read(probe_path)
    t1 = time.perf_counter()
    positions = [int(p) for p in tensors["positions"].array]
    past = [int(p) for p in tensors["past"].array] if "past" in tensors else []
    width = int(meta["width"])
    rows_parts, pos_parts, pad_parts, refused = [], [], [], []

    def call(*a, what):
        try:
            return fn(*a)
        except Exception as e:  # noqa: BLE001 - the kernel's failure inside the table is a KernelError
            raise KernelError(f"{what} raised {type(e).__name__}: {e}") from e

    if form in ("positions", "add"):
        pos = torch.tensor(positions, dtype=torch.int64, device=dev)
        if form == "positions":
            out = call(pos, what=f"{kernel}(positions)")
        else:
            x = torch.zeros(len(positions), width, dtype=tdtype, device=dev)
            out = call(x, pos, what=f"{kernel}(x, positions)")
            if bool((x != 0).any()):
                raise InputMutatedError(f"{kernel} wrote into x: the add form returns x + rows without changing x")
        rows_parts.append(_rows_of(out, [len(positions), width], tdtype, kernel))
        pos_parts += positions
        pad_parts += [0] * len(positions)
        for p in past:
            one = torch.tensor([p], dtype=torch.int64, device=dev)
            try:
                out = fn(one) if form == "positions" else fn(torch.zeros(1, width, dtype=tdtype, device=dev), one)
            except Exception:  # noqa: BLE001 - refusing a position past the table is the right answer
                refused.append(p)
                continue
            rows_parts.append(_rows_of(out, [1, width], tdtype, kernel))
            pos_parts.append(p)
            pad_parts.append(0)
    else:
        n, k = int(meta["padded_length"]), int(meta["left_padding"])
        pad = int(meta.get("padding_idx", "1"))
        token = pad + 1 if pad + 1 != 0 else 5
        ids = torch.full((2, n), token, dtype=torch.int64, device=dev)
        ids[1, :k] = pad
        mask = torch.ones(2, n, dtype=torch.int64, device=dev)
        mask[1, :k] = 0
        out = call(ids, mask, what=f"{kernel}(input_ids, attention_mask)")
        rows = _rows_of(out, [2, n, width], tdtype, kernel).reshape(2 * n, width)
        rows_parts.append(rows)
        pos_parts += list(range(n)) * 2
        pad_parts += [0] * n + [k] * n
        if past:
            m = past[0] + 1  # one sequence reaching the first position past the table
            ids = torch.full((1, m), token, dtype=torch.int64, device=dev)
            try:
                out = fn(ids, torch.ones(1, m, dtype=torch.int64, device=dev))
            except Exception:  # noqa: BLE001 - refusing it is right
                refused.append(past[0])
            else:
                rows_parts.append(_rows_of(out, [1, m, width], tdtype, kernel).reshape(m, width))
                pos_parts += list(range(m))
                pad_parts += [0] * m
    t2 = time.perf_counter()
    import numpy as np

    all_rows = torch.cat(rows_parts, 0)
    st_dtype = _safetensors.DTYPE_NAMES[name]
    out_tensors = {"rows": _safetensors.Tensor(st_dtype, to_numpy(all_rows)),
                   "positions": np.asarray(pos_parts, dtype=np.int64),
                   "left_padding": np.asarray(pad_parts, dtype=np.int64)}
    if refused:
        out_tensors["refused"] = np.asarray(refused, dtype=np.int64)
    _safetensors.write(outputs_path, out_tensors, {"kernel": kernel, "form": form, "dtype": name,
                                                   "claim_args": meta.get("claim_args", "[]")})
    judge_flags = ["--strict"] if strict else []
    claim_args = json.loads(meta.get("claim_args", "[]")) or args
    data, text = _judge([str(outputs_path), "--table", *claim_args, *judge_flags], where / "verdict.json",
                        "ropecheck audit --table (judging the rows)")
    t3 = time.perf_counter()
    rerun = _binary.quote([_binary.display_name(), "audit", str(outputs_path), "--table", *claim_args, *judge_flags])
    v = Verdict(data, text=text, dump=str(outputs_path), rerun=rerun,
                seconds={"probe": t1 - t0, "calls": t2 - t1, "judge": t3 - t2},
                kernel=kernel, dtype=name, forms=[f"table ({form})"], tokens=len(pos_parts))
    return v


def assert_table_conforms(fn, config=None, **kwargs) -> Verdict:
    """check_table(fn, config, **kwargs); raises AssertionError(str(verdict)) when the table does not pass."""
    v = check_table(fn, config, **kwargs)
    if not v:
        raise AssertionError(str(v))
    return v
