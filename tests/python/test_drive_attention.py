"""The attention driver (python/ropecheck/_drive_attention.py) on an attention probe file built here, without the
`ropecheck` program: the outputs file holds attention.o and attention.o_again in query-entry order, each call gets
its query, keys, values and positions, and a kernel breaking the call's contract is the package's error naming the
call.

The probe is the layout of the attention form (docs/python.md): a call's queries at one position, its keys at contiguous
positions ending there, the first key all zeros, key j's value one-hot e_j in every head (calls of one query and of
several). The kernels whose outputs are compared bitwise compute exactly (float64 sums of small integers over 128).
"""

import json
import os

import numpy as np
import pytest
import torch

import attention_kernels
import plain_style
import ropecheck as rc
from ropecheck import _safetensors as st
from ropecheck._drive import to_numpy, to_torch
from ropecheck._drive_attention import drive_attention

HQ, HK, D, DV = 4, 2, 8, 8
# Each call's query position, its number of keys (at most DV) and of queries (all at that position, sharing the
# keys): dense from 0, then spread to past 2^24.
CALLS = [(0, 1, 1), (1, 2, 1), (5, 4, 2), (63, 8, 1), (4096, 4, 1), (2 ** 24 + 3, 3, 3)]
QUERIES = sum(c[2] for c in CALLS)
SEED = int(os.environ.get("ROPECHECK_TEST_SEED", "31"))
ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64"}


def _values(gen, shape, dtype):
    """k / 128 with k uniform nonzero in [-127, 127]: exact in every probe dtype (as the probe draws them)."""
    k = torch.randint(1, 128, shape, generator=gen) * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
    return (k.double() / 128).to(dtype)


def write_attention_probe(path, dtype, calls=CALLS, value_dim=DV, seed=SEED):
    """An attention probe file at path in dtype (HQ query heads, HK key heads, head_dim D, value_dim); returns its
    tensors as torch (q, k, v, q_positions, k_positions, calls, key_calls)."""
    print(f"attention probe seed {seed}")  # the inputs are random: a failure reruns with ROPECHECK_TEST_SEED=<seed>
    gen = torch.Generator().manual_seed(seed)
    q = _values(gen, (sum(c[2] for c in calls), HQ, D), dtype)
    keys, values, q_pos, k_pos, ends, key_ends = [], [], [], [], [0], [0]
    for p, nk, nq in calls:
        k = _values(gen, (nk, HK, D), dtype)
        k[0] = 0  # the first key of every call is all zeros: its score is 0
        v = torch.zeros((nk, HK, value_dim), dtype=dtype)
        v[torch.arange(nk), :, torch.arange(nk)] = 1  # key j carries e_j in every head
        keys.append(k)
        values.append(v)
        q_pos += [p] * nq
        k_pos += list(range(p - nk + 1, p + 1))
        ends.append(ends[-1] + nq)
        key_ends.append(key_ends[-1] + nk)
    inputs = {"q": q, "k": torch.cat(keys), "v": torch.cat(values), "q_positions": torch.tensor(q_pos),
              "k_positions": torch.tensor(k_pos), "calls": torch.tensor(ends), "key_calls": torch.tensor(key_ends)}
    tensors = {}
    for name, x in inputs.items():
        tensors["attention." + name] = (np.asarray(x.numpy(), np.int64) if x.dtype == torch.int64
                                        else st.Tensor(ST_DTYPES[dtype], to_numpy(x)))
    meta = {"ropecheck_probe": "1", "form": "attention", "dtype": str(dtype).replace("torch.", ""), "seed": str(seed),
            "heads": str(HQ), "kv_heads": str(HK), "head_dim": str(D), "value_dim": str(value_dim),
            "softmax_scale": str(D ** -0.5), "calls": str(len(calls)), "convention": "test",
            "claim_args": json.dumps(["--head-dim", str(D), "--base", "500000", "--layout", "half_split"]),
            "max_position": "0", "notes": "[]", "ropecheck_version": "test", "command": "test_drive_attention.py"}
    st.write(path, tensors, meta)
    return inputs


def _drive(fn, tmp_path, dtype=torch.float64, name="probe", **probe):
    path, outputs = tmp_path / f"{name}.safetensors", tmp_path / f"{name}-outputs.safetensors"
    inputs = write_attention_probe(path, dtype, **probe)
    info, _ = drive_attention(fn, str(path), str(outputs), torch.device("cpu"), kernel="toy", adapter="plain")
    tensors, meta = st.read(outputs)
    return inputs, {n: to_torch(t) for n, t in tensors.items()}, meta, info


def marker(q, k, v, q_positions, k_positions):
    """Exact in float64: o[i, h] = sum_j (j + 1) v[j, h // rep] + q_positions[i] + 1000 h (each call's keys, its
    query's position and the head show where a row came from)."""
    rep = q.shape[1] // k.shape[1]
    weights = torch.arange(1, k.shape[0] + 1, dtype=torch.float64)[:, None, None]
    per_key_head = (v.double() * weights).sum(0)  # [HK, DV]
    o = per_key_head.repeat_interleave(rep, dim=0)[None] + q_positions.double()[:, None, None]
    o = o + 1000 * torch.arange(q.shape[1], dtype=torch.float64)[None, :, None]
    return o.expand(q.shape[0], -1, -1).to(q.dtype).contiguous()


def eager_rope(q, k, v, q_positions, k_positions):
    """A correct attention kernel: plain_style.rope on q and k, then eager attention."""
    return attention_kernels.eager(plain_style.rope(q, q_positions), plain_style.rope(k, k_positions), v)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16],
                         ids=["float64", "float32", "bfloat16", "float16"])
def test_the_outputs_file_holds_the_protocol_s_tensors(tmp_path, dtype):
    inputs, out, meta, info = _drive(eager_rope, tmp_path, dtype)
    probe_names = {"attention." + n for n in inputs}
    assert set(out) == probe_names | {"attention.o", "attention.o_again"}, sorted(set(out) ^ probe_names)
    for name in ("attention.o", "attention.o_again"):
        assert tuple(out[name].shape) == (QUERIES, HQ, DV) and out[name].dtype == dtype, \
            f"{name}: {list(out[name].shape)} {out[name].dtype}, expected {[QUERIES, HQ, DV]} {dtype}"
    for name, x in inputs.items():
        assert torch.equal(out["attention." + name], x), f"the probe's attention.{name} was not carried over"
    assert torch.equal(out["attention.o"], out["attention.o_again"]), "a deterministic kernel's two runs differ"
    assert meta["ropecheck_probe_outputs"] == "1" and meta["kernel"] == "toy" and meta["adapter"] == "plain"
    assert meta["device"] == "cpu" and meta["form"] == "attention" and meta["seed"] == str(SEED), meta
    assert info["forms"] == ["attention"] and info["tokens"] == QUERIES, info
    assert (info["heads"], info["kv_heads"], info["value_dim"]) == (HQ, HK, DV), info


def test_each_call_gets_its_inputs_and_its_row_lands_in_query_order(tmp_path):
    seen = []

    def recording(q, k, v, q_positions, k_positions):
        seen.append(tuple(t.clone() for t in (q, k, v, q_positions, k_positions)))
        return marker(q, k, v, q_positions, k_positions)

    inputs, out, _, _ = _drive(recording, tmp_path)
    n = len(CALLS)
    assert len(seen) == 2 * n + 1, f"{len(seen)} calls: expected each call twice and the first once more"
    for c in range(n):
        qs, qe = int(inputs["calls"][c]), int(inputs["calls"][c + 1])
        ks, ke = int(inputs["key_calls"][c]), int(inputs["key_calls"][c + 1])
        q, k, v, qp, kp = seen[c]
        assert torch.equal(q, inputs["q"][qs:qe]) and torch.equal(qp, inputs["q_positions"][qs:qe]), c
        assert torch.equal(k, inputs["k"][ks:ke]) and torch.equal(v, inputs["v"][ks:ke]), c
        assert torch.equal(kp, inputs["k_positions"][ks:ke]) and int(kp[-1]) == CALLS[c][0], c
        assert torch.equal(seen[n + 1 + c][2], v), f"the second run's call {c} got other values"
    assert torch.equal(seen[n][2], seen[0][2].flip(-1)), "the extra call is the first with v's coordinates reversed"
    expected = torch.cat([marker(*s) for s in seen[:n]])
    assert torch.equal(out["attention.o"], expected), "attention.o is not the calls' outputs in query order"


def test_a_correct_kernel_s_rows_are_its_softmax_weights(tmp_path):
    """What the judge reads: o's row is the call's weights over its keys (summing to 1), zero past them."""
    inputs, out, _, _ = _drive(eager_rope, tmp_path, torch.float32)
    o = out["attention.o"]
    for c, (p, nk, nq) in enumerate(CALLS):
        rows = o[int(inputs["calls"][c]):int(inputs["calls"][c + 1])]
        assert torch.all(rows[..., nk:] == 0), f"call {c}: o is not zero past its {nk} keys"
        assert torch.allclose(rows[..., :nk].sum(-1), torch.ones(nq, HQ), atol=1e-6), f"call {c}: {rows.sum(-1)}"


def _raises(fn, tmp_path, error, *needles, dtype=torch.float64, **probe):
    with pytest.raises(error) as ei:
        _drive(fn, tmp_path, dtype, **probe)
    msg = str(ei.value)
    assert type(ei.value) is error, f"raised {type(ei.value).__name__}: {msg}"
    for needle in needles:
        assert needle in msg, f"{error.__name__}'s message does not say {needle!r}:\n{msg}"
    return msg


def test_o_with_the_softmax_lse_is_told_to_be_wrapped(tmp_path):
    def with_lse(q, k, v, qp, kp):
        return marker(q, k, v, qp, kp), torch.zeros(q.shape[:2])

    _raises(with_lse, tmp_path, rc.KernelOutputError, "attention call 0 of 6: query at position 0, keys at 0 (1)",
            "a tuple of 2 items", "(o, softmax_lse)", "fn(q, k, v, qp, kp)[0]", "does not guess")


def test_none_is_a_kernel_output_error(tmp_path):
    _raises(lambda q, k, v, qp, kp: None, tmp_path, rc.KernelOutputError, "returned NoneType", "out= buffer")


def test_o_of_another_shape_says_the_layout(tmp_path):
    _raises(lambda *a: marker(*a).unsqueeze(0), tmp_path, rc.KernelOutputError,
            "o of shape [1, 1, 4, 8], expected [1, 4, 8]", "[queries, heads, value_dim]", "[batch, seq, heads, dim]")


def test_the_attention_weights_instead_of_o_are_named(tmp_path):
    def weights(q, k, v, qp, kp):
        return torch.full((q.shape[0], q.shape[1], k.shape[0]), 1.0 / k.shape[0], dtype=q.dtype)

    _raises(weights, tmp_path, rc.KernelOutputError, "o of shape [1, 4, 1], expected [1, 4, 8]",
            "the attention weights' shape", "weights @ v")


def test_o_of_another_dtype_is_a_kernel_output_error(tmp_path):
    _raises(lambda *a: marker(*a).float(), tmp_path, rc.KernelOutputError,
            "o of dtype float32, expected float64 (o's dtype)", "o.to(q.dtype)")


def test_o_independent_of_v_is_a_kernel_output_error(tmp_path):
    def ignores_v(q, k, v, qp, kp):
        return marker(q, k, torch.ones_like(v), qp, kp)

    _raises(ignores_v, tmp_path, rc.KernelOutputError, "attention call 0 of 6", "did not change when v did",
            "o must be computed from v", "check_qk() or check()")


@pytest.mark.parametrize("name", ["q", "k", "v", "q_positions", "k_positions"])
def test_an_input_changed_in_place_is_input_mutated_error(tmp_path, name):
    def writes(q, k, v, q_positions, k_positions):
        o = marker(q, k, v, q_positions, k_positions)
        {"q": q, "k": k, "v": v, "q_positions": q_positions, "k_positions": k_positions}[name].add_(1)
        return o

    fix = {"q": "q.clone()", "k": "k.clone()", "v": "v must be left as given", "q_positions": "positions.clone()",
           "k_positions": "positions.clone()"}[name]
    _raises(writes, tmp_path, rc.InputMutatedError, f"changed {name} in place", fix,
            "fn(q, k, v, q_positions, k_positions) returns a new o")


def test_a_kernel_raising_names_the_call_and_the_run(tmp_path):
    def broken(q, k, v, qp, kp):
        if int(qp[0]) == 4096:
            raise ValueError("deliberate fault at 4096")
        return marker(q, k, v, qp, kp)

    _raises(broken, tmp_path, rc.KernelError, "attention call 4 of 6: query at position 4096, keys at 4093..4096 (4)",
            "ValueError", "deliberate fault at 4096", "test_drive_attention.py")
    runs = []

    def broken_second_time(q, k, v, qp, kp):
        runs.append(int(qp[0]))
        if runs.count(int(qp[0])) == 2 and int(qp[0]) == 63:
            raise ValueError("second time")
        return marker(q, k, v, qp, kp)

    _raises(broken_second_time, tmp_path, rc.KernelError, "attention call 3 of 6 (the second run)")
    _raises(lambda q, k, v, qp, kp: None if q.shape[0] == 3 else marker(q, k, v, qp, kp), tmp_path,
            rc.KernelOutputError,
            "attention call 5 of 6: 3 queries at position 16777219, keys at 16777217..16777219 (3)")


def test_a_position_past_the_declared_table_says_max_position(tmp_path):
    table = torch.zeros(100)

    def indexes(q, k, v, qp, kp):
        table[kp]  # a cos/sin cache of 100 rows
        return marker(q, k, v, qp, kp)

    _raises(indexes, tmp_path, rc.KernelError, "IndexError", "check_attention(..., max_position=N - 1)")


def test_a_probe_of_another_form_is_refused(tmp_path):
    probe = tmp_path / "attention.safetensors"
    write_attention_probe(probe, torch.float32)
    from ropecheck._drive import drive
    with pytest.raises(rc.RopecheckError, match="attention form, not of the x form: check_attention\\(\\) drives it"):
        drive(lambda x, p: x, str(probe), str(tmp_path / "o.safetensors"), torch.device("cpu"), kernel="t",
              adapter="plain")
    tensors, meta = st.read(probe)
    meta["form"] = "qk"
    st.write(tmp_path / "qk.safetensors", tensors, meta)
    with pytest.raises(rc.RopecheckError, match="qk form, not of the attention form: check_qk\\(\\) drives it"):
        drive_attention(marker, str(tmp_path / "qk.safetensors"), str(tmp_path / "o.safetensors"),
                        torch.device("cpu"), kernel="t", adapter="plain")


def test_a_call_with_more_keys_than_value_dim_is_refused(tmp_path):
    path = tmp_path / "narrow.safetensors"
    inputs = write_attention_probe(path, torch.float32, calls=[(0, 1, 1), (7, 4, 1)], value_dim=4)
    tensors, meta = st.read(path)
    v = inputs["v"][:, :, :3].contiguous()  # value_dim 3 for a call of 4 keys
    tensors["attention.v"] = st.Tensor("F32", v.numpy())
    st.write(path, tensors, meta)
    with pytest.raises(rc.RopecheckError, match="a call has 4 keys, more than the value_dim 3"):
        drive_attention(marker, str(path), str(tmp_path / "o.safetensors"), torch.device("cpu"), kernel="t",
                        adapter="plain")
