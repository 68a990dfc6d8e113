"""Driving a qk kernel fn(q, k, positions) -> (q_out, k_out) through the qk probe's call plan, and writing the
outputs file `ropecheck audit` judges as queries and keys together.

The qk probe file (`ropecheck probe --form qk`, layout in docs/python.md) holds the queries q [T, HQ, D], the keys
k [T, HK, D] (HK divides HQ: grouped-query attention), other queries q_alt and keys k_alt of the same shapes, and
the x form's plans (`F.calls`, `F.positions`, `F.token`, `F.keep`). Each call gives the kernel the rows of q and k
of its entries. Both forms run once; prefill runs three more times: again (compared bitwise: `nondeterministic`),
with k_alt in place of k (q's outputs must not move) and with q_alt in place of q (k's outputs must not move):
what moves is `qk_crossed`, one tensor's outputs computed from the other's inputs. The call, its checks and the
scatter to probe token order are _drive.py's.
"""

import time
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

from ._drive import (FORMS, POSITIONS_FIX, _Call, _Plan, check_like, check_unchanged, dtype_text, invoke,
                     read_probe, run_info, scatter, to_numpy, to_torch, write_outputs)
from .errors import KernelOutputError, RopecheckError

QK_PROMISE = ("fn(q, k, positions) returns new (q_out, k_out) of q's and k's shapes and dtypes and leaves q, k and "
              "positions alone")
_SHAPE_HINT = ("a kernel taking [batch, heads, seq, head_dim] or flattened heads needs an adapter "
               "(ropecheck.adapters.hf or vllm, whose ropecheck_qk calls it with q and k) or a reshape in a wrapper")

# The prefill plan's runs after the first: (label in messages, q replaced by q_alt, k replaced by k_alt, the
# outputs kept: {output tensor name: "q" or "k"}). The first run (both forms) writes F.q_out and F.k_out.
PREFILL_RERUNS = (
    ("the plan's second run", False, False, {"prefill.q_out_again": "q", "prefill.k_out_again": "k"}),
    ("the run with other keys, k_alt, in place of k", False, True, {"prefill.q_out_kalt": "q"}),
    ("the run with other queries, q_alt, in place of q", True, False, {"prefill.k_out_qalt": "k"}),
)


def _pair(out, qin: torch.Tensor, kin: torch.Tensor, call: _Call) -> Tuple[torch.Tensor, torch.Tensor]:
    """(q_out, k_out) of what the kernel returned: a tuple or list of two tensors of q's and k's shapes and dtypes,
    else a KernelOutputError saying what came back instead."""
    expected = (f"a pair (q_out {list(qin.shape)}, k_out {list(kin.shape)}) of {dtype_text(qin.dtype)} tensors")
    if isinstance(out, torch.Tensor):
        raise KernelOutputError(
            f"{call}: a qk kernel returning one tensor ({list(out.shape)} {dtype_text(out.dtype)}), expected "
            f"{expected}; a kernel fn(x, positions) of one tensor is check()'s, or wrap it, "
            "ropecheck.adapters.plain(fn), whose ropecheck_qk applies it to q and to k")
    if out is None:
        raise KernelOutputError(f"{call}: the qk kernel returned None, expected {expected} (a kernel rotating q and "
                                "k in place: wrap it, ropecheck.adapters.inplace_qk(fn))")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        what = f"a {type(out).__name__} of {len(out)} items" if isinstance(out, (tuple, list)) else type(out).__name__
        raise KernelOutputError(f"{call}: the qk kernel returned {what}, expected {expected}")
    for name, y, x, other in (("q_out", out[0], qin, kin), ("k_out", out[1], kin, qin)):
        if not isinstance(y, torch.Tensor):
            raise KernelOutputError(f"{call}: the qk kernel returned {type(y).__name__} as {name}, expected a "
                                    f"torch.Tensor {list(x.shape)} {dtype_text(x.dtype)}")
        hint = ("that is the other tensor's shape: are q_out and k_out returned in the other order?"
                if tuple(y.shape) == tuple(other.shape) else _SHAPE_HINT)
        check_like(y, x, call, f"the qk kernel's {name} has", f"{name[0]}'s", hint)
    return out[0], out[1]


def _call_once(fn: Callable, q_dev: torch.Tensor, k_dev: torch.Tensor, plan: _Plan, c: int,
               run: str) -> Tuple[torch.Tensor, torch.Tensor]:
    s, e = plan.calls[c], plan.calls[c + 1]
    rows = plan.token[s:e]
    qin, kin = q_dev.index_select(0, rows), k_dev.index_select(0, rows)
    pos = plan.positions[..., s:e].clone()
    q_before, k_before, pos_before = qin.clone(), kin.clone(), pos.clone()
    call = _Call(plan.form, c, plan.n_calls, pos_before, run)
    out = invoke(fn, (qin, kin, pos), call, plan.declared, QK_PROMISE, "check_qk")
    fix = "if it rotates q and k in place by design, wrap it: ropecheck.adapters.inplace_qk(fn) gives it copies"
    check_unchanged(fn, call, [("q", qin, q_before, fix), ("k", kin, k_before, fix),
                               ("positions", pos, pos_before, POSITIONS_FIX)], QK_PROMISE)
    q_out, k_out = _pair(out, qin, kin, call)
    return (q_out.detach().to(device=q_dev.device, copy=True), k_out.detach().to(device=k_dev.device, copy=True))


def _run_plan(fn: Callable, q_dev: torch.Tensor, k_dev: torch.Tensor, plan: _Plan,
              run: str) -> Dict[str, torch.Tensor]:
    """All calls of a plan; returns {"q": q_out [T, HQ, D], "k": k_out [T, HK, D]} in probe token order."""
    outs = [_call_once(fn, q_dev, k_dev, plan, c, run) for c in range(plan.n_calls)]
    return {"q": scatter([o[0] for o in outs], q_dev, plan), "k": scatter([o[1] for o in outs], k_dev, plan)}


def _shapes(tensors, probe_path: str) -> Tuple[int, int, int]:
    """(T, HQ, HK) of the probe's q, k, q_alt, k_alt; RopecheckError when they disagree with each other."""
    q, k = tensors["q"].array, tensors["k"].array
    ok = (q.ndim == 3 and k.ndim == 3 and q.shape[0] == k.shape[0] and q.shape[2] == k.shape[2]
          and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0
          and tensors["q_alt"].array.shape == q.shape and tensors["k_alt"].array.shape == k.shape
          and len({tensors[n].dtype for n in ("q", "k", "q_alt", "k_alt")}) == 1)
    if not ok:
        raise RopecheckError(f"{probe_path}: q {list(q.shape)}, k {list(k.shape)}, q_alt, k_alt are not a qk probe "
                             "(q [T, HQ, D], k [T, HK, D] with HK dividing HQ, q_alt and k_alt of their shapes, one "
                             "dtype): rewrite it with the same ropecheck's `probe --form qk`")
    return int(q.shape[0]), int(q.shape[1]), int(k.shape[1])


def drive_qk(fn: Callable, probe_path: str, outputs_path: str, device: torch.device, *, kernel: str,
             adapter: str) -> Tuple[Dict[str, object], float]:
    """Run the qk kernel fn on every call of both forms (prefill four times: as planned, again, with k_alt, with
    q_alt) and write the outputs file (F.q_out, F.k_out; prefill.q_out_again, prefill.k_out_again,
    prefill.q_out_kalt, prefill.k_out_qalt).

    Assumes the probe file was written by the same ropecheck's `probe --form qk`. Returns ({"forms", "tokens",
    "dtype", "calls", "notes", "heads", "kv_heads"}, seconds spent in the calls). Raises KernelError,
    KernelOutputError, InputMutatedError.
    """
    tensors, meta, declared = read_probe(probe_path, "qk")
    tokens, heads, kv_heads = _shapes(tensors, probe_path)
    dtype = tensors["q"].dtype
    t0 = time.perf_counter()
    inputs = {n: to_torch(tensors[n]).to(device) for n in ("q", "k", "q_alt", "k_alt")}
    plans = [_Plan(f, tensors, tokens, device, declared) for f in FORMS]
    outputs: Dict[str, Tuple[str, np.ndarray]] = {}
    with torch.no_grad():
        for plan in plans:
            if plan.n_calls == 0:
                continue
            first = _run_plan(fn, inputs["q"], inputs["k"], plan, "")
            outputs[plan.form + ".q_out"] = (dtype, to_numpy(first["q"]))
            outputs[plan.form + ".k_out"] = (dtype, to_numpy(first["k"]))
            if plan.form != "prefill":
                continue
            for run, q_alt, k_alt, kept in PREFILL_RERUNS:
                got = _run_plan(fn, inputs["q_alt" if q_alt else "q"], inputs["k_alt" if k_alt else "k"], plan, run)
                for name, side in kept.items():
                    outputs[name] = (dtype, to_numpy(got[side]))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    write_outputs(outputs_path, tensors, meta, outputs, kernel=kernel, adapter=adapter, device=device)
    info = run_info(plans, tokens, meta)
    info.update(heads=heads, kv_heads=kv_heads)
    return info, seconds


__all__: List[str] = ["drive_qk", "QK_PROMISE"]
