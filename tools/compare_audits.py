#!/usr/bin/env python3
"""tools/compare_audits.py — every `ropecheck audit` the tests run, recorded with one binary, compared
byte for byte with another's.

  compare_audits.py record <ropecheck> <build dir> <out dir>
  compare_audits.py compare <out dir A> <out dir B>

record lists the build's tests (ctest --show-only=json-v1) and takes their audit invocations: the cli
tests' `ropecheck audit ...` command lines (tests/CMakeLists.txt, tests/cli/*.cmake), the torch
label's cases (tests/torch/audit_case.cmake: the dump in DIR, the claim, AUDIT_ARGS) and the captured
files of torch.capture.* (DIR/index.json). The torch dumps must exist (run `ctest -L torch` on that
build first); a case whose dump is absent is skipped and counted. Each audit runs once with the test's
own flags, its --json/--junit targets replaced by ours: the human stdout, stderr, the exit code, the
JSON and the JUnit XML are kept per case (out dir/<n>.{out,err,rc,json,xml}, cases.txt lists them).
compare diffs two recordings file by file after blanking the timing fields only (the JSON "seconds",
JUnit time="...", the human "read X s, audit Y s" and the plugin door's "(N cases, X s)", stderr's
progress lines) and naming each recording's binary and folder alike
(the JSON's "command" holds them); it prints every difference and exits 1 on any.
"""
import json
import os
import re
import subprocess
import sys


def ctest_tests(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["tests"]


def defines(cmd):
    d = {}
    for a in cmd:
        m = re.match(r"-D([A-Za-z_]+)=(.*)", a, re.S)
        if m:
            d[m.group(1)] = m.group(2)
    return d


def strip_outputs(args):
    """The test's arguments without its --json/--junit targets (ours replace them)."""
    out, i = [], 0
    while i < len(args):
        if args[i] in ("--json", "--junit") and i + 1 < len(args):
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out


def cases(build):
    found, skipped = [], 0
    for t in ctest_tests(build):
        cmd = t.get("command") or []
        if "--" in cmd and "audit" in cmd[cmd.index("--"):]:  # cli: cmake ... -P expect_exit.cmake -- ropecheck audit ...
            rest = cmd[cmd.index("--") + 1:]
            if len(rest) > 1 and rest[1] == "audit":
                found.append((t["name"], strip_outputs(rest[2:])))
            continue
        script = next((a for a in cmd if a.endswith("audit_case.cmake")), None)
        d = defines(cmd)
        if script and "DIR" in d:
            dump = os.path.join(d["DIR"], "dump" if re.search(r"--format[ =]npy", d.get("DUMP_ARGS", "")) else
                                "dump.safetensors")
            if not os.path.exists(dump):
                skipped += 1
                continue
            claim = d["CLAIM_ARGS"].split() if "CLAIM_ARGS" in d else ["--config", d.get("CONFIG") or
                                                                        os.path.join(d["DIR"], "config.json")]
            found.append((t["name"], [dump] + claim + d.get("AUDIT_ARGS", "").split()))
            continue
        if any(a.endswith("capture_case.cmake") for a in cmd) and "DIR" in d:
            index = os.path.join(d["DIR"], "index.json")
            if not os.path.exists(index):
                skipped += 1
                continue
            with open(index) as f:
                for e in json.load(f)["files"]:
                    found.append((t["name"] + "/" + e["file"], [os.path.join(d["DIR"], e["file"]), "--config",
                                                                 os.path.join(d["DIR"], "config.json")]))
    return found, skipped


def record(ropecheck, build, out):
    os.makedirs(out, exist_ok=True)
    found, skipped = cases(build)
    with open(os.path.join(out, "cases.txt"), "w") as listing:
        for n, (name, args) in enumerate(found):
            base = os.path.join(out, str(n))
            for ext in ("json", "xml"):
                if os.path.exists(base + "." + ext):
                    os.remove(base + "." + ext)
            r = subprocess.run([ropecheck, "audit"] + args + ["--json", base + ".json", "--junit", base + ".xml"],
                               capture_output=True)
            for ext, data in (("out", r.stdout), ("err", r.stderr), ("rc", str(r.returncode).encode())):
                with open(base + "." + ext, "wb") as f:
                    f.write(data)
            listing.write("%d\t%s\t%s\n" % (n, name, " ".join(args)))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"ropecheck": ropecheck, "out": out}, f)
    print("%d audits recorded in %s (%d cases without their dump skipped)" % (len(found), out, skipped))


TIMING = [(re.compile(rb'"seconds": \{[^}]*\}'), b'"seconds": {}'),
          (re.compile(rb'time="[0-9.]+"'), b'time=""'),
          (re.compile(rb'"seconds": [0-9.e+-]+'), b'"seconds": -'),  # the plugin door's per property
          (re.compile(rb"read [0-9.]+ s, audit [0-9.]+ s"), b"read - s, audit - s"),
          (re.compile(rb"cases, [0-9.]+ s\)"), b"cases, - s)"),
          # stderr's progress lines come at time intervals: how many is timing too
          (re.compile(rb"^\[audit\] +[0-9]+% of [0-9]+, [0-9.]+ s\n", re.M), b"")]


def normalised(path, meta):
    """The file's bytes with the timing fields blanked and the recording's own binary and folder named
    alike (the JSON's "command" holds both)."""
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    data = data.replace(meta["out"].encode(), b"<out>").replace(meta["ropecheck"].encode(), b"<ropecheck>")
    for pat, rep in TIMING:
        data = pat.sub(rep, data)
    return data


def compare(a, b):
    with open(os.path.join(a, "cases.txt")) as f:
        la = f.read()
    with open(os.path.join(b, "cases.txt")) as f:
        lb = f.read()
    if la != lb:
        print("the case lists differ")
        return 1
    lines = la.splitlines()
    meta = []
    for d in (a, b):
        with open(os.path.join(d, "meta.json")) as f:
            meta.append(json.load(f))
    differ = 0
    files = 0
    for line in lines:
        n, name, _ = line.split("\t", 2)
        for ext in ("out", "err", "rc", "json", "xml"):
            pa, pb = os.path.join(a, n + "." + ext), os.path.join(b, n + "." + ext)
            files += 1
            if normalised(pa, meta[0]) != normalised(pb, meta[1]):
                differ += 1
                print("differs: %s %s (%s)" % (name, ext, n))
    print("%d audits, %d files compared, %d differ" % (len(lines), files, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "record":
        record(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
