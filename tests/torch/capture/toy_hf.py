"""A two-layer toy decoder in transformers' calling convention, for tests of ropecheck_capture.

Written for the tests from what transformers' models/llama/modeling_llama.py does (not copied):
ToyRotaryEmbedding holds inv_freq = 1 / base^(arange(0, d, 2) / d) in fp32 and its forward(x,
position_ids) forms fp32 angles inv_freq @ position_ids, emb = cat(freqs, freqs), returns cos/sin cast
to x's dtype, once per forward pass (LlamaModel computes position_embeddings once and hands the same
cos/sin to every layer); apply_rotary_pos_emb (module level, looked up at call time like HF's) is
q*cos + rotate_half(q)*sin with cos/sin unsqueezed at unsqueeze_dim (1: q [batch, heads, seq, dim]).
Attention has grouped KV heads (GQA) and a KV cache, so decode steps continue the positions.

BUGS (each in the rotary embedding, so the positions the model is given stay right):
  bf16_positions       position_ids cast to bfloat16 before the angles are formed
  decode_off_by_one    a decode step (seq length 1) rotates at position + 1
  inv_freq_bf16        inv_freq rounded to bfloat16 (what model.to(torch.bfloat16) does to the buffer
                       when nothing restores it), then used in fp32
"""

import torch
from torch import nn

BUGS = ("none", "bf16_positions", "decode_off_by_one", "inv_freq_bf16")


class ToyConfig:
    """What the toy model's config.json says (an object with to_dict(), like a PretrainedConfig)."""

    def __init__(self, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                 rope_theta=10000.0, max_position_embeddings=4096, vocab_size=97):
        self.model_type = "llama"
        self.hidden_size, self.num_attention_heads = hidden_size, num_attention_heads
        self.num_key_value_heads, self.num_hidden_layers = num_key_value_heads, num_hidden_layers
        self.head_dim = hidden_size // num_attention_heads
        self.rope_theta, self.max_position_embeddings, self.vocab_size = rope_theta, max_position_embeddings, vocab_size

    def to_dict(self):
        return dict(vars(self))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class ToyRotaryEmbedding(nn.Module):
    def __init__(self, config, bug="none"):
        super().__init__()
        d = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        if bug == "inv_freq_bf16":
            inv_freq = inv_freq.to(torch.bfloat16).float()
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.bug = bug

    def forward(self, x, position_ids):
        pid = position_ids
        if self.bug == "decode_off_by_one" and pid.shape[-1] == 1:
            pid = pid + 1
        inv = self.inv_freq[None, :, None].float().expand(pid.shape[0], -1, 1)
        p = pid[:, None, :]
        p = p.to(torch.bfloat16).float() if self.bug == "bf16_positions" else p.float()
        freqs = (inv @ p).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class ToyAttention(nn.Module):
    def __init__(self, config, unsqueeze_dim):
        super().__init__()
        self.h, self.kvh, self.d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.kvh * self.d, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.kvh * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, config.hidden_size, bias=False)
        self.unsqueeze_dim = unsqueeze_dim

    def forward(self, hidden, position_embeddings, cache):
        b, s, _ = hidden.shape
        q = self.q_proj(hidden).view(b, s, self.h, self.d)
        k = self.k_proj(hidden).view(b, s, self.kvh, self.d)
        v = self.v_proj(hidden).view(b, s, self.kvh, self.d).transpose(1, 2)
        if self.unsqueeze_dim == 1:
            q, k = q.transpose(1, 2), k.transpose(1, 2)
        cos, sin = position_embeddings
        # A module-level name looked up at call time, as in HF's attention: capture can wrap it.
        q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=self.unsqueeze_dim)
        if self.unsqueeze_dim == 2:
            q, k = q.transpose(1, 2), k.transpose(1, 2)
        if cache is not None:
            if cache:
                k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
            cache[:] = [k, v]
        rep = self.h // self.kvh
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q.float() @ k.float().transpose(-1, -2)) / self.d ** 0.5
        t = k.shape[2]
        mask = torch.ones(s, t, dtype=torch.bool).tril(diagonal=t - s)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1).to(v.dtype)
        return self.o_proj((att @ v).transpose(1, 2).reshape(b, s, self.h * self.d))


class ToyModel(nn.Module):
    def __init__(self, config, bug="none", unsqueeze_dim=1):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = ToyRotaryEmbedding(config, bug)
        self.layers = nn.ModuleList(ToyAttention(config, unsqueeze_dim) for _ in range(config.num_hidden_layers))
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, position_ids, caches=None):
        h = self.embed(input_ids)
        position_embeddings = self.rotary_emb(h, position_ids)
        for i, layer in enumerate(self.layers):
            h = h + layer(h, position_embeddings, None if caches is None else caches[i])
        return self.lm_head(h).float()


def build(dtype=torch.float32, bug="none", unsqueeze_dim=1, seed=0, **config_kw):
    torch.manual_seed(seed)
    model = ToyModel(ToyConfig(**config_kw), bug, unsqueeze_dim)
    inv_freq = model.rotary_emb.inv_freq
    model = model.to(dtype)
    # .to(dtype) rounds buffers too; the fp32 inv_freq is put back (what HF computes and uses).
    model.rotary_emb.inv_freq = inv_freq
    return model.eval()


def generate(model, batch=1, prompt=300, steps=2, seed=1):
    """Prefill `prompt` tokens then `steps` greedy decode steps with a KV cache; returns every step's
    logits. position_ids continue from the cache length (as HF's cache_position does)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), generator=g)
    caches = [[] for _ in model.layers]
    out, past = [], 0
    with torch.no_grad():
        for _ in range(steps + 1):
            s = ids.shape[1]
            pos = torch.arange(past, past + s, dtype=torch.int64)[None].expand(batch, s)
            logits = model(ids, pos, caches)
            out.append(logits)
            past += s
            ids = logits[:, -1:].argmax(-1)
    return out
