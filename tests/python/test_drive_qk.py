"""The qk driver (python/ropecheck/_drive_qk.py) on a qk probe file built here, without the `ropecheck` program:
the outputs file holds the tensors of the protocol (F.q_out, F.k_out; prefill again, with k_alt, with q_alt) in
probe token order, the kalt and qalt runs really replace one input, and a kernel breaking the call's contract
is the package's error naming the call.

The probe is the layout of the qk form (`ropecheck probe --form qk`): q [T, HQ, D], k [T, HK, D], q_alt, k_alt,
positions [T] and each form's plan (calls, positions, token, keep). Its prefill calls carry added neighbours
(keep 0) at other positions than their token's, so a scatter that kept a neighbour shows. The kernels that must
be matched bitwise compute exactly (float64 sums of small integers over 128), so no arithmetic rounding enters
what is compared.
"""

import json
import os

import numpy as np
import pytest
import torch

import qk_kernels
import ropecheck as rc
from ropecheck import _safetensors as st
from ropecheck._drive import to_numpy
from ropecheck._drive_qk import drive_qk

HQ, HK, D = 4, 2, 8
# The probe tokens' positions: dense from 0, then spread to where fp32 stops holding every integer (2^24 + 3).
POSITIONS = [0, 1, 2, 3, 4, 5, 63, 64, 4095, 4096, 65537, 2 ** 24 + 3]
SEED = int(os.environ.get("ROPECHECK_TEST_SEED", "31"))
ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64"}


def _values(gen, shape, dtype):
    """k / 128 with k uniform nonzero in [-127, 127]: exact in every probe dtype (as the probe draws them)."""
    k = torch.randint(1, 128, shape, generator=gen) * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
    return (k.double() / 128).to(dtype)


def _plans(positions):
    """Prefill: one call of the dense tokens 0..5, then per spread token a call [neighbour at p - 1 (another
    token's row, keep 0), the token (keep 1), neighbour at p + 1 (keep 0)]. Decode: one call per token."""
    tok, pos, keep, calls = [], [], [], [0]
    dense = [i for i, p in enumerate(positions) if p < 6]
    tok += dense
    pos += [positions[i] for i in dense]
    keep += [1] * len(dense)
    calls.append(len(tok))
    for i, p in enumerate(positions):
        if p < 6:
            continue
        other = (i + 1) % len(positions)
        tok += [other, i, other]
        pos += [p - 1, p, p + 1]
        keep += [0, 1, 0]
        calls.append(len(tok))
    prefill = {"calls": calls, "positions": pos, "token": tok, "keep": keep}
    n = len(positions)
    decode = {"calls": list(range(n + 1)), "positions": list(positions), "token": list(range(n)), "keep": [1] * n}
    return {"prefill": prefill, "decode": decode}


def write_qk_probe(path, dtype, seed=SEED):
    """A qk probe file at path in dtype (HQ query heads, HK key heads, head_dim D); returns its tensors as torch."""
    print(f"qk probe seed {seed}")  # the inputs are random: a failure reruns with ROPECHECK_TEST_SEED=<seed>
    gen = torch.Generator().manual_seed(seed)
    t = len(POSITIONS)
    inputs = {"q": _values(gen, (t, HQ, D), dtype), "k": _values(gen, (t, HK, D), dtype),
              "q_alt": _values(gen, (t, HQ, D), dtype), "k_alt": _values(gen, (t, HK, D), dtype)}
    tensors = {"positions": np.array(POSITIONS, np.int64)}
    for name, x in inputs.items():
        tensors[name] = st.Tensor(ST_DTYPES[dtype], to_numpy(x))
    for form, plan in _plans(POSITIONS).items():
        for key, values in plan.items():
            tensors[f"{form}.{key}"] = np.array(values, np.int64)
    meta = {"ropecheck_probe": "1", "form": "qk", "dtype": str(dtype).replace("torch.", ""), "seed": str(seed),
            "heads": str(HQ), "kv_heads": str(HK), "head_dim": str(D), "tokens": str(t), "rows": "1",
            "convention": "test", "claim_args": json.dumps(["--head-dim", str(D), "--base", "500000", "--layout",
                                                            "half_split"]),
            "max_position": "0", "notes": "[]", "ropecheck_version": "test", "command": "test_drive_qk.py"}
    st.write(path, tensors, meta)
    return dict(inputs, positions=torch.tensor(POSITIONS))


def _drive(fn, tmp_path, dtype=torch.float64, name="probe"):
    probe, outputs = tmp_path / f"{name}.safetensors", tmp_path / f"{name}-outputs.safetensors"
    inputs = write_qk_probe(probe, dtype)
    info, _ = drive_qk(fn, str(probe), str(outputs), torch.device("cpu"), kernel="toy", adapter="plain")
    tensors, meta = st.read(outputs)
    from ropecheck._drive import to_torch
    return inputs, {n: to_torch(t) for n, t in tensors.items()}, meta, info


def marker(q, k, positions):
    """Exact in float64: q_out = q + position, k_out = k - position (a row moved or dropped wrongly shows)."""
    p = positions.double()[:, None, None]
    return (q.double() + p).to(q.dtype), (k.double() - p).to(k.dtype)


def leaky(q, k, positions):
    """Exact in float64, each output reading the other input: q_out = q + its key head's k, k_out = k + query head
    g's q (what a crossed kernel does, without the rotation)."""
    n_rep = q.shape[1] // k.shape[1]
    return q + torch.repeat_interleave(k, n_rep, dim=1), k + q[:, : k.shape[1]]


OUTPUTS = {"prefill.q_out", "prefill.k_out", "decode.q_out", "decode.k_out", "prefill.q_out_again",
           "prefill.k_out_again", "prefill.q_out_kalt", "prefill.k_out_qalt"}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16],
                         ids=["float64", "float32", "bfloat16", "float16"])
def test_the_outputs_file_holds_the_protocol_s_tensors(tmp_path, dtype):
    inputs, out, meta, info = _drive(qk_kernels.make_hf_qk(), tmp_path, dtype)
    probe_names = {"positions", "q", "k", "q_alt", "k_alt"} | {f"{f}.{k}" for f in ("prefill", "decode")
                                                               for k in ("calls", "positions", "token", "keep")}
    assert set(out) == probe_names | OUTPUTS, f"tensors {sorted(set(out) ^ (probe_names | OUTPUTS))} differ"
    for name in OUTPUTS:
        like = inputs["q" if ".q_out" in name else "k"]
        assert out[name].shape == like.shape and out[name].dtype == dtype, \
            f"{name}: {list(out[name].shape)} {out[name].dtype}, expected {list(like.shape)} {dtype}"
    for name in ("q", "k", "q_alt", "k_alt"):
        assert torch.equal(out[name], inputs[name]), f"the probe's {name} was not carried over unchanged"
    assert meta["ropecheck_probe_outputs"] == "1" and meta["kernel"] == "toy" and meta["adapter"] == "plain"
    assert meta["device"] == "cpu" and meta["form"] == "qk" and meta["seed"] == str(SEED), meta
    assert info["forms"] == ["prefill", "decode"] and (info["heads"], info["kv_heads"]) == (HQ, HK), info
    # A deterministic kernel that reads only its own input: the three reruns equal the first run bitwise.
    for rerun, first in (("prefill.q_out_again", "prefill.q_out"), ("prefill.k_out_again", "prefill.k_out"),
                         ("prefill.q_out_kalt", "prefill.q_out"), ("prefill.k_out_qalt", "prefill.k_out")):
        assert torch.equal(out[rerun], out[first]), f"{rerun} differs from {first} for a kernel reading its own input"


def test_each_kept_entry_lands_on_its_token_and_neighbours_are_dropped(tmp_path):
    inputs, out, _, _ = _drive(marker, tmp_path)
    p = inputs["positions"].double()[:, None, None]
    for form in ("prefill", "decode"):
        assert torch.equal(out[f"{form}.q_out"], inputs["q"] + p), f"{form}.q_out is not q at each token's position"
        assert torch.equal(out[f"{form}.k_out"], inputs["k"] - p), f"{form}.k_out is not k at each token's position"


def test_the_alt_runs_replace_one_input_and_keep_the_other(tmp_path):
    inputs, out, _, _ = _drive(leaky, tmp_path)
    rep = HQ // HK
    q, k, q_alt, k_alt = inputs["q"], inputs["k"], inputs["q_alt"], inputs["k_alt"]
    assert torch.equal(out["prefill.q_out"], q + torch.repeat_interleave(k, rep, dim=1))
    assert torch.equal(out["prefill.q_out_kalt"], q + torch.repeat_interleave(k_alt, rep, dim=1)), \
        "prefill.q_out_kalt is not q's output with k_alt in place of k"
    assert torch.equal(out["prefill.k_out_qalt"], k + q_alt[:, :HK]), \
        "prefill.k_out_qalt is not k's output with q_alt in place of q"


def test_a_crossed_kernel_moves_in_the_alt_runs(tmp_path):
    _, out, _, _ = _drive(qk_kernels.make_hf_qk(crossed_halves=True), tmp_path, torch.float32)
    assert not torch.equal(out["prefill.q_out_kalt"], out["prefill.q_out"]), "q's outputs did not move with k_alt"
    assert not torch.equal(out["prefill.k_out_qalt"], out["prefill.k_out"]), "k's outputs did not move with q_alt"


def test_an_in_place_qk_kernel_through_inplace_qk(tmp_path):
    """inplace_qk gives the kernel copies: no InputMutatedError, and its outputs are the rotated copies."""
    _, out, _, _ = _drive(rc.adapters.inplace_qk(qk_kernels.hf_qk_), tmp_path, torch.float32, "inplace")
    _, ref, _, _ = _drive(qk_kernels.hf_qk, tmp_path, torch.float32, "returning")
    for name in OUTPUTS:
        assert torch.equal(out[name], ref[name]), f"{name}: in place and returning differ"


def _raises(fn, tmp_path, error, *needles, dtype=torch.float64):
    with pytest.raises(error) as ei:
        _drive(fn, tmp_path, dtype)
    msg = str(ei.value)
    assert type(ei.value) is error, f"raised {type(ei.value).__name__}: {msg}"
    for needle in needles:
        assert needle in msg, f"{error.__name__}'s message does not say {needle!r}:\n{msg}"
    return msg


def test_one_tensor_is_a_kernel_output_error_naming_the_call(tmp_path):
    _raises(lambda q, k, p: marker(q, k, p)[0], tmp_path, rc.KernelOutputError,
            "prefill call 0 of", "6 tokens, positions 0..5", "one tensor", "(q_out [6, 4, 8], k_out [6, 2, 8])",
            "adapters.plain(fn)")


def test_none_and_three_outputs_are_kernel_output_errors(tmp_path):
    _raises(lambda q, k, p: None, tmp_path, rc.KernelOutputError, "returned None", "inplace_qk")
    _raises(lambda q, k, p: (*marker(q, k, p), p), tmp_path, rc.KernelOutputError, "a tuple of 3 items")
    _raises(lambda q, k, p: (marker(q, k, p)[0], None), tmp_path, rc.KernelOutputError, "NoneType as k_out")


def test_outputs_in_the_other_order_are_told_so(tmp_path):
    _raises(lambda q, k, p: marker(q, k, p)[::-1], tmp_path, rc.KernelOutputError,
            "q_out has shape [6, 2, 8], expected [6, 4, 8]", "in the other order")


def test_a_wrong_dtype_is_a_kernel_output_error(tmp_path):
    _raises(lambda q, k, p: (q.float(), k.clone()), tmp_path, rc.KernelOutputError,
            "q_out has dtype float32, expected float64")


@pytest.mark.parametrize("name", ["q", "k"])
def test_an_input_changed_in_place_is_input_mutated_error(tmp_path, name):
    def writes(q, k, positions):
        q_out, k_out = marker(q, k, positions)
        (q if name == "q" else k).mul_(2)
        return q_out, k_out

    _raises(writes, tmp_path, rc.InputMutatedError, f"changed {name} in place", "inplace_qk(fn)",
            "fn(q, k, positions) returns new (q_out, k_out)")


def test_a_kernel_raising_names_the_call_and_the_run(tmp_path):
    def broken_decode(q, k, positions):
        if positions.numel() == 1 and int(positions) == 4096:
            raise ValueError("deliberate fault at 4096")
        return marker(q, k, positions)

    _raises(broken_decode, tmp_path, rc.KernelError, "decode call 9 of 12: 1 token, position 4096", "ValueError",
            "deliberate fault at 4096", "test_drive_qk.py")
    probe_k = {}

    def broken_with_other_keys(q, k, positions):
        first = probe_k.setdefault(int(positions[0]), k.clone())
        if not torch.equal(first, k):
            raise ValueError("these are not the keys of the first run")
        return marker(q, k, positions)

    _raises(broken_with_other_keys, tmp_path, rc.KernelError, "(the run with other keys, k_alt, in place of k)")


def test_a_probe_of_the_other_form_is_refused(tmp_path):
    probe = tmp_path / "qk.safetensors"
    write_qk_probe(probe, torch.float32)
    from ropecheck._drive import drive
    with pytest.raises(rc.RopecheckError, match="qk form, not of the x form: check_qk"):
        drive(lambda x, p: x, str(probe), str(tmp_path / "o.safetensors"), torch.device("cpu"), kernel="t",
              adapter="plain")
    tensors, meta = st.read(probe)
    meta.pop("form")
    st.write(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(rc.RopecheckError, match="x form, not of the qk form: check\\(\\)"):
        drive_qk(marker, str(tmp_path / "x.safetensors"), str(tmp_path / "o.safetensors"), torch.device("cpu"),
                 kernel="t", adapter="plain")
