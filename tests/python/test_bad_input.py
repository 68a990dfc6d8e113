"""Bad kernels and bad claims: the package's errors (ropecheck.RopecheckError subclasses), each message naming what
was wrong, raised `from None` from the public entry (no package frame but check/assert_conforms/audit in the
traceback); and a kernel returning NaN, which is not an error but a failing Verdict naming non_finite.

These call the module API (ropecheck.check) directly, so the traceback is the package's own, not the fixture's.
"""

import traceback
from pathlib import Path

import pytest
import torch

import plain_style
import vllm_style
import ropecheck as rc

PACKAGE = Path(rc.__file__).resolve().parent
PUBLIC = {"check", "assert_conforms", "audit"}
F32, BF16 = torch.float32, torch.bfloat16


def _raise_line(fn):
    """The line number of the first `raise` in fn's source (the line a KernelError must point at)."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if line.strip().startswith("raise "))


def assert_clean(excinfo, error, *needles):
    """excinfo holds an `error` (a RopecheckError subclass) whose message contains every needle, raised from None,
    with no traceback frame inside python/ropecheck except the public entry. Returns the message."""
    e = excinfo.value
    assert isinstance(e, rc.RopecheckError), f"{type(e).__name__} is not a ropecheck.RopecheckError"
    assert type(e) is error, f"raised {type(e).__name__}: {e}; expected {error.__name__}"
    msg = str(e)
    for needle in needles:
        assert needle in msg, f"{error.__name__}'s message does not say {needle!r}:\n{msg}"
    assert e.__suppress_context__ and e.__cause__ is None, f"{error.__name__} was not raised `from None`"
    inside = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve().is_relative_to(PACKAGE)]
    assert inside and all(f.name in PUBLIC for f in inside), \
        "frames inside the package besides its public entry: " + ", ".join(f"{f.name} ({f.filename}:{f.lineno})"
                                                                           for f in inside)
    return msg


def _check(fn, config, tmp_path, dtype=F32, **kw):
    return rc.check(rc.adapters.plain(fn), config=config, dtype=dtype, dump_dir=tmp_path, **kw)


def test_wrong_shape(llama_config, tmp_path):
    def half_head(x, positions):
        return plain_style.rope(x, positions)[..., :64]

    with pytest.raises(rc.KernelOutputError) as ei:
        _check(half_head, llama_config, tmp_path)
    assert_clean(ei, rc.KernelOutputError, "shape", "64", "128")


def test_wrong_dtype(llama_config, tmp_path):
    def fp32_out(x, positions):
        return plain_style.rope(x.float(), positions)  # a bf16 x, an fp32 y

    with pytest.raises(rc.KernelOutputError) as ei:
        _check(fp32_out, llama_config, tmp_path, dtype=BF16)
    assert_clean(ei, rc.KernelOutputError, "dtype", "float32", "bfloat16")


def test_not_a_tensor(llama_config, tmp_path):
    def as_list(x, positions):
        return plain_style.rope(x, positions).tolist()

    with pytest.raises(rc.KernelOutputError) as ei:
        _check(as_list, llama_config, tmp_path)
    assert_clean(ei, rc.KernelOutputError, "list", "Tensor")


def test_kernel_raises(llama_config, tmp_path):
    def broken(x, positions):
        if positions.numel() == 1:
            raise ValueError("deliberate fault of a one-token call")
        return plain_style.rope(x, positions)

    with pytest.raises(rc.KernelError) as ei:
        _check(broken, llama_config, tmp_path)
    msg = assert_clean(ei, rc.KernelError, "ValueError", "deliberate fault of a one-token call", "decode")
    where = f"{Path(__file__).name}:{_raise_line(broken)}"
    assert where in msg, f"KernelError does not name the user's line {where}:\n{msg}"


def _cached_rope(rows):
    """A kernel whose cos/sin cache holds positions 0..rows-1 (as vLLM's cos_sin_cache and flash-attn's tables do):
    a position past it is an IndexError from torch's indexing."""
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, 128, 2).float() / 128))
    table = torch.outer(torch.arange(rows).float(), inv_freq)  # [rows, 64] fp32, as plain_style forms the angles
    cos_cache, sin_cache = table.cos(), table.sin()

    def cached(x, positions):
        cos, sin = cos_cache[positions][:, None, :], sin_cache[positions][:, None, :]
        x1, x2 = x[..., :64].float(), x[..., 64:].float()
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)

    return cached


def test_a_cache_too_short_says_how_to_declare_max_position(llama_config, tmp_path):
    with pytest.raises(rc.KernelError) as ei:
        _check(_cached_rope(8192), llama_config, tmp_path)
    assert_clean(ei, rc.KernelError, "IndexError", "max_position=N - 1", "asked up to 8192")
    # Declared, the probe stays within the cache (8191 is its last row: the boundary is asked, 8192 is not) and
    # the verdict's note names what was left out and where the limit came from.
    v = _check(_cached_rope(8192), llama_config, tmp_path / "declared", max_position=8191)
    assert v.passed, str(v)
    assert any("were not asked: past the kernel's max_position 8191" in n and "max_position=" in n for n in v.notes), v.notes
    skipped = v.json.get("positions_not_asked")  # every position left out, whatever the note summarises
    assert skipped and min(skipped) == 8192 and skipped == sorted(skipped), skipped
    # Declared, but the kernel reads past its own table (a decode offset): the hint says so, not "declare it".
    table = _cached_rope(8192)

    def shifted(x, positions):
        return table(x, positions + 4096 if positions.numel() == 1 else positions)  # a decode offset gone wrong

    with pytest.raises(rc.KernelError) as ei:
        _check(shifted, llama_config, tmp_path / "shifted", max_position=8191)
    msg = assert_clean(ei, rc.KernelError, "IndexError", "within the declared max_position 8191", "past its own table")
    assert "max_position=N - 1" not in msg, msg


def test_nan_is_a_failing_verdict(llama_config, tmp_path):
    def nan_out(x, positions):
        y = plain_style.rope(x, positions)
        return y * torch.nan if positions.max() > 60000 else y  # NaN past a position, as kernels break

    v = _check(nan_out, llama_config, tmp_path)
    assert not v.passed and v.exit_code == 1, str(v)
    assert v.first_class == "non_finite", f"NaN outputs named {v.first_class!r} first:\n{v}"
    assert "[non_finite]" in str(v)


def test_x_changed_in_place_under_plain(llama_config, tmp_path):
    def writes_x(x, positions):
        x.copy_(plain_style.rope(x, positions))
        return x.clone()

    with pytest.raises(rc.InputMutatedError) as ei:
        _check(writes_x, llama_config, tmp_path)
    assert_clean(ei, rc.InputMutatedError, "x", "in place", "inplace")


def test_positions_changed_in_place(llama_config, tmp_path):
    def shifts_positions(x, positions):
        positions += 1
        return plain_style.rope(x, positions)

    with pytest.raises(rc.InputMutatedError) as ei:
        _check(shifts_positions, llama_config, tmp_path)
    assert_clean(ei, rc.InputMutatedError, "positions")


def test_no_claim(tmp_path):
    with pytest.raises(rc.ClaimError) as ei:
        rc.check(rc.adapters.plain(plain_style.rope), dtype=F32, dump_dir=tmp_path)
    assert_clean(ei, rc.ClaimError, "config=", "preset=", "claim=")


def test_flags_alone_must_say_base_and_layout(tmp_path):
    # A claim by flags alone assumes no base and no layout: the one missing is named; with both it is judged.
    with pytest.raises(rc.ClaimError) as ei:
        rc.check(rc.adapters.plain(plain_style.rope), dtype=F32, dump_dir=tmp_path, claim={"head_dim": 128, "base": 500000})
    msg = assert_clean(ei, rc.ClaimError, "--layout")
    assert "--base" not in msg.split("must say")[1].split("(or give")[0], msg
    v = rc.check(rc.adapters.plain(plain_style.rope), dtype=F32, dump_dir=tmp_path / "flags",
                 claim={"head_dim": 128, "base": 500000, "layout": "half_split"})
    assert v.passed, str(v)


def test_config_path_missing(tmp_path):
    missing = str(tmp_path / "no_such_dir" / "config.json")
    with pytest.raises(rc.ClaimError) as ei:
        rc.check(rc.adapters.plain(plain_style.rope), config=missing, dtype=F32, dump_dir=tmp_path)
    assert_clean(ei, rc.ClaimError, missing)


def test_binary_not_found(llama_config, tmp_path, monkeypatch):
    nowhere = str(tmp_path / "no" / "ropecheck")
    monkeypatch.setenv("ROPECHECK_BIN", nowhere)
    with pytest.raises(rc.BinaryNotFound) as ei:
        rc.check(rc.adapters.plain(plain_style.rope), config=llama_config, dtype=F32, dump_dir=tmp_path)
    assert_clean(ei, rc.BinaryNotFound, nowhere, "ROPECHECK_BIN")


def test_assert_conforms_raises_assertion_with_the_verdict(llama_config, tmp_path):
    """assert_conforms: a buggy kernel -> AssertionError(str(verdict)) (not a RopecheckError: the kernel ran)."""
    with pytest.raises(AssertionError) as ei:
        rc.assert_conforms(plain_style.make("rope_base_10000", base=10000.0), config=llama_config, dtype=F32,
                           dump_dir=tmp_path)
    assert not isinstance(ei.value, rc.RopecheckError)
    assert "[base_wrong]" in str(ei.value) and "ropecheck audit" in str(ei.value), str(ei.value)


class _ThreeD:
    """A vLLM rotary class whose callers pass [num_tokens, num_heads, head_size] (as DeepSeek's MLA attention does
    for DeepseekScalingRotaryEmbedding) and which keeps its table under another name than cos_sin_cache (as
    Phi3LongRoPEScaledRotaryEmbedding's long_short_cos_sin_cache): the vllm_style toy's rotation, asserting 3-D."""

    def __init__(self, config):
        self.inner = vllm_style.from_config(config, torch.float32)
        self.max_position_embeddings = self.inner.max_position_embeddings
        self.other_cache = self.inner.cos_sin_cache

    def __call__(self, positions, query, key):
        assert query.dim() == 3, f"this class takes [T, H, D], got {list(query.shape)}"
        t, h, d = query.shape
        q, k = self.inner(positions, query.reshape(t, h * d), key.reshape(t, h * d))
        return q.reshape(t, h, d), k.reshape(t, h, d)


def test_vllm_adapter_heads_axis_and_max_position_from_the_attribute(llama_config, tmp_path):
    from conftest import LLAMA

    module = _ThreeD(LLAMA)
    flat = rc.adapters.vllm(module)
    # No cos_sin_cache: the last position is max_position_embeddings - 1 (8191), what the table holds.
    assert flat.ropecheck_max_position == LLAMA["max_position_embeddings"] - 1
    with pytest.raises(rc.KernelError) as ei:  # the class's own assertion on a [T, H*D] query
        rc.check(flat, config=llama_config, dtype=F32, dump_dir=tmp_path / "flat")
    assert_clean(ei, rc.KernelError, "takes [T, H, D]")
    v = rc.check(rc.adapters.vllm(module, heads_axis=True), config=llama_config, dtype=F32, dump_dir=tmp_path / "3d")
    assert v.passed, str(v)


def test_an_adapter_call_the_wrapped_function_does_not_take(llama_config, tmp_path):
    """flash_attn(apply, cos, sin) calls apply(x, cos, sin, interleaved=...): a function without that keyword fails
    in the call itself, before any of its lines runs. The KernelError says so and quotes the adapter's assumption,
    instead of pointing at a line of the package as if the package had failed."""
    import flash_style

    def apply_without_interleaved(x, cos, sin):
        return flash_style.apply_rotary_emb_torch(x, cos, sin)

    cos, sin = flash_style.cos_sin_cache(128, 8192, 500000.0)
    fn = rc.adapters.flash_attn(apply_without_interleaved, cos, sin)
    with pytest.raises(rc.KernelError) as ei:
        rc.check(fn, config=llama_config, dtype=F32, dump_dir=tmp_path)
    assert_clean(ei, rc.KernelError, "TypeError", "interleaved", "before any line of the wrapped code ran",
                 "the adapter 'flash_attn' promises: apply_rotary_emb(x [1, n, H, D]")


def test_vllm_adapter_max_position_of_a_phi3_class_in_short_mode():
    """vLLM's Phi3LongRoPEScaledRotaryEmbedding (phi3_long_rope_scaled_rope.py) picks short or long factors once,
    use_long_rope = max_model_len > original_max_position_embeddings, and in short mode indexes its
    long_short_cos_sin_cache at the positions themselves: rows past original - 1 are the long table's. The adapter's
    last position is original - 1 then, max_position_embeddings - 1 in long mode or without the attribute."""

    class Phi3Like:
        max_position_embeddings, original_max_position_embeddings = 131072, 4096

        def __call__(self, positions, query, key):
            return query, key

    module = Phi3Like()
    assert rc.adapters.vllm(module).ropecheck_max_position == 131071  # no use_long_rope (older vLLM): the whole table
    module.use_long_rope = True
    assert rc.adapters.vllm(module).ropecheck_max_position == 131071
    module.use_long_rope = False
    assert rc.adapters.vllm(module).ropecheck_max_position == 4095



# torch's own names for its dtypes (str(torch.float) is "torch.float32"; "float", "half", "double" are the
# attribute names torch.float, torch.half, torch.double) and the common "bf16": each is the probe's dtype, and the
# kernel gets its tensors in it (issue 34: the aliases were never tested).
@pytest.mark.parametrize("alias, name, torch_dtype", [("float", "float32", torch.float32), ("half", "float16", torch.float16),
                                                      ("double", "float64", torch.float64), ("bf16", "bfloat16", torch.bfloat16)])
def test_dtype_aliases_are_the_probe_dtype(llama_config, tmp_path, alias, name, torch_dtype):
    from ropecheck.check import dtype_name

    assert dtype_name(alias) == name and dtype_name(torch_dtype) == name
    seen = set()

    def fn(x, positions):
        seen.add(x.dtype)
        return plain_style.rope(x, positions)
    v = rc.check(rc.adapters.plain(fn), config=llama_config, dtype=alias, dump_dir=tmp_path)
    assert v.dtype == name and seen == {torch_dtype}, (v.dtype, seen)


@pytest.mark.parametrize("bad", ["fp8", "int8", "float8_e4m3fn", torch.int32])
def test_a_dtype_ropecheck_does_not_check_is_refused_naming_it(llama_config, tmp_path, bad):
    with pytest.raises(rc.RopecheckError, match="ropecheck checks kernels in float32, bfloat16, float16, float64"):
        rc.check(rc.adapters.plain(plain_style.rope), config=llama_config, dtype=bad, dump_dir=tmp_path)
