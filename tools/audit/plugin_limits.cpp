// tools/audit/plugin_limits.cpp — see plugin_limits.hpp.
#include "plugin_limits.hpp"

#include <algorithm>

#include "judged_binding.hpp"

namespace ropecheck::audit {
namespace {

// The multimodal tokens' rows (get_rope_index's layout, see the header): [rows][n] row-major.
std::vector<std::vector<std::int64_t>> vision_rows(int rows) {
  std::vector<std::vector<std::int64_t>> r(static_cast<std::size_t>(rows));
  auto token = [&](std::int64_t t, std::int64_t h, std::int64_t w) {
    r[0].push_back(t);
    if (rows > 1) r[1].push_back(h);
    if (rows > 2) r[2].push_back(w);
    for (std::size_t k = 3; k < r.size(); ++k) r[k].push_back(h + w - t);
  };
  std::int64_t st = 64;
  for (int i = 0; i < 8; ++i)  // image: 1 x 8 x 8
    for (int j = 0; j < 8; ++j) token(st, st + i, st + j);
  st += 8;  // max(0, 7, 7) + 1
  for (int f = 0; f < 2; ++f)  // video: 2 x 4 x 4
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) token(st + f, st + i, st + j);
  return r;
}

}  // namespace

limited_probe limit_probe(const judge::probe_set& probe, const rope_config& declared, const plugin::kernel_limits& l,
                          std::string_view declared_by) {
  const int rows = declared.position_rows();
  const std::size_t per_token = static_cast<std::size_t>(probe.heads) * static_cast<std::size_t>(probe.head_dim);
  // Every token of the full probe: its rows and where its x comes from.
  std::vector<std::vector<std::int64_t>> all(static_cast<std::size_t>(rows));
  std::vector<const double*> xs;
  std::size_t dense = 0;
  while (dense < probe.positions.size() && probe.positions[dense] < 64) ++dense;
  auto text = [&](std::size_t t) {
    for (auto& row : all) row.push_back(probe.positions[t]);
    xs.push_back(probe.x.data() + t * per_token);
  };
  for (std::size_t t = 0; t < dense; ++t) text(t);
  judge::probe_set extra;
  if (rows > 1) {
    const auto vision = vision_rows(rows);
    extra = judge::make_probe(declared, probe.seed ^ 0x6d726f7065ULL, probe.heads);  // "mrope"
    const std::size_t n = vision[0].size();
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t r = 0; r < all.size(); ++r) all[r].push_back(vision[r][k]);
      xs.push_back(extra.x.data() + (k % static_cast<std::size_t>(extra.tokens())) * per_token);
    }
  }
  for (std::size_t t = dense; t < probe.positions.size(); ++t) text(t);

  limited_probe out;
  out.set = probe;
  out.set.positions.clear();
  out.set.x.clear();
  out.set.position_rows.clear();
  std::vector<std::vector<std::int64_t>> kept(all.size());
  for (std::size_t t = 0; t < xs.size(); ++t) {
    std::int64_t top = all[0][t];
    for (const auto& row : all) top = std::max(top, row[t]);
    if (l.max_position > 0 && top > l.max_position) {
      out.skipped.push_back(all[0][t]);
      continue;
    }
    for (std::size_t r = 0; r < all.size(); ++r) kept[r].push_back(all[r][t]);
    out.set.positions.push_back(all[0][t]);
    out.set.x.insert(out.set.x.end(), xs[t], xs[t] + per_token);
  }
  if (rows > 1)
    for (const auto& row : kept) out.set.position_rows.insert(out.set.position_rows.end(), row.begin(), row.end());
  std::sort(out.skipped.begin(), out.skipped.end());
  out.note = skipped_note(out.skipped, l.max_position, declared_by);
  return out;
}

std::string skipped_note(const std::vector<std::int64_t>& skipped, std::int64_t max_position, std::string_view declared_by) {
  if (skipped.empty()) return {};
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < skipped.size();) {
    std::size_t j = i;
    while (j + 1 < skipped.size() && skipped[j + 1] == skipped[j] + 1) ++j;
    runs.push_back(std::to_string(skipped[i]) + (j > i ? ".." + std::to_string(skipped[j]) : std::string()));
    i = j + 1;
  }
  // A short list whole; a long one summarised (its first runs, how many more, the last position): the full list
  // is the JSON's positions_not_asked (plugin audit, probe file metadata).
  std::string ranges;
  const std::size_t shown = runs.size() <= max_listed_runs ? runs.size() : max_listed_runs - 1;
  for (std::size_t k = 0; k < shown; ++k) ranges += (k ? ", " : "") + runs[k];
  if (shown < runs.size())
    ranges += " and " + std::to_string(runs.size() - shown) + " more runs up to " + std::to_string(skipped.back()) +
              " (every one in the JSON's positions_not_asked)";
  return "probe positions " + ranges + " (" + std::to_string(skipped.size()) +
         " tokens) were not asked: past the kernel's max_position " + std::to_string(max_position) +
         " (" + std::string(declared_by) + "); the verdict covers positions 0.." + std::to_string(max_position) + " only";
}

std::optional<std::string> property_skip(std::string_view property, const plugin::kernel_limits& l) {
  if (property == "inverse_rotation_undoes_rotation" && !l.has_inverse())
    return "skipped: the plugin declares neither supports_inverse nor negative_positions (ropecheck_convention), so "
           "R(p)^T cannot be asked of it";
  return std::nullopt;
}

void apply_limits(test::driven_kernel& k, const plugin::kernel_limits& l) {
  if (l.max_position > 0) k.max_position = std::min(k.max_position, l.max_position);
  k.negative_positions = l.negative_positions;
  k.has_inverse = l.has_inverse();
}

}  // namespace ropecheck::audit
