#!/usr/bin/python3
"""tests/docs/run_doc_commands.py — every command of one Markdown file, run, and its shown output checked.

  /usr/bin/python3 tests/docs/run_doc_commands.py --source SRC --build BUILD [--list] FILE.md

The convention (docs/README.md, "Commands in these files", says the same for writers):

* Commands live in fenced blocks whose info string is `sh` or `console`. In such a block a line
  starting with `$ ` starts a command; a command line ending with `\\` continues on the next line.
  The lines after a command up to the next `$ ` line (or the block's end) are its shown output.
  Anything but blank lines before the first `$ ` line is an error.
* Shown output is checked against the command's real output: its stdout followed by its stderr
  (not interleaved, so the order is the same on every run, whatever the buffering). Lines are compared after collapsing whitespace. A shown line that is exactly `...`
  stands for lines left out; the other shown lines must appear in order, and lines with no `...`
  line between them must be consecutive in the real output too. Inside a line, `...` matches any
  text (so `foo ...` is a prefix, `... bar` a suffix). Blank shown lines are ignored.
* A trailing comment on a command (outside quotes) whose first word is `exit` or ends with `:` is an
  annotation; any other trailing comment is for the reader. Annotations:
    `# exit N[ text]`   the command must exit with status N (default: 0)
    `# ci: FILE`        not run here: FILE (a path in the source tree, e.g. .ci/run) runs this very
                        command; checked: FILE contains the command's text (whitespace collapsed,
                        a leading `sudo ` dropped)
    `# ci: packages`    an `apt-get install` line, not run here: every package it names is in
                        tools/debian-packages.txt, which tools/bootstrap installs (checked: it runs
                        apt-get install on that list) and .ci/run runs tools/bootstrap test
    `# ci: label L`     not run here, too slow for this label: the ctest label L of the build tree
                        does this step in CI (checked: the build tree has tests labelled L)
  An unknown annotation is an error.
* `tools/bootstrap report [args]` is run for real when BUILD is SRC/build (the tree tools/bootstrap
  builds, as in CI). In another build tree it runs what tools/bootstrap's report branch runs
  (checked: `build ropecheck`, then `exec build/tools/ropecheck report "$@"`) in that tree:
  `cmake --build BUILD --target ropecheck`, then `BUILD/tools/ropecheck report args`. Any other
  `tools/bootstrap` command must carry a `ci:` annotation.
* Blocks with another info string hold no commands: a `$ ` line in one is an error, and so is a
  block marked `bash`, `shell`, `zsh` or `shell-session` (mark it `sh` or `console`).
* README.md must have at most 250 lines, none over 160 characters.

Where the commands run: each in its own `bash -c`, with cwd a fresh scratch directory (removed
afterwards) holding a symbolic link to every top-level entry of the source tree, `build` pointing to
BUILD, and `ropecheck` to the source tree itself (a checkout, as docs/conformance.md clones it). So
`tests/data/...`, `tools/dump/...` and `build/tools/...` read the trees and whatever a command writes
lands in the scratch directory. PATH starts with BUILD/tools; ROPECHECK_SOURCE_DIR and
ROPECHECK_BUILD_DIR name the trees. Exit 0 when every command passed; 1 otherwise.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

COMMAND_BLOCKS = {"sh", "console"}
REJECTED_BLOCKS = {"bash", "shell", "zsh", "shell-session", "shellsession"}
README_MAX_LINES = 250
README_MAX_WIDTH = 160
TIMEOUT_S = 300


class DocError(Exception):
    pass


def split_comment(line):
    """The command text and its trailing comment ('' if none): the first `#` outside quotes that starts a word."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c == "\\":
            i += 2
            continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
        i += 1
    return line.rstrip(), ""


def parse_annotation(comment, where):
    """(kind, value) for an annotation, None for a reader's comment."""
    if not comment:
        return None
    words = comment.split()
    first = words[0]
    if first == "exit":
        if len(words) < 2 or not re.fullmatch(r"\d+:?", words[1]):
            raise DocError(f"{where}: `# exit` needs a status: `# exit N` (got `# {comment}`)")
        return ("exit", int(words[1].rstrip(":")))
    if not first.endswith(":"):
        return None
    if first == "ci:":
        if len(words) >= 3 and words[1] == "label":
            return ("ci-label", words[2])
        if len(words) >= 2 and words[1] == "packages":
            return ("ci-packages", None)
        if len(words) >= 2:
            return ("ci-file", words[1])
        raise DocError(f"{where}: `# ci:` needs FILE, `packages` or `label L`")
    raise DocError(f"{where}: unknown annotation `# {comment}` (known: `# exit N`, `# ci: FILE`, `# ci: packages`, `# ci: label L`)")


def parse(path):
    """Every command of the file: dicts with line, text (as bash runs it), annotation, shown output."""
    lines = open(path, encoding="utf-8").read().split("\n")
    commands = []
    i = 0
    fence = None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)", line)
        if not m:
            i += 1
            continue
        fence, info = m.group(2), m.group(3).lower()
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if j == len(lines):
            raise DocError(f"{path}:{i + 1}: fenced block never closed")
        body = lines[start:j]
        has_prompt = any(b.startswith("$ ") for b in body)
        if info in REJECTED_BLOCKS:
            raise DocError(f"{path}:{i + 1}: a ```{info} block: mark command blocks ```sh or ```console")
        if info not in COMMAND_BLOCKS:
            if has_prompt:
                raise DocError(f"{path}:{i + 1}: a ```{info or '(no info string)'} block has `$ ` lines: "
                               "commands go in ```sh or ```console blocks")
            i = j + 1
            continue
        k = 0
        current = None
        while k < len(body):
            text = body[k]
            lineno = start + k + 1
            if text.startswith("$ "):
                cmd_lines = [text[2:]]
                while cmd_lines[-1].endswith("\\"):
                    k += 1
                    if k == len(body):
                        raise DocError(f"{path}:{lineno}: continuation `\\` at the end of the block")
                    cmd_lines.append(body[k])
                last, comment = split_comment(cmd_lines[-1])
                cmd_lines[-1] = last
                where = f"{path}:{lineno}"
                current = {"line": lineno, "text": "\n".join(cmd_lines), "annotation": parse_annotation(comment, where),
                           "comment": comment, "output": []}
                commands.append(current)
            elif current is None:
                if text.strip():
                    raise DocError(f"{path}:{lineno}: a line before the block's first `$ ` command: {text!r}")
            else:
                current["output"].append(text)
            k += 1
        if not has_prompt:
            raise DocError(f"{path}:{i + 1}: a ```{info} block without a `$ ` command")
        i = j + 1
    return commands


def norm(s):
    return " ".join(s.split())


def line_matches(shown, real):
    pieces = shown.split("...")
    if len(pieces) == 1:
        return shown == real
    if not real.startswith(pieces[0]) or not real.endswith(pieces[-1]):
        return False
    at = len(pieces[0])
    end = len(real) - len(pieces[-1])
    for p in pieces[1:-1]:
        k = real.find(p, at, end)
        if k < 0:
            return False
        at = k + len(p)
    return at <= end


def check_output(shown_lines, real_text):
    """None when the shown output is in the real one, else the first shown line not found."""
    runs, run = [], []
    for s in shown_lines:
        s = norm(s)
        if not s:
            continue
        if s == "...":
            if run:
                runs.append(run)
            run = []
        else:
            run.append(s)
    if run:
        runs.append(run)
    real = [norm(r) for r in real_text.split("\n")]
    real = [r for r in real if r]
    at = 0
    for run in runs:
        found = None
        for start in range(at, len(real) - len(run) + 1):
            if all(line_matches(run[k], real[start + k]) for k in range(len(run))):
                found = start
                break
        if found is None:
            # Name the first line of the run that is not where it should be.
            for start in range(at, len(real)):
                if line_matches(run[0], real[start]):
                    for k in range(1, len(run)):
                        if start + k >= len(real) or not line_matches(run[k], real[start + k]):
                            return f"shown line {run[k]!r} does not follow {run[k - 1]!r} in the real output"
            return f"shown line {run[0]!r} is not in the real output (after what matched before it)"
        at = found + len(run)
    return None


def check_ci(cmd, src, build):
    kind, value = cmd["annotation"]
    text = norm(cmd["text"].replace("\\\n", " "))
    if text.startswith("sudo "):
        text = text[5:]
    if kind == "ci-file":
        target = os.path.join(src, value)
        if not os.path.isfile(target):
            return f"`# ci: {value}`: no such file in the source tree"
        if text not in norm(open(target, encoding="utf-8").read()):
            return f"`# ci: {value}`: {value} does not run `{text}`"
        return None
    if kind == "ci-packages":
        words = shlex.split(text)
        if words[:2] != ["apt-get", "install"]:
            return "`# ci: packages` is for `apt-get install` lines"
        listed = {l.strip() for l in open(os.path.join(src, "tools/debian-packages.txt")) if l.strip() and not l.startswith("#")}
        missing = [w for w in words[2:] if not w.startswith("-") and w not in listed]
        if missing:
            return f"`# ci: packages`: not in tools/debian-packages.txt: {' '.join(missing)}"
        boot = open(os.path.join(src, "tools/bootstrap"), encoding="utf-8").read()
        if "apt-get install" not in boot or "tools/debian-packages.txt" not in boot:
            return "`# ci: packages`: tools/bootstrap no longer installs tools/debian-packages.txt"
        if "tools/bootstrap test" not in open(os.path.join(src, ".ci/run"), encoding="utf-8").read():
            return "`# ci: packages`: .ci/run no longer runs tools/bootstrap test"
        return None
    if kind == "ci-label":
        r = subprocess.run(["ctest", "--test-dir", build, "-N", "-L", f"^{value}$"], capture_output=True, text=True)
        m = re.search(r"Total Tests: (\d+)", r.stdout)
        if not m or int(m.group(1)) == 0:
            return f"`# ci: label {value}`: the build tree has no test labelled {value}"
        return None
    raise AssertionError(kind)


def bootstrap_report(cmd, src, build):
    """The command bash runs for `tools/bootstrap report ...` (see the module's comment), or an error."""
    args = cmd["text"][len("tools/bootstrap report"):]
    if os.path.realpath(build) == os.path.realpath(os.path.join(src, "build")):
        return os.path.join(src, "tools/bootstrap") + " report" + args, None
    boot = open(os.path.join(src, "tools/bootstrap"), encoding="utf-8").read()
    branch = re.search(r"\n\s*report\)\n(.*?);;", boot, re.S)
    if not branch or "build ropecheck" not in branch.group(1) or 'exec build/tools/ropecheck report "$@"' not in branch.group(1):
        return None, "tools/bootstrap's report branch is no longer `build ropecheck; exec build/tools/ropecheck report \"$@\"`"
    b = shlex.quote(build)
    return f"cmake --build {b} --target ropecheck >/dev/null && {b}/tools/ropecheck report{args}", None


def scratch_dir(src, build):
    d = tempfile.mkdtemp(prefix="ropecheck-docs-")
    for entry in os.listdir(src):
        if entry in (".git", "build") or entry.startswith("build-"):
            continue
        os.symlink(os.path.join(src, entry), os.path.join(d, entry))
    os.symlink(build, os.path.join(d, "build"))
    os.symlink(src, os.path.join(d, "ropecheck"))
    return d


def check_readme(path):
    problems = []
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > README_MAX_LINES:
        problems.append(f"{path}: {len(lines)} lines, more than {README_MAX_LINES}: move reference material to docs/")
    for n, l in enumerate(lines, 1):
        if len(l) > README_MAX_WIDTH:
            problems.append(f"{path}:{n}: {len(l)} characters, more than {README_MAX_WIDTH}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--list", action="store_true", help="print the commands and annotations, run nothing")
    ap.add_argument("file")
    a = ap.parse_args()
    src, build = os.path.abspath(a.source), os.path.abspath(a.build)
    path = a.file if os.path.isabs(a.file) else os.path.join(src, a.file)
    name = os.path.relpath(path, src)
    problems = check_readme(path) if name == "README.md" else []
    try:
        commands = parse(path)
    except DocError as e:
        print(f"FAIL {e}")
        return 1
    if a.list:
        for c in commands:
            print(f"{name}:{c['line']}: {c['text']!r} annotation={c['annotation']} shown={len([o for o in c['output'] if o.strip()])}")
        return 0
    env = dict(os.environ)
    env["PATH"] = os.path.join(build, "tools") + os.pathsep + env.get("PATH", "")
    env["ROPECHECK_SOURCE_DIR"] = src
    env["ROPECHECK_BUILD_DIR"] = build
    scratch = scratch_dir(src, build)
    ran = checked = 0
    try:
        for c in commands:
            where = f"{name}:{c['line']}"
            ann = c["annotation"]
            if ann and ann[0].startswith("ci-"):
                err = check_ci(c, src, build)
                checked += 1
                print(f"{'FAIL' if err else 'ok  '} {where}: not run, {ann[0]} {ann[1] or ''}: {c['text'].splitlines()[0]}")
                if err:
                    problems.append(f"{where}: {err}")
                continue
            text = c["text"]
            if text.startswith("tools/bootstrap"):
                if not re.match(r"tools/bootstrap report(\s|$)", text):
                    problems.append(f"{where}: `{text}` needs a `# ci:` annotation (only tools/bootstrap report runs here)")
                    continue
                text, err = bootstrap_report(c, src, build)
                if err:
                    problems.append(f"{where}: {err}")
                    continue
            expected = ann[1] if ann and ann[0] == "exit" else 0
            t0 = time.monotonic()
            try:
                r = subprocess.run(["bash", "-c", text], cwd=scratch, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
                out = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
                status = r.returncode
            except subprocess.TimeoutExpired:
                out, status = "", f"timeout after {TIMEOUT_S} s"
            dt = time.monotonic() - t0
            ran += 1
            err = None
            if status != expected:
                err = f"exit {status}, expected {expected}"
            else:
                err = check_output(c["output"], out)
            print(f"{'FAIL' if err else 'ok  '} {where} ({dt:.1f} s): {c['text'].splitlines()[0]}")
            if err:
                tail = "\n".join(out.rstrip("\n").split("\n")[-40:])
                problems.append(f"{where}: `{c['text']}`: {err}\n--- its output (last 40 lines) ---\n{tail}\n---")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for p in problems:
        print(f"FAIL {p}")
    print(f"{name}: {ran} commands run, {checked} checked against CI, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
