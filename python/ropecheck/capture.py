"""ropecheck.capture: capture what a running PyTorch model's RoPE did, in the format `ropecheck audit` reads
(docs/capture.md; README "Capture").

    from ropecheck.capture import ropecheck_capture
    with ropecheck_capture(modeling_module_or_object, "apply_rotary_pos_emb", out="dump/") as cap:
        model(**inputs)

The attribute `name` of `target` is replaced by a wrapper for the duration of the `with` block and
restored on exit, exceptions included. The wrapper calls the original with the same arguments and
returns its result object unchanged; it only copies tensors (inputs before the call, since vLLM's
kernels rotate in place, outputs after it).

Calling conventions (`convention="hf" | "vllm"`, else detected from the wrapped function's
parameter names):
  hf    apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1), as in transformers
        models/llama/modeling_llama.py: cos/sin [batch, seq, rotary_dim] are unsqueezed at
        unsqueeze_dim, so q/k are [batch, heads, seq, head_dim] (unsqueeze_dim=1) or
        [batch, seq, heads, head_dim] (unsqueeze_dim=2). The positions are not arguments: they are
        taken from the rotary embedding module's forward(x, position_ids), whose returned cos/sin are
        matched to each apply call by tensor identity. Older transformers passed position_ids to
        apply_rotary_pos_emb with a [max_pos, rotary_dim] cos cache (cos[position_ids]): used as given.
  vllm  RotaryEmbedding.forward(positions, query, key=None, offsets=None), as in vLLM
        model_executor/layers/rotary_embedding/base.py: query [tokens, heads * head_size] viewed as
        [tokens, heads, head_size]; cos_sin_cache [max_pos, rotary_dim] holds cos in its first
        rotary_dim/2 columns and sin in the rest, indexed by positions (+ offsets); is_neox_style
        selects half-split (True) or interleaved (False) pairs; forward_cuda rotates in place.

Output (`out`): one safetensors file per (apply call, q|k), callNNNN-layerL-q.safetensors, with
positions I64 [tokens] (batch flattened into tokens: the contract's positions are per token; M-RoPE
position_ids [3, batch, seq] become [3, tokens]), x/y [tokens, heads, head_dim] in the model's dtype,
cos/sin (the rows used, in the dtype used), inv_freq F32 when the rotary module holds one, and
__metadata__ (call, layer, forward, tensor, convention, layer_rule); plus config.json (the model's)
and index.json (every file with shapes, dtype, layer and position range).

At the score (capture_scores, below): per attention call of a transformers-style model with eager attention, q and
k before RoPE, their positions and the attention weights, as `ropecheck audit --scores` dumps (docs/scores.md);
what it assumes is in its docstring.

Stdlib + torch + numpy only (the package's own safetensors writer). Importing `ropecheck` does not import this
module (nor torch): `import ropecheck.capture` or `ropecheck.capture` on first use does.
`tools/dump/ropecheck_capture.py` re-exports it for scripts that put tools/dump on sys.path.
"""

import contextlib
import inspect
import json
import os
import sys
import weakref

import numpy as np
import torch

from . import _safetensors
from .errors import CaptureError

__all__ = ["ropecheck_capture", "capture_scores", "CaptureError", "detect_convention", "load_config",
           "find_rotary_modules", "find_rotary_classes", "find_attention_modules", "write_safetensors", "CONVENTIONS",
           "DEFAULT_MAX_CALLS"]

CONVENTIONS = ("hf", "vllm")
DEFAULT_MAX_CALLS = 64


def write_safetensors(path, tensors, metadata):
    """Write [(name, torch tensor)] and string metadata with the package's writer (_safetensors.write): bfloat16 as
    its bits (BF16), every other dtype as its numpy array (F32, F16, F64, I64, I32)."""
    out = {}
    for name, t in tensors:
        t = t.detach().to("cpu").contiguous()
        if t.dtype == torch.bfloat16:
            out[name] = _safetensors.Tensor("BF16", t.view(torch.int16).numpy().view(np.uint16))
        else:
            out[name] = t.numpy()
    _safetensors.write(path, out, metadata)


# ----------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------
def _cpu(t):
    return t.detach().to("cpu").contiguous()


def _copy(t):
    with torch.no_grad():
        return t.detach().clone()


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _bind(sig, args, kwargs):
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


CANONICAL = {"hf": ("q", "k", "cos", "sin", "position_ids", "unsqueeze_dim"),
             "vllm": ("positions", "query", "key", "offsets")}


def detect_convention(fn, owner=None):
    """'hf' or 'vllm' from the parameter names of fn (or, for a forward(*args, **kwargs) such as
    vLLM's CustomOp.forward, from an owner holding cos_sin_cache), else None."""
    sig = _signature(fn)
    names = set(sig.parameters) if sig is not None else set()
    if {"positions", "query"} <= names:
        return "vllm"
    if {"cos", "sin"} <= names:
        return "hf"
    if hasattr(owner, "cos_sin_cache") and hasattr(owner, "head_size"):
        return "vllm"
    return None


def canonical_arguments(sig, convention, args, kwargs, has_self):
    """{name: value} in the convention's own parameter names: bound by the signature when it names
    them, else by position (a forward(*args, **kwargs) wrapper)."""
    names = CANONICAL[convention]
    if sig is not None:
        a = _bind(sig, args, kwargs)
        if all(n in a for n in names[:2]):
            return a
    out = {}
    if has_self:
        out["self"], args = args[0], args[1:]
    out.update(zip(names, args))
    out.update({k: v for k, v in kwargs.items() if k in names})
    return out


def load_config(config, *owners):
    """config.json content as a dict: from `config` (dict, path to a file or a folder holding
    config.json, or an object with to_json_string()/to_dict()), else from the first owner with a
    `.config` that has one. None when nothing gives one."""
    candidates = [config] if config is not None else [getattr(o, "config", None) for o in owners]
    for c in candidates:
        if c is None:
            continue
        if isinstance(c, dict):
            return json.loads(json.dumps(c))
        if isinstance(c, (str, os.PathLike)):
            p = os.fspath(c)
            if os.path.isdir(p):
                p = os.path.join(p, "config.json")
            with open(p) as f:
                return json.load(f)
        if hasattr(c, "to_json_string"):
            return json.loads(c.to_json_string())
        if hasattr(c, "to_dict"):
            return json.loads(json.dumps(c.to_dict(), default=str))
        if config is not None:
            raise CaptureError(f"config= must be a dict, a path to config.json or an object with to_dict(); "
                               f"got {type(c).__name__}")
    return None


def _forward_takes_position_ids(fn):
    sig = _signature(fn)
    if sig is None:
        return False
    params = [p for p in sig.parameters.values() if p.name != "self"]
    return "position_ids" in sig.parameters or len(params) >= 2


def find_rotary_modules(root):
    """(name, module) of every submodule of root (root included) with an `inv_freq` buffer whose
    forward takes (x, position_ids)."""
    found = []
    for name, m in root.named_modules():
        if isinstance(getattr(m, "inv_freq", None), torch.Tensor) and _forward_takes_position_ids(m.forward):
            found.append((name or type(m).__name__, m))
    return found


def _mentions_inv_freq(cls):
    try:
        return "inv_freq" in inspect.getsource(cls)
    except (OSError, TypeError):
        return "Rotary" in cls.__name__


def find_rotary_classes(pymod):
    """nn.Module classes defined in a Python module (a modeling file) whose forward takes
    position_ids and whose code mentions inv_freq: HF's rotary embedding classes (an instance
    without an inv_freq tensor is still ignored at call time)."""
    out = []
    for value in vars(pymod).values():
        if (isinstance(value, type) and issubclass(value, torch.nn.Module)
                and value.__module__ == getattr(pymod, "__name__", None) and "forward" in vars(value)
                and _signature(value.forward) is not None
                and "position_ids" in _signature(value.forward).parameters and _mentions_inv_freq(value)):
            out.append(value)
    return out


# ----------------------------------------------------------------------------------------------
# Attribute patching that always restores
# ----------------------------------------------------------------------------------------------
class _Patch:
    def __init__(self, owner, name, replacement):
        self.owner, self.name = owner, name
        self.had_own = name in getattr(owner, "__dict__", {})
        self.original_own = owner.__dict__[name] if self.had_own else None
        setattr(owner, name, replacement)

    def restore(self):
        if self.had_own:
            setattr(self.owner, self.name, self.original_own)
        else:
            with contextlib.suppress(AttributeError):
                delattr(self.owner, self.name)


# ----------------------------------------------------------------------------------------------
# The capture
# ----------------------------------------------------------------------------------------------
class ropecheck_capture:
    """Context manager; see the module docstring. Keyword arguments:
      convention     "hf" | "vllm" (default: from the wrapped function's parameter names)
      config         the model's config: dict, path, or object with to_dict() (default: target.config
                     or model.config; none found is an error)
      positions_from HF: the rotary embedding module, or any module containing it (default: found in
                     target/model when they are nn.Modules, else the rotary classes of the modeling
                     module `target`)
      model          the top-level model: its forward marks the start of a forward pass (layer 0)
      max_calls      record at most this many apply calls (default 64; None: no limit)
      layers         record only these layer indices (default: all)
      quiet          no summary on exit
    Attributes after the block: files (index entries), calls_seen, calls_recorded, out."""

    def __init__(self, target, name, out, *, convention=None, config=None, positions_from=None, model=None,
                 max_calls=DEFAULT_MAX_CALLS, layers=None, quiet=False):
        self.target, self.name, self.out = target, name, os.fspath(out)
        self.convention_arg, self.config_arg = convention, config
        self.positions_from, self.model = positions_from, model
        self.max_calls = max_calls
        self.layers = None if layers is None else set(int(x) for x in layers)
        self.quiet = quiet
        self.files, self.notes = [], []
        self.calls_seen = self.calls_recorded = 0
        self.forward_index, self.layer = -1, 0
        self._patches, self._handles = [], []
        self._produced = {}          # id(cos or sin) -> (weakref, record of the rotary call)
        self._applied_since_rotary = True
        self._last_positions = None  # vLLM: the positions tensor of the previous call (held alive)
        self._rotary_names = []

    # -- setup ------------------------------------------------------------------------------------
    def __enter__(self):
        if not hasattr(self.target, self.name):
            raise CaptureError(f"{self._target_label()} has no attribute '{self.name}'")
        original = getattr(self.target, self.name)
        if not callable(original):
            raise CaptureError(f"{self._target_label()}.{self.name} is not callable")
        owner = None if inspect.ismodule(self.target) or isinstance(self.target, type) else self.target
        conv = self.convention_arg or detect_convention(original, owner)
        if conv not in CONVENTIONS:
            raise CaptureError(
                f"cannot tell the calling convention of {self._target_label()}.{self.name} from its parameters "
                f"{list(_signature(original).parameters) if _signature(original) else '?'}: pass "
                "convention=\"hf\" (q, k, cos, sin, ...) or convention=\"vllm\" (positions, query, key)")
        self.convention = conv
        self.config = load_config(self.config_arg, self.target, self.model)
        if self.config is None:
            raise CaptureError(
                "no config.json for the capture: pass config=model.config (an object with to_dict()), a dict, "
                "or a path to the model's config.json (the audit judges the dump against it)")
        self._sig = _signature(original)
        self._is_class_target = isinstance(self.target, type)
        try:
            self._prepare_out()
            if conv == "hf":
                self._install_position_hooks()
                self.layer_rule = ("layer = index of the apply call since the start of the forward pass; a forward "
                                   "pass starts " + ("at model.forward" if self.model is not None else
                                                     "at the first rotary-embedding forward after an apply call"))
            else:
                self.layer_rule = ("layer = index of the call since the start of the forward pass; a forward pass "
                                   "starts " + ("at model.forward" if self.model is not None else
                                                "when the positions tensor object differs from the previous call's"))
            if self.model is not None:
                self._handles.append(self.model.register_forward_pre_hook(lambda m, a: self._new_forward()))
            self._patches.append(_Patch(self.target, self.name, self._make_wrapper(original)))
        except BaseException:
            self._restore()
            raise
        return self

    def _target_label(self):
        return getattr(self.target, "__name__", type(self.target).__name__)

    def _prepare_out(self):
        os.makedirs(self.out, exist_ok=True)
        for f in os.listdir(self.out):  # a previous capture's files would be mixed into this one's index
            if (f.startswith("call") and f.endswith(".safetensors")) or f == "index.json":
                os.remove(os.path.join(self.out, f))

    def _install_position_hooks(self):
        roots = [r for r in (self.positions_from, self.model, self.target) if isinstance(r, torch.nn.Module)]
        if self.positions_from is not None and not isinstance(self.positions_from, torch.nn.Module):
            raise CaptureError("positions_from= must be the rotary embedding module (or a module containing it)")
        for root in roots[:1]:
            for name, m in find_rotary_modules(root):
                self._patches.append(_Patch(m, "forward", self._make_rotary_wrapper(m.forward, name, bound=True)))
                self._rotary_names.append(name)
        if not roots and inspect.ismodule(self.target):
            for cls in find_rotary_classes(self.target):
                self._patches.append(_Patch(cls, "forward", self._make_rotary_wrapper(cls.forward, cls.__name__,
                                                                                      bound=False)))
                self._rotary_names.append(cls.__name__ + " (class)")
        if not self._rotary_names:
            where = ", ".join(type(r).__name__ for r in roots) or self._target_label()
            raise CaptureError(
                f"HF convention: {self.name} is not given positions, and no rotary embedding module (a module with an "
                f"inv_freq buffer whose forward takes (x, position_ids)) was found in {where}: pass "
                "positions_from=<the rotary embedding module, e.g. model.model.rotary_emb> or model=<the model>")

    # -- forward boundaries and layers ------------------------------------------------------------
    def _new_forward(self):
        self.forward_index += 1
        self.layer = 0

    def _next_layer(self):
        if self.forward_index < 0:
            self._new_forward()
        layer = self.layer
        self.layer += 1
        return layer

    def _wanted(self, layer):
        if self.layers is not None and layer not in self.layers:
            return False
        return self.max_calls is None or self.calls_recorded < self.max_calls

    # -- HF: the rotary embedding's forward gives the positions -----------------------------------
    def _make_rotary_wrapper(self, fn, label, bound):
        sig = _signature(fn)

        def record(module, args, kwargs, result):
            if not isinstance(getattr(module, "inv_freq", None), torch.Tensor):
                return
            a = _bind(sig, args, kwargs) if sig is not None else {}
            pid = a.get("position_ids")
            if pid is None:
                rest = [v for k, v in a.items() if k != "self"]
                pid = rest[1] if len(rest) > 1 else None
            if not isinstance(pid, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) < 2:
                return
            if self.model is None and self._applied_since_rotary:
                self._new_forward()
            self._applied_since_rotary = False
            entry = {"position_ids": _cpu(pid), "rotary": label, "inv_freq": _cpu(module.inv_freq)}
            for t in result[:2]:
                if isinstance(t, torch.Tensor):
                    self._produced[id(t)] = (weakref.ref(t), entry)
            if len(self._produced) > 64:  # keep the newest rotary outputs only
                for key in list(self._produced)[:-32]:
                    del self._produced[key]

        if bound:
            def rotary_forward(*args, **kwargs):
                result = fn(*args, **kwargs)
                record(fn.__self__, args, kwargs, result)
                return result
        else:
            def rotary_forward(self_, *args, **kwargs):
                result = fn(self_, *args, **kwargs)
                record(self_, (self_,) + args, kwargs, result)
                return result
        return rotary_forward

    def _positions_for(self, cos, sin, position_ids):
        """(position_ids tensor, inv_freq or None, source) for one HF apply call."""
        if isinstance(position_ids, torch.Tensor):
            return _cpu(position_ids), None, "the position_ids argument"
        for t in (cos, sin):
            hit = self._produced.get(id(t))
            if hit is not None and hit[0]() is t:
                return hit[1]["position_ids"], hit[1]["inv_freq"], hit[1]["rotary"]
        raise CaptureError(
            f"{self.name} was called with cos/sin that no hooked rotary embedding forward returned (hooked: "
            f"{', '.join(self._rotary_names)}); the model may transform cos/sin between the two calls: pass "
            "positions_from=<the module whose forward(x, position_ids) returns exactly these cos/sin>")

    # -- the wrapper --------------------------------------------------------------------------------
    def _make_wrapper(self, original):
        record = self._record_hf if self.convention == "hf" else self._record_vllm
        is_class = self._is_class_target

        def wrapper(*args, **kwargs):
            self.calls_seen += 1
            if self.convention == "hf":
                self._applied_since_rotary = True
            before = record(None, args, kwargs, is_class)
            result = original(*args, **kwargs)
            if before is not None:
                record(before, args, kwargs, is_class, result)
            return result
        return wrapper

    def _record_hf(self, before, args, kwargs, is_class, result=None):
        a = canonical_arguments(self._sig, "hf", args, kwargs, is_class)
        names = [k for k in a if k != "self"]
        q, k, cos, sin = (a[n] for n in names[:4])
        if before is None:
            layer = self._next_layer()
            if not self._wanted(layer):
                return None
            pos, inv_freq, source = self._positions_for(cos, sin, a.get("position_ids"))
            return {"layer": layer, "x": [_copy(q), _copy(k)], "pos": pos, "inv_freq": inv_freq, "source": source}
        u = int(a.get("unsqueeze_dim", 1))
        ys = list(result[:2])
        if cos.dim() == 2 and isinstance(a.get("position_ids"), torch.Tensor):  # old HF: a cache indexed here
            cos, sin = cos[a["position_ids"]], sin[a["position_ids"]]
        for tag, x, y in zip("qk", before["x"], ys):
            n = x.dim()
            u_ = u % n
            tok_axes = [i for i in range(n - 1) if i != u_]
            tok_shape = [x.shape[i] for i in tok_axes]
            perm = tok_axes + [u_, n - 1]
            xt = x.permute(perm).reshape(-1, x.shape[u_], x.shape[-1])
            yt = y.permute(perm).reshape(-1, y.shape[u_], y.shape[-1])
            pos = self._flat_positions(before["pos"], tok_shape)
            c = s = None
            if cos.dim() == len(tok_shape) + 1:
                c = cos.expand(*tok_shape, cos.shape[-1]).reshape(-1, cos.shape[-1])
                s = sin.expand(*tok_shape, sin.shape[-1]).reshape(-1, sin.shape[-1])
            else:
                self._note(f"cos of shape {list(cos.shape)} (M-RoPE per-row cos/sin?) not written")
            self._write(before["layer"], tag, pos, xt, yt, c, s, before["inv_freq"], before["source"])
        self.calls_recorded += 1
        return None

    def _flat_positions(self, pid, tok_shape):
        pid = pid.to(torch.int64) if not pid.dtype.is_floating_point else pid
        if pid.dim() == len(tok_shape) + 1 and pid.shape[0] == 3:  # M-RoPE [3, batch, seq] -> [3, tokens]
            return pid.expand(3, *tok_shape).reshape(3, -1)
        try:
            return pid.expand(*tok_shape).reshape(-1)
        except RuntimeError:
            raise CaptureError(f"position_ids of shape {list(pid.shape)} do not match the q/k tokens "
                               f"{tok_shape}: pass positions_from=<the rotary module fed these tokens>")

    def _record_vllm(self, before, args, kwargs, is_class, result=None):
        a = canonical_arguments(self._sig, "vllm", args, kwargs, is_class)
        obj = a.get("self", self.target) if is_class else self.target
        positions, query, key = a["positions"], a["query"], a.get("key")
        if before is None:
            if self.model is None and positions is not self._last_positions:
                self._new_forward()
            self._last_positions = positions
            layer = self._next_layer()
            if not self._wanted(layer):
                return None
            pos = positions
            if isinstance(a.get("offsets"), torch.Tensor):
                pos = pos + a["offsets"]
            xs = [_copy(query)] + ([_copy(key)] if isinstance(key, torch.Tensor) else [])
            return {"layer": layer, "x": xs, "pos": _cpu(pos)}
        for attr in ("head_size", "rotary_dim", "cos_sin_cache"):
            if not hasattr(obj, attr):
                raise CaptureError(f"vLLM convention: {type(obj).__name__} has no '{attr}' (expected a vLLM "
                                   "RotaryEmbedding); pass convention=\"hf\" if this is not one")
        hs, rd = int(obj.head_size), int(obj.rotary_dim)
        pos = before["pos"]
        mrope = pos.dim() == 2 and pos.shape[0] == 3
        flat = pos if mrope else pos.flatten()
        tokens = flat.shape[-1]
        c = s = None
        if mrope:
            self._note("M-RoPE positions [3, tokens]: cos/sin rows not written (one row per section)")
        else:
            rows = obj.cos_sin_cache.index_select(0, flat.to(obj.cos_sin_cache.device))  # the cache as used
            c, s = rows[..., : rd // 2], rows[..., rd // 2: rd]
        ys = [result[0]] + ([result[1]] if len(before["x"]) > 1 else [])
        for tag, x, y in zip("qk", before["x"], ys):
            self._write(before["layer"], tag, flat, x.reshape(tokens, -1, hs), y.reshape(tokens, -1, hs), c, s,
                        None, "the positions argument")
        self.calls_recorded += 1
        return None

    # -- writing ------------------------------------------------------------------------------------
    def _note(self, line):
        if line not in self.notes:
            self.notes.append(line)

    def _write(self, layer, tag, pos, x, y, cos, sin, inv_freq, source):
        call = self.calls_seen - 1
        fname = f"call{call:04d}-layer{layer}-{tag}.safetensors"
        tensors = [("positions", _cpu(pos)), ("x", _cpu(x)), ("y", _cpu(y))]
        if cos is not None:
            tensors += [("cos", _cpu(cos)), ("sin", _cpu(sin))]
        rd = cos.shape[-1] if cos is not None else None
        if (inv_freq is not None and inv_freq.dtype == torch.float32 and inv_freq.dim() == 1
                and rd is not None and inv_freq.shape[0] * 2 == rd):
            tensors.append(("inv_freq", inv_freq))
        elif inv_freq is not None:
            self._note(f"inv_freq {inv_freq.dtype} {list(inv_freq.shape)} not written (the contract wants F32 "
                       "[rotary_dim/2])")
        meta = {"capture": "ropecheck_capture", "convention": self.convention, "call": str(call),
                "forward": str(self.forward_index), "layer": str(layer), "tensor": tag, "positions_from": source,
                "layer_rule": self.layer_rule, "torch_version": torch.__version__}
        write_safetensors(os.path.join(self.out, fname), tensors, meta)
        p = tensors[0][1]
        self.files.append({
            "file": fname, "call": call, "forward": self.forward_index, "layer": layer, "tensor": tag,
            "dtype": str(y.dtype).replace("torch.", ""), "x_shape": list(x.shape), "y_shape": list(y.shape),
            "positions_shape": list(p.shape), "position_min": int(p.min()) if p.numel() else None,
            "position_max": int(p.max()) if p.numel() else None,
            "cos_shape": list(cos.shape) if cos is not None else None,
            "cos_dtype": str(cos.dtype).replace("torch.", "") if cos is not None else None,
            "tensors": [n for n, _ in tensors]})

    # -- teardown -----------------------------------------------------------------------------------
    def _restore(self):
        for h in self._handles:
            h.remove()
        for p in reversed(self._patches):
            p.restore()
        self._handles, self._patches = [], []
        self._produced.clear()
        self._last_positions = None

    def __exit__(self, exc_type, exc, tb):
        self._restore()
        with open(os.path.join(self.out, "config.json"), "w") as f:
            json.dump(self.config, f, indent=2)
            f.write("\n")
        with open(os.path.join(self.out, "index.json"), "w") as f:
            json.dump(self._index(exc_type is None), f, indent=2)
            f.write("\n")
        if not self.quiet:
            print(self.summary(), file=sys.stderr)
        return False

    def _index(self, completed):
        return {"capture": "ropecheck_capture", "target": f"{self._target_label()}.{self.name}",
                "convention": self.convention, "layer_rule": self.layer_rule, "config": "config.json",
                "positions_from": self._rotary_names or ["the positions argument"],
                "calls_seen": self.calls_seen, "calls_recorded": self.calls_recorded,
                "forwards": self.forward_index + 1, "max_calls": self.max_calls,
                "layers": sorted(self.layers) if self.layers is not None else None,
                "completed": completed, "notes": self.notes, "files": self.files}

    def _audit_line(self):
        return (f"  audit: ropecheck audit {os.path.join(self.out, self.files[0]['file'])} --config "
                f"{os.path.join(self.out, 'config.json')}  (index.json lists every file)")

    def summary(self):
        ps = [f[k] for f in self.files for k in ("position_min", "position_max") if f[k] is not None]
        skipped = self.calls_seen - self.calls_recorded
        lines = [f"{type(self).__name__}: {self.calls_seen} calls of {self._target_label()}.{self.name} in "
                 f"{self.forward_index + 1} forward passes; {self.calls_recorded} recorded as {len(self.files)} files "
                 f"in {self.out}" + (f" (positions {min(ps)}..{max(ps)})" if ps else "")]
        if skipped:
            lines.append(f"  {skipped} calls not recorded (max_calls={self.max_calls}, layers="
                         f"{sorted(self.layers) if self.layers is not None else 'all'})")
        lines += [f"  note: {n}" for n in self.notes]
        if self.files:
            lines.append(self._audit_line())
        return "\n".join(lines)


# At the score: q and k before RoPE, their positions and eager attention's weights (its own module, which extends
# ropecheck_capture above, so imported last).
from ._capture_scores import capture_scores, find_attention_modules  # noqa: E402
