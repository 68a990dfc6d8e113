"""The pytest plugin as a user meets it: a generated test file using the `ropecheck` fixture exactly as the README
shows, run by pytest in a subprocess with `-p ropecheck.pytest --junitxml`: the correct kernel passes, the buggy
one fails with its class and the rerun command in the message and as JUnit properties, and the cuda case of
ropecheck.pytest.devices() is reported skipped with its reason when there is no CUDA device.
"""

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

TOYS = Path(__file__).resolve().parent / "toys"

USER_TEST = '''
import sys

import pytest
import torch

sys.path.insert(0, {toys!r})
import plain_style  # the user's own kernels, as in tests/python/toys/plain_style.py

from ropecheck.pytest import devices

my_rope = plain_style.make("my_rope")
my_buggy_rope = plain_style.make("my_buggy_rope", base=10000.0)  # rope_theta 10000, the config says 500000


def test_rope(ropecheck):
    ropecheck.assert_conforms(my_rope, config="config.json", dtype=torch.bfloat16)


def test_buggy_rope(ropecheck):
    ropecheck.assert_conforms(my_buggy_rope, config="config.json", dtype=torch.bfloat16)


@pytest.mark.parametrize("device", devices())
def test_rope_on(ropecheck, device):
    ropecheck.assert_conforms(my_rope, config="config.json", dtype=torch.bfloat16, device=device)
'''


def _properties(case):
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_fixture_junit_and_skip(pytester):
    from conftest import LLAMA  # the claim of every toy test (head_dim 128, rope_theta 500000)

    pytester.path.joinpath("config.json").write_text(json.dumps(LLAMA))
    pytester.makepyfile(test_user=USER_TEST.format(toys=str(TOYS)))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("-p", "ropecheck.pytest", "-p", "no:cacheprovider", "-rs",
                                           f"--junitxml={junit}")
    out = result.stdout.str()
    cuda = torch.cuda.is_available()
    outcomes = result.parseoutcomes()
    expected = {"passed": 3 if cuda else 2, "failed": 1}
    if not cuda:
        expected["skipped"] = 1
    got = {k: outcomes.get(k, 0) for k in ("passed", "failed", "skipped")}
    assert got == dict({"skipped": 0}, **expected), f"outcomes {outcomes}, expected {expected}:\n{out}"

    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_rope", "test_buggy_rope", "test_rope_on[cpu]", "test_rope_on[cuda]"}, sorted(cases)

    # The failure: its message has the class and the rerun command; the JUnit properties have the class.
    failure = cases["test_buggy_rope"].find("failure")
    assert failure is not None, ET.tostring(cases["test_buggy_rope"], encoding="unicode")
    message = (failure.get("message") or "") + "\n" + (failure.text or "")
    assert "[base_wrong]" in message, f"the failure message does not name base_wrong:\n{message}"
    # The rerun command names the program run ("ropecheck" when PATH finds it, else its path: $ROPECHECK_BIN here).
    program = "ropecheck" if shutil.which("ropecheck") else os.environ["ROPECHECK_BIN"]
    assert f"rerun the judge: {program} audit " in message, f"the failure message has no rerun command:\n{message}"
    props = _properties(cases["test_buggy_rope"])
    assert props.get("ropecheck_class") == "base_wrong", f"JUnit properties of the failure: {props}"
    assert props.get("ropecheck_pass") == "False", props
    dump = props.get("ropecheck_dump") or ""
    assert dump.endswith("outputs.safetensors") and Path(dump).is_file(), f"ropecheck_dump {dump!r} is not the file"
    assert dump in message, "the rerun command does not judge the recorded dump"

    passed = _properties(cases["test_rope"])
    assert passed.get("ropecheck_pass") == "True" and passed.get("ropecheck_class") == "", passed

    # The cuda parameter: skipped with the reason, in the terminal summary (-rs) and in the JUnit XML.
    if not cuda:
        skipped = cases["test_rope_on[cuda]"].find("skipped")
        assert skipped is not None and "no CUDA device" in (skipped.get("message") or ""), \
            ET.tostring(cases["test_rope_on[cuda]"], encoding="unicode")
        assert "no CUDA device" in out, out


def test_the_fixture_reaches_the_module_it_hides(ropecheck):
    """A test taking the fixture `ropecheck` hides the module of that name: the module's public names (adapters,
    the errors, Verdict) are the fixture's too, so `ropecheck.adapters.hf(...)` and
    `pytest.raises(ropecheck.KernelError)` work inside such a test; any other name is an AttributeError."""
    import pytest

    import ropecheck as module

    own = {"check", "assert_conforms", "check_qk", "assert_qk_conforms", "check_attention", "assert_attention_conforms",
           "audit"}  # the fixture's own: dump_dir
    # under tmp_path, verdicts recorded
    for name in set(module.__all__) - own:
        assert getattr(ropecheck, name) is getattr(module, name), name
    for name in own:
        assert getattr(ropecheck, name).__self__ is ropecheck, f"{name} must stay the fixture's own"
    with pytest.raises(AttributeError, match="no attribute 'pytest_plugin_state'"):
        ropecheck.pytest_plugin_state
    with pytest.raises(AttributeError):
        ropecheck._binary
