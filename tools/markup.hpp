// tools/markup.hpp — the one escaper of text put into XML (JUnit) and HTML (report.html) by the doors,
// and the one quoting of a word in the rerun commands they print (shell_word).
// & < > " ' become entities (&apos;, which XML and HTML5 both define); control characters other than
// tab, newline and carriage return, which XML 1.0 does not allow, become spaces.
#pragma once

#include <string>
#include <string_view>

namespace ropecheck::cli {

[[nodiscard]] inline std::string markup_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (const char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') o += ' ';
        else o += ch;
    }
  }
  return o;
}

// A word for a POSIX shell: as is when it needs no quoting, else in single quotes.
[[nodiscard]] inline std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./-+:=@%,") == std::string::npos;
  if (plain) return w;
  std::string q = "'";
  for (const char ch : w) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace ropecheck::cli
