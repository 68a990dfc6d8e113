"""The doors agree: check()'s Verdict, `ropecheck audit` of the same outputs file, `ropecheck audit` of each form's
plain dump {positions, x, y}, and the C++ plugin door on the same kernel written in C++.

(a) For a kernel right in prefill calls and wrong in decode calls (one ahead), and a correct one: the CLI run
    directly on verdict.dump, with the rerun command's arguments, gives the verdict's pass, exit code and classes;
    each form's y extracted with the probe's positions and x into a plain dump gives that form's pass and classes.
(b) tools/audit/plugins/hf_rope.cpp and yarn_rope.cpp, built as the example plugins of
    tools/audit/plugin_audit.cmake (libropecheck_plugin_<name>.so in $ROPECHECK_PLUGIN_DIR), declare a convention
    (ropecheck_plugin_describe: HF defaults, head_dim 128, base 10000, half-split, 4096 positions; YaRN x4 over
    4096, 16384 positions) and plant one bug each; the Python toy with the same convention and bug, checked
    against the same claim, must be named the same first class (and the class the plugin is known for).
"""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from ropecheck import _safetensors

# The plugins' declared conventions as HF config.json files (foreign_kernel.hpp hf_defaults; yarn_rope.cpp).
HF_PLUGIN = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4, "head_dim": 128,
             "rope_theta": 10000.0, "max_position_embeddings": 4096}
YARN_PLUGIN = dict(HF_PLUGIN, max_position_embeddings=16384,
                   rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                                 "beta_fast": 32.0, "beta_slow": 1.0})

# plugin name -> (Python toy with the same convention and bug, dtype, claim, the class plugin_audit.cmake expects)
PLUGINS = {
    "hf_f32": (lambda k, c: k.hf(c), torch.float32, "hf", None),
    "hf_bf16": (lambda k, c: k.hf(c), torch.bfloat16, "hf", None),
    "bug_base_500000": (lambda k, c: k.hf(c, base=500000.0), torch.float32, "hf", "base_wrong"),
    "bug_bf16_positions": (lambda k, c: k.hf(c, bf16_positions=True), torch.float32, "hf", "positions_low_precision"),
    # hf_rope.cpp BUG_INTERLEAVED_PAIRS rotates pairs (2i, 2i+1) under its half-split declaration.
    "bug_interleaved_pairs": (lambda k, c: k.plain("rope_pairs", base=10000.0, layout_swapped=True), torch.float32,
                              "hf", "layout_swapped"),
    "bug_decode_one_ahead": (lambda k, c: k.hf(c, decode_one_ahead=True), torch.float32, "hf", "positions_offset"),
    "bug_yarn_no_attention_factor": (lambda k, c: k.hf(c, yarn_factor_missing=True), torch.float32, "yarn",
                                     "attention_factor_wrong"),
}


def _run_json(args):
    """Run the CLI with --json - ; returns (exit code, parsed JSON). Exit 2 (bad input) fails with its message."""
    p = subprocess.run([*args, "--json", "-", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), f"{shlex.join(args)} exited {p.returncode}:\n{p.stderr}"
    return p.returncode, json.loads(p.stdout)


def _classes(findings):
    return [f["bug_class"] if isinstance(f, dict) else f.bug_class for f in findings]


def _first_class(data):
    if data["pass"]:
        return None
    return data["findings"][0]["bug_class"] if data["findings"] else "unexplained"


@pytest.fixture(scope="module")
def plugin_configs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugin_claims")
    (d / "hf.json").write_text(json.dumps(HF_PLUGIN))
    (d / "yarn.json").write_text(json.dumps(YARN_PLUGIN))
    return {"hf": str(d / "hf.json"), "yarn": str(d / "yarn.json")}


@pytest.mark.parametrize("kind", ["decode_one_ahead", "correct"])
def test_cli_on_outputs_file_and_form_dumps(ropecheck, kernels, llama_config, ropecheck_bin, tmp_path, kind):
    fn = kernels.hf(llama_config, decode_one_ahead=(kind == "decode_one_ahead"))
    v = ropecheck.check(fn, config=llama_config, dtype=torch.float32)
    assert v.passed == (kind == "correct"), str(v)

    # The rerun command, run as it is printed (it names the program run: $ROPECHECK_BIN, the built CLI).
    words = shlex.split(v.rerun)
    assert words[:2] == [ropecheck_bin, "audit"], v.rerun
    code, direct = _run_json(words)
    assert direct["kind"] == "probe_outputs", f"`{v.rerun}` did not judge an outputs file: kind {direct['kind']!r}"
    assert (direct["pass"], code) == (v.passed, v.exit_code), f"the CLI says pass={direct['pass']} exit {code}:\n{v}"
    assert _classes(direct["findings"]) == _classes(v.findings), \
        f"the CLI's findings differ:\n{direct['findings']}\n{v}"

    # Each form's outputs as a plain dump: the probe's positions and x with that form's y.
    tensors, meta = _safetensors.read(v.dump)
    claim_args = json.loads(meta["claim_args"])
    for form in ("prefill", "decode"):
        dump = tmp_path / f"{form}.safetensors"
        _safetensors.write(dump, {"positions": tensors["positions"], "x": tensors["x"], "y": tensors[f"{form}.y"]})
        code, alone = _run_json([ropecheck_bin, "audit", str(dump), *claim_args])
        expected = v.json["forms"][form]
        assert alone["pass"] == expected["pass"], f"{form} dump: pass={alone['pass']}, in check() {expected['pass']}"
        assert _classes(alone["findings"]) == _classes(expected["findings"]), \
            f"{form} dump: classes {_classes(alone['findings'])}, in check() {_classes(expected['findings'])}"
    if kind == "decode_one_ahead":  # the forms differ, so the comparison above could tell them apart
        assert v.json["forms"]["prefill"]["pass"] and not v.json["forms"]["decode"]["pass"], v.json["forms"]


@pytest.mark.parametrize("plugin", list(PLUGINS))
def test_plugin_door_names_the_same_class(ropecheck, kernels, plugin_configs, ropecheck_bin, plugin):
    folder = os.environ.get("ROPECHECK_PLUGIN_DIR")
    if not folder:
        pytest.skip("ROPECHECK_PLUGIN_DIR is not set (ctest sets it to the example plugins' folder: "
                    "tests/python/python.cmake)")
    lib = Path(folder) / f"libropecheck_plugin_{plugin}.so"
    assert lib.is_file(), f"{lib} is missing: build it (cmake --build build --target ropecheck_plugin_{plugin})"
    build, dtype, claim, expected = PLUGINS[plugin]

    _, door_c = _run_json([ropecheck_bin, "audit", "--plugin", str(lib), "--max-success", "1"])
    v = ropecheck.check(build(kernels, plugin_configs[claim]), config=plugin_configs[claim], dtype=dtype)

    # The same claim on both sides, else the comparison means nothing.
    assert v.json["claimed"]["description"] == door_c["claimed"]["description"], \
        f"claims differ: Python {v.json['claimed']['description']!r}, plugin {door_c['claimed']['description']!r}"
    assert v.first_class == _first_class(door_c), \
        f"{plugin}: the plugin door names {_first_class(door_c)!r} first, check() {v.first_class!r}:\n{v}"
    assert v.first_class == expected, f"{plugin}: both doors name {v.first_class!r}, expected {expected!r}:\n{v}"
