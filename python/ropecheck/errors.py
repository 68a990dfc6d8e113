"""The errors the ropecheck package raises.

Every error is a `RopecheckError`; each carries a message only (what was wrong and how to fix it) and is raised
`from None`, so a traceback shows the caller's line, not the package's inside. A kernel that computes wrong values
is not an error: that is a failing `Verdict` (NaN and inf outputs included: the judge names them `non_finite`).
"""


class RopecheckError(Exception):
    """Base class of every error of the ropecheck package (a message only)."""


class BinaryNotFound(RopecheckError):
    """The `ropecheck` command-line program was not found; the message lists every place that was looked at."""


class ClaimError(RopecheckError):
    """The claim (config, preset, convention flags) or a file was rejected: the CLI's exit 2 and its message."""


class KernelError(RopecheckError):
    """The kernel under test raised: the message names the form, call, positions, exception and the user's line."""


class KernelOutputError(RopecheckError):
    """The kernel returned something that is not an output of the input's shape and dtype (expected vs got)."""


class InputMutatedError(RopecheckError):
    """The kernel changed x or positions in place although its adapter promises to leave them alone."""


class CaptureError(RopecheckError, RuntimeError):
    """ropecheck.capture cannot make the capture as asked; the message says what to pass. (A RuntimeError too, as
    it was when the capture lived in tools/dump/ropecheck_capture.py.)"""


__all__ = ["RopecheckError", "BinaryNotFound", "ClaimError", "KernelError", "KernelOutputError", "InputMutatedError",
           "CaptureError"]
