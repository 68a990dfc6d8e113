"""Driving a kernel through the probe's call plan and writing the outputs file the judge reads.

The probe file (written by `ropecheck probe`, layout in docs/python.md) holds the probe tokens' inputs x [T, H, D]
and, for each call form ("prefill": several tokens a call, with added neighbours; "decode": one token a call), a plan:
`F.calls` [C+1] (call c is entries calls[c]..calls[c+1]-1), `F.positions` [N] or [R, N], `F.token` [N] (the probe
token whose x row an entry carries) and `F.keep` [N] (1: the entry's output is its token's output; 0: a neighbour,
dropped). The prefill plan runs twice (the judge compares the two bitwise: `nondeterministic`), decode once.
"""

import json
import os
import time
import traceback
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

from . import _safetensors as st
from .errors import InputMutatedError, KernelError, KernelOutputError, RopecheckError

FORMS = ("prefill", "decode")
TORCH_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64}
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def kernel_name(fn) -> str:
    """A readable name of the callable: an adapter's `ropecheck_kernel`, else its qualified name."""
    name = getattr(fn, "ropecheck_kernel", None)
    if name:
        return str(name)
    inner = getattr(fn, "func", None)  # functools.partial
    target = inner if inner is not None and callable(inner) else fn
    qual = getattr(target, "__qualname__", None) or getattr(type(target), "__qualname__", None) or repr(target)
    return str(qual)


def to_torch(t: st.Tensor) -> torch.Tensor:
    """A CPU torch tensor of a file's tensor (a copy: the file's buffer is read-only); BF16 via an int16 view."""
    if t.dtype == "BF16":
        return torch.from_numpy(t.array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(t.array.copy())


def to_numpy(y: torch.Tensor) -> np.ndarray:
    """The CPU numpy array of a tensor of the probe's dtypes (bfloat16: its bits as uint16)."""
    y = y.detach().to("cpu").contiguous()
    if y.dtype == torch.bfloat16:
        return y.view(torch.int16).numpy().view(np.uint16)
    return y.numpy()


class _Plan:
    """One form's call plan on the device (assumes the probe's layout; checks every token is kept exactly once)."""

    def __init__(self, form: str, tensors: Dict[str, st.Tensor], tokens: int, device: torch.device, declared=None):
        self.form = form
        self.declared = declared  # the kernel's declared last position (the probe's max_position), None: none
        self.calls: List[int] = [int(c) for c in tensors[form + ".calls"].array]
        token = tensors[form + ".token"].array
        keep = tensors[form + ".keep"].array.astype(bool)
        if len(self.calls) < 1 or self.calls[-1] != token.shape[0] or keep.shape != token.shape:
            raise RopecheckError(f"the probe file's {form} plan is inconsistent ({form}.calls ends at "
                                 f"{self.calls[-1:]}, "
                                 f"{token.shape[0]} entries): rewrite it with the same ropecheck's `probe`")
        kept = np.bincount(token[keep], minlength=tokens) if keep.any() else np.zeros(tokens, np.int64)
        if self.n_calls and (kept.shape[0] != tokens or not np.all(kept == 1)):
            raise RopecheckError(f"the probe file's {form} plan does not keep every probe token exactly once: "
                                 "rewrite it with the same ropecheck's `probe`")
        self.positions = to_torch(tensors[form + ".positions"]).to(device)
        self.token = torch.from_numpy(token.astype(np.int64)).to(device)
        self.kept_entries = torch.from_numpy(np.nonzero(keep)[0]).to(device)
        self.kept_tokens = self.token.index_select(0, self.kept_entries)

    @property
    def n_calls(self) -> int:
        return len(self.calls) - 1


def _under(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), directory]) == directory
    except ValueError:
        return False


def _raised_at(err: BaseException, fn: Callable, promise: str) -> str:
    """Where the user's code raised: the innermost frame outside this package (and outside torch when possible).
    With no frame outside the package, the call an adapter made of the wrapped object failed before entering it
    (a TypeError of its signature, most often): that is said, with what the adapter assumes of the call."""
    frames = traceback.extract_tb(err.__traceback__)
    outside = [f for f in frames if not _under(f.filename, _PACKAGE_DIR)]
    user = [f for f in outside if not _under(f.filename, _TORCH_DIR)]
    pick = (user or outside or frames or [None])[-1]
    if pick is None:
        return "where: no traceback"
    if not outside:
        return (f"raised by the call itself, at {os.path.basename(pick.filename)}:{pick.lineno}, before any line of "
                f"the wrapped code ran: what it wraps may not take the call {_promise(fn, promise)}")
    text = f"raised at {pick.filename}:{pick.lineno}, in {pick.name}"
    inner = frames[-1]
    if inner is not pick and outside:
        text += f" (the innermost frame: {inner.filename}:{inner.lineno}, in {inner.name})"
    return text


class _Call:
    """The context of one call, for messages: form, index, tokens and positions; `run` names a run of the plan
    after its first ("the plan's second run"), "" for the first."""

    def __init__(self, form: str, index: int, total: int, pos: torch.Tensor, run: str = ""):
        self.form, self.index, self.total, self.pos, self.run = form, index, total, pos, run

    def __str__(self) -> str:
        p = self.pos
        n = p.shape[-1]
        lo, hi = (int(p.min()), int(p.max())) if p.numel() else (0, -1)
        again = f" ({self.run})" if self.run else ""
        rows = f" x {p.shape[0]} rows" if p.dim() == 2 else ""
        span = f"positions {lo}..{hi}" if hi != lo else f"position {lo}"
        what = f"{n} token{'s' if n != 1 else ''}{rows}, {span}"
        return f"{self.form} call {self.index} of {self.total}{again}: {what}"


X_PROMISE = "fn(x, positions) returns y and leaves x and positions alone"


def _promise(fn, default: str = X_PROMISE) -> str:
    adapter = getattr(fn, "ropecheck_adapter", None) or "plain"
    assumes = getattr(fn, "ropecheck_assumes", None) or default
    return f"the adapter '{adapter}' promises: {assumes}"


def dtype_text(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _check_output(y, x: torch.Tensor, call: _Call) -> None:
    if not isinstance(y, torch.Tensor):
        hint = (" (a kernel that rotates x in place and returns nothing: wrap it, ropecheck.adapters.inplace(fn))"
                if y is None else
                " (a kernel returning (q, k): pick one, or use ropecheck.adapters.hf / vllm for that convention)"
                if isinstance(y, (tuple, list)) else "")
        raise KernelOutputError(f"{call}: the kernel returned {type(y).__name__}, expected a torch.Tensor "
                                f"{list(x.shape)} {dtype_text(x.dtype)}{hint}")
    check_like(y, x, call, "the kernel returned", "the input's",
               "a kernel taking [batch, heads, seq, head_dim] or returning flattened heads needs an adapter "
               "(ropecheck.adapters.hf, vllm, flash_attn) or a reshape in a wrapper")


def check_like(y: torch.Tensor, x, call: _Call, what: str, whose: str, shape_hint: str, *,
               layout: str = "[tokens, heads, head_dim]", cast: str = "y.to(x.dtype)") -> None:
    """y has x's shape and dtype, else a KernelOutputError "<call>: <what> shape [..], expected [..] (<whose>
    shape <layout>); <shape_hint>" (or the same of the dtype, saying `cast` as the fix). x is a tensor, or the
    pair (shape, dtype) an output must have when no input has it (the attention form's o)."""
    shape, dtype = (tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else (tuple(x[0]), x[1])
    if tuple(y.shape) != shape:
        raise KernelOutputError(
            f"{call}: {what} shape {list(y.shape)}, expected {list(shape)} ({whose} shape {layout}); {shape_hint}")
    if y.dtype != dtype:
        raise KernelOutputError(
            f"{call}: {what} dtype {dtype_text(y.dtype)}, expected {dtype_text(dtype)} ({whose} dtype); the judge "
            f"checks the dtype the kernel writes: a kernel computing in a wider type returns {cast}")


_INDEX_WORDS = ("out of bounds", "out of range", "device-side assert")


def _index_hint(err: BaseException, pos: torch.Tensor, declared, door: str) -> str:
    """For an indexing failure (a cos/sin cache shorter than the probe's positions): how to say the kernel's limit,
    or, when one was declared and the call stayed within it, that the kernel indexed past it itself."""
    text = str(err).lower()
    if not isinstance(err, IndexError) and not any(w in text for w in _INDEX_WORDS):
        return ""
    hi = int(pos.max()) if pos.numel() else 0
    if declared is not None and hi <= int(declared):
        return (f"\n  the call's positions are within the declared max_position {int(declared)}: the kernel indexed "
                "past its own table (a position it shifted itself, e.g. a decode offset, or a table shorter than "
                "it says)")
    return (f"\n  if the kernel holds positions 0..N-1 only (a cos/sin cache of N rows; this call asked up to {hi}), "
            f"say so: {door}(..., max_position=N - 1) keeps the probe within it, and the verdict names the positions "
            "it left out")


def invoke(fn: Callable, args: Tuple, call: _Call, declared, promise: str = X_PROMISE, door: str = "check"):
    """fn(*args); an exception of the kernel becomes a KernelError naming the call, the exception and the user's
    line (an adapter's own RopecheckError gets the call added; `door` is the function a hint names). Assumes
    call.pos is a copy taken before the call."""
    try:
        return fn(*args)
    except RopecheckError as err:  # an adapter's own finding: add the call it happened in
        raise type(err)(f"{call}: {err}") from None
    except Exception as err:  # noqa: BLE001 - any failure of the user's kernel becomes a KernelError
        lines = str(err).strip().splitlines() or ["(no message)"]
        if len(lines) > 12:
            lines = lines[:12] + [f"... ({len(lines) - 12} more lines)"]
        text = "\n    ".join(lines)
        raise KernelError(f"{call}: the kernel raised {type(err).__name__}: {text}\n  "
                          f"{_raised_at(err, fn, promise)}{_index_hint(err, call.pos, declared, door)}") from None


def check_unchanged(fn: Callable, call: _Call, inputs, promise: str = X_PROMISE) -> None:
    """Each (name, tensor after the call, its copy before, the fix to say) must be unchanged, else an
    InputMutatedError naming the call, the input and what the adapter promised."""
    for name, now, before, fix in inputs:
        if not torch.equal(now, before):
            raise InputMutatedError(f"{call}: the kernel changed {name} in place, but {_promise(fn, promise)}; {fix}")


POSITIONS_FIX = "positions must be left as given (work on positions.clone())"


def _call_once(fn: Callable, x_dev: torch.Tensor, plan: _Plan, c: int, run: int) -> torch.Tensor:
    s, e = plan.calls[c], plan.calls[c + 1]
    xin = x_dev.index_select(0, plan.token[s:e])
    pos = plan.positions[..., s:e].clone()
    x_before, pos_before = xin.clone(), pos.clone()
    call = _Call(plan.form, c, plan.n_calls, pos_before, "the plan's second run" if run else "")
    y = invoke(fn, (xin, pos), call, plan.declared)
    check_unchanged(fn, call, [
        ("x", xin, x_before, "if it rotates x in place by design, wrap it: ropecheck.adapters.inplace(fn) gives it "
                             "a copy"),
        ("positions", pos, pos_before, POSITIONS_FIX)])
    _check_output(y, xin, call)
    return y.detach().to(device=x_dev.device, copy=True)


def scatter(outs: List[torch.Tensor], like: torch.Tensor, plan: _Plan) -> torch.Tensor:
    """The outputs of a plan's calls (in call order) as one tensor in probe token order, like `like` [T, ...]:
    entry e of a call with keep 1 goes to row token[e]; neighbours are dropped."""
    every = torch.cat(outs, dim=0)
    y = torch.empty_like(like)
    y.index_copy_(0, plan.kept_tokens, every.index_select(0, plan.kept_entries))
    return y


def _run_plan(fn: Callable, x_dev: torch.Tensor, plan: _Plan, run: int) -> torch.Tensor:
    """All calls of a plan; returns the kept outputs scattered to probe token order, [T, H, D] on the device."""
    return scatter([_call_once(fn, x_dev, plan, c, run) for c in range(plan.n_calls)], x_dev, plan)


def _notes(meta: Dict[str, str]) -> List[str]:
    try:
        notes = json.loads(meta.get("notes", "[]"))
    except ValueError:
        return []
    return [str(n) for n in notes] if isinstance(notes, list) else []


# Each form of the probe: the door that drives it and the kernel-dtype inputs its file must hold.
FORM_DOORS = {"x": "check()", "qk": "check_qk()", "attention": "check_attention()"}
FORM_INPUTS = {"x": ("x",), "qk": ("q", "k", "q_alt", "k_alt"),
               "attention": ("attention.q", "attention.k", "attention.v")}


def read_probe(probe_path: str, form: str) -> Tuple[Dict[str, st.Tensor], Dict[str, str], object]:
    """The probe file's tensors, metadata and the kernel's declared last position (None: none), after checking it
    is a version-1 probe of the call form `form` ("x": one input x; "qk": queries q and keys k; "attention":
    queries, keys and values of attention calls). Raises RopecheckError for another version or form."""
    tensors, meta = st.read(probe_path)
    if meta.get("ropecheck_probe") != "1":
        raise RopecheckError(f"{probe_path} is not a version-1 probe file (its __metadata__ ropecheck_probe is "
                             f"{meta.get('ropecheck_probe')!r}): the package and the ropecheck program differ in "
                             "version")
    has = meta.get("form", "x")  # the x form's files carry no "form"
    if has != form:
        door = FORM_DOORS.get(has)
        raise RopecheckError(f"{probe_path} is a probe of the {has} form, not of the {form} form: "
                             + (f"{door} drives it" if door else "this package drives no such form (the package "
                                                                 "and the ropecheck program differ in version)"))
    for name in FORM_INPUTS[form]:
        if name not in tensors:
            raise RopecheckError(f"{probe_path}: no tensor {name!r} in a probe of the {form} form: rewrite it with "
                                 "the same ropecheck's `probe`")
        if tensors[name].dtype not in TORCH_DTYPES:
            raise RopecheckError(f"{probe_path}: {name} is {tensors[name].dtype}, not a kernel dtype")
    try:  # the kernel's declared last position (`ropecheck probe --max-position`; 0: none)
        declared = int(meta.get("max_position", "0")) or None
    except ValueError:
        declared = None
    return tensors, meta, declared


def write_outputs(outputs_path: str, tensors: Dict[str, st.Tensor], meta: Dict[str, str],
                  outputs: Dict[str, Tuple[str, np.ndarray]], *, kernel: str, adapter: str, device) -> None:
    """The outputs file: the probe's tensors and metadata, then `outputs` ({name: (safetensors dtype, array)}) and
    the metadata ropecheck_probe_outputs "1", kernel, adapter, device."""
    out = dict(tensors)
    for name, (dtype, arr) in outputs.items():
        out[name] = st.Tensor(dtype, arr)
    meta_out = dict(meta)
    meta_out.update({"ropecheck_probe_outputs": "1", "kernel": kernel, "adapter": adapter, "device": str(device)})
    st.write(outputs_path, out, meta_out)


def drive(fn: Callable, probe_path: str, outputs_path: str, device: torch.device, *, kernel: str,
          adapter: str) -> Tuple[Dict[str, object], float]:
    """Run fn on every call of both forms (prefill twice) and write the outputs file.

    Assumes the probe file was written by the same ropecheck's `probe`. Returns ({"forms", "tokens", "dtype",
    "calls", "notes"}, seconds spent in the calls). Raises KernelError, KernelOutputError, InputMutatedError.
    """
    tensors, meta, declared = read_probe(probe_path, "x")
    x_t = tensors["x"]
    tokens = int(x_t.array.shape[0])
    t0 = time.perf_counter()
    x_dev = to_torch(x_t).to(device)
    plans = [_Plan(f, tensors, tokens, device, declared) for f in FORMS]
    outputs: Dict[str, Tuple[str, np.ndarray]] = {}
    with torch.no_grad():
        for plan in plans:
            if plan.n_calls == 0:
                continue
            outputs[plan.form + ".y"] = (x_t.dtype, to_numpy(_run_plan(fn, x_dev, plan, 0)))
            if plan.form == "prefill":
                outputs["prefill.y_again"] = (x_t.dtype, to_numpy(_run_plan(fn, x_dev, plan, 1)))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    write_outputs(outputs_path, tensors, meta, outputs, kernel=kernel, adapter=adapter, device=device)
    return run_info(plans, tokens, meta), seconds


def run_info(plans: List[_Plan], tokens: int, meta: Dict[str, str]) -> Dict[str, object]:
    """What drive() returns besides the seconds: the forms run, the probe tokens, dtype, calls per form, notes."""
    return {"forms": [p.form for p in plans if p.n_calls], "tokens": tokens, "dtype": meta.get("dtype", ""),
            "calls": {p.form: p.n_calls for p in plans}, "notes": _notes(meta)}
