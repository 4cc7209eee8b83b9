// The HTML comparison report (html_report.h): facts, first divergence, an SVG error chart,
// histograms, classes, the worst commands, structural differences, every command.
#include "vtrace/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "vtrace/drift/extract.h"

namespace vtrace::report {

namespace {

using drift::CommandComparison;
using drift::CompareReport;
using drift::DriftClass;
using drift::PairResult;

constexpr std::array<DriftClass, 6> kClasses = {
    DriftClass::kBitwise, DriftClass::kWithin1Ulp, DriftClass::kWithinTolerance,
    DriftClass::kNanInf,  DriftClass::kDrift,      DriftClass::kStructural};
// The structural-differences table shows the first this many (the JSON report has them all).
constexpr std::size_t kStructuralRows = 100;
constexpr std::array<const char*, 6> kColors = {"#1f77b4", "#d62728", "#2ca02c",
                                                "#9467bd", "#ff7f0e", "#8c564b"};

// How the UTF-8 sequence at the start of `text` reads: `valid` bytes (1 to 4) of one code point,
// or (valid 0) an invalid prefix of `invalid` bytes: a byte that starts no sequence, or a lead
// and the continuation bytes that fit it before one that does not (or the end). One U+FFFD per
// such maximal subpart is the WHATWG decoder's rule, and nlohmann::json's with
// error_handler_t::replace, which the JSON reports use.
struct Utf8Read {
  std::size_t valid = 0;
  std::size_t invalid = 0;
};

Utf8Read read_utf8(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {1, 0};
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong form
    if (lead == 0xED) high = 0x9F;  // no surrogate
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong form
    if (lead == 0xF4) high = 0x8F;  // nothing past U+10FFFF
  } else {
    return {0, 1};  // 0x80-0xC1, 0xF5-0xFF start no sequence
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (i >= text.size()) return {0, i};
    const unsigned char b = byte(i);
    if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) return {0, i};
  }
  return {length, 0};
}

// Text as HTML character data or an attribute value: the five markup characters as references,
// each maximal invalid UTF-8 subpart as U+FFFD (the page says charset utf-8), C0 controls other
// than tab and newline, and DEL, as numeric references (NUL as U+FFFD, which HTML makes of
// &#0;). The JSON reports write the same text with the same U+FFFD replacements.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const char c = text.front();
    const Utf8Read read = read_utf8(text);
    if (read.valid == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      text.remove_prefix(read.invalid);
      continue;
    }
    if (read.valid > 1) {
      out.append(text.substr(0, read.valid));
      text.remove_prefix(read.valid);
      continue;
    }
    text.remove_prefix(1);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += c;
        break;
      case '\0':
        out += "\xEF\xBF\xBD";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += fmt::format("&#x{:X};", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out;
}

const char* color(std::size_t runtime) { return kColors[runtime % kColors.size()]; }

std::string class_cell(DriftClass c) {
  return fmt::format("<span class=\"cls {0}\">{0}</span>", drift::drift_class_name(c));
}

std::string stats_text(const PairResult& p) {
  if (!p.note.empty()) return escape(p.note);
  const auto& s = p.stats;
  return fmt::format(
      "{} of {} elements differ, max abs {:.3g}, mean abs {:.3g}, max rel {:.3g}, "
      "max ulp {}",
      s.differing, s.elements, s.max_abs_error, s.mean_abs_error, s.max_rel_error, s.max_ulp);
}

std::uint64_t max_ulp(const CommandComparison& c) {
  std::uint64_t m = 0;
  for (const auto& p : c.results) m = std::max(m, p.stats.max_ulp);
  return m;
}

class Page {
 public:
  Page(const CompareReport& r, std::ostream& out, const HtmlOptions& o) : r_(r), out_(out), o_(o) {}

  void write() {
    head();
    facts();
    first_divergence();
    chart();
    histograms();
    classes();
    worst();
    structural();
    commands();
    tail();
  }

 private:
  std::string extract_line(const CommandComparison& c) const {
    if (o_.trace_path.empty() || !c.command || r_.runtimes.empty()) {
      return escape(o_.reproduce);
    }
    return escape(drift::extract_command_line(o_.trace_path, c.event, r_.runtimes.front(),
                                              o_.extract_options));
  }

  // A repro runs its command on the baseline's inputs, so it shows the error the command
  // introduces. With --resync, a command that introduces none (it only carries error in from an
  // earlier one) is said to be one: its repro matches on every runtime.
  static std::string carried_note(const CommandComparison& c) {
    if (c.introduced.empty() || c.agrees) return "";
    const bool introduces = std::any_of(c.introduced.begin(), c.introduced.end(),
                                        [](const drift::PairResult& p) { return !p.agrees; });
    return introduces ? ""
                      : "<br>only carries error in (introduces none on the baseline's inputs): "
                        "its repro matches";
  }

  void head() {
    out_ << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
         << escape(o_.title) << "</title>\n<style>\n"
         << "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}"
            "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}"
            "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;"
            "padding:.2em .5em;text-align:left}th{background:#f4f4f4;cursor:pointer}"
            "code{background:#f4f4f4;padding:.1em .3em;word-break:break-all}"
            ".cls{padding:0 .3em;border-radius:3px}.bitwise{background:#dfd}"
            ".within_1_ulp{background:#efe}.within_tolerance{background:#ffd}"
            ".nan_inf{background:#fdf}.drift{background:#fdd}.structural{background:#ddf}"
            ".verdict-match{color:#070}.verdict-drift,.verdict-structural{color:#b00}"
            "svg text{font-size:11px;font-family:sans-serif}\n"
         << "</style></head>\n<body>\n<h1>" << escape(o_.title) << ": " << escape(r_.trace)
         << "</h1>\n";
  }

  void facts() {
    out_ << "<section id=\"facts\"><h2>Run</h2><table>\n";
    auto row = [&](const char* k, const std::string& v) {
      out_ << "<tr><th>" << k << "</th><td>" << v << "</td></tr>\n";
    };
    row("trace", escape(r_.trace));
    std::string runtimes;
    for (std::size_t i = 0; i < r_.runtimes.size(); ++i) {
      runtimes += fmt::format("{}<span style=\"color:{}\">{}</span>", i ? ", " : "",
                              i ? color(i - 1) : "#222", escape(r_.runtimes[i]));
    }
    row("runtimes", runtimes);
    row("baseline", r_.runtimes.empty() ? "" : escape(r_.runtimes.front()));
    row("check", escape(r_.check));
    row("deep", r_.deep ? "yes" : "no");
    row("resync", r_.resync ? "yes" : "no");
    row("events", std::to_string(r_.events));
    const auto n = r_.counts();
    row("results compared",
        n.regions == 0 ? fmt::format("{} ({} readbacks)", n.results, n.readbacks)
                       : fmt::format("{} ({} regions written by {} commands, {} readbacks)",
                                     n.results, n.regions, n.commands, n.readbacks));
    if (r_.resync) {
      row("introduced error",
          fmt::format("{} of {} commands introduce error, {} only carry it in",
                      n.commands_introducing, n.commands, n.commands_carrying_only));
    }
    // A recovered (cut) trace qualifies the verdict, as the text and the JSON do.
    const std::string incomplete =
        r_.complete() ? ""
                      : fmt::format(" (incomplete trace: {} recovered events compared)", r_.events);
    row("verdict", fmt::format("<b class=\"verdict-{0}\">{0}</b>{1}", r_.verdict(), incomplete));
    if (!r_.complete()) row("recovered", recovered_text());
    if (!r_.unfinished_submits.empty()) {
      std::string events;
      for (const auto begin : r_.unfinished_submits) {
        events += fmt::format("{}{}", events.empty() ? "" : ", ", begin);
      }
      row("unfinished submits",
          fmt::format("SubmitBegin at event {} has no SubmitEnd (the recording ended inside the "
                      "submit): re-executed, its outcome not compared",
                      events));
    }
    if (!o_.reproduce.empty()) row("reproduce", "<code>" + escape(o_.reproduce) + "</code>");
    out_ << "</table></section>\n";
  }

  // Per recovered input trace (diff: labelled a or b): the reader's note, how many events were
  // used, and where the plan stopped before a payload the cut lost.
  std::string recovered_text() const {
    std::string text;
    for (std::size_t i = 0; i < r_.recovered.size(); ++i) {
      if (!r_.recovered[i]) continue;
      const auto& t = *r_.recovered[i];
      if (!text.empty()) text += "<br>";
      if (r_.recovered.size() > 1 && i < r_.runtimes.size()) text += escape(r_.runtimes[i]) + ": ";
      text += fmt::format("<code>{}</code>: {}; {} recovered events used", escape(t.path),
                          escape(t.recovery.note), t.events);
      if (t.recovery.stopped_at) {
        text += fmt::format("; stops before event {} because {}", *t.recovery.stopped_at,
                            escape(t.recovery.stop_reason));
      }
    }
    return text;
  }

  const CommandComparison* first_command() const {
    return r_.first_divergence ? r_.command_of(*r_.first_divergence) : nullptr;
  }

  void first_divergence() {
    out_ << "<section id=\"first-divergence\"><h2>First divergence</h2>\n";
    if (!r_.first_divergence) {
      out_ << "<p>None: every runtime agrees with the baseline under the check.</p></section>\n";
      return;
    }
    const auto& f = *r_.first_divergence;
    out_ << fmt::format("<p>event <b>{}</b> ({}) <code>{}</code>{}: runtime <b>{}</b> is {}</p>\n",
                        f.event, escape(f.kind), escape(f.call),
                        f.command ? fmt::format(", command {}", *f.command) : "", escape(f.runtime),
                        class_cell(f.cls));
    if (const auto* c = first_command()) {
      out_ << "<ul>";
      if (!c->shapes.empty()) out_ << "<li>shapes: " << escape(c->shapes) << "</li>";
      if (c->node_index) out_ << "<li>node: " << *c->node_index << "</li>";
      if (c->participants > 0) out_ << "<li>participants: " << c->participants << "</li>";
      if (!c->region.empty()) out_ << "<li>region: " << escape(c->region) << "</li>";
      for (const auto& p : c->results) {
        out_ << "<li>" << escape(p.runtime) << ": " << class_cell(p.cls) << " " << stats_text(p)
             << "</li>";
      }
      for (const auto& p : c->introduced) {
        out_ << "<li>" << escape(p.runtime)
             << " introduced (on the baseline's inputs): " << class_cell(p.cls) << " "
             << stats_text(p) << "</li>";
      }
      out_ << "</ul>\n<p>reproduce: <code>" << extract_line(*c) << "</code></p>\n";
    } else if (!o_.reproduce.empty()) {
      // A structural divergence (no numbers compared) or a readback: no command to extract, so
      // the line that reproduces the comparison, as the text report prints it.
      out_ << "<p>reproduce: <code>" << escape(o_.reproduce) << "</code></p>\n";
    }
    out_ << "</section>\n";
  }

  // Max ULP per command, log scale (log10(1 + ulp)), a series per runtime after the baseline.
  void chart() {
    constexpr double kW = 1000, kH = 280, kLeft = 50, kRight = 10, kTop = 20, kBottom = 30;
    const std::size_t n = r_.commands.size();
    std::uint64_t top = 1;
    for (const auto& c : r_.commands) {
      for (const auto& p : c.results) top = std::max(top, p.stats.max_ulp);
      for (const auto& p : c.introduced) top = std::max(top, p.stats.max_ulp);
    }
    const double ymax = std::log10(1.0 + static_cast<double>(top));
    auto x = [&](std::size_t i) {
      return kLeft + (kW - kLeft - kRight) *
                         (n <= 1 ? 0.5 : static_cast<double>(i) / static_cast<double>(n - 1));
    };
    auto y = [&](std::uint64_t ulp) {
      return kTop +
             (kH - kTop - kBottom) * (1.0 - std::log10(1.0 + static_cast<double>(ulp)) / ymax);
    };
    out_ << "<section id=\"error-chart\"><h2>Error per command</h2>\n"
         << fmt::format(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                "viewBox=\"0 0 {0} {1}\" role=\"img\">\n",
                kW, kH);
    // Axes and decades.
    out_ << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888\"/>",
                        kLeft, kTop, kH - kBottom);
    out_ << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\"/>\n",
                        kLeft, kH - kBottom, kW - kRight);
    // Ticks at 0, 1, 10, 100, ... up to the largest error.
    for (std::uint64_t tick = 0;;) {
      out_ << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLeft - 4,
                          y(tick) + 4, tick);
      if (tick != 0 && tick > top / 10) break;
      tick = tick == 0 ? 1 : tick * 10;
    }
    out_ << fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">compared commands, in "
        "execution order (max ULP, log scale)</text>\n",
        (kW + kLeft) / 2, kH - 8);
    // The first divergence.
    if (const auto* first = first_command()) {
      const auto i = static_cast<std::size_t>(first - r_.commands.data());
      out_ << fmt::format(
          "<line id=\"first-divergence-mark\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
          "stroke=\"#b00\" stroke-dasharray=\"4 3\"/><text x=\"{3}\" y=\"{4}\" fill=\"#b00\">"
          "first divergence: event {5}</text>\n",
          x(i), kTop, kH - kBottom, x(i) + 4, kTop + 10, first->event);
    }
    const std::size_t runtimes = r_.runtimes.size() > 1 ? r_.runtimes.size() - 1 : 0;
    for (std::size_t k = 0; k < runtimes; ++k) {
      std::string inherited, introduced;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& c = r_.commands[i];
        if (k < c.results.size()) {
          inherited += fmt::format("{:.1f},{:.1f} ", x(i), y(c.results[k].stats.max_ulp));
        }
        if (k < c.introduced.size()) {
          const double top_y = y(c.introduced[k].stats.max_ulp);
          introduced += fmt::format(
              "<rect class=\"introduced\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"3\" height=\"{:.1f}\" "
              "fill=\"{}\" opacity=\"0.5\"><title>event {} {} introduced max ulp {}</title></rect>",
              x(i) - 1.5, top_y, std::max(0.0, kH - kBottom - top_y), color(k), c.event,
              escape(c.kind), c.introduced[k].stats.max_ulp);
        }
      }
      out_ << introduced;
      out_ << fmt::format(
          "<polyline class=\"series\" data-runtime=\"{}\" fill=\"none\" "
          "stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
          escape(r_.runtimes[k + 1]), color(k), inherited);
    }
    out_ << "</svg>\n<p>";
    for (std::size_t k = 0; k < runtimes; ++k) {
      out_ << fmt::format("<span style=\"color:{}\">&#9632; {}</span> ", color(k),
                          escape(r_.runtimes[k + 1]));
    }
    out_ << (r_.resync ? "line: error as carried in (inherited); bars: error each command "
                         "introduced on the baseline's inputs (--resync)"
                       : "line: max ULP against the baseline")
         << "</p></section>\n";
  }

  void histograms() {
    out_ << "<section id=\"histograms\"><h2>Histograms</h2>\n";
    for (std::size_t k = 0; k + 1 < r_.runtimes.size(); ++k) {
      std::array<std::uint64_t, 7> ulp{}, magnitude{};
      for (const auto& c : r_.commands) {
        if (k >= c.results.size()) continue;
        for (std::size_t b = 0; b < ulp.size(); ++b) {
          ulp[b] += c.results[k].stats.ulp_histogram[b];
          magnitude[b] += c.results[k].stats.magnitude_histogram[b];
        }
      }
      out_ << "<h3>" << escape(r_.runtimes[k + 1]) << "</h3>\n";
      bars("elements by ULP distance", drift::kUlpBuckets, ulp, color(k));
      bars("differing elements by the baseline value's magnitude", drift::kMagnitudeBuckets,
           magnitude, color(k));
    }
    out_ << "</section>\n";
  }

  void bars(const char* what, const std::array<std::string_view, 7>& names,
            const std::array<std::uint64_t, 7>& counts, const char* fill) {
    constexpr double kW = 480, kH = 150, kBar = 60;
    const std::uint64_t top =
        std::max<std::uint64_t>(1, *std::max_element(counts.begin(), counts.end()));
    out_ << fmt::format(
        "<figure><figcaption>{}</figcaption><svg class=\"histogram\" "
        "xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">",
        escape(what), kW, kH);
    for (std::size_t b = 0; b < counts.size(); ++b) {
      // Log scale, so one differing element among millions still shows.
      const double h = 100.0 * std::log10(1.0 + static_cast<double>(counts[b])) /
                       std::log10(1.0 + static_cast<double>(top));
      const double x = 10 + kBar * static_cast<double>(b);
      out_ << fmt::format(
          "<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\">"
          "<title>{}: {}</title></rect><text x=\"{:.0f}\" y=\"{}\" text-anchor=\"middle\">{}"
          "</text><text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
          x, 115 - h, kBar - 8, h, fill, escape(names[b]), counts[b], x + (kBar - 8) / 2, 135,
          escape(names[b]), x + (kBar - 8) / 2, 112 - h, counts[b]);
    }
    out_ << "</svg></figure>\n";
  }

  void classes() {
    out_ << "<section id=\"classes\"><h2>Classes</h2><table class=\"sortable\"><thead><tr>"
            "<th>runtime</th>";
    for (const auto c : kClasses) out_ << "<th>" << drift::drift_class_name(c) << "</th>";
    out_ << "</tr></thead><tbody>\n";
    for (std::size_t k = 0; k + 1 < r_.runtimes.size(); ++k) {
      std::map<DriftClass, std::uint64_t> count;
      for (const auto& c : r_.commands) {
        if (k < c.results.size()) ++count[c.results[k].cls];
      }
      out_ << "<tr><td>" << escape(r_.runtimes[k + 1]) << "</td>";
      for (const auto c : kClasses) out_ << "<td>" << count[c] << "</td>";
      out_ << "</tr>\n";
    }
    out_ << "</tbody></table></section>\n";
  }

  void worst() {
    std::vector<const CommandComparison*> bad;
    for (const auto& c : r_.commands) {
      if (!c.agrees) bad.push_back(&c);
    }
    std::stable_sort(bad.begin(), bad.end(),
                     [](auto* a, auto* b) { return drift::worse_command(*a, *b); });
    out_ << fmt::format("<section id=\"worst\"><h2>Worst results ({} of {} disagree)</h2>\n",
                        bad.size(), r_.commands.size());
    if (bad.empty()) {
      out_ << "<p>None.</p></section>\n";
      return;
    }
    // One command compared as several regions (a launch per node, a copy's ranges) has a row
    // per region: the region column tells them apart.
    out_ << "<table class=\"sortable\"><thead><tr><th>event</th><th>kind</th><th>shapes</th>"
            "<th>node</th><th>region</th><th>class</th><th>max ulp</th><th>statistics</th>"
            "<th>extract</th></tr></thead><tbody>\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(10, bad.size()); ++i) {
      const auto& c = *bad[i];
      std::string stats;
      for (const auto& p : c.results) stats += escape(p.runtime) + ": " + stats_text(p) + "<br>";
      out_ << fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td><code>{}</code>{}</td></tr>\n",
          c.event, escape(c.kind), escape(c.shapes),
          c.node_index ? std::to_string(*c.node_index) : "", escape(c.region),
          class_cell(c.worst), max_ulp(c), stats, extract_line(c), carried_note(c));
    }
    out_ << "</tbody></table></section>\n";
  }

  void structural() {
    out_ << fmt::format("<section id=\"structural\"><h2>Structural differences ({})</h2>\n",
                        r_.structural.size());
    if (r_.structural.empty()) {
      out_ << "<p>None.</p></section>\n";
      return;
    }
    out_ << "<table><thead><tr><th>event</th><th>call</th><th>runtime</th><th>against</th>"
            "<th>kind</th><th>expected</th><th>actual</th></tr></thead><tbody>\n";
    const std::size_t shown = std::min(kStructuralRows, r_.structural.size());
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& d = r_.structural[i];
      out_ << fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></"
          "tr>\n",
          d.event, escape(d.call), escape(d.runtime), escape(d.against), escape(d.kind),
          escape(d.expected), escape(d.actual));
    }
    out_ << "</tbody></table>\n";
    if (shown < r_.structural.size()) {
      out_ << fmt::format(
          "<p id=\"structural-more\">... and {} more (all in --json <code>structural</code>)</p>\n",
          r_.structural.size() - shown);
    }
    out_ << "</section>\n";
  }

  void commands() {
    out_ << "<section id=\"commands\"><h2>Every compared command</h2>\n<button "
            "id=\"toggle-commands\" type=\"button\">show all commands</button>\n"
            "<table id=\"all-commands\" class=\"sortable\" hidden><thead><tr><th>order</th>"
            "<th>event</th><th>kind</th><th>shapes</th><th>node</th>";
    for (std::size_t k = 1; k < r_.runtimes.size(); ++k) {
      out_ << "<th>" << escape(r_.runtimes[k]) << "</th><th>max ulp</th>";
      if (r_.resync) out_ << "<th>introduced</th>";
    }
    out_ << "</tr></thead><tbody>\n";
    for (const auto& c : r_.commands) {
      out_ << fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", c.order,
                          c.event, escape(c.kind), escape(c.shapes),
                          c.node_index ? std::to_string(*c.node_index) : "");
      for (std::size_t k = 0; k + 1 < r_.runtimes.size(); ++k) {
        if (k < c.results.size()) {
          out_ << "<td>" << class_cell(c.results[k].cls) << "</td><td>"
               << c.results[k].stats.max_ulp << "</td>";
        } else {
          out_ << "<td></td><td></td>";
        }
        if (r_.resync) {
          out_ << "<td>"
               << (k < c.introduced.size() ? class_cell(c.introduced[k].cls) : std::string())
               << "</td>";
        }
      }
      out_ << "</tr>\n";
    }
    out_ << "</tbody></table></section>\n";
  }

  // The only script: sortable tables, the toggle, and the mark that it all ran.
  void tail() {
    out_ << R"(<script>
"use strict";
(function () {
  function cellValue(row, i) {
    const text = row.cells[i] ? row.cells[i].textContent.trim() : "";
    const number = Number(text);
    return text !== "" && !Number.isNaN(number) ? number : text;
  }
  for (const table of document.querySelectorAll("table.sortable")) {
    const headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.from(headers).forEach(function (th, i) {
      th.addEventListener("click", function () {
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const down = th.dataset.order !== "down";
        th.dataset.order = down ? "down" : "up";
        rows.sort(function (a, b) {
          const x = cellValue(a, i), y = cellValue(b, i);
          const c = x < y ? -1 : x > y ? 1 : 0;
          return down ? -c : c;
        });
        for (const row of rows) body.appendChild(row);
      });
    });
  }
  const toggle = document.getElementById("toggle-commands");
  const all = document.getElementById("all-commands");
  toggle.addEventListener("click", function () {
    all.hidden = !all.hidden;
    toggle.textContent = all.hidden ? "show all commands" : "hide the commands";
  });
  document.body.dataset.rendered = "ok";
})();
</script>
</body></html>
)";
  }

  const CompareReport& r_;
  std::ostream& out_;
  const HtmlOptions& o_;
};

}  // namespace

std::expected<void, std::string> write_html_report(const CompareReport& report, std::ostream& out,
                                                   const HtmlOptions& options) {
  Page(report, out, options).write();
  out.flush();
  if (out.fail()) return std::unexpected(std::string("writing the HTML report failed"));
  return {};
}

}  // namespace vtrace::report
