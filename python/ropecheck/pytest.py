"""pytest plugin of ropecheck: the `ropecheck` fixture and the `devices()` / `dtypes()` parameter helpers.

Register it with `pytest -p ropecheck.pytest`, `pytest_plugins = ["ropecheck.pytest"]` in a conftest.py, or by
installing the package (entry point pytest11). In a test:

    @pytest.mark.parametrize("device", ropecheck.pytest.devices())
    @pytest.mark.parametrize("dtype", ropecheck.pytest.dtypes())
    def test_my_rope(ropecheck, device, dtype):
        ropecheck.assert_conforms(my_rope, "config.json", dtype=dtype, device=device)

The fixture's check / assert_conforms / check_qk / assert_qk_conforms / check_attention / assert_attention_conforms /
audit put their files under the test's tmp_path and record the verdict as JUnit properties (`pytest --junitxml`):
ropecheck_pass, ropecheck_class (the first finding's bug class of a failure, else ""), ropecheck_dump (the judged file);
a check that raises records ropecheck_error instead.
"""

import pytest

import ropecheck as _rc


class RopecheckFixture:
    """What the `ropecheck` fixture gives a test: check, assert_conforms, check_qk, assert_qk_conforms, check_attention,
    assert_attention_conforms and audit with dump_dir defaulting to a new directory under the test's tmp_path, recording
    each verdict as a property of the test item (what record_property records)."""

    def __init__(self, tmp_path, record_property):
        self._tmp_path = tmp_path
        self._record_property = record_property
        self._count = 0
        self.verdicts = []

    def _dump_dir(self, kwargs):
        if kwargs.get("dump_dir") is None:
            self._count += 1
            kwargs["dump_dir"] = self._tmp_path / ("ropecheck" if self._count == 1 else f"ropecheck-{self._count}")
        return kwargs

    def _record(self, v):
        self.verdicts.append(v)
        self._record_property("ropecheck_pass", v.passed)
        self._record_property("ropecheck_class", v.first_class or "")
        self._record_property("ropecheck_dump", v.dump or "")
        return v

    def _run(self, door, *args, **kwargs):
        __tracebackhide__ = True
        try:
            v = door(*args, **self._dump_dir(kwargs))
        except _rc.RopecheckError as e:
            self._record_property("ropecheck_pass", False)
            self._record_property("ropecheck_error", f"{type(e).__name__}: {str(e).splitlines()[0]}")
            raise e.with_traceback(None) from None
        return self._record(v)

    def check(self, fn, config=None, **kwargs):
        """ropecheck.check(fn, config, **kwargs) with dump_dir under tmp_path; records and returns the Verdict."""
        __tracebackhide__ = True
        return self._run(_rc.check, fn, config, **kwargs)

    def assert_conforms(self, fn, config=None, **kwargs):
        """check(); raises AssertionError(str(verdict)) when it does not pass (the verdict is recorded first)."""
        __tracebackhide__ = True
        v = self.check(fn, config, **kwargs)
        if not v.passed:
            raise AssertionError(str(v))
        return v

    def check_qk(self, fn, config=None, **kwargs):
        """ropecheck.check_qk(fn, config, **kwargs) (queries and keys, fn(q, k, positions) -> (q_out, k_out)) with
        dump_dir under tmp_path; records and returns the Verdict."""
        __tracebackhide__ = True
        return self._run(_rc.check_qk, fn, config, **kwargs)

    def assert_qk_conforms(self, fn, config=None, **kwargs):
        """check_qk(); raises AssertionError(str(verdict)) when it does not pass (the verdict is recorded first)."""
        __tracebackhide__ = True
        v = self.check_qk(fn, config, **kwargs)
        if not v.passed:
            raise AssertionError(str(v))
        return v

    def check_attention(self, fn, config=None, **kwargs):
        """ropecheck.check_attention(fn, config, **kwargs) (RoPE inside attention, fn(q, k, v, q_positions,
        k_positions) -> o) with dump_dir under tmp_path; records and returns the Verdict."""
        __tracebackhide__ = True
        return self._run(_rc.check_attention, fn, config, **kwargs)

    def assert_attention_conforms(self, fn, config=None, **kwargs):
        """check_attention(); raises AssertionError(str(verdict)) when it does not pass (the verdict is recorded
        first)."""
        __tracebackhide__ = True
        v = self.check_attention(fn, config, **kwargs)
        if not v.passed:
            raise AssertionError(str(v))
        return v

    def __getattr__(self, name):
        """The module's other names (adapters, the errors, Verdict, ...): a test taking the fixture `ropecheck`
        hides the module of that name, so `ropecheck.adapters.hf(...)` and `pytest.raises(ropecheck.KernelError)`
        reach the module through the fixture. Only names the module has; the rest raise AttributeError."""
        if name not in _rc.__all__:
            raise AttributeError(f"the ropecheck fixture has no attribute {name!r} (it gives check, assert_conforms, "
                                 f"check_qk, assert_qk_conforms, check_attention, assert_attention_conforms, audit, "
                                 f"verdicts and the module's "
                                 f"{', '.join(sorted(_rc.__all__))})")
        return getattr(_rc, name)

    def audit(self, path, **claim):
        """ropecheck.audit(path, **claim) with dump_dir under tmp_path; records and returns the Verdict."""
        __tracebackhide__ = True
        return self._run(_rc.audit, path, **claim)


@pytest.fixture
def ropecheck(tmp_path, request):
    """The ropecheck door for this test: .check(), .assert_conforms(), .check_qk(), .assert_qk_conforms(),
    .check_attention(), .assert_attention_conforms(), .audit() (see RopecheckFixture)."""

    # What pytest's record_property fixture does (appending to the item's user_properties), without its
    # warning under junit_family xunit2, pytest 7's default: the properties are written in every family.
    def record(name, value):
        request.node.user_properties.append((name, value))

    return RopecheckFixture(tmp_path, record)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def devices():
    """pytest parameters for the device: "cpu", and "cuda" skipped when there is no CUDA device."""
    return ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not _cuda_available(), reason="no CUDA device"))]


def dtypes():
    """pytest parameters for the dtype: torch.float32 and torch.bfloat16, with ids "float32" and "bfloat16"."""
    import torch

    return [pytest.param(torch.float32, id="float32"), pytest.param(torch.bfloat16, id="bfloat16")]


__all__ = ["ropecheck", "devices", "dtypes", "RopecheckFixture"]
