// tools/audit/audit_input.cpp — see audit_input.hpp.
#include "audit_input.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <sys/mman.h>

namespace ropecheck::audit {
namespace {

bool starts_with(const std::vector<std::int64_t>& s, const std::vector<std::int64_t>& prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (s[i] != prefix[i]) return false;
  return true;
}

bool is_float(dtype t) { return t == dtype::bf16 || t == dtype::f16 || t == dtype::f32 || t == dtype::f64; }

// Drops a mapped range's pages from this process (the page cache keeps them; a later read maps them
// again): madvise(MADV_DONTNEED) on the whole pages inside it. Only for a file mapping (on a buffer the
// file was read into, it would zero the bytes).
void release(std::span<const unsigned char> bytes, bool mapped) {
  constexpr std::uintptr_t page = 4096;
  if (!mapped) return;
  const auto a = (reinterpret_cast<std::uintptr_t>(bytes.data()) + page - 1) & ~(page - 1);
  const auto e = (reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size()) & ~(page - 1);
  if (e > a) (void)::madvise(reinterpret_cast<void*>(a), e - a, MADV_DONTNEED);
}

// Whether the mapped files hold these bytes in a mapping (not a buffer).
bool in_mapping(const std::vector<mapped_file>& files, std::span<const unsigned char> bytes) {
  for (const mapped_file& f : files) {
    const auto b = f.bytes();
    if (bytes.data() >= b.data() && bytes.data() + bytes.size() <= b.data() + b.size()) return f.mapped();
  }
  return false;
}

// The non-finite scan of x, 64 MiB at a time, each part's pages released after it: the contract check
// reads every input without holding them all.
bool scan_non_finite(const tensor_bytes& x, bool mapped) {
  constexpr std::size_t part = std::size_t{64} << 20;
  bool found = false;
  for (std::size_t o = 0; o < x.bytes.size() && !found; o += part) {
    const auto piece = x.bytes.subspan(o, std::min(part, x.bytes.size() - o));
    found = has_non_finite(tensor_bytes{x.name, x.type, {}, piece});
    release(piece, mapped);
  }
  return found;
}

judge::storage storage_of(dtype t) {
  switch (t) {
    case dtype::bf16: return judge::storage::bf16;
    case dtype::f16: return judge::storage::f16;
    case dtype::f32: return judge::storage::f32;
    default: return judge::storage::f64;  // is_float checked before
  }
}

// <dir>/ropecheck.json, the .npy directory's sidecar: {"bfloat16": true} declares '<u2' arrays as bf16;
// "metadata": {string: string} is what a safetensors file's __metadata__ says ("layer", "part").
struct npy_sidecar {
  bool bfloat16 = false;
  std::map<std::string, std::string> metadata;
};

npy_sidecar read_sidecar(const std::filesystem::path& dir) {
  npy_sidecar out;
  const auto side = dir / "ropecheck.json";
  if (!std::filesystem::exists(side)) return out;
  std::ifstream in(side);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw input_error(side, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw input_error(side, "must be a JSON object such as {\"bfloat16\": true}");
  for (const auto& [k, v] : j.items()) {
    if (k == "bfloat16") {
      if (!v.is_boolean()) throw input_error(side, "\"bfloat16\" must be true or false");
      out.bfloat16 = v.get<bool>();
    } else if (k == "metadata") {
      if (!v.is_object()) throw input_error(side, "\"metadata\" must be an object of strings, as safetensors' __metadata__");
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string()) throw input_error(side, "\"metadata\" value for '" + mk + "' is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
    } else {
      throw input_error(side, "unknown key '" + k + "' (known: bfloat16, metadata)");
    }
  }
  return out;
}

// M-RoPE position rows: positions [R, T] or [R, 1, T] with 2 <= R <= 8, and x (leading axes of size 1
// aside) [T, ...] or HF's [H, T, D], where a 1-D reading (x = positions' shape + [...]) does not fit.
// Returns the rows [R][T] (empty when the dump is not read so).
std::vector<std::int64_t> take_position_rows(const tensor& pos, const tensor_bytes& x) {
  const auto& s = pos.shape;
  if (!(s.size() == 2 || (s.size() == 3 && s[1] == 1)) || s[0] < 2 || s[0] > 8) return {};
  const std::int64_t T = s.back();
  std::vector<std::int64_t> xs = x.shape;
  while (xs.size() > 2 && xs.front() == 1) xs.erase(xs.begin());
  if (starts_with(x.shape, s) || xs.size() < 2 || xs.size() > 3) return {};
  const bool token_major = xs[0] == T;
  const bool hf_layout = xs.size() == 3 && xs[1] == T;
  if (!token_major && !hf_layout) return {};
  std::vector<std::int64_t> rows;
  rows.reserve(pos.values.size());
  for (double p : pos.values) rows.push_back(static_cast<std::int64_t>(p));
  return rows;
}

}  // namespace

std::string audit_dtype_name(dtype t) {
  switch (t) {
    case dtype::bf16: return "bfloat16";
    case dtype::f16: return "float16";
    case dtype::f32: return "float32";
    case dtype::f64: return "float64";
    default: return std::string(dtype_name(t));
  }
}

namespace {
// A tensor of an outputs file of the probe's calls (probe_outputs.hpp) other than the one judged: the plan, the
// other forms' outputs, the qk form's other inputs and its shifted keys (shift.*).
bool probe_outputs_tensor(const std::string& name) {
  return name.rfind("prefill.", 0) == 0 || name.rfind("decode.", 0) == 0 || name.rfind("shift.", 0) == 0 || name == "x" ||
         name == "q" || name == "k" || name == "q_alt" || name == "k_alt";
}
}  // namespace

loaded_dump load_dump(const std::filesystem::path& path, const std::optional<std::string>& declared_dtype,
                      const std::string& y_tensor, const std::string& x_tensor) {
  namespace fs = std::filesystem;
  if (declared_dtype && *declared_dtype != "bfloat16" && *declared_dtype != "float16" &&
      *declared_dtype != "float32" && *declared_dtype != "float64")
    throw input_error(path, "--dtype must be bfloat16, float16, float32 or float64, got '" + *declared_dtype + "'");
  loaded_dump out;
  out.source = path;
  mapped_tensors mapped;  // x and y stay where they lie; the small tensors are decoded
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    out.format = "npy";
    npy_sidecar side = read_sidecar(path);
    const bool bf16 = (declared_dtype && *declared_dtype == "bfloat16") || side.bfloat16;
    out.metadata = std::move(side.metadata);
    mapped = map_npy_dir(path, bf16 ? std::optional<dtype>(dtype::bf16) : std::nullopt);
    if (mapped.tensors.empty()) throw input_error(path, "the directory holds no .npy files (expected positions.npy, x.npy, y.npy)");
  } else if (fs::exists(path, ec)) {
    out.format = "safetensors";
    mapped = map_safetensors(path, &out.metadata);
  } else {
    throw input_error(path, "no such file or directory");
  }
  auto where = [&](const std::string& name) {
    return out.format == "npy" ? path / (name + ".npy") : path;
  };
  std::map<std::string, tensor_bytes>& ts = mapped.tensors;
  auto need = [&](const std::string& name) -> tensor_bytes& {
    const auto it = ts.find(name);
    if (it == ts.end()) {
      std::string have;
      for (const auto& [k, v] : ts) have += (have.empty() ? "" : ", ") + k;
      throw input_error(path, "no tensor '" + name + "' (the dump must hold positions, x and y; it holds: " +
                                  (have.empty() ? "nothing" : have) + ")");
    }
    return it->second;
  };
  tensor_bytes& x = need(x_tensor);
  tensor_bytes& y = need(y_tensor);
  tensor pos = decode(need("positions"));

  // positions: integers (float dumps of integral values accepted with a note).
  if (!is_float(pos.type) && pos.type != dtype::i32 && pos.type != dtype::i64)
    throw input_error(where("positions"), "positions must be integers (I32/I64)");
  if (pos.has_non_finite) throw input_error(where("positions"), "positions hold NaN or infinity");
  if (is_float(pos.type)) {
    for (double p : pos.values)
      if (p != std::floor(p))
        throw input_error(where("positions"), "positions must be integers; found " + std::to_string(p));
    out.notes.push_back("positions are stored as " + audit_dtype_name(pos.type) + "; all values are integral");
  }
  // M-RoPE: positions [rows, tokens] or HF's [rows, 1, tokens] (position_ids[:, batch, :]); read from
  // here on as row 0 of shape [tokens], the rows kept for the judge.
  std::vector<std::int64_t> position_rows = take_position_rows(pos, x);
  if (!position_rows.empty()) {
    const std::size_t nrows = position_rows.size() / static_cast<std::size_t>(pos.shape.back());
    out.notes.push_back("positions are " + shape_string(pos.shape) + ": M-RoPE position rows" +
                        (nrows == 3 ? std::string(" (row 0 temporal, 1 height, 2 width)") : std::string()) + ", " +
                        std::to_string(nrows) + " rows of " + std::to_string(pos.shape.back()) + " tokens");
  }
  if (!position_rows.empty()) {
    const auto T = pos.shape.back();
    // HF's Qwen2-VL hands apply_multimodal_rotary_pos_emb per-row tables [rows, batch, tokens, dim]: not
    // the cache rows the contract means (the judge reads the outputs only).
    for (const char* name : {"cos", "sin"})
      if (auto it = ts.find(name); it != ts.end() && it->second.shape.size() >= 3 && it->second.shape[0] == pos.shape[0]) {
        out.notes.push_back(std::string(name) + " has shape " + shape_string(it->second.shape) +
                            ": per-row M-RoPE tables, ignored (give the combined [tokens, dim] rows to have them checked)");
        ts.erase(it);
      }
    pos.values.resize(static_cast<std::size_t>(T));
    pos.shape = {T};
  }
  // Leading singleton axes (a batch of 1) are dropped from every tensor, so positions [1, T] with x
  // [T, H, D], or positions [T] with x [1, T, H, D] or cos [1, T, D], line up. An axis is kept when
  // the tensor already reads as positions' shape + [head_dim] or + [heads, head_dim]: one decode token,
  // positions [1] with x [1, heads, head_dim], is that token's heads, not heads tokens.
  auto squeeze_front = [&](auto& t, std::size_t keep_at_least, const std::vector<std::int64_t>* lead) {
    bool dropped = false;
    while (t.shape.size() > keep_at_least && t.shape.front() == 1 &&
           !(lead && starts_with(t.shape, *lead) && t.shape.size() <= lead->size() + 2))
      t.shape.erase(t.shape.begin()), dropped = true;
    return dropped;
  };
  squeeze_front(pos, 1, nullptr);
  const std::vector<std::int64_t> P = pos.shape.empty() ? std::vector<std::int64_t>{1} : pos.shape;
  const bool dropped_x = squeeze_front(x, P.size() + 1, &P);  // both are squeezed, whatever the first says
  const bool dropped_y = squeeze_front(y, P.size() + 1, &P);
  if (dropped_x || dropped_y)
    out.notes.push_back("leading axes of size 1 (a batch of one) were dropped from x and y");
  for (const char* opt_name : {"cos", "sin"})
    if (auto it = ts.find(opt_name); it != ts.end()) squeeze_front(it->second, P.size() + 1, nullptr);
  // HF's own layout, [batch, heads, tokens, dim] with positions [batch, tokens] (q and k as
  // apply_rotary_pos_emb sees them): read as [batch, tokens, heads, dim] (a strided layout, no copy)
  // when that is the only reading of the shapes.
  std::optional<judge::dump_layout> layout;
  if (x.shape.size() == P.size() + 2 && x.shape == y.shape && !starts_with(x.shape, P)) {
    const std::size_t k = P.size();
    const bool match = std::equal(P.begin(), P.end() - 1, x.shape.begin()) && x.shape[k] == P.back();
    if (match) {
      const std::int64_t H = x.shape[k - 1], T = P.back(), D = x.shape.back();
      // Read in place: block b (a batch) of T tokens, head h at h T D, token tk at tk D.
      layout = judge::dump_layout{T, H * T * D, D, T * D};
      std::vector<std::int64_t> shape(P.begin(), P.end());
      shape.push_back(H);
      shape.push_back(D);
      x.shape = y.shape = shape;
      out.notes.push_back("x and y are [batch, heads, tokens, head_dim] (HF's layout for q and k): read as "
                          "[batch, tokens, heads, head_dim]");
    }
  }
  std::int64_t tokens = 1;
  for (auto e : P) tokens *= e;
  if (tokens <= 0) throw input_error(where("positions"), "positions are empty " + shape_string(pos.shape));

  // x and y: P + [head_dim] or P + [heads, head_dim], equal shapes.
  for (const tensor_bytes* t : {&x, &y})
    if (!is_float(t->type))
      throw input_error(where(t->name), t->name + " must be floating point (F32, BF16, F16, F64), got " +
                                            std::string(dtype_name(t->type)));
  if (x.shape != y.shape)
    throw input_error(path, "x has shape " + shape_string(x.shape) + " but y has shape " + shape_string(y.shape) +
                                " (they must be equal)");
  const std::size_t k = P.size();
  if (!starts_with(x.shape, P) || (x.shape.size() != k + 1 && x.shape.size() != k + 2))
    throw input_error(path, "x has shape " + shape_string(x.shape) + " but positions have shape " + shape_string(P) +
                                ": x must be positions' shape + [head_dim] or + [heads, head_dim] (an M-RoPE dump: "
                                "positions [rows, tokens] or [rows, 1, tokens], 2 <= rows <= 8, with x [tokens, heads, "
                                "head_dim] or [tokens, head_dim])");
  const std::int64_t heads = x.shape.size() == k + 2 ? x.shape[k] : 1;
  const std::int64_t head_dim = x.shape.back();
  if (heads <= 0 || head_dim <= 0) throw input_error(path, "x has an empty dimension " + shape_string(x.shape));
  if (head_dim % 2 != 0) throw input_error(path, "head_dim " + std::to_string(head_dim) + " is odd: nothing to pair");
  if (tokens > (std::int64_t{1} << 30) || heads > (1 << 20) || head_dim > (1 << 20))
    throw input_error(path, "x has shape " + shape_string(x.shape) + ": more tokens or heads than the audit handles");
  const bool x_mapped = in_mapping(mapped.files, x.bytes), y_mapped = in_mapping(mapped.files, y.bytes);
  if (scan_non_finite(x, x_mapped))
    throw input_error(where(x_tensor), "x (the inputs) holds NaN or infinity: nothing to audit there");

  out.x_dtype = audit_dtype_name(x.type);
  out.d.dtype = audit_dtype_name(y.type);
  if (declared_dtype && *declared_dtype != out.d.dtype)
    throw input_error(where("y"), "--dtype says " + *declared_dtype + " but y is stored as " + out.d.dtype);
  if (x.type != y.type)
    out.notes.push_back("x is " + out.x_dtype + " and y is " + out.d.dtype + ": audited in y's dtype " + out.d.dtype);
  out.d.tokens = static_cast<int>(tokens);
  out.d.heads = static_cast<int>(heads);
  out.d.head_dim = static_cast<int>(head_dim);
  out.positions.reserve(static_cast<std::size_t>(tokens));
  for (double p : pos.values) out.positions.push_back(static_cast<std::int64_t>(p));
  out.position_rows = std::move(position_rows);
  out.d.positions = out.positions;
  out.d.position_rows = out.position_rows;
  out.d.x = {x.bytes.data(), storage_of(x.type)};
  out.d.y = {y.bytes.data(), storage_of(y.type)};
  out.d.layout = layout ? *layout : judge::dump_layout::token_major(out.d.heads, out.d.head_dim);
  // Token-major dumps: the pages of the tokens judged are released as the judging goes, so the memory
  // held stays bounded whatever the file's size (HF's strided layout keeps its pages: a token's heads
  // are spread over the whole tensor).
  if (!layout) {
    const auto row = static_cast<std::size_t>(heads * head_dim);
    const auto xs = x.bytes, ys = y.bytes;
    const std::size_t xw = dtype_size(x.type), yw = dtype_size(y.type);
    out.d.done_with = [=](std::int64_t first, std::int64_t end) {
      const auto t0 = static_cast<std::size_t>(first), n = static_cast<std::size_t>(end - first);
      release(xs.subspan(t0 * row * xw, n * row * xw), x_mapped);
      release(ys.subspan(t0 * row * yw, n * row * yw), y_mapped);
    };
  }

  // Optional tensors.
  auto take = [&](const std::string& name, std::optional<optional_tensor>& dst) {
    const auto it = ts.find(name);
    if (it == ts.end()) return;
    if (!is_float(it->second.type))
      throw input_error(where(name), name + " must be floating point, got " + std::string(dtype_name(it->second.type)));
    tensor t = decode(it->second);
    if (t.has_non_finite) throw input_error(where(name), name + " holds NaN or infinity");
    dst = optional_tensor{audit_dtype_name(t.type), t.shape, std::move(t.values)};
  };
  take("cos", out.cos);
  take("sin", out.sin);
  take("inv_freq", out.inv_freq);
  if (out.cos.has_value() != out.sin.has_value())
    throw input_error(path, "the dump holds " + std::string(out.cos ? "cos" : "sin") + " without " +
                                (out.cos ? "sin" : "cos") + " (give both or neither)");
  if (out.cos) {
    if (out.cos->shape != out.sin->shape)
      throw input_error(path, "cos has shape " + shape_string(out.cos->shape) + " but sin has " + shape_string(out.sin->shape));
    const auto& s = out.cos->shape;
    if (!starts_with(s, P) || s.size() != k + 1 || s.back() <= 0 || s.back() > head_dim)
      throw input_error(where("cos"), "cos/sin have shape " + shape_string(s) + ": expected positions' shape " +
                                          shape_string(P) + " + [rotary_dim] or + [rotary_dim / 2]");
  }
  if (out.inv_freq) {
    const auto& s = out.inv_freq->shape;
    if (s.size() != 1 || s[0] <= 0 || s[0] > head_dim / 2)
      throw input_error(where("inv_freq"), "inv_freq has shape " + shape_string(s) + ": expected [rotary_dim / 2]");
  }
  for (const auto& [name, t] : ts)
    if (name != "positions" && name != x_tensor && name != y_tensor && name != "cos" && name != "sin" &&
        name != "inv_freq" && (y_tensor == "y" || !probe_outputs_tensor(name)))
      out.notes.push_back("tensor '" + name + "' is not part of the dump contract: ignored");
  out.files = std::move(mapped.files);  // the mappings move, the bytes the view reads do not
  return out;
}

loaded_dump subset_tokens(const loaded_dump& in, const std::vector<std::size_t>& tokens) {
  const judge::dump_view& d = in.d;
  const auto width = [](judge::storage t) -> std::size_t {
    switch (t) {
      case judge::storage::f32: return 4;
      case judge::storage::bf16:
      case judge::storage::f16: return 2;
      case judge::storage::f64: break;
    }
    return 8;
  };
  const std::size_t n = tokens.size(), all = in.positions.size(), rows = all ? in.position_rows.size() / all : 0;
  const auto dim = static_cast<std::size_t>(d.head_dim);
  loaded_dump out;
  out.source = in.source;
  out.format = in.format;
  out.x_dtype = in.x_dtype;
  out.notes = in.notes;
  out.metadata = in.metadata;
  out.positions.reserve(n);
  out.position_rows.resize(rows * n);
  std::vector<unsigned char> x(n * static_cast<std::size_t>(d.heads) * dim * width(d.x.type)),
      y(n * static_cast<std::size_t>(d.heads) * dim * width(d.y.type));
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t t = tokens[k];
    if (t >= static_cast<std::size_t>(d.tokens)) throw std::out_of_range("subset_tokens: token index past the dump's");
    out.positions.push_back(in.positions[t]);
    for (std::size_t r = 0; r < rows; ++r) out.position_rows[r * n + k] = in.position_rows[r * all + t];
    for (int h = 0; h < d.heads; ++h) {
      const std::size_t from = d.layout.offset(static_cast<std::int64_t>(t), h);
      const std::size_t to = (k * static_cast<std::size_t>(d.heads) + static_cast<std::size_t>(h)) * dim;
      std::memcpy(x.data() + to * width(d.x.type), static_cast<const unsigned char*>(d.x.data) + from * width(d.x.type),
                  dim * width(d.x.type));
      std::memcpy(y.data() + to * width(d.y.type), static_cast<const unsigned char*>(d.y.data) + from * width(d.y.type),
                  dim * width(d.y.type));
    }
  }
  out.owned.push_back(std::move(x));
  out.owned.push_back(std::move(y));
  out.d = d;
  out.d.done_with = {};
  out.d.tokens = static_cast<int>(n);
  out.d.positions = out.positions;
  out.d.position_rows = out.position_rows;
  out.d.x.data = out.owned[0].data();
  out.d.y.data = out.owned[1].data();
  out.d.layout = judge::dump_layout::token_major(d.heads, d.head_dim);
  return out;
}

}  // namespace ropecheck::audit
