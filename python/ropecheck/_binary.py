"""Finding and running the `ropecheck` command-line program (the C++ judge the package drives)."""

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import List, Sequence

from .errors import BinaryNotFound, ClaimError, RopecheckError

ENV = "ROPECHECK_BIN"

# python/ropecheck/_binary.py -> <repo>/build/tools/ropecheck, when the package runs from a source checkout.
_BUILD_TREE = Path(__file__).resolve().parent.parent.parent / "build" / "tools" / "ropecheck"


def find_binary() -> str:
    """The path of the `ropecheck` program: $ROPECHECK_BIN, else `ropecheck` on PATH, else the build tree.

    $ROPECHECK_BIN, when set, must name an executable file: it is never silently passed over.
    Raises BinaryNotFound listing where it looked.
    """
    env = os.environ.get(ENV)
    if env:
        p = Path(env).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        why = "is not an executable file" if p.exists() else "does not exist"
        raise BinaryNotFound(f"${ENV} is set to {env!r}, which {why}: point it at the ropecheck program "
                             f"(e.g. build/tools/ropecheck of a build) or unset it to search PATH")
    found = shutil.which("ropecheck")
    if found:
        return found
    if _BUILD_TREE.is_file() and os.access(_BUILD_TREE, os.X_OK):
        return str(_BUILD_TREE)
    raise BinaryNotFound("the ropecheck program was not found; looked at: $" + ENV + " (not set), "
                         "`ropecheck` on PATH (none), the build tree next to this package (" + str(_BUILD_TREE) +
                         ": absent). Build it (cmake --build build --target ropecheck), put it on PATH, "
                         "or set " + ENV + "=/path/to/ropecheck")


def display_name() -> str:
    """How a printed command names the program: "ropecheck" when that is what PATH finds, else its full path (so
    that a rerun command printed from a build tree runs as it is pasted)."""
    binary = find_binary()
    on_path = shutil.which("ropecheck")
    if on_path and os.path.realpath(on_path) == os.path.realpath(binary):
        return "ropecheck"
    return binary


def run(args: Sequence[str], *, ok: Sequence[int] = (0,), what: str) -> subprocess.CompletedProcess:
    """Run `ropecheck ARGS`, capturing both streams as text; returns the finished process when its code is in ok.

    Exit 2 (bad input: the claim, a file, a flag) -> ClaimError with the CLI's message. Any other code outside
    ok (a crash, a signal) -> RopecheckError with the command and both streams. `what` names the step.
    """
    binary = find_binary()
    cmd: List[str] = [binary, *[str(a) for a in args]]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        raise BinaryNotFound(f"could not run {binary} ({e}): rebuild it or set {ENV}") from None
    if p.returncode in ok:
        return p
    stderr = p.stderr.strip()
    if p.returncode == 2:
        msg = stderr or p.stdout.strip() or "rejected its input (exit 2) with no message"
        raise ClaimError((msg if msg.startswith("ropecheck") else f"{what}: {msg}") +
                         f"\n  command: {quote(cmd)}")
    how = f"was killed by signal {-p.returncode}" if p.returncode < 0 else f"exited {p.returncode}"
    raise RopecheckError(f"{what}: {quote(cmd)} {how} (expected {', '.join(map(str, ok))}); "
                         f"this is a fault of ropecheck, please report it with this message.\n"
                         f"--- stdout ---\n{p.stdout.rstrip()}\n--- stderr ---\n{stderr}")


def quote(cmd: Sequence[str]) -> str:
    """A shell command line for cmd (arguments quoted where the shell needs it)."""
    return " ".join(shlex.quote(str(c)) for c in cmd)
