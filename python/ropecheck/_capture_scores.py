"""ropecheck.capture's capture at the score (capture_scores): per attention call of a transformers-style model with
eager attention, q and k before RoPE, their positions and the attention weights, as `ropecheck audit --scores` dumps
(docs/scores.md, docs/capture.md). Imported by ropecheck.capture, whose names these are; it extends
ropecheck_capture (how apply_rotary_pos_emb is wrapped and positions found) and lives apart to keep each file one idea.
"""

import os

import torch

from .capture import (DEFAULT_MAX_CALLS, _copy, canonical_arguments, detect_convention, ropecheck_capture,
                      write_safetensors)
from .errors import CaptureError


def find_attention_modules(root):
    """(name, module) of every submodule of root with an int `num_key_value_groups`: what transformers'
    eager_attention_forward(module, query, key, value, ...) reads off the module it is handed (repeat_kv's n_rep)."""
    return [(name or type(m).__name__, m) for name, m in root.named_modules()
            if isinstance(getattr(m, "num_key_value_groups", None), int)]


class capture_scores(ropecheck_capture):
    """Context manager: per attention call of a transformers-style model, the queries and keys BEFORE RoPE (the q and
    k its modeling module hands apply_rotary_pos_emb), their positions and the eager attention weights, written as
    `ropecheck audit --scores` dumps (docs/scores.md, "Scores and weights as data"; docs/capture.md):

        with capture_scores(modeling_llama, "apply_rotary_pos_emb", out="sdump/", model=model):
            model.generate(**inputs, max_new_tokens=2)

    What it assumes (each checked where it can be, else said in docs/capture.md):
      - target.name is transformers' apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1), looked
        up at call time, called once per attention forward, inside the attention module, with the whole head:
        q [bs, Hq, T, D] and k [bs, Hk, T, D] (unsqueeze_dim=1) or [bs, T, H, D] (2). Positions come from the rotary
        embedding module as for ropecheck_capture (cos/sin matched by identity), one row per batch row.
      - The attention modules are model's submodules with an int num_key_value_groups (eager_attention_forward reads
        it; query head h reads key head h // num_key_value_groups, repeat_kv), or attention_modules=[...]. Each
        returns (attn_output, attn_weights, ...) with attn_weights [bs, Hq, Tq, Tk] after the softmax: eager
        attention. A config saying _attn_implementation other than "eager" is refused (sdpa and flash return no
        weights); during the block every config found (model.config, each module's .config) has output_attentions
        set True and restored after (transformers' model forward reads it when the call does not say; older
        versions compute the weights only then). The model's logits are not changed.
      - softmax_scale is the module's `scaling` (transformers: head_dim**-0.5, query_pre_attn_scalar**-0.5 for Gemma);
        without one the file says none and the judge takes the claim's head_dim^-0.5.
      - A KV cache holds the keys in order (DynamicCache: torch.cat along the sequence): the weights' Tk keys are the
        keys of this layer's earlier calls (kept by the capture, before RoPE) followed by this call's. A call whose
        Tk is its own T starts again; any other Tk (a sliding-window or static cache) is not written (a note).
      - eval mode (a module in training mode with attention dropout is refused: its weights are after dropout); no
        padding (a padded row's weights are not RoPE's); the layer is the module's layer_idx, else its index among
        the attention modules.
    Output (out/): callNNNN-layerL-scores.safetensors per recorded attention call (batch rows > 1:
    callNNNN-layerL-rowB-scores.safetensors), holding q [1, Tq, Hq, D], k [1, Tk, Hk, D] (before RoPE, the model's
    dtype), q_positions [1, Tq] and k_positions [1, Tk] I64, weights [1, Hq, Tq, Tk] (the dtype eager returns; the
    leading batch of 1 always written: see _record_scores), and __metadata__ layer,
    softmax_scale, call, forward, row, module, keys; config.json and index.json as ropecheck_capture writes them.
    The scores door reads softmax_scale from the file but not layer: audit with --layer L (ropecheck.audit(...,
    layer=L, scores=True)) where the config has per-layer conventions. Keyword arguments as ropecheck_capture's
    (config, positions_from, max_calls: attention calls written, layers, quiet) plus model= (required) and
    attention_modules=."""

    def __init__(self, target, name, out, *, model, config=None, positions_from=None, attention_modules=None,
                 max_calls=DEFAULT_MAX_CALLS, layers=None, quiet=False):
        if not isinstance(model, torch.nn.Module):
            raise CaptureError("capture_scores needs model=<the model> (an nn.Module): its attention modules give the "
                               "weights, their scaling and layer index, and its forward starts a forward pass")
        super().__init__(target, name, out, convention="hf", config=config, positions_from=positions_from, model=model,
                         max_calls=max_calls, layers=layers, quiet=quiet)
        self.attention_modules_arg = attention_modules
        self._attention = {}       # id(module) -> (name, layer, module)
        self._inside = []          # the attention modules whose forward is running (innermost last)
        self._pending = {}         # id(module) -> this call's q, k before RoPE and positions
        self._keys = {}            # id(module) -> [(k [bs, T, Hk, D], positions [bs, T])]: the cache's keys before RoPE
        self._asked = []           # (config, its output_attentions before the block): restored on exit

    # -- setup ------------------------------------------------------------------------------------
    def __enter__(self):
        original = getattr(self.target, self.name, None)
        if original is not None and callable(original) and detect_convention(original) == "vllm":
            raise CaptureError(f"capture_scores wraps transformers' apply_rotary_pos_emb(q, k, cos, sin, ...); "
                               f"{self._target_label()}.{self.name} has vLLM's parameters (vLLM's attention returns no "
                               "weights: capture its rotary with ropecheck_capture)")
        self._find_attention()
        super().__enter__()
        try:
            self.layer_rule = ("layer = the attention module's layer_idx (else its index among the attention modules "
                               f"{', '.join(n for n, _, _ in self._attention.values())})")
            for label, layer, m in self._attention.values():
                self._handles.append(m.register_forward_pre_hook(self._attention_starts))
                self._handles.append(m.register_forward_hook(self._attention_ends))
            self._ask_output_attentions()
        except BaseException:
            self._restore()
            raise
        return self

    def _find_attention(self):
        if self.attention_modules_arg is not None:
            found = [(type(m).__name__, m) for m in self.attention_modules_arg]
            if not all(isinstance(m, torch.nn.Module) for _, m in found):
                raise CaptureError("attention_modules= must be the attention nn.Modules (e.g. [l.self_attn for l in "
                                   "model.model.layers])")
        else:
            found = find_attention_modules(self.model)
        if not found:
            raise CaptureError(
                f"no attention module in {type(self.model).__name__}: capture_scores looks for submodules with an int "
                "num_key_value_groups (what transformers' eager_attention_forward reads); pass attention_modules=[...]")
        idx = [getattr(m, "layer_idx", None) for _, m in found]
        by_idx = all(isinstance(i, int) for i in idx) and len(set(idx)) == len(idx)
        for n, ((label, m), i) in enumerate(zip(found, idx)):
            cfg = getattr(m, "config", None) or getattr(self.model, "config", None)
            impl = getattr(cfg, "_attn_implementation", None)
            if isinstance(impl, str) and impl != "eager":
                raise CaptureError(
                    f"{label}: config._attn_implementation is {impl!r}; the weights capture_scores records are eager "
                    "attention's (sdpa and flash attention return none): load the model with "
                    "attn_implementation=\"eager\"")
            if m.training and float(getattr(m, "attention_dropout", 0) or 0) > 0:
                raise CaptureError(f"{label} is in training mode with attention dropout: its weights are after dropout; "
                                   "call model.eval() first")
            self._attention[id(m)] = (label, i if by_idx else n, m)

    def _ask_output_attentions(self):
        configs = [getattr(self.model, "config", None)] + [getattr(m, "config", None) for _, _, m in
                                                           self._attention.values()]
        seen = set()
        for cfg in configs:
            if cfg is None or id(cfg) in seen or isinstance(cfg, dict) or not hasattr(cfg, "output_attentions"):
                continue
            seen.add(id(cfg))
            before = getattr(cfg, "output_attentions")
            try:
                setattr(cfg, "output_attentions", True)
            except ValueError as e:  # transformers' setter refuses it unless the attention is eager
                raise CaptureError(f"output_attentions=True refused by the model's config: {e}") from None
            self._asked.append((cfg, before))

    def _restore(self):
        super()._restore()
        for cfg, before in reversed(self._asked):
            setattr(cfg, "output_attentions", before)
        self._asked = []
        self._inside, self._pending, self._keys = [], {}, {}

    # -- the attention module's forward, around the apply call ------------------------------------
    def _new_forward(self):
        super()._new_forward()
        self._inside, self._pending = [], {}  # a forward that raised leaves nothing behind

    def _attention_starts(self, module, args):
        self._inside.append(module)

    def _attention_ends(self, module, args, output):
        if self._inside and self._inside[-1] is module:
            self._inside.pop()
        rec = self._pending.pop(id(module), None)
        if rec is None:
            return None
        label, layer, _ = self._attention[id(module)]
        weights = output[1] if isinstance(output, (tuple, list)) and len(output) > 1 else None
        if not isinstance(weights, torch.Tensor):
            raise CaptureError(
                f"{label} (layer {layer}) returned no attention weights (output[1] is {type(weights).__name__}): "
                "capture_scores needs eager attention with output_attentions (load the model with "
                "attn_implementation=\"eager\"; pass output_attentions=True if the model does not read its config)")
        self._record_scores(module, rec, weights.detach())
        return None

    def _record_hf(self, before, args, kwargs, is_class, result=None):
        """Before the apply call (the wrapper's first call of this): q and k before RoPE and their positions, kept for
        the attention module it runs in; nothing after the call."""
        a = canonical_arguments(self._sig, "hf", args, kwargs, is_class)
        names = [k for k in a if k != "self"]
        q, k, cos, sin = (a[n] for n in names[:4])
        if not self._inside or id(self._inside[-1]) not in self._attention:
            self._note(f"{self.name} called outside the attention modules: not recorded")
            return None
        module = self._inside[-1]
        label, layer, _ = self._attention[id(module)]
        if self.layers is not None and layer not in self.layers:
            return None
        if self.max_calls is not None and self.calls_recorded >= self.max_calls:
            return None
        if id(module) in self._pending:
            raise CaptureError(f"{label} called {self.name} twice in one forward: capture_scores pairs one call (q and "
                               "k of the whole head) with the module's weights")
        if self.forward_index < 0:
            self._new_forward()
        pos, _, source = self._positions_for(cos, sin, a.get("position_ids"))
        u = int(a.get("unsqueeze_dim", 1))
        qt, kt = (self._tokens_first(x, u, tag) for x, tag in ((q, "q"), (k, "k")))
        bs, t = qt.shape[:2]
        if pos.dim() != 2 and pos.dim() != 1:
            raise CaptureError(f"position_ids of shape {list(pos.shape)} (M-RoPE?): the scores door takes one position "
                               "per token")
        try:
            pos = pos.reshape(-1, pos.shape[-1]).expand(bs, t)
        except RuntimeError:
            raise CaptureError(f"position_ids of shape {list(pos.shape)} do not match q's [batch {bs}, tokens {t}]: "
                               "pass positions_from=<the rotary module fed these tokens>") from None
        if pos.dtype.is_floating_point:
            if not torch.equal(pos, pos.round()):
                raise CaptureError("position_ids are not integers: the scores door takes integer positions")
        self._pending[id(module)] = {"call": self.calls_seen - 1, "forward": self.forward_index, "layer": layer,
                                     "q": qt, "k": kt, "pos": pos.to(torch.int64), "source": source}
        return None

    @staticmethod
    def _tokens_first(x, u, tag):
        """[bs, H, T, D] (u = 1) or [bs, T, H, D] (u = 2) -> a copy [bs, T, H, D]."""
        if x.dim() != 4 or u % 4 not in (1, 2):
            raise CaptureError(f"{tag} of shape {list(x.shape)} with unsqueeze_dim={u}: capture_scores reads "
                               "[batch, heads, seq, head_dim] (1) or [batch, seq, heads, head_dim] (2)")
        x = _copy(x)
        return x.transpose(1, 2) if u % 4 == 1 else x

    # -- one attention call written ---------------------------------------------------------------
    def _record_scores(self, module, rec, weights):
        label, layer, _ = self._attention[id(module)]
        q, k, pos = rec["q"], rec["k"], rec["pos"]
        bs, tq, hq, _ = q.shape
        if weights.dim() != 4 or tuple(weights.shape[:3]) != (bs, hq, tq):
            raise CaptureError(f"{label}: attention weights of shape {list(weights.shape)}, expected [{bs}, {hq}, {tq}, "
                               "keys] ([batch, query heads, query tokens, key tokens], eager attention's)")
        tk = weights.shape[3]
        held = [e for e in self._keys.get(id(module), []) if e[0].shape[0] == bs]
        cached = sum(e[0].shape[1] for e in held)
        if tk == tq:
            held = []  # no earlier keys: a new sequence
        elif tk != cached + tq:
            self._keys[id(module)] = []
            self._note(f"layer {layer}: the weights have {tk} keys but the capture holds {cached} earlier keys and "
                       f"{tq} new ones (a sliding-window or static cache?): not written")
            return
        held.append((k, pos))
        self._keys[id(module)] = held
        keys = torch.cat([e[0] for e in held], dim=1)
        k_pos = torch.cat([e[1] for e in held], dim=1)
        scale = getattr(module, "scaling", None)
        for b in range(bs):
            row = "" if bs == 1 else f"-row{b}"
            fname = f"call{rec['call']:04d}-layer{layer}{row}-scores.safetensors"
            # Each with its batch of 1 kept: the door drops one leading 1, so a decode step's q [1, Hq, D] (one
            # query token) would be read as [Hq, D]; [1, 1, Hq, D] is read as [1, Hq, D].
            tensors = [("q", q[b:b + 1]), ("k", keys[b:b + 1]), ("q_positions", pos[b:b + 1]),
                       ("k_positions", k_pos[b:b + 1]), ("weights", weights[b:b + 1])]
            meta = {"capture": "capture_scores", "call": str(rec["call"]), "forward": str(rec["forward"]),
                    "layer": str(layer), "row": str(b), "module": label, "positions_from": rec["source"],
                    "keys": f"{tk - tq} cached + {tq} of this call", "layer_rule": self.layer_rule,
                    "torch_version": torch.__version__}
            if isinstance(scale, (int, float)) and not isinstance(scale, bool):
                meta["softmax_scale"] = f"{float(scale):.17g}"
            else:
                self._note(f"{label} has no numeric `scaling`: softmax_scale left to the claim's head_dim^-0.5")
            write_safetensors(os.path.join(self.out, fname), tensors, meta)
            self.files.append({
                "file": fname, "call": rec["call"], "forward": rec["forward"], "layer": layer, "row": b,
                "tensor": "scores", "dtype": str(weights.dtype).replace("torch.", ""),
                "q_shape": list(q[b:b + 1].shape), "k_shape": list(keys[b:b + 1].shape),
                "weights_shape": list(weights[b:b + 1].shape),
                "softmax_scale": meta.get("softmax_scale"),
                "q_positions": [int(pos[b].min()), int(pos[b].max())],
                "k_positions": [int(k_pos[b].min()), int(k_pos[b].max())],
                "position_min": int(min(pos[b].min(), k_pos[b].min())),
                "position_max": int(max(pos[b].max(), k_pos[b].max()))})
        self.calls_recorded += 1

    # -- teardown -----------------------------------------------------------------------------------
    def _index(self, completed):
        index = super()._index(completed)
        index.update({"capture": "capture_scores", "kind": "scores",
                      "attention_modules": [n for n, _, _ in self._attention.values()]})
        return index

    def _audit_line(self):
        f = self.files[0]
        return (f"  audit: ropecheck audit --scores {os.path.join(self.out, f['file'])} --config "
                f"{os.path.join(self.out, 'config.json')} --layer {f['layer']}  (index.json lists every file)")
