"""The Python door: check a RoPE kernel against a claimed convention, or audit a dump file.

`check(fn, config)` runs `ropecheck probe` for the claim, calls `fn(x, positions)` on every call of the probe's
plan (prefill twice, decode once), writes the outputs file and has `ropecheck audit` judge it. `check_qk(fn,
config)` does the same with the probe's qk form: queries and keys, `fn(q, k, positions) -> (q_out, k_out)`;
`check_attention(fn, config)` with its attention form: RoPE inside attention, `fn(q, k, v, q_positions,
k_positions) -> o`, the scores read back from o.
torch is imported only when a check runs (importing ropecheck, e.g. as a pytest plugin, stays cheap).
"""

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import _binary, _safetensors
from .errors import ClaimError, RopecheckError
from .verdict import Verdict

DTYPE_NAMES = ("float32", "bfloat16", "float16", "float64")
REFERENCES = ("exact", "hf", "meta", "ggml")


def _number(v: Any) -> str:
    if isinstance(v, bool):
        raise ClaimError(f"a claim value {v!r} inside a list: use True alone for a bare flag")
    if isinstance(v, float) and math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def claim_flags(claim: Optional[Dict[str, Any]]) -> List[str]:
    """Command-line flags of a claim dict: {"base": 1e4, "rotary_dim": 64, "mrope_section": [16, 24, 24],
    "assume_llama": True} -> --base 10000 --rotary-dim 64 --mrope-section 16 24 24 --assume-llama; a bias claim's keys
    the same way: {"stack": "decoder"} -> --stack decoder, {"head_offset": 16, "local_heads": 16} -> --head-offset 16
    --local-heads 16. None and False values are left out."""
    if claim is None:
        return []
    if not isinstance(claim, dict):
        raise ClaimError(f"claim= takes a dict of convention flags, e.g. {{'base': 10000, 'rotary_dim': 64}}; "
                         f"got {type(claim).__name__}")
    out: List[str] = []
    for key, value in claim.items():
        flag = "--" + str(key).lstrip("-").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, *(_number(v) for v in value)]
        else:
            out += [flag, _number(value)]
    return out


# A failing vLLM kernel judged against transformers' reading of its config, where vLLM reads that config another way
# (the probe's metadata vllm_reading, tools/probe/probe_cli.hpp vllm_reading_if_other; config/src/config_json_vllm.hpp,
# docs/configs.md, the engine variants): say what vLLM's reading is and how to claim it. The claim never guesses it,
# and the note is not given where the two readings agree (a failure there is not about the reading).
VLLM_READING_NOTE = "vLLM reads this config another way than transformers"


def vllm_reading_note(vllm_reading: str, claimed: str) -> str:
    """The note for a failing kernel through adapters.vllm when vLLM's reading of the config differs."""
    return (f"{VLLM_READING_NOTE}: vLLM's reading {vllm_reading}; the claim (transformers') {claimed}: "
            "claim={'engine': 'vllm'} (and 'max_model_len' for LongRoPE) claims vLLM's reading (docs/configs.md, the "
            "engine variants)")


def _config_path(config: Any, where: Optional[Path]) -> str:
    """The absolute path of the claimed config.json: as given, or a dict / to_dict() object written to `where`."""
    if isinstance(config, (str, os.PathLike)):
        p = Path(config).expanduser()
        if not p.is_file():
            raise ClaimError(f"config={os.fspath(config)!r} is not a file: pass the path of a config.json, a dict "
                             "of it, or a transformers PretrainedConfig")
        return str(p.resolve())
    if isinstance(config, dict):
        data = config
    elif callable(getattr(config, "to_dict", None)):
        data = config.to_dict()
    else:
        raise ClaimError(f"config= takes a path, a dict or an object with to_dict() (a transformers PretrainedConfig); "
                         f"got {type(config).__name__}")
    assert where is not None
    where.mkdir(parents=True, exist_ok=True)
    out = where / "config.json"
    out.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return str(out.resolve())


def _with_tables_written(claim: Optional[Dict[str, Any]], where: Optional[Path]) -> Optional[Dict[str, Any]]:
    """The claim with a T5 table given as a tensor or array (claim={"t5_table": module.relative_attention_bias.weight})
    written to `where`/t5_table.npy (float64, [num_buckets, heads]) and replaced by that path (--t5-table); a path is
    passed as it is."""
    if not isinstance(claim, dict) or claim.get("t5_table") is None or isinstance(claim["t5_table"], (str, os.PathLike)):
        return claim
    import numpy as np

    table = claim["t5_table"]
    if callable(getattr(table, "detach", None)):  # a torch tensor (a Parameter too), on any device and dtype
        table = table.detach().to("cpu").double().numpy()
    table = np.ascontiguousarray(table, dtype=np.float64)  # C order: a transposed view is written as its values
    if table.ndim != 2:
        raise ClaimError(f"claim t5_table: shape {list(table.shape)}, the table is [num_buckets, heads] "
                         "(T5Attention.relative_attention_bias.weight)")
    if where is None:
        raise ClaimError("claim t5_table: a tensor needs dump_dir= to be written to; or give the path of a .npy file")
    path = where / "t5_table.npy"
    np.save(path, table)
    return dict(claim, t5_table=str(path))


def _claim_args(config, preset, layer, part, claim, where: Optional[Path], *, required: bool) -> List[str]:
    args: List[str] = []
    if config is not None:
        args += ["--config", _config_path(config, where)]
    if preset is not None:
        args += ["--preset", str(preset)]
    flags = claim_flags(_with_tables_written(claim, where))
    if required and not args and not flags:
        raise ClaimError("no claimed convention: ropecheck judges a kernel against the convention it claims, never a "
                         "default; say it with config= (a config.json path, a dict or a PretrainedConfig), "
                         "preset= (e.g. 'llama3-8b'), or claim={...} (e.g. {'head_dim': 128, 'base': 500000, "
                         "'layout': 'half_split'}: flags alone must say head_dim, base and layout)")
    args += flags
    if layer is not None:
        args += ["--layer", str(int(layer))]
    if part not in (None, "attention"):
        if part != "indexer":
            raise ClaimError(f"part={part!r}: the parts are 'attention' (default) and 'indexer' "
                             "(the MLA lightning indexer's RoPE)")
        args.append("--indexer")
    return args


def _judge_flags(reference: str, strict: bool) -> List[str]:
    if reference not in REFERENCES:
        raise ClaimError(f"reference={reference!r}: the references are {', '.join(REFERENCES)}")
    return (["--reference", reference] if reference != "exact" else []) + (["--strict"] if strict else [])


def dtype_name(dtype: Any) -> str:
    """The probe's name of a dtype given as a torch dtype or one of "float32", "bfloat16", "float16", "float64"."""
    if isinstance(dtype, str):
        name = dtype
    else:
        name = str(dtype).replace("torch.", "")
    name = {"float": "float32", "half": "float16", "double": "float64", "bf16": "bfloat16"}.get(name, name)
    if name not in DTYPE_NAMES:
        raise RopecheckError(f"dtype={dtype!r}: ropecheck checks kernels in {', '.join(DTYPE_NAMES)} "
                             "(a torch dtype or its name)")
    return name


def _device(device: Any):
    import torch

    try:
        d = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise RopecheckError(f"device={device!r} is not a torch device ({e}); use 'cpu' or 'cuda'") from None
    if d.type == "cuda" and not torch.cuda.is_available():
        raise RopecheckError(f"device={device!r}: no CUDA device (torch.cuda.is_available() is False); check on 'cpu', "
                             "or skip the test when there is no GPU (ropecheck.pytest.devices() does)")
    return d


def _judge(args: List[str], json_path: Path, what: str):
    """Run `ropecheck audit ARGS --json json_path`; returns (parsed JSON, stdout as the human text)."""
    p = _binary.run(["audit", *args, "--json", str(json_path), "--quiet"], ok=(0, 1), what=what)
    try:
        data = json.loads(json_path.read_text())
    except (OSError, ValueError) as e:
        raise RopecheckError(f"{what}: the judge exited {p.returncode} but its JSON {json_path} is unreadable ({e})"
                             f"\n--- stderr ---\n{p.stderr.strip()}") from None
    return data, p.stdout


def _new_dump_dir(dump_dir) -> Path:
    if dump_dir is None:
        return Path(tempfile.mkdtemp(prefix="ropecheck-"))
    d = Path(dump_dir).expanduser()
    d.mkdir(parents=True, exist_ok=True)
    return d.resolve()


def check(fn, config=None, *, preset=None, dtype="bfloat16", device="cpu", layer=None, part=None,
          reference="exact", strict=False, seed=None, heads=4, max_position=None, dump_dir=None,
          claim=None) -> Verdict:
    """Check the RoPE kernel `fn(x, positions) -> y` against the claimed convention; returns the Verdict.

    fn takes x [tokens, heads, head_dim] on `device` in `dtype` (a torch dtype or its name; default bfloat16) and
    positions int64 on `device`, [tokens] ([rows, tokens] for M-RoPE), and returns y of x's shape and dtype without
    changing x or positions (adapters in ropecheck.adapters bridge other conventions). The claim: config= (path,
    dict or PretrainedConfig), preset= and/or claim={flag: value}; layer= and part= pick the layer and part.
    max_position: the kernel's last position (None: fn.ropecheck_max_position when an adapter set it). The probe
    and outputs files stay in dump_dir (default: a new temporary directory), which the verdict names.
    Raises ClaimError (a bad claim), KernelError / KernelOutputError / InputMutatedError (the kernel), and
    BinaryNotFound; a kernel computing wrong values is not an error but a failing verdict.
    """
    __tracebackhide__ = True  # pytest: show the caller's line, not this one
    try:
        return _check(fn, config, preset, dtype, device, layer, part, reference, strict, seed, heads, max_position,
                      dump_dir, claim)
    except RopecheckError as e:
        raise e.with_traceback(None) from None


# Each form: its door and the kernel it drives (in messages).
FORM_KERNELS = {"x": ("check()", "fn(x, positions) -> y"),
                "qk": ("check_qk()", "fn(q, k, positions) -> (q_out, k_out)"),
                "attention": ("check_attention()", "fn(q, k, v, q_positions, k_positions) -> o")}


def _check(fn, config, preset, dtype, device, layer, part, reference, strict, seed, heads, max_position, dump_dir,
           claim, form="x", kv_heads=None, value_dim=None, kv_shift=None) -> Verdict:
    """check() (form "x"), check_qk() (the qk form: fn(q, k, positions), kv_heads key heads) or check_attention()
    (the attention form: fn(q, k, v, q_positions, k_positions), kv_heads key heads, value_dim values or the
    probe's default): the probe, the calls and the judge, which the three share but for the probe's form and the
    driver."""
    if not callable(fn):
        door, kernel = FORM_KERNELS[form]
        raise RopecheckError(f"{door} takes a callable {kernel}; got {type(fn).__name__}")
    outer = fn
    if form != "x":
        fn = _form_callable(fn, form)
    cache = _kernel_cache(fn, outer) if form == "qk" else None
    if kv_shift is not None and not callable(kv_shift):
        raise RopecheckError(f"kv_shift= takes a callable kv_shift(k_cached, positions, delta) -> k_shifted (the "
                             f"engine's K-shift; ropecheck.adapters.kv_shift(rotate) makes one); got "
                             f"{type(kv_shift).__name__}")
    name = dtype_name(dtype)
    judge_flags = _judge_flags(reference, strict)
    dev = _device(device)
    if config is None and preset is None and not claim_flags(claim):
        _claim_args(None, None, None, None, None, None, required=True)  # raises the ClaimError saying how to claim
    if isinstance(config, (str, os.PathLike)):
        _config_path(config, None)  # a missing config file fails before a dump directory is made
    where = _new_dump_dir(dump_dir)
    claim_args = _claim_args(config, preset, layer, part, claim, where, required=True)
    if max_position is None:
        max_position = getattr(fn, "ropecheck_max_position", getattr(outer, "ropecheck_max_position", None))
    probe_path, outputs_path = where / "probe.safetensors", where / "outputs.safetensors"
    args = ["probe", *claim_args, "--dtype", name, "--out", str(probe_path)]
    if heads is not None:  # None (check_attention's default): the probe's (8 for RoPE, a bias claim's own heads)
        args += ["--heads", str(int(heads))]
    if form != "x":
        args += ["--form", form]
    if kv_heads is not None:
        args += ["--kv-heads", str(kv_heads)]
    if value_dim is not None:
        args += ["--value-dim", str(value_dim)]
    if seed is not None:
        args += ["--seed", str(int(seed))]
    if max_position is not None:
        args += ["--max-position", str(int(max_position))]
    t0 = time.perf_counter()
    _binary.run(args, what="ropecheck probe")
    t1 = time.perf_counter()

    from . import _drive  # imports torch

    kernel = _drive.kernel_name(fn)
    adapter = str(getattr(fn, "ropecheck_adapter", None) or "plain")
    if form == "qk":
        from ._drive_qk import drive_qk as drive
    elif form == "attention":
        from ._drive_attention import drive_attention as drive
    else:
        drive = _drive.drive
    extra = {"cache": cache, "kv_shift": kv_shift} if form == "qk" else {}
    info, _ = drive(fn, str(probe_path), str(outputs_path), dev, kernel=kernel, adapter=adapter, **extra)
    t2 = time.perf_counter()
    probe_meta_args = _probe_claim_args(probe_path) or claim_args
    data, text = _judge([str(outputs_path), *probe_meta_args, *judge_flags], where / "verdict.json",
                        "ropecheck audit (judging the kernel's outputs)")
    t3 = time.perf_counter()
    rerun = _binary.quote([_binary.display_name(), "audit", str(outputs_path), *probe_meta_args, *judge_flags])
    v = Verdict(data, text=text, dump=str(outputs_path), rerun=rerun,
                seconds={"probe": t1 - t0, "calls": t2 - t1, "judge": t3 - t2},
                kernel=kernel, dtype=name, forms=info["forms"], tokens=info["tokens"],
                qk_heads=(info["heads"], info["kv_heads"]) if form == "qk" else None,
                attention=(info["heads"], info["kv_heads"], info["value_dim"]) if form == "attention" else None)
    for note in info.get("notes", []):
        if note not in v.notes:
            v.notes.append(note)
    probe_meta = _safetensors.read_metadata(probe_path)
    if probe_meta.get("positions_not_asked"):  # every one; the note summarises a long list
        v.json["positions_not_asked"] = json.loads(probe_meta["positions_not_asked"])
    if not v.passed and adapter == "vllm" and "--engine" not in probe_meta_args and probe_meta.get("vllm_reading"):
        v.notes.append(vllm_reading_note(probe_meta["vllm_reading"], probe_meta.get("convention", "?")))
    return v


def check_qk(fn, config=None, *, preset=None, dtype="bfloat16", device="cpu", heads=8, kv_heads=2, layer=None,
             part=None, reference="exact", strict=False, seed=None, max_position=None, dump_dir=None,
             claim=None, kv_shift=None) -> Verdict:
    """Check a kernel rotating queries and keys together, `fn(q, k, positions) -> (q_out, k_out)`, against the
    claimed convention; returns the Verdict.

    fn takes q [tokens, heads, head_dim] and k [tokens, kv_heads, head_dim] (distinct values; kv_heads divides
    heads, as grouped-query attention: query head h reads key head h // (heads // kv_heads)) in `dtype` on `device`
    and positions int64 [tokens] ([rows, tokens] for M-RoPE), and returns new tensors of q's and k's shapes and
    dtypes, leaving its inputs alone. A callable carrying `ropecheck_qk` (an adapter of ropecheck.adapters: hf,
    vllm, plain, inplace) is checked through that attribute. Each side is judged as check() judges one tensor, and
    the pair for what only the pair shows: qk_crossed (one tensor's outputs depend on the other's inputs: prefill
    runs again with other keys and with other queries, and must not move), key_positions_wrong and
    key_convention_wrong (the queries right, the keys at other positions or by another rule).

    The KV cache (docs/python.md, "The KV cache"): a kernel that writes its keys into its own cache carries
    `ropecheck_cache`, an object with reset() (empty the cache) and read_keys(positions) -> the keys it holds at
    those positions [n, kv_heads, head_dim] in k's dtype; its call may return (q_out, None), and the keys judged are
    read back from the cache (a decode call's after every later call has run). kv_shift, the engine's K-shift
    `kv_shift(k_cached, positions, delta) -> k_shifted`, re-rotates the kernel's prefill keys of the tokens after
    an evicted span to positions + delta (delta -32: llama.cpp's context shift, transformers' SinkCache); they are
    judged at the renumbered positions (a shift that left them is key_positions_wrong, another rule
    key_convention_wrong). ropecheck.adapters.kv_shift(rotate) makes one of a one-tensor RoPE.

    The other arguments are check()'s. Raises ClaimError (a bad claim, kv_heads not dividing heads, kv_shift with
    M-RoPE or with a rule recomputed per call's length), KernelError / KernelOutputError / InputMutatedError (the kernel, its cache, kv_shift) and
    BinaryNotFound.
    """
    __tracebackhide__ = True
    try:
        heads, kv_heads = _qk_heads(heads, kv_heads)
        return _check(fn, config, preset, dtype, device, layer, part, reference, strict, seed, heads, max_position,
                      dump_dir, claim, form="qk", kv_heads=kv_heads, kv_shift=kv_shift)
    except RopecheckError as e:
        raise e.with_traceback(None) from None


def assert_qk_conforms(fn, config=None, **kwargs) -> Verdict:
    """check_qk(fn, config, **kwargs); raises AssertionError(str(verdict)) when the kernel does not pass."""
    __tracebackhide__ = True
    v = check_qk(fn, config, **kwargs)
    if not v.passed:
        raise AssertionError(str(v))
    return v


def check_attention(fn, config=None, *, preset=None, dtype="bfloat16", device="cpu", heads=None, kv_heads=None,
                    value_dim=None, layer=None, part=None, reference="exact", strict=False, seed=None,
                    max_position=None, dump_dir=None, claim=None) -> Verdict:
    """Check an attention kernel that applies RoPE inside, `fn(q, k, v, q_positions, k_positions) -> o`, against the
    claimed convention, from the scores read back from o; returns the Verdict.

    fn takes, per call, q [queries, heads, head_dim] at q_positions int64 [queries] (a call's queries at one position),
    k [keys, kv_heads, head_dim] at k_positions int64 [keys] (contiguous positions ending at the queries', as a KV cache
    holds them) and v [keys, kv_heads, value_dim] (key j's value one-hot e_j), all on `device`, q, k, v in `dtype`; it
    returns a new o [queries, heads, value_dim] in q's dtype, softmax(scale q' k'^T) v with q' and k' rotated inside at
    their positions, leaving its inputs alone. kv_heads divides heads (query head h reads key head h // (heads //
    kv_heads)) and heads is even (query heads 2p and 2p + 1 read the same bands in quadrature); both None: 8 and 2 (one
    given: the other equal). value_dim (None: the probe's default, head_dim) bounds the keys of a call. A callable
    carrying `ropecheck_attention` is checked through that attribute; ropecheck.adapters.eager_attention and
    flash_attn_kvcache make transformers-style and flash-attn kernels this callable. The judge names the classes of
    check() at the score (base_wrong, layout_swapped, scaling_wrong, ...), key_positions_wrong and score_scale_wrong (a
    softmax scale or YaRN temperature off).

    A config of a family whose attention adds a score bias instead of rotating (ALiBi: BLOOM, MPT, Falcon with alibi;
    T5's buckets) is a bias claim, judged on the bias probe (docs/bias.md): fn gets q, k, v without RoPE and adds its
    own bias (one query per call; for T5's encoder keys may lie after it); heads are the claim's (leave heads None, or
    give the heads the kernel holds); claim={"stack": "decoder"}, {"head_offset": .., "local_heads": ..} and
    {"t5_table": relative_attention_bias.weight} declare T5's decoder, a tensor-parallel rank and T5's learned table;
    the judge names alibi_slopes_wrong, bias_sign_wrong, bias_missing, bias_scaled, bias_low_precision,
    t5_buckets_wrong, key_positions_wrong and heads_wrong (adapters.flash_attn_alibi, additive_bias_attention;
    docs/python.md, ALiBi and T5).

    The other arguments are check()'s. Raises ClaimError (a bad claim, kv_heads not dividing heads, odd heads, a
    value_dim too small for the probe's calls, a T5 table of another shape), KernelError / KernelOutputError /
    InputMutatedError (the kernel) and BinaryNotFound.
    """
    __tracebackhide__ = True
    try:
        if heads is not None or kv_heads is not None:
            heads, kv_heads = _qk_heads(heads if heads is not None else kv_heads, kv_heads if kv_heads is not None else heads)
            if heads % 2:
                raise ClaimError(f"heads={heads}: the attention form of a RoPE claim takes an even number of query heads "
                                 "(heads 2p and 2p + 1 read the same bands in quadrature, docs/scores.md); e.g. heads=8, "
                                 "kv_heads=2; a bias claim (ALiBi, T5) takes its heads from the config: leave heads=None")
        if value_dim is not None:
            if isinstance(value_dim, bool) or not isinstance(value_dim, int) or value_dim < 1:
                raise ClaimError(f"value_dim={value_dim!r}: a positive integer, the width of v (None: head_dim)")
        return _check(fn, config, preset, dtype, device, layer, part, reference, strict, seed, heads, max_position,
                      dump_dir, claim, form="attention", kv_heads=kv_heads, value_dim=value_dim)
    except RopecheckError as e:
        raise e.with_traceback(None) from None


def assert_attention_conforms(fn, config=None, **kwargs) -> Verdict:
    """check_attention(fn, config, **kwargs); raises AssertionError(str(verdict)) when the kernel does not pass."""
    __tracebackhide__ = True
    v = check_attention(fn, config, **kwargs)
    if not v.passed:
        raise AssertionError(str(v))
    return v


def _form_callable(fn, form):
    """The kernel of fn for a form: its `ropecheck_<form>` (`ropecheck_qk`: an adapter's qk form;
    `ropecheck_attention`: an attention-form adapter an object carries) when it has one, else fn itself."""
    kernel = getattr(fn, f"ropecheck_{form}", None)
    if kernel is None:
        return fn
    if not callable(kernel):
        raise RopecheckError(f"{type(fn).__name__}.ropecheck_{form} is {type(kernel).__name__}, not a callable "
                             f"{FORM_KERNELS[form][1].replace('fn', '', 1)}")
    return kernel


def _kernel_cache(fn, outer):
    """The kernel's own KV cache: `ropecheck_cache` of the qk callable or of the object given (None: none), with
    callable reset and read_keys, else RopecheckError saying the protocol."""
    cache = getattr(fn, "ropecheck_cache", None)
    if cache is None:
        cache = getattr(outer, "ropecheck_cache", None)
    if cache is None:
        return None
    missing = [m for m in ("reset", "read_keys") if not callable(getattr(cache, m, None))]
    if missing:
        raise RopecheckError(f"{type(outer).__name__}.ropecheck_cache ({type(cache).__name__}) has no callable "
                             f"{' or '.join(missing)}: a kernel's cache gives reset() (empty it) and "
                             "read_keys(positions) -> the keys it holds at those positions [n, kv_heads, head_dim] "
                             "(docs/python.md, The KV cache)")
    return cache


def _qk_heads(heads, kv_heads):
    """(heads, kv_heads) as ints, kv_heads dividing heads (grouped-query attention), else ClaimError."""
    try:
        h, hk = int(heads), int(kv_heads)
    except (TypeError, ValueError):
        raise ClaimError(f"heads={heads!r}, kv_heads={kv_heads!r}: both are positive integers") from None
    if h < 1 or hk < 1 or h % hk:
        raise ClaimError(f"heads={heads!r}, kv_heads={kv_heads!r}: kv_heads must divide heads (grouped-query "
                         "attention: query head h reads key head h // (heads // kv_heads), transformers' repeat_kv); "
                         "e.g. heads=8, kv_heads=2")
    return h, hk


def _probe_claim_args(probe_path: Path) -> List[str]:
    """The claim arguments a probe or outputs file recorded (its __metadata__ claim_args), [] when absent."""
    meta = _safetensors.read_metadata(probe_path)
    try:
        args = json.loads(meta.get("claim_args", "[]"))
    except ValueError:
        return []
    return [str(a) for a in args] if isinstance(args, list) else []


def assert_conforms(fn, config=None, **kwargs) -> Verdict:
    """check(fn, config, **kwargs); raises AssertionError(str(verdict)) when the kernel does not pass."""
    __tracebackhide__ = True
    v = check(fn, config, **kwargs)
    if not v.passed:
        raise AssertionError(str(v))
    return v


def audit(path, config=None, *, preset=None, layer=None, part=None, reference="exact", strict=False, dtype=None,
          claim=None, dump_dir=None, **flags) -> Verdict:
    """Judge a dump file ({positions, x, y} safetensors or .npy directory, a capture's file, or an outputs file of
    check()) with `ropecheck audit`; returns the Verdict.

    The claim is config= / preset= / claim={...} plus any further keyword as a convention flag (base=10000 ->
    --base 10000); with none, the CLI takes the claim the file carries (an outputs file's claim_args, a dump's
    __metadata__ or a config.json beside it) or says what is missing (ClaimError). dtype: the dump's dtype when the
    file cannot say it (bfloat16 .npy as uint16). A dict config is written to dump_dir (default: a new temp dir).
    """
    __tracebackhide__ = True
    try:
        return _audit(path, config, preset, layer, part, reference, strict, dtype, claim, dump_dir, flags)
    except RopecheckError as e:
        raise e.with_traceback(None) from None


def _audit(path, config, preset, layer, part, reference, strict, dtype, claim, dump_dir, flags) -> Verdict:
    p = Path(path).expanduser()
    if not p.exists():
        raise ClaimError(f"audit({os.fspath(path)!r}): no such file or directory (a .safetensors dump, a directory of "
                         ".npy files, or the outputs.safetensors of check())")
    p = p.resolve()
    merged = dict(claim or {})
    merged.update(flags)
    needs_dir = config is not None and not isinstance(config, (str, os.PathLike))
    where = _new_dump_dir(dump_dir) if (needs_dir or dump_dir is not None) else None
    claim_args = _claim_args(config, preset, layer, part, merged, where, required=False)
    if config is None and preset is None and not claim_flags(merged) and p.is_file():
        # An outputs file of check() carries the claim its probe was made for: judge it against that claim.
        if _safetensors.read_metadata(p).get("ropecheck_probe_outputs"):
            claim_args = _probe_claim_args(p) + claim_args
    extra = ["--dtype", dtype_name(dtype)] if dtype is not None else []
    judge_flags = _judge_flags(reference, strict)
    args = [str(p), *claim_args, *extra, *judge_flags]
    t0 = time.perf_counter()
    if where is not None:
        data, text = _judge(args, where / "verdict.json", "ropecheck audit")
    else:
        with tempfile.TemporaryDirectory(prefix="ropecheck-audit-") as tmp:
            data, text = _judge(args, Path(tmp) / "verdict.json", "ropecheck audit")
    seconds = {"judge": time.perf_counter() - t0}
    rerun = _binary.quote([_binary.display_name(), "audit", *args])
    if data.get("kind") == "probe_outputs":
        meta = data.get("metadata") or {}
        forms = [f for f in ("prefill", "decode", "attention") if f in (data.get("forms") or {})]
        tokens = meta.get("tokens")
        attention = None
        if meta.get("form") == "attention":
            try:
                attention = tuple(int(meta[n]) for n in ("heads", "kv_heads", "value_dim"))
            except (KeyError, ValueError):
                attention = None
        return Verdict(data, text=text, dump=str(p), rerun=rerun, seconds=seconds, kernel=meta.get("kernel", "?"),
                       dtype=meta.get("dtype", "?"), forms=forms, tokens=int(tokens) if tokens else None,
                       attention=attention)
    return Verdict(data, text=text, dump=str(p), rerun=rerun, seconds=seconds)
