/* ropecheck/plugin.h — the C interface a foreign RoPE kernel implements to be audited.
 *
 * A kernel written in any language (C, C++, Rust, Zig, a CUDA/CPU wrapper...) is built as a
 * shared library exporting the functions below with C linkage. `ropecheck` dlopen()s it, asks
 * it which convention it claims to implement (ropecheck_plugin_describe), and runs the property
 * suite against the MPFR reference of that convention through ropecheck_plugin_apply (or
 * ropecheck_plugin_apply2, ABI 2). A kernel that rotates queries and keys together (ABI 3:
 * ropecheck_plugin_apply_qk) is also judged as a pair, on distinct q and k with their own head counts.
 *
 * Plain C89 (plus <stdint.h>): no C++ in this header.
 *
 * Versioning: ROPECHECK_PLUGIN_ABI is the layout of struct ropecheck_convention and the
 * signatures below. A plugin writes the ABI it was written for into `abi`. The loader reads
 * every ABI from 1 to its own: ABI 2 only appends fields to struct ropecheck_convention and adds the
 * optional ropecheck_plugin_apply2, so an ABI 1 plugin (whose struct ends at `dtype`) loads and is
 * audited exactly as before; ABI 3 adds only the optional ropecheck_plugin_apply_qk (no field, see
 * below), so ABI 1 and 2 plugins load and are audited exactly as before too; an ABI the loader does
 * not know (0, or newer than its own) is refused. Any change to this file that is not purely a
 * comment bumps it.
 *
 * ABI 3 adds NO field to struct ropecheck_convention: its layout, and the meaning of every field and
 * of its zero, are ABI 2's. So a plugin written for ABI 2 that writes `abi = ROPECHECK_PLUGIN_ABI` and
 * is rebuilt against this header (it then declares 3) is read field for field as it was read as ABI 2
 * and loses no check; without apply_qk it is audited exactly as an ABI 2 plugin. (The same rebuild of
 * a plugin written for ABI 1 is another matter, since ABI 2: it declares 2 or 3 with ABI 2's fields
 * left zero, and zero there means no negative positions and no inverse. Write the number of the ABI
 * the code was written for, not the macro.)
 *
 * ABI 1, ABI 2 and ABI 3 at a glance:
 *   ABI 1  the claim is the flat fields (head_dim .. dtype): no LongRoPE, no M-RoPE, no per-layer
 *          or indexer convention; apply() takes one position per token and must accept every int64
 *          position and honour `inverse` (the suite asks it both).
 *   ABI 2  the claim may instead be a config.json (config_path, layer, part), read by the reader
 *          `ropecheck audit --config` uses, so every convention ropecheck knows can be claimed;
 *          the kernel states its limits (max_position, negative_positions, supports_inverse), which
 *          the audit respects and reports; M-RoPE kernels take position rows through apply2().
 *   ABI 3  the optional apply_qk() rotates queries q and keys k of their own head counts (grouped-query
 *          attention) in one call, as a fused kernel does; the audit then judges them together (q and
 *          k crossed, keys at other positions or by another rule). Nothing else changes.
 *
 * Ownership and threading contract:
 *   - All buffers are owned by the caller; the plugin must not retain any pointer past the return
 *     of the call it was passed to, and must not free any of them.
 *   - ropecheck_plugin_name returns a NUL-terminated string with static storage duration
 *     (owned by the plugin, valid until the library is unloaded; the caller copies it).
 *   - The loader calls describe() once after loading, before any apply(). describe() must be
 *     deterministic: the convention it declares is fixed for the life of the library.
 *   - apply() (and apply2(), apply_qk()) may be called many times, from one thread at a time (the
 *     loader serialises calls); a plugin need not be reentrant, but must not depend on call order:
 *     every call is a pure function of its arguments (no hidden state carried between calls, e.g. a
 *     cos/sin cache that changes the result is a bug the audit will report).
 *   - No function may abort, exit or print to stdout; errors are returned as nonzero codes.
 *   - Symbols are exported with default visibility and C linkage (extern "C" in C++,
 *     #[no_mangle] pub extern "C" in Rust).
 */
#ifndef ROPECHECK_PLUGIN_H
#define ROPECHECK_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this interface. */
#define ROPECHECK_PLUGIN_ABI 3

/* Element type of the buffers of apply(), apply2() and apply_qk(). */
enum ropecheck_dtype {
  ROPECHECK_DTYPE_F32 = 0,  /* IEEE binary32 (float) */
  ROPECHECK_DTYPE_F64 = 1,  /* IEEE binary64 (double) */
  ROPECHECK_DTYPE_BF16 = 2, /* bfloat16, passed as its uint16_t bit pattern (top half of a float) */
  ROPECHECK_DTYPE_F16 = 3   /* IEEE binary16, passed as its uint16_t bit pattern */
};

/* Which coordinates of a head form a rotated pair (band i of rotary_dim/2 bands). */
enum ropecheck_layout {
  ROPECHECK_LAYOUT_INTERLEAVED = 0, /* (2i, 2i+1): GPT-J, Meta's complex view, ggml NORM */
  ROPECHECK_LAYOUT_HALF_SPLIT = 1   /* (i, i + rotary_dim/2): GPT-NeoX, HF rotate_half, ggml NEOX */
};

/* The frequency-scaling rule, named as HF's rope_scaling.rope_type. */
enum ropecheck_scaling {
  ROPECHECK_SCALING_NONE = 0,    /* "default": inv_freq_i = base^(-2i/rotary_dim) */
  ROPECHECK_SCALING_LINEAR = 1,  /* position interpolation: inv_freq_i / factor */
  ROPECHECK_SCALING_NTK = 2,     /* static NTK-aware: base' = base * factor^(d/(d-2)) */
  ROPECHECK_SCALING_DYNAMIC = 3, /* dynamic NTK (evaluated at sequence length 0 = its base schedule) */
  ROPECHECK_SCALING_YARN = 4,    /* YaRN: per-band ramp (beta_fast, beta_slow) + attention factor */
  ROPECHECK_SCALING_LLAMA3 = 5,  /* Llama 3.1: wavelength bands (low/high_freq_factor) */
  ROPECHECK_SCALING_LONGROPE = 6 /* LongRoPE: per-band factors; not expressible by the flat fields
                                    (rejected there): claim it through config_path (ABI 2) */
};

/* The convention a plugin claims to implement. Every field up to `dtype` (ABI 1) is read; fields a
 * rule does not use should still hold the HF defaults given below. The fields after `dtype` exist from
 * ABI 2 on and are read only when abi >= 2 (the caller zero-initialises the whole struct, so an ABI 1
 * plugin never sees them). ABI 3 adds no field: an ABI 3 plugin fills exactly the fields of ABI 2. */
struct ropecheck_convention {
  uint32_t abi;           /* the ABI the plugin was written for: 1, 2 or 3 (ROPECHECK_PLUGIN_ABI) */
  int32_t head_dim;       /* coordinates per head (> 0) */
  int32_t rotary_dim;     /* rotated coordinates: even, 0 < rotary_dim <= head_dim; the rest pass
                             through unchanged (head_dim * partial_rotary_factor) */
  double base;            /* rope_theta (> 1), e.g. 10000.0 */
  int32_t layout;         /* enum ropecheck_layout */
  int32_t scaling;        /* enum ropecheck_scaling */
  double factor;          /* scaling factor (> 0 for every rule but NONE; 1.0 for NONE) */
  int64_t max_position_embeddings;          /* config.json's value (> 0), e.g. 4096 */
  int64_t original_max_position_embeddings; /* pre-training length; 0 = not given */
  double beta_fast;        /* YaRN (HF default 32) */
  double beta_slow;        /* YaRN (HF default 1) */
  double low_freq_factor;  /* Llama 3 (HF default 1) */
  double high_freq_factor; /* Llama 3 (HF default 4) */
  double attention_factor; /* explicit attention scaling (YaRN, LongRoPE); <= 0: the rule's default */
  int32_t dtype;           /* enum ropecheck_dtype: element type of x and y in apply() */

  /* ---- ABI 2 (read only when abi >= 2; ABI 3 reads them exactly as ABI 2). An ABI 2 or 3 plugin
   * sets every field below; zero is each field's documented default except `layer`, whose "primary
   * layer" is -1. ---- */

  /* NULL or "": the flat fields above are the claim (as in ABI 1). Otherwise the path of a Hugging
   * Face config.json that IS the claim, read by ropecheck's config reader exactly as
   * `ropecheck audit --config <path>` reads it (every field it does not understand is an error). A
   * relative path is resolved against the directory of the plugin library itself (the file dlopen()
   * loaded, as dladdr() reports it), never against the working directory, so a plugin can ship its
   * config.json beside its .so. With a config_path the flat convention fields (rotary_dim ..
   * attention_factor) are NOT read (leave them zero); `dtype` is read as always, and `head_dim`, when
   * nonzero, must equal the config's head_dim (a guard: the buffers are sized by it). The string is
   * owned by the plugin and must stay valid until the library is unloaded (a string literal or a
   * static buffer); the loader copies it. */
  const char* config_path;
  /* With a config_path: -1 the config's primary layer (its first layer with RoPE, as `ropecheck
   * audit --config` claims), else that decoder layer's convention (0-based; a layer without RoPE or
   * past num_hidden_layers is an error naming this field). Not read without a config_path. */
  int32_t layer;
  /* With a config_path: NULL, "" or "attention": the attention's RoPE; "indexer": the RoPE of the
   * MLA lightning indexer (DeepSeek-V3.2, GLM-5), as a dump with metadata "part": "indexer". Any
   * other value, or "indexer" on a config without an indexer, is an error naming this field. Same
   * ownership as config_path; not read without a config_path. */
  const char* part;
  /* The kernel's last position (e.g. a cos/sin cache of max_position + 1 rows); 0: no limit beyond
   * the dtype's. The probe's positions past it are not asked (the audit's output lists them and says
   * why) and the properties draw positions up to it. It must cover the probe's dense positions
   * 0..63 (>= 63), else the plugin is refused. */
  int64_t max_position;
  /* Nonzero: apply() accepts negative positions (R(-p) = R(p)^T). 0: it does not (a kernel indexing
   * a cache by position): the properties then rotate by nonnegative offsets only. */
  int32_t negative_positions;
  /* Nonzero: apply() honours `inverse`. 0: the audit never passes inverse != 0; it asks R(p)^T as
   * apply at -p when negative_positions is set, else it skips the inverse property and says so. */
  int32_t supports_inverse;
  /* Rows of the position array (0 is read as 1): 1 for 1-D RoPE; for an M-RoPE claim (Qwen2-VL's
   * 3, XD-RoPE's 4) exactly the claim's number of mrope_section entries, and then
   * ropecheck_plugin_apply2 is required. */
  int32_t position_rows;
};

/* Required. Fill *out with the declared convention (including out->abi) and return 0; nonzero on
 * failure. `out` is owned by the caller and zero-initialised before the call. */
int ropecheck_plugin_describe(struct ropecheck_convention* out);

/* Required (ABI 2: unless ropecheck_plugin_apply2 is exported). Rotate `tokens` tokens of `heads`
 * heads each.
 *   x          input, tokens * heads * head_dim elements of the declared dtype, token-major
 *              (token t, head h, coordinate j at index (t * heads + h) * head_dim + j)
 *   y          output, same shape and dtype; the caller never passes y == x
 *   positions  `tokens` positions (>= 0 in the forward sense; any int64 must be accepted, except
 *              that an ABI 2 plugin is not given positions past max_position, nor negative ones
 *              when negative_positions is 0)
 *   inverse    0: R(m) x; nonzero: the inverse rotation R(-m) x (the transpose); an ABI 2 plugin
 *              with supports_inverse 0 is always given 0
 * Returns 0 on success or a nonzero error code (y's content is then unspecified). */
int ropecheck_plugin_apply(const void* x, void* y, const int64_t* positions, int64_t tokens, int32_t heads,
                           int32_t inverse);

/* Optional (ABI 2; required when position_rows > 1). apply() with position rows.
 *   positions  rows * tokens positions, [rows][tokens] row-major: row r of token t at
 *              positions[r * tokens + t]; row 0 is the temporal (text) position, rows 1, 2 (and 3)
 *              height, width (and the fourth axis of XD-RoPE), as transformers' position_ids[:, b, :]
 *              (models/qwen2_vl/modeling_qwen2_vl.py, get_rope_index). A text token has every row equal.
 *   rows       the declared position_rows
 *   the rest   as apply(): x, y token-major; `inverse` only when supports_inverse.
 * When present the loader calls it for every call (with rows == 1 for a 1-D claim), never apply().
 * Returns 0 on success or a nonzero error code. */
int ropecheck_plugin_apply2(const void* x, void* y, const int64_t* positions, int32_t rows, int64_t tokens,
                            int32_t heads, int32_t inverse);

/* Optional (ABI 3; read only when abi >= 3, never called for an ABI 1 or 2 plugin). Rotate queries and
 * keys of the same tokens in one call, as a fused qk kernel does (vLLM's rotary_emb(positions, query,
 * key), transformers' apply_rotary_pos_emb(q, k, cos, sin)).
 *   q, q_out   tokens * q_heads * head_dim elements of the declared dtype, token-major (token t, query
 *              head h, coordinate j at (t * q_heads + h) * head_dim + j)
 *   k, k_out   tokens * k_heads * head_dim elements, the same layout with k_heads
 *   positions  `tokens` positions, one per token: token t of q and token t of k are both at positions[t]
 *   q_heads, k_heads   >= 1, k_heads divides q_heads (grouped-query attention: query head h reads key head
 *              h / (q_heads / k_heads), as transformers' repeat_kv); the audit passes 8 and 2
 * Preconditions the caller keeps: the four buffers are distinct and do not overlap (q_out is never q);
 * positions are >= 0 and not past max_position (when nonzero); there is no inverse (a forward rotation
 * only); one position row (an M-RoPE claim, position_rows > 1, cannot export apply_qk: the loader refuses
 * it, naming position_rows).
 * What it must do: q_out = R(positions) q and k_out = R(positions) k under the declared convention, each
 * head alike, q_out a function of q and positions alone and k_out of k and positions alone (the audit
 * calls it again with other keys and with other queries: an output that moves is qk_crossed).
 * What the loader promises: apply() (or apply2()) stays the entry of the x form and of the properties,
 * which run exactly as without apply_qk; apply_qk is called in addition, on the probe's calls only, with
 * the isolation every call has (a crash, a hang, a write past k_out are findings naming apply_qk).
 * Returns 0 on success or a nonzero error code (the outputs are then unspecified). */
int ropecheck_plugin_apply_qk(const void* q, const void* k, void* q_out, void* k_out, const int64_t* positions,
                              int64_t tokens, int32_t q_heads, int32_t k_heads);

/* Optional. A short human-readable name of the kernel (static storage; see above). */
const char* ropecheck_plugin_name(void);

/* Pointer types, for loaders. */
typedef int (*ropecheck_plugin_describe_fn)(struct ropecheck_convention*);
typedef int (*ropecheck_plugin_apply_fn)(const void*, void*, const int64_t*, int64_t, int32_t, int32_t);
typedef int (*ropecheck_plugin_apply2_fn)(const void*, void*, const int64_t*, int32_t, int64_t, int32_t, int32_t);
typedef int (*ropecheck_plugin_apply_qk_fn)(const void*, const void*, void*, void*, const int64_t*, int64_t, int32_t,
                                            int32_t);
typedef const char* (*ropecheck_plugin_name_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ROPECHECK_PLUGIN_H */
