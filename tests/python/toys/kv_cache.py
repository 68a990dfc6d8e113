"""Toy qk kernels with their own KV cache, and toy K-shifts, for the KV cache's tests (tests/python/test_kv_cache.py).

Written from what the engines do (read, not copied):
- PagedKeyCache: vLLM's paged KV cache: key blocks [num_blocks, BLOCK, HK, D]; a token's slot is
  block_table[p // BLOCK] * BLOCK + p % BLOCK, and reshape_and_cache (vllm/_custom_ops.py, csrc/cache_kernels.cu)
  writes key row i at slot_mapping[i]; the keys written are the rotated ones (vLLM's attention layer calls
  rotary_emb before it writes the cache). Blocks are taken on a position's first write, as the block manager
  allocates them.
- CachedQK(qk): a qk kernel with that cache: qk(q, k, positions) -> (q_out, k_out), k_out written into the cache,
  (q_out, None) returned; `ropecheck_cache` is the cache (reset(), read_keys(positions)).
- dynamic_qk(config): transformers' dynamic NTK (src/transformers/modeling_rope_utils.py, dynamic_rope_update and
  _dynamic_frequency_update: a call's length is max(position_ids) + 1; _compute_dynamic_ntk_parameters: base *
  (factor * len / max_position_embeddings - (factor - 1)) ** (dim / (dim - 2)) above max_position_embeddings)
  over q and k, half-split, angles in fp32.

Bug switches of CachedQK (keywords; all off writes what the wrapped kernel returned):
  decode_keys_at_zero  a call of one token (a decode step) writes its key rotated at position 0 (its query at its
                       position): a fused rope-and-cache-write path that reads the position of the step's first
                       row of a fresh batch
  stale_dynamic_base   (dynamic_qk only) keys written under the base of the first call after reset(), an earlier,
                       shorter length, while the queries take the base of their own call's length

The K-shifts, kv_shift(k_cached, positions, delta) -> k_shifted (check_qk(kv_shift=)):
  ropecheck.adapters.kv_shift(rotate)  right: the keys rotated by delta (llama.cpp's build_rope_shift)
  shift_not_rerotated                  llama.cpp's context shift with the K-shift skipped: the positions are
                                       renumbered by delta, the cached keys left as rotated at n
  evict_not_renumbered                 SinkCache-style eviction that compacts the kept keys into the freed slots
                                       (the rows move down by -delta) without renumbering their rotation
"""

import torch

import hf_style

BLOCK = 16  # vLLM's default block_size


class PagedKeyCache:
    """Key blocks taken on first write; read back by position through the block table."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.blocks = None  # [num_blocks, BLOCK, HK, D], grown as blocks are taken
        self.block_table = {}  # logical block (position // BLOCK) -> physical block

    def _slots(self, positions, take):
        slots = []
        for p in positions.tolist():
            logical = p // BLOCK
            if logical not in self.block_table:
                if not take:
                    raise KeyError(f"no key cached at position {p}")
                self.block_table[logical] = len(self.block_table)
            slots.append(self.block_table[logical] * BLOCK + p % BLOCK)
        return torch.tensor(slots, dtype=torch.int64)

    def write(self, k, positions):
        """reshape_and_cache: key row i at the slot of positions[i]."""
        slots = self._slots(positions.reshape(-1) if positions.dim() == 1 else positions[0], take=True)
        need = len(self.block_table)
        if self.blocks is None:
            self.blocks = torch.zeros(need, BLOCK, *k.shape[1:], dtype=k.dtype, device=k.device)
        elif self.blocks.shape[0] < need:
            more = torch.zeros(need - self.blocks.shape[0], *self.blocks.shape[1:], dtype=k.dtype, device=k.device)
            self.blocks = torch.cat((self.blocks, more))
        flat = self.blocks.view(-1, *k.shape[1:])
        flat.index_copy_(0, slots.to(k.device), k)

    def read_keys(self, positions):
        """The keys held at positions [n] ([rows, n]: row 0), [n, HK, D] as stored."""
        slots = self._slots(positions.reshape(-1) if positions.dim() == 1 else positions[0], take=False)
        return self.blocks.view(-1, *self.blocks.shape[2:]).index_select(0, slots.to(self.blocks.device)).clone()


class CachedQK:
    """A qk kernel writing its rotated keys into its own PagedKeyCache; returns (q_out, None)."""

    def __init__(self, qk, name, *, decode_keys_at_zero=False, stale_dynamic_base=False):
        self.qk, self.decode_keys_at_zero, self.stale_dynamic_base = qk, decode_keys_at_zero, stale_dynamic_base
        self.cache = PagedKeyCache()
        self.ropecheck_cache = self  # reset() and read_keys() below: the cache and the kernel's state together
        self.ropecheck_kernel = name
        self.first_len = None
        if getattr(qk, "ropecheck_max_position", None) is not None:
            self.ropecheck_max_position = qk.ropecheck_max_position

    def reset(self):
        self.cache.reset()
        self.first_len = None

    def read_keys(self, positions):
        return self.cache.read_keys(positions)

    def __call__(self, q, k, positions):
        length = int(positions.max()) + 1
        if self.first_len is None:
            self.first_len = length
        if self.stale_dynamic_base:
            q_out, _ = self.qk(q, k, positions)
            _, k_out = self.qk(q, k, positions, seq_len=self.first_len)
        else:
            q_out, k_out = self.qk(q, k, positions)
        if self.decode_keys_at_zero and positions.shape[-1] == 1:
            _, k_out = self.qk(q, k, torch.zeros_like(positions))
        self.cache.write(k_out, positions)
        return q_out, None


def dynamic_qk(config):
    """transformers' dynamic NTK over q and k: qk(q, k, positions, seq_len=None) rotates both, half-split, at the
    base of seq_len (default: the call's length, max(positions) + 1), cos/sin formed in fp32 and cast to q's
    dtype (LlamaRotaryEmbedding.forward with autocast off; apply_rotary_pos_emb)."""
    config = hf_style._load_config(config)

    def qk(q, k, positions, seq_len=None):
        length = int(positions.max()) + 1 if seq_len is None else seq_len
        inv_freq, _ = hf_style.compute_dynamic_ntk_parameters(config, length)
        freqs = positions.float()[:, None] * inv_freq.to(positions.device)[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(q.dtype)[:, None, :], emb.sin().to(q.dtype)[:, None, :]
        return (q * cos + hf_style.rotate_half(q) * sin, k * cos + hf_style.rotate_half(k) * sin)

    qk.__name__ = qk.__qualname__ = "dynamic_qk"
    return qk


def shift_not_rerotated(k_cached, positions, delta):
    """The K-shift skipped: the keys come back as they were cached (rotated at n, now numbered n + delta)."""
    return k_cached.clone()


def evict_not_renumbered(k_cached, positions, delta):
    """SinkCache-style eviction that compacts the kept keys into the rows freed by the evicted span (row j of the
    kept window moves to row j + delta of the cache) without re-rotating them to their new numbers."""
    window = torch.cat((torch.zeros_like(k_cached[:-delta]), k_cached)) if delta < 0 else k_cached
    return window[-delta:].clone() if delta < 0 else window.clone()
