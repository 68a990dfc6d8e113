"""The package installed as the README and docs/python.md say (`pip install --no-build-isolation`), not from the
source tree: a copy of python/ is installed with `--target` into a temporary folder, and pytest, run in a
subprocess whose sys.path has that folder but not the source tree's python/, gets the `ropecheck` fixture from
the installed entry point (pytest11) without `-p` — and with `-p ropecheck.pytest` or a conftest's pytest_plugins
too, without registering it twice — and a check through it fails a buggy kernel with its class; `ropecheck.capture`
is imported from the installed copy, and a toy model (toys/llama_eager.py) captured at the score with it is judged
passing (weights torch.manual_seed(0), tokens Generator().manual_seed(1)).
Assumes pip (Debian's python3-pip is not required: skipped with the reason when `python3 -m pip` is absent).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
TOYS = Path(__file__).resolve().parent / "toys"

USER_TEST = '''
import sys

import torch

import ropecheck

sys.path.insert(0, {toys!r})
import plain_style


def test_installed_from(ropecheck):
    import ropecheck as package
    assert package.__file__.startswith({target!r}), package.__file__


def test_buggy(ropecheck):
    ropecheck.assert_conforms(plain_style.make("buggy", base=10000.0), config="config.json", dtype=torch.bfloat16)


def test_capture_is_a_module_of_the_installed_copy():
    import ropecheck.capture
    from ropecheck import capture
    assert capture is ropecheck.capture
    assert capture.__file__.startswith({target!r}), capture.__file__
    assert issubclass(capture.CaptureError, ropecheck.RopecheckError)


def test_capture_at_the_score_and_judge_from_the_installed_copy(tmp_path):
    import llama_eager
    from ropecheck.capture import capture_scores
    model = llama_eager.build(torch.bfloat16, seed=0)
    with capture_scores(llama_eager, "apply_rotary_pos_emb", out=tmp_path, model=model, quiet=True) as cap:
        llama_eager.generate(model, prompt=16, steps=1, seed=1)
    assert len(cap.files) == 4
    for f in cap.files:
        v = ropecheck.audit(tmp_path / f["file"], config=tmp_path / "config.json", layer=f["layer"], scores=True)
        assert v.passed, str(v)
'''


def _has_pip() -> bool:
    return subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


@pytest.mark.skipif(not _has_pip(), reason="no pip for this Python (python3 -m pip)")
def test_pip_install_registers_the_plugin(tmp_path):
    from conftest import LLAMA

    source = tmp_path / "src"
    shutil.copytree(REPO / "python", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                          "--quiet", "--target", str(target), str(source)], capture_output=True, text=True)
    assert pip.returncode == 0, f"pip install failed ({pip.returncode}):\n{pip.stdout}\n{pip.stderr}"
    assert (target / "ropecheck" / "check.py").is_file(), sorted(p.name for p in target.iterdir())
    assert (target / "ropecheck" / "capture.py").is_file(), sorted(p.name for p in (target / "ropecheck").iterdir())
    assert any(p.name.startswith("ropecheck-0.1.0") and p.name.endswith(".dist-info") for p in target.iterdir())

    work = tmp_path / "project"
    work.mkdir()
    (work / "config.json").write_text(json.dumps(LLAMA))
    (work / "test_user.py").write_text(USER_TEST.format(toys=str(TOYS), target=str(target)))
    env = dict(os.environ, PYTHONPATH=str(target), PYTHONDONTWRITEBYTECODE="1")
    # The entry point alone, then with the plugin also named (-p, a conftest's pytest_plugins, as docs/python.md
    # says either works): the entry point is named after its module, so pytest does not register it twice.
    for extra, conftest in (([], None), (["-p", "ropecheck.pytest"], None), ([], 'pytest_plugins = ["ropecheck.pytest"]\n')):
        if conftest:
            (work / "conftest.py").write_text(conftest)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_user.py"],
                             cwd=work, env=env, capture_output=True, text=True)
        out = f"(pytest {' '.join(extra)}{', conftest ' + conftest.strip() if conftest else ''})\n" + run.stdout + run.stderr
        assert "fixture 'ropecheck' not found" not in out, f"the installed entry point gave no fixture:\n{out}"
        assert "already registered" not in out, f"the plugin was registered twice:\n{out}"
        assert run.returncode == 1, f"pytest exited {run.returncode}, expected 1 (one failure):\n{out}"
        assert "1 failed, 3 passed" in out, out
        assert "[base_wrong]" in out, f"the failure does not name base_wrong:\n{out}"
