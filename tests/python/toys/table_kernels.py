"""Toy absolute position embeddings written as the families' code computes them (plain torch, no transformers), for the
table door's tests (tests/python/test_table.py). Each cites the code it follows; each bug switch is one a port makes.

- transformers models/m2m_100/modeling_m2m_100.py M2M100SinusoidalPositionalEmbedding.get_embedding:
  half_dim = d // 2; emb = log(10000) / (half_dim - 1); emb = exp(arange(half_dim, int64).float() * -emb);
  emb = arange(num, int64).float()[:, None] * emb[None]; cat([sin, cos], 1); emb[padding_idx] = 0; offset 2;
  create_position_ids_from_input_ids: (cumsum(ids != pad) + past) * mask + padding_idx
- transformers models/whisper/modeling_whisper.py sinusoids(length, channels): the same frequencies, [sin | cos];
  WhisperEncoder.embed_positions = nn.Embedding(max_source_positions, d) holding them
- transformers models/distilbert/modeling_distilbert.py _create_sinusoidal_embeddings: numpy float64
  pos / 10000^(2 (j // 2) / dim); out[:, 0::2] = sin, out[:, 1::2] = cos
- transformers models/opt/modeling_opt.py OPTLearnedPositionalEmbedding: nn.Embedding(num + 2); OPTDecoder.forward:
  positions = cumsum(mask) * mask - 1, read at + 2
- transformers models/roberta/modeling_roberta.py create_position_ids_from_input_ids (padding_idx = pad_token_id)
- transformers models/whisper/modeling_whisper.py WhisperPositionalEmbedding: nn.Embedding(max_target_positions, d)
"""

import math

import numpy as np
import torch


def fairseq_table(num, d, padding_idx=None, *, denominator=None, interleave=False):
    half = d // 2
    emb = math.log(10000) / (denominator if denominator is not None else half - 1)
    emb = torch.exp(torch.arange(half, dtype=torch.int64).float() * -emb)
    emb = torch.arange(num, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
    if interleave:
        emb = torch.stack([torch.sin(emb), torch.cos(emb)], dim=2).reshape(num, d)
    else:
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


class M2M100Positions:
    """fn(input_ids, attention_mask) -> rows [B, T, d] (the ids form), as M2M100's module computes them."""

    def __init__(self, d=64, padding_idx=1, *, dtype=torch.float32, no_offset=False, count_padding=False):
        self.d, self.pad, self.dtype = d, padding_idx, dtype
        self.no_offset, self.count_padding = no_offset, count_padding
        self.ropecheck_table_form = "ids"

    def __call__(self, input_ids, attention_mask):
        mask = input_ids.ne(self.pad).int()
        if self.count_padding:  # a port that numbers every token from the sequence's start
            pos = torch.arange(input_ids.shape[1]).unsqueeze(0).expand_as(input_ids) + self.pad + 1
        else:
            pos = (torch.cumsum(mask, dim=1).type_as(mask)) * mask + self.pad
        if self.no_offset:  # indexed from 0: positions without padding_idx + 1
            pos = torch.where(mask.bool(), pos - (self.pad + 1), pos)
        table = fairseq_table(int(pos.max()) + 1 + 2, self.d, self.pad).to(self.dtype)
        return table.index_select(0, pos.reshape(-1)).reshape(*pos.shape, -1)


class SinusoidPositions:
    """fn(positions) -> rows, a sinusoid evaluated on the fly in fp32 (fairseq's rule) at positions + offset."""

    def __init__(self, d=64, offset=2, *, dtype=torch.float32, denominator=None, interleave=False, positions_bf16=False):
        self.d, self.offset, self.dtype = d, offset, dtype
        self.denominator, self.interleave, self.positions_bf16 = denominator, interleave, positions_bf16

    def __call__(self, positions):
        half = self.d // 2
        emb = math.log(10000) / (self.denominator if self.denominator is not None else half - 1)
        freq = torch.exp(torch.arange(half, dtype=torch.int64).float() * -emb)
        p = (positions + self.offset).float()
        if self.positions_bf16:
            p = p.to(torch.bfloat16).float()
        a = p.unsqueeze(1) * freq.unsqueeze(0)
        if self.interleave:
            rows = torch.stack([torch.sin(a), torch.cos(a)], dim=2).reshape(len(positions), self.d)
        else:
            rows = torch.cat([torch.sin(a), torch.cos(a)], dim=1)
        return rows.to(self.dtype)


class DistilBertSinusoid:
    """fn(positions) -> rows: the table as _create_sinusoidal_embeddings fills it, read like nn.Embedding."""

    def __init__(self, n_pos=512, dim=64, *, dtype=torch.float32, concatenate=False):
        enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
        out = torch.empty(n_pos, dim)
        if concatenate:  # a port writing [sin | cos]
            out[:, : dim // 2] = torch.FloatTensor(np.sin(enc[:, 0::2]))
            out[:, dim // 2:] = torch.FloatTensor(np.cos(enc[:, 1::2]))
        else:
            out[:, 0::2] = torch.FloatTensor(np.sin(enc[:, 0::2]))
            out[:, 1::2] = torch.FloatTensor(np.cos(enc[:, 1::2]))
        self.emb = torch.nn.Embedding(n_pos, dim).to(dtype)
        with torch.no_grad():
            self.emb.weight.copy_(out.to(dtype))

    def __call__(self, positions):
        return self.emb(positions).detach()


class LearnedTable:
    """fn(positions) -> rows of a learned nn.Embedding at positions + offset; clamp / wrap past the end are the bugs."""

    def __init__(self, rows, d, *, offset=0, dtype=torch.float32, seed=0, clamp=False, wrap=False, index_offset=None):
        g = torch.Generator().manual_seed(seed)
        self.emb = torch.nn.Embedding(rows, d)
        with torch.no_grad():
            self.emb.weight.copy_(torch.randn(rows, d, generator=g) * 0.02)
        self.emb = self.emb.to(dtype)
        self.offset = offset if index_offset is None else index_offset
        self.clamp, self.wrap, self.rows = clamp, wrap, rows

    @property
    def weight(self):
        return self.emb.weight

    def __call__(self, positions):
        idx = positions + self.offset
        if self.clamp:
            idx = idx.clamp(max=self.rows - 1)
        if self.wrap:
            idx = idx % self.rows
        return self.emb(idx).detach()


class OptPositions:
    """fn(input_ids, attention_mask) -> rows, OPT's rule (the mask's cumsum, + 2), or a port indexing from 0."""

    def __init__(self, max_positions=128, d=32, *, dtype=torch.float32, seed=1, no_offset=False):
        self.table = LearnedTable(max_positions + 2, d, offset=0, dtype=dtype, seed=seed)
        self.no_offset = no_offset
        self.ropecheck_table_form = "ids"

    @property
    def weight(self):
        return self.table.weight

    def __call__(self, input_ids, attention_mask):
        pos = (torch.cumsum(attention_mask, dim=1) * attention_mask - 1).long()
        return self.table.emb((pos + (0 if self.no_offset else 2)).clamp(min=0)).detach()


class RobertaPositions:
    """fn(input_ids, attention_mask) -> rows, RoBERTa's rule, or a port counting the padding (arange + padding_idx + 1)."""

    def __init__(self, max_positions=130, d=32, padding_idx=1, *, dtype=torch.float32, seed=2, count_padding=False):
        self.table = LearnedTable(max_positions, d, dtype=dtype, seed=seed)
        self.pad, self.count_padding = padding_idx, count_padding
        self.ropecheck_table_form = "ids"

    @property
    def weight(self):
        return self.table.weight

    def __call__(self, input_ids, attention_mask):
        if self.count_padding:
            pos = torch.arange(input_ids.shape[1]).unsqueeze(0).expand_as(input_ids) + self.pad + 1
        else:
            mask = input_ids.ne(self.pad).int()
            pos = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + self.pad
        return self.table.emb(pos).detach()


class GPTBigCodePositions:
    """fn(input_ids, attention_mask) -> rows: GPT-BigCode's wpe read at the mask's cumsum - 1, padding at row 1
    (transformers models/gpt_bigcode/modeling_gpt_bigcode.py GPTBigCodeModel.forward)."""

    def __init__(self, max_positions=64, d=16, *, dtype=torch.float32, seed=5):
        self.table = LearnedTable(max_positions, d, dtype=dtype, seed=seed)
        self.ropecheck_table_form = "ids"

    @property
    def weight(self):
        return self.table.weight

    def __call__(self, input_ids, attention_mask):
        pos = attention_mask.long().cumsum(-1) - 1
        pos = pos.masked_fill(attention_mask == 0, 1)
        return self.table.emb(pos).detach()


class WhisperEncoderTable:
    """fn(positions) -> rows of Whisper's encoder table: nn.Embedding(max_source_positions, d) holding sinusoids(),
    [sin | cos] with log(10000) / (d/2 - 1) in fp32 (transformers models/whisper/modeling_whisper.py sinusoids)."""

    def __init__(self, rows=1500, d=16, *, dtype=torch.float32):
        self.emb = torch.nn.Embedding(rows, d)
        with torch.no_grad():
            self.emb.weight.copy_(fairseq_table(rows, d))
        self.emb = self.emb.to(dtype)

    def __call__(self, positions):
        return self.emb(positions).detach()
