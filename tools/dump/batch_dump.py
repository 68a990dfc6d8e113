#!/usr/bin/env python3
"""Run many dump-script cases in one interpreter that has imported torch once (the torch label's setup).

    batch_dump.py --manifest cases.tsv [--jobs N]

Each line of the manifest is `<case folder>\\t<script>\\t<dump options>` (tests/torch/torch.cmake writes
it). For each case the folder is emptied, then a forked child runs the script as `__main__` with
`<dump options> --out <folder> --self-check`, exactly the command a case prints for reproduction,
its stdout and stderr going to <folder>/dump.log; its exit status goes to <folder>/dump.rc. A case that
fails, hangs past CASE_SECONDS (killed: SIGALRM) or whose folder cannot be made is that case's failure
(its CTest test reads dump.rc), not the batch's: the batch exits 0 when every case ran, 2 when the
manifest cannot be read.

Why: importing torch costs 1.5-3 s of a 2-core machine; 170 cases paid it 170 times. A fork of a parent
that has imported torch but run no op starts each case in milliseconds, with nothing shared between
cases (each child is a fresh copy of the parent: no state of one case reaches the next).
"""
import argparse
import os
import ctypes
import runpy
import shlex
import shutil
import signal
import sys
import time
import traceback

CASE_SECONDS = 120  # one dump takes well under a second; this is a hang, not a slow case


def read_manifest(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected <folder>\\t<script>\\t<options>, got {len(parts)} fields")
            folder, script, options = parts
            cases.append((folder, script, shlex.split(options)))
    return cases


def child(folder, script, args):
    """In the forked child: run the script as __main__, never return."""
    code = 1
    try:
        log = os.open(os.path.join(folder, "dump.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        sys.argv = [script] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        signal.alarm(CASE_SECONDS)  # default action: the child dies of SIGALRM, reported as exit -14
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except BaseException:  # the case's own failure, reported in its log
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        ctypes.CDLL(None).fflush(None)  # what C/C++ code printed through stdio (os._exit does not flush it)
    finally:
        os._exit(code if 0 <= code < 256 else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--manifest", required=True)
    p.add_argument("--jobs", type=int, default=1, help="cases run at once (forked children)")
    a = p.parse_args()
    try:
        cases = read_manifest(a.manifest)
    except (OSError, ValueError) as e:
        print(f"batch_dump.py: {e}", file=sys.stderr)
        return 2
    import numpy  # noqa: F401  imported once here, inherited by every child
    import torch  # noqa: F401

    start = time.monotonic()
    running = {}  # pid -> folder
    failed = []
    queue = list(cases)

    def reap():
        pid, status = os.wait()
        finish(running.pop(pid), os.waitstatus_to_exitcode(status))

    def finish(folder, rc):
        with open(os.path.join(folder, "dump.rc"), "w", encoding="utf-8") as f:
            f.write(f"{rc}\n")
        if rc != 0:
            failed.append((folder, rc))

    while queue or running:
        while queue and len(running) < max(1, a.jobs):
            folder, script, args = queue.pop(0)
            try:
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
            except OSError as e:  # this case's failure: its test finds no dump.rc and says so
                print(f"batch_dump.py: {folder}: {e}", file=sys.stderr)
                failed.append((folder, 1))
                continue
            args = args + ["--out", folder, "--self-check"]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                child(folder, script, args)
            running[pid] = folder
        if running:
            reap()
    print(f"batch_dump.py: {len(cases)} dumps in {time.monotonic() - start:.1f} s, {len(failed)} failed"
          + "".join(f"\n  {folder}: exit {rc} (see {folder}/dump.log)" for folder, rc in failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
