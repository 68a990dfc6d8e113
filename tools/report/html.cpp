// tools/report/html.cpp — report.html (html.hpp).
#include "html.hpp"

#include <cctype>
#include <numbers>

#include "markup.hpp"

namespace ropecheck::report::detail {

// ---------------------------------------------------------------------------------------------
// HTML

using cli::markup_escape;  // tools/markup.hpp: the escaper JUnit uses too

// gnuplot's SVG as an inline element: the XML prolog dropped, and every id (and reference to
// one) prefixed so that several plots on one page do not share ids such as gpPt0 or gnuplot_canvas.
std::string inline_svg(const std::string& svg, const std::string& prefix, const std::string& label) {
  const std::size_t start = svg.find("<svg");
  if (start == std::string::npos) return "";
  std::string o;
  o.reserve(svg.size() - start + 4096);
  o += "<svg role=\"img\" aria-label=\"" + markup_escape(label) + "\"";
  std::string_view s(svg);
  s.remove_prefix(start + 4);
  static constexpr std::array<std::string_view, 5> id_marks{"id='", "id=\"", "href='#", "href=\"#", "url(#"};
  for (std::size_t i = 0; i < s.size();) {
    bool matched = false;
    for (std::size_t m = 0; m < id_marks.size(); ++m) {
      const auto mark = id_marks[m];
      if (s.compare(i, mark.size(), mark) != 0) continue;
      // An id attribute must start a name: the character before it is white space.
      if (m < 2 && (i == 0 || !std::isspace(static_cast<unsigned char>(s[i - 1])))) continue;
      o += mark;
      o += prefix;
      i += mark.size();
      matched = true;
      break;
    }
    if (!matched) o += s[i++];
  }
  // gnuplot titles every SVG "Gnuplot" (a tooltip in browsers): use the plot's own title.
  const std::string generic = "<title>Gnuplot</title>";
  if (const auto t = o.find(generic); t != std::string::npos)
    o.replace(t, generic.size(), "<title>" + markup_escape(label) + "</title>");
  return o;
}

std::string never_or(std::int64_t p) { return p < 0 ? "never" : integer(p); }

constexpr const char* css = R"(
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: #1d1d1d; margin: 24px auto; max-width: 1320px; padding: 0 16px; line-height: 1.4; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ccc; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 18px 0 4px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #c8c8c8; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
td.text, th.text { text-align: left; }
tr.pass td.verdict { background: #d9f2d0; color: #185c0b; font-weight: 700; text-align: center; }
tr.fail td.verdict { background: #f7d4d4; color: #8a1111; font-weight: 700; text-align: center; }
tr.drift td.verdict { background: #eef5c8; color: #4d5c0b; font-weight: 700; text-align: center; }
tr.unseen td { background: #fff7dc; }
table.config td:first-child { text-align: left; color: #555; }
table.config td { text-align: left; }
figure { margin: 18px 0 26px; }
figure svg { display: block; width: 100%; max-width: 960px; height: auto; border: 1px solid #e2e2e2; }
figure svg image { image-rendering: pixelated; }
figcaption { max-width: 960px; font-size: 14px; color: #333; margin-top: 6px; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 8px 20px; }
.pair figure svg { max-width: 100%; }
.note { background: #fff3cd; border: 1px solid #e6cf7e; padding: 8px 12px; max-width: 940px; }
code { background: #f4f4f4; padding: 1px 4px; font-size: 13px; }
.muted { color: #666; font-size: 13px; }
)";


std::string figure_html(const rendered_plot& rp, std::size_t index) {
  std::string h = "<figure id=\"fig-" + markup_escape(rp.p.name) + "\">\n";
  if (!rp.svg.empty()) {
    h += inline_svg(rp.svg, "f" + std::to_string(index) + "_", rp.p.title) + "\n";
  } else {
    h += "<p class=\"note\">" + markup_escape(rp.p.title) + ": not drawn (see the note above); its gnuplot "
         "script is <code>plots/" + markup_escape(rp.p.name) + ".gp</code>.</p>\n";
  }
  h += "<figcaption><b>" + markup_escape(rp.p.title) + ".</b> " + markup_escape(rp.p.caption) +
       " <span class=\"muted\">(plots/" + markup_escape(rp.p.name) + ".svg, .png, .gp)</span></figcaption>\n";
  return h + "</figure>\n";
}

std::string report_html(const report_result& r, const write_options& o, const std::vector<std::string>& stems,
                        const std::vector<rendered_plot>& main_plots, const std::vector<rendered_plot>& source_plots,
                        const std::vector<rendered_plot>& heat_plots, const std::optional<rendered_plot>& bands_plot,
                        const std::string& plot_note) {
  const auto& q = r.request;
  const auto& c = q.config;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>ropecheck precision report: " + markup_escape(q.config_name) + "</title>\n";
  h += "<style>" + std::string(css) + "</style>\n</head>\n<body>\n";
  h += "<h1>ropecheck precision report: " + markup_escape(q.config_name) + "</h1>\n";
  const auto fails = std::count_if(r.series.begin(), r.series.end(), [](const auto& s) { return !s.passes; });
  const bool judged = std::any_of(r.series.begin(), r.series.end(), [](const auto& s) { return s.judge.judged; });
  h += "<p>" + std::to_string(r.series.size()) + " implementations checked against the reference up to position " +
       integer(q.max_position) + ": <b>" + std::to_string(r.series.size() - static_cast<std::size_t>(fails)) +
       " pass, " + std::to_string(fails) + " fail</b> " +
       (judged ? std::string("(the verdict is the judge's, as <code>ropecheck audit</code> would give it on each "
                             "implementation's outputs for the probe set; the threshold crossings are figures: angle "
                             "threshold ")
               : std::string("(angle threshold ")) +
       short_number(q.angle_threshold_rad) + " rad, position threshold " + short_number(q.position_threshold_tokens) +
       " tokens).</p>\n";

  // Configuration.
  h += "<h2>Configuration</h2>\n<table class=\"config\">\n";
  auto row = [&](std::string_view k, const std::string& v) {
    h += "<tr><td>" + markup_escape(k) + "</td><td>" + markup_escape(v) + "</td></tr>\n";
  };
  row("config", q.config_name);
  row("head_dim / rotary_dim", std::to_string(c.head_dim) + " / " + std::to_string(c.rotary_dim) + " (" +
                                   std::to_string(c.bands()) + " bands)");
  row("base (rope_theta)", short_number(c.base, 9));
  row("layout", std::string(to_string(c.pair_layout)));
  std::string scaling = std::string(to_string(c.scaling));
  if (c.scaling != scaling_kind::none) scaling += ", factor " + short_number(c.factor, 9);
  if (c.scaling == scaling_kind::yarn)
    scaling += ", beta_fast " + short_number(c.beta_fast) + ", beta_slow " + short_number(c.beta_slow);
  if (c.scaling == scaling_kind::llama3)
    scaling += ", low_freq_factor " + short_number(c.low_freq_factor) + ", high_freq_factor " +
               short_number(c.high_freq_factor);
  row("scaling", scaling);
  row("attention factor", short_number(r.attention_factor, 9));
  row("max_position_embeddings / original", integer(c.max_position_embeddings) + " / " +
                                                 integer(c.original_max_position_embeddings));
  row("L_train / L_eval (band table)", integer(q.train_length) + " / " + integer(q.eval_length));
  row("sweep", std::string(q.exhaustive ? "every position 0.." : "positions up to ") + integer(q.max_position));
  row("thresholds", "angle " + short_number(q.angle_threshold_rad) + " rad; position " +
                        short_number(q.position_threshold_tokens) + " tokens");
  std::array<char, 32> seed{};
  std::snprintf(seed.data(), seed.size(), "0x%llx", static_cast<unsigned long long>(q.seed));
  row("seed (random head vectors)", seed.data());

  // Verdicts.
  h += "</table>\n<h2>Verdicts</h2>\n<table class=\"verdicts\">\n<tr><th class=\"text\">implementation</th>"
       "<th class=\"text\">description</th><th class=\"text\">cos/sin dtype</th><th>verdict</th>"
       "<th class=\"text\">dtype judged</th><th>judge: worst error / allowance</th>"
       "<th>first p with angle error &gt; " + markup_escape(short_number(q.angle_threshold_rad)) + " rad</th>"
       "<th>first p with &ge; " + markup_escape(short_number(q.position_threshold_tokens)) + " token error</th>"
       "<th>first p with applied(p) = applied(p+1)</th><th>worst band</th><th>max applied angle error (rad) at p</th>"
       "<th>max position error (tokens)</th><th>max cos/sin error</th><th>max score violation</th></tr>\n";
  auto at = [](const field_max& m) {
    return m.position < 0 ? std::string("&ndash;") : markup_escape(short_number(m.value)) + " at " + integer(m.position);
  };
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const auto& s = r.series[i];
    const std::string row_class = !s.judge.judged ? (s.passes ? "pass" : "fail")
                                  : s.judge.verdict == "pass" || s.judge.verdict == "drift" ? s.judge.verdict
                                                                                            : "fail";
    h += "<tr class=\"" + row_class + "\" id=\"impl-" + markup_escape(stems[i]) + "\">";
    h += "<td class=\"text\"><code>" + markup_escape(s.name) + "</code></td>";
    h += "<td class=\"text\">" + markup_escape(s.description) + "</td>";
    h += "<td class=\"text\">" + markup_escape(s.cos_sin_dtype) + "</td>";
    if (s.judge.judged) {
      h += "<td class=\"verdict\" title=\"" + markup_escape(s.judge.finding) + "\">" + markup_escape(s.judge.verdict) + "</td>";
      h += "<td class=\"text\">" + markup_escape(s.judge.dtype) + "</td>";
      h += "<td>" + markup_escape(short_number(s.judge.worst_ratio)) + " at " + integer(s.judge.worst_position) +
           (s.judge.worst_band >= 0 ? ", band " + std::to_string(s.judge.worst_band) : std::string()) + "</td>";
    } else {
      h += std::string("<td class=\"verdict\">") + (s.passes ? "PASS" : "FAIL") + "</td><td class=\"text\">&ndash;</td><td>&ndash;</td>";
    }
    h += "<td>" + never_or(s.first_angle_over_threshold) + "</td>";
    h += "<td>" + never_or(s.first_position_error_over_threshold) + "</td>";
    h += "<td>" + never_or(s.first_adjacent_positions_equal) + "</td>";
    h += "<td>" + (s.worst_band < 0 ? std::string("&ndash;") : std::to_string(s.worst_band)) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[0])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[1])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[2])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[5])) + "</td></tr>\n";
  }
  h += "</table>\n<p class=\"muted\">&ldquo;never&rdquo;: not reached up to position " + integer(q.max_position) +
       ". Per-position figures: <code>data/&lt;implementation&gt;.csv</code>; verdicts and maxima: "
       "<code>summary.json</code>.</p>\n";
  if (judged) {
    h += "<p>The verdict: each implementation rotated the judge's probe set (positions 0..63, &plusmn;8 around "
         "256, 2048, 4096, 65504 and 2<sup>24</sup>, 8 per octave to twice max_position_embeddings; inputs k/128) "
         "in its own storage and compute types, and the judge (<code>ropecheck audit</code>'s, reference exact) "
         "judged the outputs in the storage dtype: <b>pass</b>, <b>drift</b> (a pass with the fp32 angle-drift "
         "warning), or the first bug class it names. Its first finding:</p>\n<ul>\n";
    for (const auto& s : r.series) {
      if (!s.judge.judged) continue;
      h += "<li><code>" + markup_escape(s.name) + "</code> (" + markup_escape(s.judge.verdict) + "): " +
           (s.judge.finding.empty() ? std::string("no finding") : markup_escape(s.judge.finding)) + "</li>\n";
    }
    h += "</ul>\n";
  }

  // A certificate's figures (--certificate): every position 0..N, not the sweep's sample.
  if (r.certificate) {
    const auto& cert = *r.certificate;
    h += "<h2>Certificate: every position 0.." + integer(cert.max_position) + ", every band</h2>\n<p>From <code>" +
         markup_escape(cert.file) + "</code> (inputs sha256 <code>" + markup_escape(cert.inputs_sha256.substr(0, 16)) +
         "&hellip;</code>): verdict <b>" + markup_escape(cert.verdict) + "</b>.</p>\n<table class=\"verdicts\">\n"
         "<tr><th class=\"text\">implementation</th><th>verdict</th><th>worst error / allowance (band, p)</th>"
         "<th>worst applied angle error (rad)</th><th>worst position error (tokens)</th><th>first p over the angle "
         "threshold</th><th>first p over the token threshold</th><th>first p with applied(p) = applied(p+1)</th></tr>\n";
    for (const auto& x : cert.rows)
      h += std::string("<tr class=\"") + (x.pass ? "pass" : "fail") + "\"><td class=\"text\"><code>" + markup_escape(x.name) +
           "</code></td><td class=\"verdict\">" + (x.pass ? "pass" : "fail") + "</td><td>" +
           markup_escape(short_number(x.worst_ratio)) + " (" + std::to_string(x.worst_ratio_band) + ", " +
           never_or(x.worst_ratio_position) + ")</td><td>" + markup_escape(short_number(x.worst_angle_rad)) + "</td><td>" +
           markup_escape(short_number(x.worst_position_tokens)) + "</td><td>" + never_or(x.first_angle_over) + "</td><td>" +
           never_or(x.first_tokens_over) + "</td><td>" + never_or(x.first_equal) + "</td></tr>\n";
    h += "</table>\n";
  }

  // Plots.
  h += "<h2>Error against position</h2>\n";
  if (!plot_note.empty()) h += "<p class=\"note\">" + markup_escape(plot_note) + "</p>\n";
  std::size_t index = 0;
  for (const auto& p : main_plots) h += figure_html(p, index++);
  if (!source_plots.empty()) {
    h += "<h2>Where the error comes from</h2>\n<p>Each term at its largest over bands, per "
         "implementation: <b>frequency rounding</b> p (inv_freq_used &minus; &theta;) grows in proportion "
         "to p; <b>position representation</b> (p_used &minus; p) inv_freq_used jumps where the position's "
         "type runs out of integers; <b>product rounding</b> is the rounding of p_used inv_freq_used; "
         "<b>sin/cos evaluation</b> (cos_raw against af cos of the angle formed) and <b>cache storage</b> "
         "(rounding cos/sin to the cache dtype) are in cos/sin units and stay flat; <b>rotation "
         "arithmetic</b> is |y &minus; R~x| / |x| given the final cos/sin.</p>\n<div class=\"pair\">\n";
    for (const auto& p : source_plots) h += figure_html(p, index++);
    h += "</div>\n";
  }
  if (!heat_plots.empty()) {
    h += "<h2>Error by band and position</h2>\n<div class=\"pair\">\n";
    for (const auto& p : heat_plots) h += figure_html(p, index++);
    h += "</div>\n";
  }

  // Band table.
  h += "<h2>Bands</h2>\n";
  if (bands_plot) h += figure_html(*bands_plot, index++);
  h += "<p>L_train = " + integer(q.train_length) + " tokens, L_eval = " + integer(q.eval_length) +
       " tokens. Turns in training = L_train &theta;<sub>i</sub> / 2&pi; (before scaling). Unseen = share of "
       "the arc a band sweeps up to L_eval (at most one turn) that lies past the arc it swept in training; "
       "rows that never completed one turn in training are shaded. Storage floor = 2<sup>&minus;d</sup> / "
       "&theta;<sub>i</sub> tokens: a pair stored with d significant bits (bf16 8, fp16 11, fp32 24) can be off "
       "by up to 2<sup>&minus;d</sup> rad in its angle (each component rounded to within 2<sup>&minus;d</sup> "
       "relative moves the angle by at most 2<sup>&minus;d</sup> |sin 2&psi;|), so band i cannot tell "
       "positions apart finer than that, however exactly the rotation was computed.</p>\n";
  h += "<table class=\"bands\">\n<tr><th>band i</th><th>&theta;<sub>i</sub> before scaling (rad/token)</th>"
       "<th>&theta;<sub>i</sub> after scaling (rad/token)</th><th>wavelength before (tokens)</th>"
       "<th>wavelength after (tokens)</th><th>turns in training</th><th>arc swept in training (rad)</th>"
       "<th>unseen at L_eval, before scaling</th><th>unseen at L_eval, after scaling</th>"
       "<th>storage floor bf16 (tokens)</th><th>fp16</th><th>fp32</th></tr>\n";
  auto percent = [](double f) { return std::isnan(f) ? std::string("nan") : short_number(100 * f, 3) + "%"; };
  for (const auto& b : r.bands) {
    h += std::string("<tr") + (b.turns_in_training < 1 ? " class=\"unseen\"" : "") + "><td>" +
         std::to_string(b.band) + "</td><td>" + short_number(b.inv_freq_unscaled, 4) + "</td><td>" +
         short_number(b.inv_freq, 4) + "</td><td>" + table_number(b.wavelength_unscaled) + "</td><td>" +
         table_number(b.wavelength) + "</td><td>" + table_number(b.turns_in_training) + "</td><td>" +
         table_number(2 * std::numbers::pi * b.turns_in_training) + "</td><td>" +
         percent(b.unseen_fraction_unscaled) + "</td><td>" + percent(b.unseen_fraction_scaled) + "</td><td>" +
         table_number(b.floor_tokens_bfloat16) + "</td><td>" + table_number(b.floor_tokens_float16) + "</td><td>" +
         table_number(b.floor_tokens_float32) + "</td></tr>\n";
  }
  h += "</table>\n";

  // Timing and provenance.
  const auto& t = r.time;
  h += "<h2>Timing and provenance</h2>\n<p>" + integer(t.values) + " values (" + integer(t.positions) +
       " positions &times; " + std::to_string(r.bands.size()) + " bands &times; " + std::to_string(r.series.size()) +
       " implementations) in " + short_number(t.seconds_total) + " s on " + std::to_string(t.threads) +
       " threads: " + short_number(t.values_per_second) + " values/s; the fast reference alone runs at " +
       short_number(t.reference_values_per_second) + " values/s; a plain MPFR reference would have needed about " +
       short_number(t.mpfr_seconds_estimate) + " s.</p>\n";
  h += "<table class=\"config\">\n";
  row("command", o.command.empty() ? std::string("(not recorded)") : o.command);
  row("ropecheck version", r.ropecheck_version);
  row("reference precision", r.reference_precision);
  row("plots", "gnuplot (Debian gnuplot-nox), scripts in plots/*.gp");
  row("machine-readable", "summary.json (deterministic), timing.json, data/*.csv");
  h += "</table>\n</body>\n</html>\n";
  return h;
}

}  // namespace ropecheck::report::detail
