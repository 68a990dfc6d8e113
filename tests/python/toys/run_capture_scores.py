#!/usr/bin/python3
"""Run the toy Llama (llama_eager.py) under ropecheck.capture.capture_scores and write the capture to --out.

  run_capture_scores.py --dtype bfloat16 [--bug keys_one_ahead] [--first 70000] [--prompt 40] --out DIR

It also runs the same model without capture and exits 3 if any logits differ bit for bit (the capture must not
change what the model computes). Prompt --prompt tokens, then 2 decode steps; weights torch.manual_seed(0), tokens
torch.Generator().manual_seed(1). docs/capture.md ("At the score") shows it.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # the package: ropecheck.capture

import llama_eager  # noqa: E402
from ropecheck.capture import capture_scores  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    p.add_argument("--bug", choices=llama_eager.BUGS, default="none")
    p.add_argument("--first", type=int, default=0, help="the first position (position_ids given from it)")
    p.add_argument("--prompt", type=int, default=40)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    model = llama_eager.build(DTYPES[a.dtype], a.bug, seed=0)
    plain = llama_eager.generate(model, a.prompt, 2, first=a.first, seed=1)
    with capture_scores(llama_eager, "apply_rotary_pos_emb", out=a.out, model=model):
        captured = llama_eager.generate(model, a.prompt, 2, first=a.first, seed=1)
    same = len(plain) == len(captured) and all(torch.equal(x, y) for x, y in zip(plain, captured))
    print(f"logits with and without capture bit-identical: {same}")
    return 0 if same else 3


if __name__ == "__main__":
    sys.exit(main())
