"""A two-layer toy decoder in vLLM's calling convention, for tests of ropecheck_capture.

Written for the tests from what vLLM's model_executor/layers/rotary_embedding/base.py does (not
copied): RotaryEmbedding(head_size, rotary_dim, max_position_embeddings, base, is_neox_style, dtype)
precomputes cos_sin_cache [max_pos, rotary_dim] = cat(cos, sin) of fp32 angles arange(max_pos) x
inv_freq, cast to the model dtype; forward(positions, query, key) indexes it by positions, views
query [tokens, heads * head_size] as [tokens, heads, head_size], rotates the first rotary_dim
coordinates (neox: halves (i, i + r/2); GPT-J: pairs (2i, 2i + 1)) in query's dtype and, like
vLLM's CUDA kernel, writes the result into query/key in place. One RotaryEmbedding is shared by
every layer (vLLM's get_rope caches it) and the same positions tensor is handed to every layer.

BUGS:
  cache_bf16   the cos/sin cache is stored in bfloat16 for an fp32 model
"""

import torch
from torch import nn

BUGS = ("none", "cache_bf16")


class RotaryEmbedding(nn.Module):
    def __init__(self, head_size, rotary_dim, max_position_embeddings, base, is_neox_style, dtype, bug="none"):
        super().__init__()
        self.head_size, self.rotary_dim = head_size, rotary_dim
        self.max_position_embeddings, self.base, self.is_neox_style = max_position_embeddings, base, is_neox_style
        inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
        t = torch.arange(max_position_embeddings, dtype=torch.float)
        freqs = torch.outer(t, inv_freq)
        cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1)
        self.register_buffer("cos_sin_cache", cache.to(torch.bfloat16 if bug == "cache_bf16" else dtype),
                             persistent=False)

    def _rotate(self, x, cos, sin):
        cos, sin = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)
        if self.is_neox_style:
            h = x.shape[-1] // 2
            x1, x2 = x[..., :h], x[..., h:]
        else:
            x1, x2 = x[..., 0::2], x[..., 1::2]
        o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        if self.is_neox_style:
            return torch.cat((o1, o2), dim=-1)
        return torch.stack((o1, o2), dim=-1).flatten(-2)

    def forward(self, positions, query, key=None):
        positions = positions.flatten()
        n = positions.shape[0]
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        for t in (query, key):
            if t is None:
                continue
            v = t.view(n, -1, self.head_size)
            v[..., : self.rotary_dim] = self._rotate(v[..., : self.rotary_dim].clone(), cos, sin)  # in place
        return query, key


class ToyLayer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_size, rotary):
        super().__init__()
        self.h, self.kvh, self.d = heads, kv_heads, head_size
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * head_size, bias=False)
        self.o = nn.Linear(heads * head_size, hidden, bias=False)
        self.rotary_emb = rotary

    def forward(self, positions, h, cache):
        q, k, v = self.qkv(h).split([self.h * self.d, self.kvh * self.d, self.kvh * self.d], dim=-1)
        q, k = q.contiguous(), k.contiguous()
        q, k = self.rotary_emb(positions, q, k)
        if cache:
            k, v = torch.cat((cache[0], k)), torch.cat((cache[1], v))
        cache[:] = [k, v]
        n, t = q.shape[0], k.shape[0]
        qh = q.view(n, self.h, self.d).transpose(0, 1).float()
        rep = self.h // self.kvh
        kh = k.view(t, self.kvh, self.d).transpose(0, 1).repeat_interleave(rep, 0).float()
        vh = v.view(t, self.kvh, self.d).transpose(0, 1).repeat_interleave(rep, 0)
        att = (qh @ kh.transpose(-1, -2)) / self.d ** 0.5
        mask = torch.ones(n, t, dtype=torch.bool).tril(diagonal=t - n)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1).to(vh.dtype)
        return self.o((att @ vh).transpose(0, 1).reshape(n, self.h * self.d))


class ToyModel(nn.Module):
    def __init__(self, dtype, is_neox_style, bug="none", hidden=256, heads=4, kv_heads=2, layers=2,
                 rotary_fraction=1.0, base=10000.0, max_pos=4096, vocab=97):
        super().__init__()
        d = hidden // heads
        rd = int(d * rotary_fraction)
        self.config = {"model_type": "llama", "hidden_size": hidden, "num_attention_heads": heads,
                       "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "head_dim": d,
                       "rope_theta": base, "max_position_embeddings": max_pos, "vocab_size": vocab}
        if rotary_fraction != 1.0:
            # HF Llama's code rotates the whole head and ignores partial_rotary_factor while vLLM honours it:
            # a partial toy claims a family whose HF code slices q[..., :rotary_dim] (Nemotron).
            self.config["model_type"] = "nemotron"
            self.config["partial_rotary_factor"] = rotary_fraction
        if not is_neox_style:
            self.config["ropecheck_layout"] = "interleaved"  # GPT-J pairs: the claim says so
        self.embed = nn.Embedding(vocab, hidden)
        self.rotary = RotaryEmbedding(d, rd, max_pos, base, is_neox_style, dtype, bug)
        self.layers = nn.ModuleList(ToyLayer(hidden, heads, kv_heads, d, self.rotary) for _ in range(layers))
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, positions, caches):
        h = self.embed(input_ids)
        for layer, cache in zip(self.layers, caches):
            h = h + layer(positions, h, cache)
        return self.lm_head(h).float()


def build(dtype=torch.float32, is_neox_style=True, bug="none", seed=0, **kw):
    torch.manual_seed(seed)
    model = ToyModel(dtype, is_neox_style, bug, **kw)
    cache = model.rotary.cos_sin_cache
    model = model.to(dtype)
    model.rotary.cos_sin_cache = cache  # the cache keeps the dtype it was built in
    return model.eval()


def generate(model, prompt=300, steps=2, seed=1):
    """Prefill `prompt` tokens (flattened, vLLM style) then `steps` greedy decode steps."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config["vocab_size"], (prompt,), generator=g)
    caches = [[] for _ in model.layers]
    out, past = [], 0
    with torch.no_grad():
        for _ in range(steps + 1):
            positions = torch.arange(past, past + ids.shape[0], dtype=torch.int64)
            logits = model(ids, positions, caches)
            out.append(logits)
            past += ids.shape[0]
            ids = logits[-1:].argmax(-1)
    return out
