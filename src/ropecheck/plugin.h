/* ropecheck/plugin.h — the C interface a foreign RoPE kernel implements to be audited.
 *
 * A kernel written in any language (C, C++, Rust, Zig, a CUDA/CPU wrapper...) is built as a
 * shared library exporting the functions below with C linkage. `ropecheck` dlopen()s it, asks
 * it which convention it claims to implement (ropecheck_plugin_describe), and runs the property
 * suite against the MPFR reference of that convention through ropecheck_plugin_apply.
 *
 * Plain C89 (plus <stdint.h>): no C++ in this header.
 *
 * Versioning: ROPECHECK_PLUGIN_ABI is the layout of struct ropecheck_convention and the
 * signatures below. A plugin writes the ABI it was compiled against into `abi`; the loader
 * refuses a plugin whose ABI differs from its own. Any change to this file that is not purely a
 * comment bumps it.
 *
 * Ownership and threading contract:
 *   - All buffers are owned by the caller; the plugin must not retain any pointer past the return
 *     of the call it was passed to, and must not free any of them.
 *   - ropecheck_plugin_name returns a NUL-terminated string with static storage duration
 *     (owned by the plugin, valid until the library is unloaded; the caller copies it).
 *   - The loader calls describe() once after loading, before any apply(). describe() must be
 *     deterministic: the convention it declares is fixed for the life of the library.
 *   - apply() may be called many times, from one thread at a time (the loader serialises calls);
 *     a plugin need not be reentrant, but must not depend on call order: every call is a pure
 *     function of its arguments (no hidden state carried between calls, e.g. a cos/sin cache that
 *     changes the result is a bug the audit will report).
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
#define ROPECHECK_PLUGIN_ABI 1

/* Element type of the x and y buffers of apply(). */
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
  ROPECHECK_SCALING_LONGROPE = 6 /* LongRoPE: per-band factors; not expressible in ABI 1 (rejected) */
};

/* The convention a plugin claims to implement. Every field is read; fields a rule does not use
 * should still hold the HF defaults given below. */
struct ropecheck_convention {
  uint32_t abi;           /* must be ROPECHECK_PLUGIN_ABI */
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
};

/* Required. Fill *out with the declared convention (including out->abi) and return 0; nonzero on
 * failure. `out` is owned by the caller and zero-initialised before the call. */
int ropecheck_plugin_describe(struct ropecheck_convention* out);

/* Required. Rotate `tokens` tokens of `heads` heads each.
 *   x          input, tokens * heads * head_dim elements of the declared dtype, token-major
 *              (token t, head h, coordinate j at index (t * heads + h) * head_dim + j)
 *   y          output, same shape and dtype; the caller never passes y == x
 *   positions  `tokens` positions (>= 0 in the forward sense; any int64 must be accepted)
 *   inverse    0: R(m) x; nonzero: the inverse rotation R(-m) x (the transpose)
 * Returns 0 on success or a nonzero error code (y's content is then unspecified). */
int ropecheck_plugin_apply(const void* x, void* y, const int64_t* positions, int64_t tokens, int32_t heads,
                           int32_t inverse);

/* Optional. A short human-readable name of the kernel (static storage; see above). */
const char* ropecheck_plugin_name(void);

/* Pointer types, for loaders. */
typedef int (*ropecheck_plugin_describe_fn)(struct ropecheck_convention*);
typedef int (*ropecheck_plugin_apply_fn)(const void*, void*, const int64_t*, int64_t, int32_t, int32_t);
typedef const char* (*ropecheck_plugin_name_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ROPECHECK_PLUGIN_H */
