"""ropecheck: verification of rotary position embeddings — the Python door.

    import ropecheck
    verdict = ropecheck.check(my_rope, "config.json", dtype=torch.bfloat16)   # my_rope(x, positions) -> y
    assert verdict, str(verdict)
    ropecheck.assert_qk_conforms(my_qk_rope, "config.json", heads=8, kv_heads=2)  # (q, k, positions) -> (q', k')
    ropecheck.assert_attention_conforms(my_attention, "config.json")  # (q, k, v, q_positions, k_positions) -> o
    ropecheck.assert_table_conforms(model.embed_positions, "config.json", form="ids")  # absolute positions (docs/tables.md)

`check` drives the kernel through the probe of the `ropecheck` program (the C++ judge, found via $ROPECHECK_BIN,
PATH or a source checkout's build tree) and returns its Verdict; `check_qk` does the same for a kernel rotating
queries and keys together (the probe's qk form), `check_attention` for an attention kernel applying RoPE inside
(the probe's attention form: the scores read back from its output); `audit` judges a dump file; `ropecheck.adapters`
bridges transformers, vLLM and flash-attn calling conventions; `ropecheck.capture` records what a running model's
RoPE did as dumps `audit` judges (docs/capture.md); `ropecheck.pytest` is a pytest plugin.
Importing the package does not import torch: that happens when a check runs or adapters or the capture are used.
"""

import importlib

from .check import (assert_attention_conforms, assert_conforms, assert_qk_conforms, audit, check, check_attention,
                    check_qk)
from ._table import assert_table_conforms, check_table
from .errors import (BinaryNotFound, CaptureError, ClaimError, InputMutatedError, KernelError, KernelOutputError,
                     RopecheckError)
from .verdict import Finding, Verdict

__version__ = "0.1.0"

__all__ = ["check", "assert_conforms", "check_qk", "assert_qk_conforms", "check_attention", "assert_attention_conforms",
           "audit", "check_table", "assert_table_conforms", "Verdict", "Finding",
           "RopecheckError", "BinaryNotFound", "ClaimError", "KernelError", "KernelOutputError", "InputMutatedError",
           "CaptureError", "adapters", "capture", "__version__"]


def __getattr__(name):
    """`ropecheck.adapters`, `ropecheck.capture` (and `ropecheck.pytest`) without an explicit import, loaded on first
    use (adapters and capture import torch)."""
    if name in ("adapters", "capture", "pytest"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ropecheck' has no attribute {name!r}")
