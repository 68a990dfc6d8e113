"""A tiny transformers-style Llama with eager attention, in plain torch: the model ropecheck.capture.capture_scores
is tested on (tests/python/test_capture_scores.py). transformers is not installed here, so this module stands in
for a modeling file; it is the capture's target as `modeling_llama` would be.

Written from transformers' src/transformers/models/llama/modeling_llama.py at 5dd4a635 (read, not copied):
- `LlamaRotaryEmbedding.forward(x, position_ids)`: fp32 angles inv_freq[None, :, None] @ position_ids[:, None, :]
  with autocast off, emb = cat(freqs, freqs), cos/sin times attention_scaling (1 here) cast to x's dtype; computed
  once per forward pass by the model and handed to every layer (position_embeddings);
- `rotate_half`, and `apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1)`, a module-level name
  the attention looks up at call time, with q [bs, Hq, T, D] and k [bs, Hk, T, D];
- `repeat_kv` (query head h reads key head h // num_key_value_groups) and `eager_attention_forward(module, query,
  key, value, attention_mask, scaling, dropout=0.0, **kwargs)`: logits = q k^T * scaling, the additive mask sliced
  to the keys, softmax in fp32 cast to the query's dtype, returning (attn_output, attn_weights [bs, Hq, Tq, Tk]);
- `LlamaAttention` (layer_idx, head_dim, num_key_value_groups, scaling = head_dim**-0.5, config): q/k/v
  projections viewed (bs, T, -1, D) and transposed, apply_rotary_pos_emb, the cache's update with the rotated keys
  (DynamicCache.update: torch.cat along the sequence), eager attention unless config._attn_implementation says
  another (with output_attentions, "sdpa" falls back to eager as transformers' does); returns (attn_output,
  attn_weights);
- `LlamaModel.forward`: output_attentions defaults to config.output_attentions; cache_position = arange(past, past
  + T), position_ids = cache_position[None] unless given; the 4D causal mask of
  `_prepare_4d_causal_attention_mask_with_cache_position` (finfo(dtype).min above the diagonal, in the model dtype,
  target length past + T + 1); the decoder layers' attentions collected when output_attentions.
Left out (no bearing on RoPE or the scores): RMSNorm, the MLP, attention_mask padding, dropout, the sdpa kernel
itself ("sdpa" here is eager without its weights, what a capture sees of sdpa: None).

BUGS (config.json keeps the correct claim: rope_theta 500000):
  base_10000       the rotary embedding built with rope_theta 10000
  keys_one_ahead   the keys turned once more by one position's angles after apply_rotary_pos_emb (keys written to
                   the cache at position + 1): every key acts at n + 1
"""

import torch
from torch import nn

BUGS = ("none", "base_10000", "keys_one_ahead")


class LlamaConfig:
    """The fields a Llama config.json has that the toy reads (an object with to_dict(), as a PretrainedConfig)."""

    def __init__(self, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_hidden_layers=2,
                 rope_theta=500000.0, max_position_embeddings=131072, vocab_size=97, attn_implementation="eager"):
        self.model_type = "llama"
        self.architectures = ["LlamaForCausalLM"]
        self.hidden_size, self.num_attention_heads, self.head_dim = hidden_size, num_attention_heads, head_dim
        self.num_key_value_heads, self.num_hidden_layers = num_key_value_heads, num_hidden_layers
        self.rope_theta, self.max_position_embeddings, self.vocab_size = rope_theta, max_position_embeddings, vocab_size
        self.rope_scaling = None
        self.attention_dropout = 0.0
        self.output_attentions = False
        self._attn_implementation = attn_implementation

    def to_dict(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


def inv_freq_of(base, dim):
    """1 / base^(2i/d), fp32 [d/2] (transformers' default rope parameters)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config, base=None):
        super().__init__()
        self.register_buffer("inv_freq", inv_freq_of(config.rope_theta if base is None else base, config.head_dim),
                             persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type=x.device.type, enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


def sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """What a capture sees of an sdpa (or flash) attention: the output, no weights."""
    attn_output, _ = eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout)
    return attn_output, None


ALL_ATTENTION_FUNCTIONS = {"sdpa": sdpa_attention_forward}


class DynamicCache:
    """Per layer, the keys (after RoPE) and values seen so far, appended along the sequence."""

    def __init__(self):
        self.key_cache, self.value_cache = [], []

    def get_seq_length(self, layer_idx=0):
        return self.key_cache[layer_idx].shape[-2] if len(self.key_cache) > layer_idx else 0

    def update(self, key_states, value_states, layer_idx):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]


class LlamaAttention(nn.Module):
    def __init__(self, config, layer_idx, bug="none"):
        super().__init__()
        self.config, self.layer_idx, self.bug = config, layer_idx, bug
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=False)
        if bug == "keys_one_ahead":  # one position's angles, fp32, in the claim's (right) base
            step = inv_freq_of(config.rope_theta, self.head_dim)
            self.register_buffer("one_step", torch.cat((step, step)), persistent=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None, cache_position=None,
                **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if self.bug == "keys_one_ahead":
            c, s = self.one_step.float().cos().to(key_states.dtype), self.one_step.float().sin().to(key_states.dtype)
            key_states = key_states * c + rotate_half(key_states) * s

        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)

        attention_interface = eager_attention_forward
        if self.config._attn_implementation != "eager":
            if not (self.config._attn_implementation == "sdpa" and kwargs.get("output_attentions", False)):
                attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        attn_output, attn_weights = attention_interface(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = self.o_proj(attn_output.reshape(*input_shape, -1).contiguous())
        return attn_output, attn_weights


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, bug="none"):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx, bug)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None, cache_position=None,
                output_attentions=False):
        attn_output, weights = self.self_attn(hidden_states, position_embeddings, attention_mask,
                                              past_key_value=past_key_value, cache_position=cache_position,
                                              output_attentions=output_attentions)
        outputs = (hidden_states + attn_output,)
        if output_attentions:
            outputs += (weights,)
        return outputs


def causal_mask(sequence_length, target_length, dtype, cache_position, batch_size):
    """_prepare_4d_causal_attention_mask_with_cache_position without an attention_mask: [bs, 1, T, target]."""
    min_dtype = torch.finfo(dtype).min
    mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
    if sequence_length != 1:
        mask = torch.triu(mask, diagonal=1)
    mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    return mask[None, None, :, :].expand(batch_size, 1, -1, -1)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, bug="none"):
        super().__init__()
        if bug not in BUGS:
            raise ValueError(f"llama_eager: bug {bug!r} is not one of {BUGS}")
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = LlamaRotaryEmbedding(config, base=10000.0 if bug == "base_10000" else None)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config, i, bug) for i in range(config.num_hidden_layers))
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, position_ids=None, past_key_values=None, output_attentions=None, use_cache=True):
        """Returns (logits fp32 [bs, T, vocab], the cache, the attentions: a tuple per layer, or None)."""
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        hidden_states = self.embed_tokens(input_ids)
        bs, t = input_ids.shape
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        cache_position = torch.arange(past, past + t)
        if position_ids is None:
            position_ids = cache_position.unsqueeze(0)
        mask = causal_mask(t, past + t + 1, hidden_states.dtype, cache_position, bs)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        all_self_attns = () if output_attentions else None
        for layer in self.layers:
            out = layer(hidden_states, mask, position_embeddings, past_key_value=past_key_values,
                        cache_position=cache_position, output_attentions=output_attentions)
            hidden_states = out[0]
            if output_attentions:
                all_self_attns += (out[1],)
        return self.lm_head(hidden_states).float(), past_key_values, all_self_attns


def build(dtype=torch.float32, bug="none", seed=0, **config_kw):
    """The toy with weights from torch.manual_seed(seed), cast to dtype (inv_freq kept fp32, as transformers keeps
    its non-persistent buffer when it loads a model in a dtype), in eval mode."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**config_kw), bug)
    inv_freq = model.rotary_emb.inv_freq
    model = model.to(dtype)
    model.rotary_emb.inv_freq = inv_freq
    return model.eval()


def generate(model, prompt=40, steps=2, first=0, batch=1, seed=1):
    """Prefill `prompt` random tokens (generator seed `seed`) then `steps` greedy decode steps with the cache; the
    positions start at `first` (position_ids given explicitly when first > 0). Returns every step's logits."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), generator=g)
    cache, out, past = None, [], 0
    with torch.no_grad():
        for _ in range(steps + 1):
            t = ids.shape[1]
            pos = torch.arange(first + past, first + past + t)[None].expand(batch, t) if first else None
            logits, cache, _ = model(ids, position_ids=pos, past_key_values=cache)
            out.append(logits)
            past += t
            ids = logits[:, -1:].argmax(-1)
    return out
