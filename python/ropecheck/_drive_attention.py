"""Driving an attention kernel fn(q, k, v, q_positions, k_positions) -> o through the attention probe's calls, and
writing the outputs file `ropecheck audit` reads the scores back from.

The attention probe file (`ropecheck probe --form attention`, layout in docs/python.md and docs/scores.md) holds
queries attention.q [NQ, HQ, D] at attention.q_positions [NQ], keys attention.k [NK, HK, D] at
attention.k_positions [NK] and values attention.v [NK, HK, DV], and the calls: call c is the query entries
attention.calls[c] .. calls[c + 1] - 1 (all at one position) and the key entries attention.key_calls[c] ..
key_calls[c + 1] - 1 (contiguous positions ending at its query's; the first key all zeros; key j of the call
carries the one-hot value e_j, so o's row is the call's softmax weights). Every call is made twice (the judge
compares attention.o and attention.o_again bitwise: `nondeterministic`). The call, its checks, the probe's
reading and the outputs' writing are _drive.py's.

One more call is made and not written: the first call again with v's value coordinates reversed. Its output must
move (an o computed from v moves with it), else the kernel does not compute o from v (it returns the weights, q,
or anything else) and its outputs cannot be read: a KernelOutputError says so.
"""

import time
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

from . import _safetensors as st
from ._drive import (POSITIONS_FIX, _Call, _notes, check_like, check_unchanged, dtype_text, invoke, read_probe,
                     to_numpy, to_torch, write_outputs)
from .errors import KernelOutputError, RopecheckError

FORM = "attention"
ATTENTION_PROMISE = ("fn(q, k, v, q_positions, k_positions) returns a new o [queries, heads, value_dim] in q's dtype, "
                     "softmax(scale q' k'^T) v with RoPE applied inside, and leaves q, k, v and the positions alone")
_LAYOUT = "[queries, heads, value_dim]"
_SHAPE_HINT = ("o is [queries, query heads, value_dim], as q is [queries, query heads, head_dim]; a kernel taking or "
               "returning [batch, seq, heads, dim] (flash-attn) or [batch, heads, seq, dim] (transformers' eager) "
               "needs a reshape in a wrapper, or ropecheck.adapters.eager_attention / flash_attn_kvcache")
_COPIES_FIX = ("a kernel rotating q and k in place before its attention (as vLLM's forward_cuda rotates them) must be "
               "given copies: wrap it, lambda q, k, v, qp, kp: fn(q.clone(), k.clone(), v, qp, kp)")
_V_FIX = "v must be left as given (the one-hot values the scores are read through)"
REVERSED_V_RUN = "the first call again with v's value coordinates reversed"  # (negated when value_dim is 1)


class _AttentionCall(_Call):
    """One attention call, for messages: "attention call 3 of 120: query at position 4096, keys at 4085..4096
    (12)"; `pos` (the query's positions) is what the index hint of _drive.invoke reads."""

    def __init__(self, index: int, total: int, q_pos: torch.Tensor, k_pos: torch.Tensor, run: str = ""):
        super().__init__(FORM, index, total, q_pos, run)
        self.k_pos = k_pos

    def __str__(self) -> str:
        again = f" ({self.run})" if self.run else ""

        def span(p: torch.Tensor) -> str:
            if p.numel() == 0:
                return "none"
            lo, hi = int(p.min()), int(p.max())
            return f"{lo}" if lo == hi else f"{lo}..{hi}"

        nq, nk = self.pos.shape[-1], self.k_pos.shape[-1]
        where = span(self.pos)
        at = f"position{'s' if '..' in where else ''} {where}"
        queries = f"query at {at}" if nq == 1 else f"{nq} queries at {at}"
        return f"{FORM} call {self.index} of {self.total}{again}: {queries}, keys at {span(self.k_pos)} ({nk})"


class _Calls:
    """The probe's calls: (query entries, key entries) of each, checked against the tensors' shapes."""

    def __init__(self, tensors: Dict[str, st.Tensor], probe_path: str):
        def need(name: str) -> np.ndarray:
            if name not in tensors:
                raise RopecheckError(f"{probe_path}: no tensor {name!r} in a probe of the attention form: rewrite it "
                                     "with the same ropecheck's `probe --form attention`")
            return tensors[name].array

        q, k, v = need("attention.q"), need("attention.k"), need("attention.v")
        calls = [int(c) for c in need("attention.calls")]
        key_calls = [int(c) for c in need("attention.key_calls")]
        q_pos, k_pos = need("attention.q_positions"), need("attention.k_positions")
        fault = None
        if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
            fault = f"q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} are not [entries, heads, dim]"
        elif q.shape[2] != k.shape[2] or k.shape[:2] != v.shape[:2] or k.shape[1] < 1 or q.shape[1] % k.shape[1]:
            fault = (f"q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} are not q [NQ, HQ, D], k [NK, HK, D], "
                     "v [NK, HK, DV] with HK dividing HQ")
        elif len({tensors[n].dtype for n in ("attention.q", "attention.k", "attention.v")}) != 1:
            fault = "q, k and v are not of one dtype"
        elif q_pos.shape != (q.shape[0],) or k_pos.shape != (k.shape[0],):
            fault = f"q_positions {list(q_pos.shape)} and k_positions {list(k_pos.shape)} are not [NQ] and [NK]"
        elif (len(calls) != len(key_calls) or not calls or calls[0] != 0 or key_calls[0] != 0
              or calls[-1] != q.shape[0] or key_calls[-1] != k.shape[0]
              or any(b <= a for a, b in zip(calls, calls[1:]))
              or any(b <= a for a, b in zip(key_calls, key_calls[1:]))):
            fault = (f"attention.calls (ending at {calls[-1:]}) and attention.key_calls (ending at {key_calls[-1:]}) "
                     f"do not split the {q.shape[0]} queries and {k.shape[0]} keys into the same number of calls")
        if fault:
            raise RopecheckError(f"{probe_path}: {fault}: rewrite it with the same ropecheck's `probe --form "
                                 "attention`")
        widest = max(b - a for a, b in zip(key_calls, key_calls[1:])) if len(key_calls) > 1 else 0
        if widest > v.shape[2]:
            raise RopecheckError(f"{probe_path}: a call has {widest} keys, more than the value_dim {v.shape[2]} "
                                 "one-hot values can tell apart: rewrite it with the same ropecheck's `probe --form "
                                 "attention`")
        self.calls, self.key_calls = calls, key_calls
        self.queries, self.heads, self.head_dim = (int(n) for n in q.shape)
        self.kv_heads, self.value_dim = int(k.shape[1]), int(v.shape[2])
        self.dtype = tensors["attention.q"].dtype

    @property
    def n_calls(self) -> int:
        return len(self.calls) - 1


def _check_o(o, q: torch.Tensor, value_dim: int, call: _AttentionCall) -> None:
    """o is a tensor [queries, HQ, DV] in q's dtype, else a KernelOutputError saying what came back instead."""
    expected = f"o {[q.shape[0], q.shape[1], value_dim]} {dtype_text(q.dtype)}"
    if isinstance(o, (tuple, list)):
        raise KernelOutputError(
            f"{call}: the attention kernel returned a {type(o).__name__} of {len(o)} items, expected the tensor "
            f"{expected}; a kernel returning (o, softmax_lse) (flash-attn's return_softmax_lse=True) or (attn_output, "
            "attn_weights) (transformers' eager_attention_forward) is wrapped to return o alone, e.g. "
            "lambda q, k, v, qp, kp: fn(q, k, v, qp, kp)[0]: the package does not guess which item is o")
    if not isinstance(o, torch.Tensor):
        hint = " (a kernel writing o into an out= buffer: wrap it to return the buffer)" if o is None else ""
        raise KernelOutputError(f"{call}: the attention kernel returned {type(o).__name__}, expected {expected}{hint}")
    hint = _SHAPE_HINT
    nk = call.k_pos.shape[-1]
    if o.dim() == 3 and o.shape[:2] == q.shape[:2] and o.shape[2] == nk != value_dim:
        hint = ("that is the attention weights' shape [queries, heads, keys]: return o = weights @ v, "
                "[queries, heads, value_dim]")
    check_like(o, ((q.shape[0], q.shape[1], value_dim), q.dtype), call, "the attention kernel returned o of",
               "o's", hint, layout=_LAYOUT, cast="o.to(q.dtype)")


def _call_once(fn: Callable, inputs: Dict[str, torch.Tensor], calls: _Calls, c: int, run: str, declared,
               reverse_v: bool = False) -> torch.Tensor:
    qs, qe = calls.calls[c], calls.calls[c + 1]
    ks, ke = calls.key_calls[c], calls.key_calls[c + 1]
    q, k, v = inputs["q"][qs:qe].clone(), inputs["k"][ks:ke].clone(), inputs["v"][ks:ke].clone()
    if reverse_v:  # another v: its value coordinates reversed (negated when there is only one)
        v = (v.flip(-1) if v.shape[-1] > 1 else -v).contiguous()
    qp, kp = inputs["q_positions"][qs:qe].clone(), inputs["k_positions"][ks:ke].clone()
    before = [t.clone() for t in (q, k, v, qp, kp)]
    call = _AttentionCall(c, calls.n_calls, before[3], before[4], run)
    o = invoke(fn, (q, k, v, qp, kp), call, declared, ATTENTION_PROMISE, "check_attention")
    check_unchanged(fn, call, [("q", q, before[0], _COPIES_FIX), ("k", k, before[1], _COPIES_FIX),
                               ("v", v, before[2], _V_FIX), ("q_positions", qp, before[3], POSITIONS_FIX),
                               ("k_positions", kp, before[4], POSITIONS_FIX)], ATTENTION_PROMISE)
    _check_o(o, q, calls.value_dim, call)
    return o.detach().to(device=inputs["q"].device, copy=True)


def _run_calls(fn: Callable, inputs: Dict[str, torch.Tensor], calls: _Calls, run: str, declared) -> torch.Tensor:
    """Every call in order; their outputs concatenated in query-entry order, [NQ, HQ, DV] on the device."""
    return torch.cat([_call_once(fn, inputs, calls, c, run, declared) for c in range(calls.n_calls)], dim=0)


def _check_o_reads_v(fn: Callable, inputs: Dict[str, torch.Tensor], calls: _Calls, o: torch.Tensor,
                     declared) -> None:
    """The first call made again with v's value coordinates reversed must give another o; an o bitwise unchanged
    is a KernelOutputError: the kernel does not compute o from v."""
    again = _call_once(fn, inputs, calls, 0, REVERSED_V_RUN, declared, reverse_v=True)
    first = o[calls.calls[0]:calls.calls[1]]
    if torch.equal(again, first):
        call = _AttentionCall(0, calls.n_calls, inputs["q_positions"][:calls.calls[1]],
                              inputs["k_positions"][:calls.key_calls[1]])
        raise KernelOutputError(
            f"{call}: the attention kernel's o did not change when v did ({REVERSED_V_RUN}): o must be computed from "
            "v, o = softmax(scale q' k'^T) v, for the scores to be read back from it (v is one-hot per key); a kernel "
            "that returns the attention weights, its queries or anything else but the weighted values cannot be "
            "judged in the attention form (a kernel applying RoPE only: check_qk() or check())")


def drive_attention(fn: Callable, probe_path: str, outputs_path: str, device: torch.device, *, kernel: str,
                    adapter: str) -> Tuple[Dict[str, object], float]:
    """Run the attention kernel fn on every call of the probe, twice, check that its output comes from v (the first
    call again with v reversed), and write the outputs file (attention.o, attention.o_again).

    Assumes the probe file was written by the same ropecheck's `probe --form attention`. Returns ({"forms",
    "tokens" (the queries), "dtype", "calls", "notes", "heads", "kv_heads", "value_dim"}, seconds spent in the
    calls). Raises KernelError, KernelOutputError, InputMutatedError, and RopecheckError for a malformed probe.
    """
    tensors, meta, declared = read_probe(probe_path, FORM)
    calls = _Calls(tensors, probe_path)
    t0 = time.perf_counter()
    inputs = {n: to_torch(tensors["attention." + n]).to(device)
              for n in ("q", "k", "v", "q_positions", "k_positions")}
    outputs: Dict[str, Tuple[str, np.ndarray]] = {}
    with torch.no_grad():
        if calls.n_calls:
            o = _run_calls(fn, inputs, calls, "", declared)
            _check_o_reads_v(fn, inputs, calls, o, declared)
            outputs["attention.o"] = (calls.dtype, to_numpy(o))
            outputs["attention.o_again"] = (calls.dtype, to_numpy(_run_calls(fn, inputs, calls, "the second run",
                                                                             declared)))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    write_outputs(outputs_path, tensors, meta, outputs, kernel=kernel, adapter=adapter, device=device)
    info = {"forms": [FORM] if calls.n_calls else [], "tokens": calls.queries, "dtype": meta.get("dtype", ""),
            "calls": {FORM: calls.n_calls}, "notes": _notes(meta), "heads": calls.heads,
            "kv_heads": calls.kv_heads, "value_dim": calls.value_dim}
    return info, seconds


__all__: List[str] = ["drive_attention", "ATTENTION_PROMISE"]
