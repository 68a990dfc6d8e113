#!/usr/bin/python3
"""Run one toy model (toy_hf.py or toy_vllm.py) under ropecheck_capture and write the capture to --out.

  run_capture.py --toy hf --dtype bfloat16 [--bug bf16_positions] [--unsqueeze-dim 2] --out DIR
  run_capture.py --toy vllm --style gptj --dtype float32 [--bug cache_bf16] [--rotary-fraction 0.5] --out DIR

It also runs the same model without capture and exits 3 if any logits differ bit for bit (the
capture must not change what the model computes). Prompt 300 tokens, then 2 decode steps.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # the package: ropecheck.capture

import toy_hf  # noqa: E402
import toy_vllm  # noqa: E402
from ropecheck.capture import ropecheck_capture  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--toy", choices=("hf", "vllm"), required=True)
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    p.add_argument("--bug", default="none")
    p.add_argument("--style", choices=("neox", "gptj"), default="neox", help="vllm: is_neox_style")
    p.add_argument("--unsqueeze-dim", type=int, choices=(1, 2), default=1, help="hf: q/k layout")
    p.add_argument("--batch", type=int, default=1, help="hf: batch rows")
    p.add_argument("--rotary-fraction", type=float, default=1.0, help="vllm: rotary_dim / head_size")
    p.add_argument("--prompt", type=int, default=300)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dtype = DTYPES[a.dtype]
    if a.toy == "hf":
        if a.bug not in toy_hf.BUGS:
            p.error(f"--bug for hf: {toy_hf.BUGS}")
        model = toy_hf.build(dtype, a.bug, a.unsqueeze_dim)
        run = lambda: toy_hf.generate(model, batch=a.batch, prompt=a.prompt)  # noqa: E731
        target, name = toy_hf, "apply_rotary_pos_emb"
        kw = {"config": model.config, "positions_from": model}
    else:
        if a.bug not in toy_vllm.BUGS:
            p.error(f"--bug for vllm: {toy_vllm.BUGS}")
        model = toy_vllm.build(dtype, a.style == "neox", a.bug, rotary_fraction=a.rotary_fraction)
        run = lambda: toy_vllm.generate(model, prompt=a.prompt)  # noqa: E731
        target, name = model.rotary, "forward"
        kw = {"config": model.config}
    plain = run()
    with ropecheck_capture(target, name, out=a.out, **kw):
        captured = run()
    same = all(torch.equal(x, y) for x, y in zip(plain, captured)) and len(plain) == len(captured)
    print(f"logits with and without capture bit-identical: {same}")
    return 0 if same else 3


if __name__ == "__main__":
    sys.exit(main())
