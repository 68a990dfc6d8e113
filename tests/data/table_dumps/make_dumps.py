"""Writes the small table dumps of tests/cli/table_cli.cmake (run once; the files are committed):
  paper_d8.safetensors    the paper's interleaved sinusoid, d = 8, positions 0..15 (numpy float64, then float32)
  learned_rows.safetensors rows 0..9 of learned_weights.npy [10, 4] at offset 0, and position 10 refused
  mismatch.safetensors    rows [3, 4] with 2 positions
  extra.safetensors       paper_d8 with a tensor the table door does not read
Usage: PYTHONPATH=python /usr/bin/python3 tests/data/table_dumps/make_dumps.py
"""
import os

import numpy as np

from ropecheck import _safetensors as st

here = os.path.dirname(os.path.abspath(__file__))
pos = np.arange(16)
enc = np.array([[p / np.power(10000, 2 * (j // 2) / 8) for j in range(8)] for p in pos])
rows = np.empty((16, 8))
rows[:, 0::2] = np.sin(enc[:, 0::2])
rows[:, 1::2] = np.cos(enc[:, 1::2])
st.write(os.path.join(here, "paper_d8.safetensors"), {"rows": rows.astype(np.float32), "positions": pos.astype(np.int64)})
st.write(os.path.join(here, "extra.safetensors"),
         {"rows": rows.astype(np.float32), "positions": pos.astype(np.int64), "x": np.zeros(1, np.float32)})
w = (np.random.default_rng(10).standard_normal((10, 4)) * 0.02).astype(np.float32)
np.save(os.path.join(here, "learned_weights.npy"), w)
np.save(os.path.join(here, "learned_weights_transposed.npy"), np.ascontiguousarray(w.T))
st.write(os.path.join(here, "learned_rows.safetensors"),
         {"rows": w, "positions": np.arange(10, dtype=np.int64), "refused": np.array([10], np.int64)})
st.write(os.path.join(here, "mismatch.safetensors"),
         {"rows": np.zeros((3, 4), np.float32), "positions": np.arange(2, dtype=np.int64)})
