"""Driving a qk kernel fn(q, k, positions) -> (q_out, k_out) through the qk probe's call plan, and writing the
outputs file `ropecheck audit` judges as queries and keys together.

The qk probe file (`ropecheck probe --form qk`, layout in docs/python.md) holds the queries q [T, HQ, D], the keys
k [T, HK, D] (HK divides HQ: grouped-query attention), other queries q_alt and keys k_alt of the same shapes, and
the x form's plans (`F.calls`, `F.positions`, `F.token`, `F.keep`). Each call gives the kernel the rows of q and k
of its entries. Both forms run once; prefill runs three more times: again (compared bitwise: `nondeterministic`),
with k_alt in place of k (q's outputs must not move) and with q_alt in place of q (k's outputs must not move):
what moves is `qk_crossed`, one tensor's outputs computed from the other's inputs. The call, its checks and the
scatter to probe token order are _drive.py's.

The KV cache is part of the probe (docs/python.md, "The KV cache"):
- A kernel with its own cache (`ropecheck_cache`: reset() and read_keys(positions)) has its keys read back from
  the cache, not taken from its return: a prefill call's right after it (the cache emptied before each prefill
  call), the decode calls' after the last of them (emptied once before the first), so a decode key is the one an
  earlier call wrote, read after every later call has run.
- A context shift (check_qk's kv_shift): the prefill keys of the tokens after an evicted span are handed to the
  engine's K-shift with their positions and delta = -(the span's length), and the keys it returns are judged at
  the renumbered positions (shift.token, shift.positions, shift.k_out, __metadata__ shift_delta).
"""

import json
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from ._drive import (FORMS, POSITIONS_FIX, _Call, _Plan, check_like, check_unchanged, dtype_text, invoke,
                     read_probe, run_info, scatter, to_numpy, to_torch, write_outputs)
from .errors import ClaimError, InputMutatedError, KernelOutputError, RopecheckError

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


def _pair(out, qin: torch.Tensor, kin: torch.Tensor, call: _Call,
          cached: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(q_out, k_out) of what the kernel returned: a tuple or list of two tensors of q's and k's shapes and dtypes,
    else a KernelOutputError saying what came back instead. With a cache (`cached`), k_out may be None (the keys
    are read back from the cache)."""
    expected = (f"a pair (q_out {list(qin.shape)}, k_out {list(kin.shape)}) of {dtype_text(qin.dtype)} tensors")
    if cached and isinstance(out, (tuple, list)) and len(out) == 2 and out[1] is None:
        out = (out[0], kin)  # the keys the judge reads come from the cache; q_out is checked as ever
        none_k = True
    else:
        none_k = False
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
    return out[0], (None if none_k else out[1])


def _call_once(fn: Callable, q_dev: torch.Tensor, k_dev: torch.Tensor, plan: _Plan, c: int,
               run: str, cached: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
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
    q_out, k_out = _pair(out, qin, kin, call, cached)
    return (q_out.detach().to(device=q_dev.device, copy=True),
            None if k_out is None else k_out.detach().to(device=k_dev.device, copy=True))


CACHE_PROMISE = ("fn(q, k, positions) returns (q_out, k_out or None) and writes its rotated keys into its cache; "
                 "ropecheck_cache.reset() empties the cache and ropecheck_cache.read_keys(positions) returns the keys "
                 "it holds at those positions, [n, kv_heads, head_dim] in k's dtype")
_READ = "reading its keys back from the cache"


def _cache_step(cache, method: str, args: Tuple, call: _Call):
    """cache.<method>(*args) as invoke() calls a kernel (its exception a KernelError naming the call)."""
    return invoke(getattr(cache, method), args, call, None, CACHE_PROMISE, "check_qk")


def _read_keys(cache, k_dev: torch.Tensor, plan: _Plan, c: int, run: str) -> torch.Tensor:
    """The keys the cache holds at call c's positions (every entry of the call, neighbours too), checked to be
    [entries, HK, D] in k's dtype, else a KernelOutputError naming the call."""
    s, e = plan.calls[c], plan.calls[c + 1]
    pos = plan.positions[..., s:e].clone()
    call = _Call(plan.form, c, plan.n_calls, pos.clone(), f"{run}, {_READ}" if run else _READ)
    got = _cache_step(cache, "read_keys", (pos,), call)
    like = (torch.Size([e - s, *k_dev.shape[1:]]), k_dev.dtype)
    if not isinstance(got, torch.Tensor):
        raise KernelOutputError(f"{call}: ropecheck_cache.read_keys(positions) returned {type(got).__name__}, expected "
                                f"the keys it holds, a torch.Tensor {list(like[0])} {dtype_text(like[1])}")
    check_like(got, like, call, "ropecheck_cache.read_keys(positions) returned", "the keys'",
               "one row a position asked, in the order asked, [n, kv_heads, head_dim] as k", cast="k.to(k's dtype)")
    return got.detach().to(device=k_dev.device, copy=True)


def _distinct_decode_positions(plan: _Plan) -> None:
    """A cache keyed by position holds one key a position: the decode plan's positions must be distinct."""
    cols = plan.positions.reshape(-1, plan.positions.shape[-1]).T
    if torch.unique(cols, dim=0).shape[0] != cols.shape[0]:
        raise RopecheckError("the probe's decode plan repeats a position, which a cache read back by position cannot "
                             "tell apart: rewrite the probe with the same ropecheck's `probe`")


def _run_plan(fn: Callable, q_dev: torch.Tensor, k_dev: torch.Tensor, plan: _Plan,
              run: str, cache=None) -> Dict[str, torch.Tensor]:
    """All calls of a plan; returns {"q": q_out [T, HQ, D], "k": k_out [T, HK, D]} in probe token order.

    With a cache (an object with reset() and read_keys(positions)), k_out is what the cache holds: a prefill
    call's keys read right after it (the cache emptied before each prefill call, each call its own sequence), the
    decode calls' after the last of them (emptied once before the first: every key was written by an earlier call
    and is read after the later calls have run)."""
    if cache is None:
        outs = [_call_once(fn, q_dev, k_dev, plan, c, run) for c in range(plan.n_calls)]
        return {"q": scatter([o[0] for o in outs], q_dev, plan), "k": scatter([o[1] for o in outs], k_dev, plan)}
    decode = plan.form == "decode"
    if decode:
        _distinct_decode_positions(plan)
    q_outs, k_outs = [], []
    for c in range(plan.n_calls):
        if c == 0 or not decode:
            s, e = plan.calls[c], plan.calls[c + 1]
            what = "emptying its cache before the call" + ("s" if decode else "")
            _cache_step(cache, "reset", (), _Call(plan.form, c, plan.n_calls, plan.positions[..., s:e].clone(),
                                                  f"{run}, {what}" if run else what))
        q_outs.append(_call_once(fn, q_dev, k_dev, plan, c, run, cached=True)[0])
        if not decode:
            k_outs.append(_read_keys(cache, k_dev, plan, c, run))
    if decode:
        k_outs = [_read_keys(cache, k_dev, plan, c, run) for c in range(plan.n_calls)]
    return {"q": scatter(q_outs, q_dev, plan), "k": scatter(k_outs, k_dev, plan)}


# The context shift the driver asks of kv_shift (llama.cpp's context shift and transformers' SinkCache are one
# operation: keep the first KEEP positions, evict the next DISCARD, renumber every later key by -DISCARD).
# llama.cpp: its main example's context shift (llama.cpp/tools/main/main.cpp, "context full, swapping") calls
# llama_memory_seq_rm(n_keep, n_keep + n_discard) then llama_memory_seq_add(n_keep + n_discard, n_past, -n_discard),
# n_discard = (n_past - n_keep) / 2; src/llama-kv-cache.cpp build_rope_shift then
# re-rotates each cached K by its cell's shift with ggml_rope_ext. transformers' src/transformers/cache_utils.py
# SinkCache keeps num_sink_tokens, drops the oldest of the window and re-rotates the kept keys back by the number
# dropped (_get_rerotation_cos_sin: cos/sin of the difference of the old and new angles).
SHIFT_KEEP, SHIFT_DISCARD = 4, 32
SHIFT_PROMISE = ("kv_shift(k_cached, positions, delta) returns the cached keys k_cached [n, kv_heads, head_dim] "
                 "(rotated at positions) re-rotated to positions + delta, in k_cached's dtype, and leaves positions "
                 "alone")


class _ShiftCall:
    """The context of the kv_shift call, for messages (the `call` of invoke())."""

    def __init__(self, pos: torch.Tensor, delta: int):
        self.pos, self.delta = pos, delta

    def __str__(self) -> str:
        lo, hi = int(self.pos.min()), int(self.pos.max())
        return (f"the context shift kv_shift(k_cached, positions, delta={self.delta}) of {self.pos.shape[-1]} cached "
                f"keys, positions {lo}..{hi} (the first {SHIFT_KEEP} kept, the next {SHIFT_DISCARD} evicted)")


def _per_call_rule(meta: Dict[str, str]) -> bool:
    """The probe's claim recomputes its frequencies for each call's length (transformers' reading of dynamic NTK or
    LongRoPE: its convention says the scaling, and its claim_args do not say --engine vllm, which reads either
    once per engine)."""
    convention = meta.get("convention", "")
    if "scaling dynamic" not in convention and "scaling longrope" not in convention:
        return False
    try:
        args = json.loads(meta.get("claim_args", "[]"))
    except ValueError:
        args = []
    return not any(a == "--engine" and b == "vllm" for a, b in zip(args, args[1:]))


def shift_tokens(positions: np.ndarray) -> Tuple[np.ndarray, int]:
    """(the probe tokens the context shift renumbers, delta): the tokens at positions from SHIFT_KEEP +
    SHIFT_DISCARD on (the kept tail), delta = -SHIFT_DISCARD. positions: the probe's token positions [T]."""
    return np.nonzero(positions >= SHIFT_KEEP + SHIFT_DISCARD)[0].astype(np.int64), -SHIFT_DISCARD


def run_shift(kv_shift: Callable, k_out: torch.Tensor,
              positions: np.ndarray) -> Tuple[Dict[str, Tuple[str, np.ndarray]], int]:
    """The engine's K-shift on the kernel's prefill keys k_out [T, HK, D] (probe token order) of the kept tail;
    returns (the outputs shift.token, shift.positions (renumbered) and shift.k_out ([n, HK, D] as kv_shift returned
    them, in the safetensors dtype of k_out), delta). Raises KernelError, KernelOutputError (None, not a tensor, another
    shape or dtype), InputMutatedError (positions changed)."""
    tokens, delta = shift_tokens(positions)
    if tokens.size == 0:
        raise RopecheckError(f"the probe has no token at a position from {SHIFT_KEEP + SHIFT_DISCARD} on, which the "
                             "context shift renumbers: rewrite it with the same ropecheck's `probe`")
    index = torch.from_numpy(tokens).to(k_out.device)
    k_cached = k_out.index_select(0, index).contiguous()
    like = (k_cached.shape, k_cached.dtype)
    pos = torch.from_numpy(positions[tokens].astype(np.int64)).to(k_out.device)
    pos_before = pos.clone()
    call = _ShiftCall(pos_before, delta)
    got = invoke(kv_shift, (k_cached, pos, delta), call, None, SHIFT_PROMISE, "check_qk")
    if not torch.equal(pos, pos_before):
        raise InputMutatedError(f"{call}: kv_shift changed positions in place; {POSITIONS_FIX}")
    if not isinstance(got, torch.Tensor):
        hint = " (a shift done in place returns k_cached)" if got is None else ""
        raise KernelOutputError(f"{call}: kv_shift returned {type(got).__name__}, expected the shifted keys, a "
                                f"torch.Tensor {list(like[0])} {dtype_text(like[1])}{hint}")
    check_like(got, like, call, "kv_shift returned", "k_cached's",
               "one row a cached key, in the order given, [n, kv_heads, head_dim]", cast="k_shifted.to(k_cached.dtype)")
    dtype = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64"}[like[1]]
    return {"shift.token": ("I64", tokens),
            "shift.positions": ("I64", positions[tokens].astype(np.int64) + delta),
            "shift.k_out": (dtype, to_numpy(got))}, delta


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
             adapter: str, cache=None, kv_shift: Optional[Callable] = None) -> Tuple[Dict[str, object], float]:
    """Run the qk kernel fn on every call of both forms (prefill four times: as planned, again, with k_alt, with
    q_alt) and write the outputs file (F.q_out, F.k_out; prefill.q_out_again, prefill.k_out_again,
    prefill.q_out_kalt, prefill.k_out_qalt). With `cache` (the kernel's ropecheck_cache) the keys are read back from
    it (_run_plan); with `kv_shift` the kept tail's prefill keys are shifted (run_shift: shift.*, shift_delta).

    Assumes the probe file was written by the same ropecheck's `probe --form qk`. Returns ({"forms", "tokens",
    "dtype", "calls", "notes", "heads", "kv_heads"}, seconds spent in the calls). Raises KernelError,
    KernelOutputError, InputMutatedError, ClaimError (kv_shift with more than one row of positions, or under a
    rule recomputed per call's length).
    """
    tensors, meta, declared = read_probe(probe_path, "qk")
    tokens, heads, kv_heads = _shapes(tensors, probe_path)
    dtype = tensors["q"].dtype
    t0 = time.perf_counter()
    inputs = {n: to_torch(tensors[n]).to(device) for n in ("q", "k", "q_alt", "k_alt")}
    positions = tensors["positions"].array
    if kv_shift is not None and positions.ndim != 1 and positions.shape[0] != 1:
        raise ClaimError(f"kv_shift: the claim's probe has {positions.shape[0]} rows of positions (M-RoPE); the "
                         "context shift is judged on one row of positions only: check it without kv_shift")
    positions = positions.reshape(-1)[:tokens]
    if kv_shift is not None and _per_call_rule(meta):
        raise ClaimError("kv_shift: the claim's frequencies depend on each call's length (dynamic NTK's base, LongRoPE's "
                         "short or long factors, recomputed per call as transformers' dynamic_rope_update does): the "
                         "cached keys of calls of different lengths carry different frequencies, and no one rule "
                         "re-rotates them all, so the shift would be judged against a guess; check the context shift "
                         "under a claim with fixed frequencies (claim={'engine': 'vllm'} reads both rules once per "
                         "engine) or without kv_shift")
    plans = [_Plan(f, tensors, tokens, device, declared) for f in FORMS]
    outputs: Dict[str, Tuple[str, np.ndarray]] = {}
    notes: List[str] = []
    with torch.no_grad():
        for plan in plans:
            if plan.n_calls == 0:
                continue
            first = _run_plan(fn, inputs["q"], inputs["k"], plan, "", cache)
            outputs[plan.form + ".q_out"] = (dtype, to_numpy(first["q"]))
            outputs[plan.form + ".k_out"] = (dtype, to_numpy(first["k"]))
            if plan.form != "prefill":
                continue
            if kv_shift is not None:
                shifted, delta = run_shift(kv_shift, first["k"], positions)
                outputs.update(shifted)
                meta = dict(meta, shift_delta=str(delta))
                notes.append(f"context shift: the prefill keys of the {shifted['shift.token'][1].size} tokens at "
                             f"positions from {SHIFT_KEEP + SHIFT_DISCARD} on were re-rotated by kv_shift with delta "
                             f"{delta} (positions {SHIFT_KEEP}..{SHIFT_KEEP + SHIFT_DISCARD - 1} evicted) and judged "
                             "at their renumbered positions")
            for run, q_alt, k_alt, kept in PREFILL_RERUNS:
                got = _run_plan(fn, inputs["q_alt" if q_alt else "q"], inputs["k_alt" if k_alt else "k"], plan, run,
                                cache)
                for name, side in kept.items():
                    outputs[name] = (dtype, to_numpy(got[side]))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    write_outputs(outputs_path, tensors, meta, outputs, kernel=kernel, adapter=adapter, device=device)
    info = run_info(plans, tokens, meta)
    info.update(heads=heads, kv_heads=kv_heads)
    if cache is not None:
        notes.append("keys read back from the kernel's cache (ropecheck_cache.read_keys): a prefill call's after "
                     "it, the decode calls' after the last of them")
        if "scaling dynamic" in meta.get("convention", ""):
            notes.append("dynamic NTK with a cache: each cached key is judged at the base of the call that wrote it "
                         "(transformers' dynamic_rope_update with a DynamicCache: a key is not re-rotated when a "
                         "later, longer call raises the base); a key cached under another base is "
                         "key_convention_wrong")
    if kv_shift is not None:
        info["forms"] = list(info["forms"]) + ["shift"]
    info["notes"] = list(info.get("notes", [])) + notes
    return info, seconds


__all__: List[str] = ["drive_qk", "run_shift", "shift_tokens", "QK_PROMISE", "CACHE_PROMISE", "SHIFT_PROMISE"]
