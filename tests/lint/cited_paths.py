#!/usr/bin/python3
"""Comments cite files that exist.

Scans the comments of every *.hpp, *.cpp, *.h, *.cmake, CMakeLists.txt and *.py under the project's
source folders (SCANNED) for path-like tokens ending in .hpp, .cpp, .h, .py, .cmake or .md, and fails
listing each one that names no existing file. A token with a '/' is a path and must resolve, in order:
relative to the repository root, to the citing file's folder, or as an installed include path under
one of INCLUDE_ROOTS (ropecheck/judge/judge.hpp). A bare file name (no '/': "see evidence.hpp") must
be the name of some file of the project. Tokens with placeholders (pass_<family>_test.cpp,
config_json_*.hpp) are not paths and are skipped.

Not checked, each for a reason:
  * other repositories' files: a token starting with one of FOREIGN_PREFIXES (their own layouts:
    transformers' models/llama/modeling_llama.py or src/transformers/..., vllm/..., c10/util/...), a
    bare transformers file name (modeling_*.py, configuration_*.py), or a comment line that says whose
    file it is (FOREIGN_MARKERS: "(transformers)", "vLLM's", "Meta's", "pytorch", "nlohmann", ...);
  * the team's design documents, kept outside the repository (SHARED: shared/DESIGN.md, STYLE.md);
  * ctest names, which look like files (docs.README.md is the docs label's test of README.md).
A path may also be relative to any folder above the citing file (families/README.md from
src/ropecheck/families/gemma.hpp is src/ropecheck/families/README.md).

Usage: cited_paths.py [REPO_ROOT]  (exit 1 and one line per stale citation; the ctest
unit.source_comments_cite_existing_files runs it on the source tree).
"""
import os
import re
import sys

SCANNED = ["src", "reference", "config", "judge", "conformance", "tools", "tests", "fuzz", "proofs"]
INCLUDE_ROOTS = ["src", "reference/include", "judge/include", "conformance/include"]
SKIP_DIRS = {"__pycache__", ".git"}

# Other projects' layouts (their files, cited as those projects spell them).
FOREIGN_PREFIXES = (
    "transformers/", "src/transformers/", "models/", "vllm/", "ggml/", "llama.cpp/", "mlx_lm/", "mlx/", "torch/",
    "c10/", "aten/", "flash_attn/", "csrc/", "sglang/", "tensorrt_llm/", "megatron/", "fairseq/", "llama/",
    "nanochat/", "boost/", "Eigen/", "nlohmann/", "gtest/", "rapidcheck/", "colossalai/",
)
FOREIGN_NAMES = re.compile(r"^(?:modeling|configuration|tokenization|processing|image_processing)_\w+\.py$")
# A line citing another project's file may say whose it is instead.
FOREIGN_MARKERS = re.compile(r"\((?:transformers|vllm|vLLM|ggml|llama\.cpp|mlx-lm|mlx_lm|torch|PyTorch|pytorch|sglang)\)|"
                             r"\b(?:transformers|vLLM|vllm|ggml|llama\.cpp|mlx-lm|PyTorch|pytorch|sglang|Meta|meta-llama/llama|"
                             r"nlohmann|ofirpress/attention_with_linear_biases)(?:'s)?\b")
# The team's design documents: outside the repository (/work/shared), cited by name.
SHARED = {"shared/DESIGN.md", "shared/STYLE.md", "DESIGN.md", "STYLE.md"}
# ctest names are <label>.<name>; some name a file (docs.README.md).
CTEST_NAME = re.compile(r"^(?:docs|cli|unit|torch|fuzz|package|property|conformance|certify)\.")

TOKEN = re.compile(r"(?<![\w./<>{}*$@%-])([A-Za-z0-9_][\w./+-]*\.(?:hpp|cpp|h|py|cmake|md))(?![\w*{}<>-]|\.\w)")

C_LIKE = (".hpp", ".cpp", ".h")
HASH_LIKE = (".cmake", ".py")


def c_comments(text):
    """(line number, comment text) of // and /* */ comments, outside string and character literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            line += text.count("\n", i, j)
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator (1'000) or u8'x' prefix
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text):
    """(line number, comment text) of # comments, outside quoted strings on the line (CMake, Python)."""
    out = []
    for number, raw in enumerate(text.split("\n"), 1):
        quote, i = None, 0
        while i < len(raw):
            c = raw[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#":
                out.append((number, raw[i + 1:]))
                break
            i += 1
    return out


def project_files(root):
    names, paths = set(), set()
    for top in SCANNED + ["docs", "cmake", ".ci"]:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = [s for s in subdirs if s not in SKIP_DIRS]
            for f in files:
                names.add(f)
                paths.add(os.path.relpath(os.path.join(d, f), root))
    for f in os.listdir(root):
        if os.path.isfile(os.path.join(root, f)):
            names.add(f)
    return names


def resolves(token, citing_dir, root, names):
    if "/" not in token:
        return token in names or os.path.isfile(os.path.join(citing_dir, token))
    t = token[2:] if token.startswith("./") else token
    bases = [root] + [os.path.join(root, r) for r in INCLUDE_ROOTS]
    d = citing_dir
    while os.path.commonpath([d, root]) == root:  # the citing folder and every folder above it
        bases.append(d)
        if d == root:
            break
        d = os.path.dirname(d)
    return any(os.path.isfile(os.path.normpath(os.path.join(b, t))) for b in bases)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    names = project_files(root)
    stale, scanned = [], 0
    for top in SCANNED:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(s for s in subdirs if s not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith(C_LIKE):
                    extract = c_comments
                elif f.endswith(HASH_LIKE) or f == "CMakeLists.txt":
                    extract = hash_comments
                else:
                    continue
                path = os.path.join(d, f)
                try:
                    text = open(path, encoding="utf-8").read()
                except UnicodeDecodeError:
                    continue
                scanned += 1
                for number, comment in extract(text):
                    if FOREIGN_MARKERS.search(comment):
                        continue
                    for m in TOKEN.finditer(comment):
                        token = m.group(1).rstrip(".")
                        if (token.startswith(FOREIGN_PREFIXES) or FOREIGN_NAMES.match(token) or token in SHARED
                                or CTEST_NAME.match(token)):
                            continue
                        if not resolves(token, d, root, names):
                            stale.append(f"{os.path.relpath(path, root)}:{number}: cites {token}, which does not exist")
    for s in stale:
        print(s)
    print(f"cited_paths: {scanned} files scanned, {len(stale)} stale citation(s)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
