#!/usr/bin/python3
"""Unit tests of ropecheck.capture (python/ropecheck/capture.py; unittest, stdlib + torch + numpy), and of the
shim tools/dump/ropecheck_capture.py that re-exports it:
  /usr/bin/python3 tests/torch/capture/test_capture.py -v
The toys are deterministic (torch.manual_seed(0) weights, generator seed 1 inputs; printed)."""

import json
import os
import struct
import sys
import tempfile
import types
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # the package: ropecheck.capture

import toy_hf  # noqa: E402
import toy_vllm  # noqa: E402
from ropecheck.capture import CaptureError, ropecheck_capture  # noqa: E402

NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "F64": np.float64}


def read_safetensors(path):
    """{name: torch tensor} and the metadata of a safetensors file (written by the capture)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, d in header.items():
        a, b = d["data_offsets"]
        buf = raw[8 + n + a:8 + n + b]
        if d["dtype"] == "BF16":
            t = torch.from_numpy(np.frombuffer(buf, dtype="<i2").copy()).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.frombuffer(buf, dtype=np.dtype(NP[d["dtype"]]).newbyteorder("<")).copy())
        out[name] = t.reshape(d["shape"])
    return out, meta


def small_hf(dtype=torch.float32, bug="none", unsqueeze_dim=1):
    return toy_hf.build(dtype, bug, unsqueeze_dim, hidden_size=64, num_attention_heads=4, num_key_value_heads=2)


class Capture(unittest.TestCase):
    def setUp(self):
        print("\n[seeds: weights torch.manual_seed(0), inputs torch.Generator().manual_seed(1)]", file=sys.stderr)
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def index(self):
        with open(os.path.join(self.out, "index.json")) as f:
            return json.load(f)

    # -- patching -------------------------------------------------------------------------------
    def test_restores_the_attribute_and_the_rotary_forward_on_an_exception(self):
        model = small_hf()
        original = toy_hf.apply_rotary_pos_emb
        with self.assertRaises(KeyError):
            with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                                   positions_from=model, quiet=True):
                self.assertIsNot(toy_hf.apply_rotary_pos_emb, original)
                self.assertIn("forward", vars(model.rotary_emb))
                toy_hf.generate(model, prompt=5, steps=0)
                raise KeyError("boom")
        self.assertIs(toy_hf.apply_rotary_pos_emb, original)
        self.assertNotIn("forward", vars(model.rotary_emb))
        self.assertFalse(self.index()["completed"])

    def test_restores_an_instance_method_of_a_vllm_rotary(self):
        model = toy_vllm.build()
        with ropecheck_capture(model.rotary, "forward", out=self.out, config=model.config, quiet=True):
            self.assertIn("forward", vars(model.rotary))
        self.assertNotIn("forward", vars(model.rotary))

    def test_a_failing_setup_leaves_nothing_patched(self):
        model = small_hf()
        original = toy_hf.apply_rotary_pos_emb
        with self.assertRaises(CaptureError):
            with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, positions_from=model, quiet=True):
                pass  # no config: refused before anything is patched
        self.assertIs(toy_hf.apply_rotary_pos_emb, original)
        self.assertNotIn("forward", vars(model.rotary_emb))

    # -- outputs unchanged ------------------------------------------------------------------------
    def test_logits_are_bit_identical_with_and_without_capture(self):
        for dtype in (torch.float32, torch.bfloat16):
            for u in (1, 2):
                model = small_hf(dtype, unsqueeze_dim=u)
                plain = toy_hf.generate(model, batch=2, prompt=7)
                with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                                       positions_from=model, quiet=True):
                    got = toy_hf.generate(model, batch=2, prompt=7)
                for a, b in zip(plain, got):
                    self.assertTrue(torch.equal(a, b), f"{dtype} unsqueeze_dim={u}")
            for neox in (True, False):
                model = toy_vllm.build(dtype, neox, hidden=64)
                plain = toy_vllm.generate(model, prompt=7)
                with ropecheck_capture(model.rotary, "forward", out=self.out, config=model.config, quiet=True):
                    got = toy_vllm.generate(model, prompt=7)
                for a, b in zip(plain, got):
                    self.assertTrue(torch.equal(a, b), f"vllm {dtype} neox={neox}")

    def test_the_wrapper_returns_the_original_result_objects(self):
        model = small_hf()
        returned = []

        def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
            returned.append(toy_hf.apply_rotary_pos_emb(q, k, cos, sin, position_ids, unsqueeze_dim))
            return returned[-1]

        fake = types.ModuleType("fake_modeling")
        fake.apply_rotary_pos_emb = apply_rotary_pos_emb
        q = torch.randn(1, 4, 3, 16, generator=torch.Generator().manual_seed(1))
        for layers in (None, []):  # recorded, and not recorded
            with ropecheck_capture(fake, "apply_rotary_pos_emb", out=self.out, config=model.config,
                                   positions_from=model, quiet=True, layers=layers):
                cos, sin = model.rotary_emb(q, torch.arange(3)[None])
                got = fake.apply_rotary_pos_emb(q, q, cos, sin)
            self.assertIs(got, returned[-1])
            self.assertEqual(len(self.index()["files"]), 2 if layers is None else 0)

    # -- errors ---------------------------------------------------------------------------------------
    def test_error_when_positions_cannot_be_found(self):
        fake = types.ModuleType("fake_modeling")
        fake.apply_rotary_pos_emb = toy_hf.apply_rotary_pos_emb
        with self.assertRaisesRegex(CaptureError, "positions_from="):
            with ropecheck_capture(fake, "apply_rotary_pos_emb", out=self.out, config={"head_dim": 16}):
                pass

    def test_error_when_cos_sin_come_from_no_hooked_rotary(self):
        model = small_hf()
        q = torch.randn(1, 4, 3, 16, generator=torch.Generator().manual_seed(1))
        cos, sin = torch.ones(1, 3, 16), torch.zeros(1, 3, 16)  # made by hand, not by model.rotary_emb
        with self.assertRaisesRegex(CaptureError, "no hooked rotary embedding forward returned"):
            with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                                   positions_from=model, quiet=True):
                toy_hf.apply_rotary_pos_emb(q, q, cos, sin)

    def test_error_when_no_config(self):
        model = toy_vllm.build()
        with self.assertRaisesRegex(CaptureError, "config="):
            with ropecheck_capture(model.rotary, "forward", out=self.out):
                pass

    def test_error_when_the_convention_is_unknown(self):
        fake = types.ModuleType("fake_modeling")
        fake.rope = lambda a, b: (a, b)
        with self.assertRaisesRegex(CaptureError, 'convention="hf"'):
            with ropecheck_capture(fake, "rope", out=self.out, config={}):
                pass

    # -- what is recorded ---------------------------------------------------------------------------
    def test_index_lists_every_file_with_layer_forward_shapes_and_positions(self):
        model = small_hf(torch.bfloat16)
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                               positions_from=model, quiet=True):
            toy_hf.generate(model, batch=1, prompt=5, steps=2)
        idx = self.index()
        self.assertEqual(idx["convention"], "hf")
        self.assertEqual((idx["calls_seen"], idx["calls_recorded"], idx["forwards"]), (6, 6, 3))
        files = idx["files"]
        self.assertEqual(len(files), 12)
        self.assertEqual([f["layer"] for f in files], [0, 0, 1, 1] * 3)
        self.assertEqual([f["forward"] for f in files], [0] * 4 + [1] * 4 + [2] * 4)
        self.assertEqual([(f["position_min"], f["position_max"]) for f in files],
                         [(0, 4)] * 4 + [(5, 5)] * 4 + [(6, 6)] * 4)
        q, k = files[0], files[1]
        self.assertEqual((q["tensor"], q["x_shape"], q["dtype"]), ("q", [5, 4, 16], "bfloat16"))
        self.assertEqual((k["tensor"], k["x_shape"]), ("k", [5, 2, 16]))  # GQA: its own head count
        with open(os.path.join(self.out, "config.json")) as f:
            self.assertEqual(json.load(f), model.config.to_dict())
        t, meta = read_safetensors(os.path.join(self.out, files[6]["file"]))
        self.assertEqual((meta["layer"], meta["forward"], meta["tensor"]), ("1", "1", "q"))
        self.assertEqual(t["positions"].dtype, torch.int64)
        self.assertEqual((t["x"].dtype, t["cos"].dtype, t["inv_freq"].dtype),
                         (torch.bfloat16, torch.bfloat16, torch.float32))

    def test_hf_records_rotate_consistently_for_every_layout_and_batch(self):
        # y must be what apply_rotary_pos_emb computes from the recorded x, cos, sin, and cos the
        # rotary embedding of the recorded positions: tokens flattened in one order everywhere.
        for u in (1, 2):
            model = small_hf(torch.float32, unsqueeze_dim=u)
            with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                                   positions_from=model, quiet=True):
                toy_hf.generate(model, batch=3, prompt=6, steps=1)
            for f in self.index()["files"]:
                t, _ = read_safetensors(os.path.join(self.out, f["file"]))
                c, s = t["cos"][:, None, :], t["sin"][:, None, :]
                self.assertTrue(torch.equal(t["y"], t["x"] * c + toy_hf.rotate_half(t["x"]) * s), f["file"])
                cos, _ = model.rotary_emb(t["x"], t["positions"][None])
                self.assertTrue(torch.equal(t["cos"], cos[0]), f["file"])

    def test_vllm_records_the_inputs_before_the_in_place_rotation_and_the_cache_rows(self):
        model = toy_vllm.build(torch.float32, False, hidden=64)
        g = torch.Generator().manual_seed(1)
        positions = torch.tensor([0, 3, 300, 4095])
        query, key = torch.randn(4, 64, generator=g), torch.randn(4, 32, generator=g)
        q0 = query.clone()
        with ropecheck_capture(model.rotary, "forward", out=self.out, config=model.config, quiet=True):
            qy = model.rotary(positions, query, key)[0].clone()  # the next call rotates query again in place
            model.rotary(positions, query, None)  # key None: q only
        files = self.index()["files"]
        self.assertEqual([(f["tensor"], f["layer"]) for f in files], [("q", 0), ("k", 0), ("q", 1)])
        t, _ = read_safetensors(os.path.join(self.out, files[0]["file"]))
        self.assertTrue(torch.equal(t["x"], q0.view(4, 4, 16)))
        self.assertTrue(torch.equal(t["y"], qy.view(4, 4, 16)))
        self.assertFalse(torch.equal(t["x"], t["y"]))
        rows = model.rotary.cos_sin_cache[positions]
        self.assertTrue(torch.equal(t["cos"], rows[:, :8]) and torch.equal(t["sin"], rows[:, 8:]))
        self.assertEqual(list(t["positions"]), [0, 3, 300, 4095])

    def test_vllm_customop_style_forward_star_args_and_a_class_target(self):
        # vLLM's CustomOp.forward(*args, **kwargs) dispatches to forward_native: no parameter names.
        class DispatchingRotary(toy_vllm.RotaryEmbedding):
            def forward(self, *args, **kwargs):
                return super().forward(*args, **kwargs)

        rot = DispatchingRotary(16, 16, 64, 10000.0, True, torch.float32)
        g = torch.Generator().manual_seed(1)
        positions = torch.arange(3)
        for target, conv in ((rot, None), (DispatchingRotary, "vllm")):  # a class has no cache to detect it by
            with ropecheck_capture(target, "forward", out=self.out, config={"head_dim": 16}, convention=conv,
                                   quiet=True):
                rot(positions, torch.randn(3, 32, generator=g), key=torch.randn(3, 16, generator=g))
            files = self.index()["files"]
            self.assertEqual([(f["tensor"], f["x_shape"]) for f in files], [("q", [3, 2, 16]), ("k", [3, 1, 16])])
            self.assertEqual(self.index()["convention"], "vllm")
        self.assertNotIn("forward", vars(rot))
        self.assertIs(vars(DispatchingRotary)["forward"], DispatchingRotary.__dict__["forward"])

    def test_model_forward_marks_layer_zero_when_model_is_given(self):
        model = small_hf()
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, model=model, quiet=True):
            toy_hf.generate(model, prompt=4, steps=1)
            cos, sin = model.rotary_emb(torch.zeros(1), torch.arange(2)[None])  # outside model.forward
            q = torch.randn(1, 4, 2, 16, generator=torch.Generator().manual_seed(1))
            toy_hf.apply_rotary_pos_emb(q, q, cos, sin)  # continues forward 1: layer 2
        idx = self.index()
        self.assertIn("model.forward", idx["layer_rule"])
        self.assertEqual([(f["forward"], f["layer"]) for f in idx["files"][::2]], [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)])
        self.assertNotIn("forward", vars(model.rotary_emb))
        self.assertEqual(model._forward_pre_hooks, {})

    def test_two_rotary_modules_before_the_layers_open_one_forward_pass(self):
        # Gemma 3 style: a local and a global rotary embedding, both run before the first layer.
        model = small_hf()
        second = toy_hf.ToyRotaryEmbedding(model.config)
        holder = torch.nn.ModuleDict({"global": model.rotary_emb, "local": second})
        q = torch.randn(1, 4, 3, 16, generator=torch.Generator().manual_seed(1))
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                               positions_from=holder, quiet=True):
            for start in (0, 3):
                pid = torch.arange(start, start + 3)[None]
                g, loc = holder["global"](q, pid), holder["local"](q, pid)
                for cs in (loc, g, loc):
                    toy_hf.apply_rotary_pos_emb(q, q, *cs)
        files = self.index()["files"][::2]
        self.assertEqual([(f["forward"], f["layer"]) for f in files], [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)])
        self.assertEqual([f["position_min"] for f in files], [0, 0, 0, 3, 3, 3])

    def test_config_from_a_dict_a_file_a_folder_or_to_json_string(self):
        class JsonOnly:
            def to_json_string(self):
                return json.dumps({"rope_theta": 5e5, "head_dim": 16})

        folder = os.path.join(self.out, "model")
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump({"rope_theta": 5e5, "head_dim": 16}, f)
        model = toy_vllm.build(hidden=64)
        for cfg in ({"rope_theta": 5e5, "head_dim": 16}, folder, os.path.join(folder, "config.json"), JsonOnly()):
            with ropecheck_capture(model.rotary, "forward", out=os.path.join(self.out, "dump"), config=cfg,
                                   quiet=True):
                pass
            with open(os.path.join(self.out, "dump", "config.json")) as f:
                self.assertEqual(json.load(f), {"rope_theta": 5e5, "head_dim": 16})
        with self.assertRaisesRegex(CaptureError, "config= must be"):
            with ropecheck_capture(model.rotary, "forward", out=self.out, config=42):
                pass

    def test_max_calls_and_layers_limit_what_is_written(self):
        model = small_hf()
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                               positions_from=model, quiet=True, layers=[1]):
            toy_hf.generate(model, prompt=4, steps=2)
        idx = self.index()
        self.assertEqual({f["layer"] for f in idx["files"]}, {1})
        self.assertEqual((idx["calls_seen"], idx["calls_recorded"]), (6, 3))
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config,
                               positions_from=model, quiet=True, max_calls=2):
            toy_hf.generate(model, prompt=4, steps=2)
        idx = self.index()
        self.assertEqual((idx["calls_seen"], idx["calls_recorded"], len(idx["files"])), (6, 2, 4))
        self.assertEqual(sorted(os.listdir(self.out)).count("index.json"), 1)
        self.assertEqual(len([f for f in os.listdir(self.out) if f.endswith(".safetensors")]), 4)

    def test_rotary_classes_of_a_modeling_module_are_found_without_positions_from(self):
        model = small_hf()
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config=model.config, quiet=True):
            self.assertIn("forward", vars(toy_hf.ToyRotaryEmbedding))
            toy_hf.generate(model, prompt=4, steps=1)
        self.assertIs(vars(toy_hf.ToyRotaryEmbedding)["forward"], toy_hf.ToyRotaryEmbedding.__dict__["forward"])
        self.assertEqual(len(self.index()["files"]), 8)
        self.assertEqual(self.index()["positions_from"], ["ToyRotaryEmbedding (class)"])

    def test_mrope_position_ids_are_recorded_as_three_rows_of_tokens(self):
        class MRotary(torch.nn.Module):  # Qwen2-VL-like: position_ids [3, batch, seq]; row 0 drives cos here
            def __init__(self):
                super().__init__()
                self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 16, 2).float() / 16)))

            def forward(self, x, position_ids):
                f = position_ids[0][..., None].float() * self.inv_freq
                emb = torch.cat((f, f), -1)
                return emb.cos(), emb.sin()

        rot = MRotary()
        pid = torch.stack([torch.arange(5), torch.arange(5) + 10, torch.arange(5) + 20])[:, None, :]
        q = torch.randn(1, 2, 5, 16, generator=torch.Generator().manual_seed(1))
        with ropecheck_capture(toy_hf, "apply_rotary_pos_emb", out=self.out, config={"head_dim": 16},
                               positions_from=rot, quiet=True):
            cos, sin = rot(q, pid)
            toy_hf.apply_rotary_pos_emb(q, q, cos, sin)
        f = self.index()["files"][0]
        self.assertEqual(f["positions_shape"], [3, 5])
        t, _ = read_safetensors(os.path.join(self.out, f["file"]))
        self.assertTrue(torch.equal(t["positions"], pid[:, 0, :]))


class Shim(unittest.TestCase):
    def test_the_tools_dump_shim_gives_the_package_module_s_objects(self):
        import ropecheck.capture
        sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools", "dump"))
        try:
            import ropecheck_capture as shim
        finally:
            sys.path.pop(0)
        self.assertIs(shim.ropecheck_capture, ropecheck.capture.ropecheck_capture)
        self.assertIs(shim.CaptureError, ropecheck.capture.CaptureError)
        self.assertTrue(issubclass(shim.CaptureError, RuntimeError))  # as before the move


if __name__ == "__main__":
    unittest.main()
