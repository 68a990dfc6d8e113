"""Shared fixtures of the Python door's tests (label `python` in ctest; tests/python/python.cmake runs them).

Assumes: /usr/bin/python3 with torch and numpy; the package at python/ropecheck (PYTHONPATH=python, set by ctest;
added here too so `pytest tests/python` works from the source tree); ROPECHECK_BIN naming the built CLI (ctest
sets it; else the package's own lookup: PATH, then build/tools/ropecheck of this checkout).

The toys (tests/python/toys/) are plain torch code in the style of transformers, vLLM, flash-attn and a user's
own function; `kernels` wraps them in ropecheck's adapters so a test reads as a user's test would.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
for p in (HERE / "toys", REPO / "python"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

pytest_plugins = ["ropecheck.pytest", "pytester"]

import flash_style  # noqa: E402  (the toys: after sys.path has their folder)
import hf_style  # noqa: E402
import plain_style  # noqa: E402
import vllm_style  # noqa: E402

import ropecheck  # noqa: E402

# The claim every toy is checked against unless a test says otherwise: a Llama-3-like attention (HF config.json)
# with head_dim 128 and rope_theta 500000; 8192 positions (the vLLM and flash-attn toys' cos/sin tables' rows).
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 4,
         "num_key_value_heads": 4, "head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 8192,
         "rope_scaling": None}
# The same with YaRN x4 over an original 4096 (transformers' rope_type "yarn"; beta_fast 32, beta_slow 1 default).
YARN = dict(LLAMA, max_position_embeddings=16384,
            rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096})


def write_config(folder, config, name="config.json"):
    """Write config (a dict) as folder/name; returns the absolute path as a str."""
    path = Path(folder) / name
    path.write_text(json.dumps(config, indent=2) + "\n")
    return str(path.resolve())


@pytest.fixture(scope="module")
def llama_config(tmp_path_factory):
    """config.json of LLAMA, one per test module."""
    return write_config(tmp_path_factory.mktemp("llama"), LLAMA)


@pytest.fixture(scope="module")
def yarn_config(tmp_path_factory):
    """config.json of YARN, one per test module."""
    return write_config(tmp_path_factory.mktemp("yarn"), YARN)


@pytest.fixture(scope="session")
def ropecheck_bin():
    """The CLI the package drives: $ROPECHECK_BIN, else the package's lookup (which raises BinaryNotFound)."""
    from ropecheck import _binary
    return _binary.find_binary()


def _config_dict(config):
    if isinstance(config, dict):
        return config
    return json.loads(Path(config).read_text())


def hf_kernel(config, device="cpu", unsqueeze_dim=1, **bugs):
    """transformers' convention: hf_style.RotaryEmbedding(config, **bugs) + apply_rotary_pos_emb, by adapters.hf."""
    rotary = hf_style.RotaryEmbedding(_config_dict(config), device=device, **bugs)
    return ropecheck.adapters.hf(rotary, hf_style.apply_rotary_pos_emb, unsqueeze_dim=unsqueeze_dim)


def vllm_kernel(config, dtype, device="cpu", **bugs):
    """vLLM's convention: vllm_style.from_config(config, dtype, **bugs) (its cos_sin_cache in the model dtype)."""
    rotary = vllm_style.from_config(_config_dict(config), dtype, **bugs).to(device)
    return ropecheck.adapters.vllm(rotary)


def flash_kernel(config, dtype, device="cpu", interleaved=False, apply=None, **bugs):
    """flash-attn's convention: apply_rotary_emb (or `apply`, e.g. flash_style.apply_rotary_emb_torch, the pure-torch
    reference whose signature is (x, cos, sin, interleaved)) with the caller's (cos, sin) of every position the
    config allows."""
    c = _config_dict(config)
    cos, sin = flash_style.cos_sin_cache(c["head_dim"], c["max_position_embeddings"], c["rope_theta"], device=device,
                                         dtype=dtype, **bugs)
    return ropecheck.adapters.flash_attn(apply or flash_style.apply_rotary_emb, cos, sin, interleaved=interleaved)


def plain_kernel(name="rope", **switches):
    """A user's own rope(x, positions) (plain_style.rope with the switches) behind adapters.plain."""
    return ropecheck.adapters.plain(plain_style.make(name, **switches))


def inplace_kernel(name="rope_", **switches):
    """The same kernel rotating x in place and returning None, behind adapters.inplace."""
    return ropecheck.adapters.inplace(plain_style.make(name, inplace=True, **switches))


@pytest.fixture(scope="session")
def kernels():
    """The toy kernels wrapped in their adapters: kernels.hf(config, **bugs), .vllm(config, dtype, **bugs),
    .flash(config, dtype, interleaved=..., **bugs), .plain(**switches), .inplace(**switches)."""
    return SimpleNamespace(hf=hf_kernel, vllm=vllm_kernel, flash=flash_kernel, plain=plain_kernel,
                           inplace=inplace_kernel)
