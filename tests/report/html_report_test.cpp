// The HTML comparison report (vtrace/report/html_report.h): its sections and facts for a match, a
// drift and a --resync comparison, a recovered (cut) trace, escaping (markup, invalid UTF-8 and
// controls as the JSON writer replaces them, well-formed SVG), the structural table's cap, no
// external resource; and, when Chromium is installed, the page rendered headless without a
// script error (a screenshot is kept).
#include "vtrace/report/html_report.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/test_support.h"
#include "trace_fixtures.h"
#include "vtrace/drift/lockstep.h"
#include "vtrace/replayer/json_text.h"

namespace dr = vtrace::drift;
namespace rep = vtrace::report;
namespace rt = vtrace::runtime;

namespace {

std::filesystem::path golden(const char* name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
}

dr::CompareReport compare_path(const std::filesystem::path& trace, bool resync) {
  dr::CompareOptions options;
  options.runtimes = {"reference", "cpu-splitk"};
  options.deep = true;
  options.resync = resync;
  auto report = dr::compare_trace(trace, options, rt::default_registry());
  REQUIRE(report.has_value());
  return std::move(*report);
}

dr::CompareReport compare(const char* trace, bool resync) {
  return compare_path(golden(trace), resync);
}

// The markup of every inline <svg> of `html` is well-formed XML as far as a page of ours goes:
// every '<' opens a named or closing tag, tags balance, every '&' starts a reference. Returns
// the first fault, or "" when there is none.
std::string svg_fault(const std::string& html) {
  std::size_t svgs = 0;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
    const auto end = html.find("</svg>", at);
    if (end == std::string::npos) return "an <svg> that does not end";
    const std::string svg = html.substr(at, end + 6 - at);
    std::vector<std::string> open;
    for (std::size_t i = 0; i < svg.size(); ++i) {
      if (svg[i] == '&') {
        static const std::regex reference("^&(amp|lt|gt|quot|#[0-9]+|#x[0-9A-Fa-f]+);");
        if (!std::regex_search(svg.substr(i, 12), reference)) {
          return "a bare & in " + svg.substr(i, 20);
        }
        continue;
      }
      if (svg[i] != '<') continue;
      const bool closing = i + 1 < svg.size() && svg[i + 1] == '/';
      std::size_t name_end = i + (closing ? 2 : 1);
      while (name_end < svg.size() && std::isalpha(static_cast<unsigned char>(svg[name_end]))) {
        ++name_end;
      }
      const std::string name = svg.substr(i + (closing ? 2 : 1), name_end - i - (closing ? 2 : 1));
      if (name.empty()) return "a '<' that opens no tag: " + svg.substr(i, 20);
      const auto gt = svg.find('>', i);
      if (gt == std::string::npos) return "a tag that does not end";
      if (closing) {
        if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
        open.pop_back();
      } else if (svg[gt - 1] != '/') {
        open.push_back(name);
      }
      i = gt;
    }
    if (!open.empty()) return "<" + open.back() + "> is never closed";
  }
  return svgs > 0 ? "" : "no <svg>";
}

std::string page(const dr::CompareReport& r, const rep::HtmlOptions& options = {}) {
  std::ostringstream out;
  REQUIRE(rep::write_html_report(r, out, options).has_value());
  return out.str();
}

bool has(const std::string& html, const std::string& needle) {
  return html.find(needle) != std::string::npos;
}

// A cpu-splitk comparison that drifts: decode-short's reductions are short, so one with its
// first divergence forced by a tolerance that nothing meets.
dr::CompareReport drifting(bool resync) {
  auto r = compare("decode-short-v1.2.vtrace", resync);
  if (r.first_divergence) return r;
  // Make one command disagree, as a drifting runtime would.
  for (auto& c : r.commands) {
    if (!c.command) continue;
    c.agrees = false;
    c.worst = dr::DriftClass::kDrift;
    c.results[0].agrees = false;
    c.results[0].cls = dr::DriftClass::kDrift;
    c.results[0].stats.max_ulp = 300;
    c.results[0].stats.differing = 5;
    if (resync) {
      c.introduced[0].agrees = false;
      c.introduced[0].cls = dr::DriftClass::kWithin1Ulp;
      c.introduced[0].stats.max_ulp = 1;
    }
    r.first_divergence = dr::FirstDivergence{
        c.event, c.command, c.order, c.kind, c.call, "cpu-splitk", dr::DriftClass::kDrift};
    break;
  }
  return r;
}

}  // namespace

TEST_CASE("the HTML report holds every section, self-contained", "[report]") {
  const auto r = drifting(false);
  const std::string html =
      page(r, {"vtrace compare", "vtrace compare 'my trace.vtrace' --runtimes a,b", "t v.vtrace",
               ""});
  for (const char* id : {"facts", "first-divergence", "error-chart", "histograms", "classes",
                         "worst", "structural", "commands", "first-divergence-mark"}) {
    INFO(id);
    CHECK(has(html, fmt::format("id=\"{}\"", id)));
  }
  CHECK(has(html, "<b class=\"verdict-drift\">drift</b>"));
  CHECK(has(html, fmt::format("event <b>{}</b>", r.first_divergence->event)));
  CHECK(has(html, "polyline class=\"series\" data-runtime=\"cpu-splitk\""));
  CHECK_FALSE(has(html, "class=\"introduced\""));  // no --resync
  // The reproduce lines are escaped and shell-quoted.
  CHECK(has(html, "vtrace compare &#39;my trace.vtrace&#39; --runtimes a,b"));
  CHECK(has(html, fmt::format("vtrace extract &#39;t v.vtrace&#39; --event {} -o repro-{}.vtrace",
                              r.first_divergence->event, r.first_divergence->event)));
  // Nothing fetched from anywhere: no src=, href= or url( at all.
  CHECK_FALSE(std::regex_search(html, std::regex("(src|href)\\s*=|url\\(|@import")));
  CHECK(has(html, "document.body.dataset.rendered = \"ok\""));
  // Every compared command is a row of the full table.
  std::size_t rows = 0;
  const auto all = html.find("id=\"all-commands\"");
  REQUIRE(all != std::string::npos);
  for (auto at = html.find("<tr><td>", all); at != std::string::npos;
       at = html.find("<tr><td>", at + 1)) {
    ++rows;
  }
  CHECK(rows == r.commands.size());
}

TEST_CASE(
    "the HTML report's first divergence is the region that diverged, not an earlier region of "
    "the same command",
    "[report]") {
  auto r = drifting(false);
  REQUIRE(r.first_divergence.has_value());
  const auto diverged = std::find_if(r.commands.begin(), r.commands.end(), [&](const auto& c) {
    return c.order == r.first_divergence->order;
  });
  REQUIRE(diverged != r.commands.end());
  // One command compared as two regions (a launch per participant): the first agrees.
  dr::CommandComparison agreeing = *diverged;
  agreeing.order = diverged->order + 1000000;  // any order no other entry has
  agreeing.region = "buffer#99 [0, 8)";
  agreeing.agrees = true;
  agreeing.results[0].agrees = true;
  agreeing.results[0].cls = dr::DriftClass::kBitwise;
  const std::string region = diverged->region.empty() ? "buffer#98 [8, 16)" : diverged->region;
  diverged->region = region;
  r.commands.insert(diverged, agreeing);
  const std::string html = page(r);
  const auto section = html.find("id=\"first-divergence\"");
  REQUIRE(section != std::string::npos);
  const std::string text = html.substr(section, html.find("</section>", section) - section);
  CHECK(has(text, "region: " + region));
  CHECK_FALSE(has(text, "buffer#99"));
}

TEST_CASE(
    "the HTML report ranks a nan_inf command above any ULP drift, and its extract lines name a "
    "baseline other than reference",
    "[report]") {
  auto r = compare("decode-short-v1.2.vtrace", false);
  std::vector<dr::CommandComparison*> commands;
  for (auto& c : r.commands) {
    if (c.command) commands.push_back(&c);
  }
  REQUIRE(commands.size() >= 12);
  // Eleven commands drift by 2 to 12 ULP; the last one turned a value into an infinity (max ULP
  // 0 over its finite pairs): it ranks first, not eleventh (out of the ten shown).
  for (std::size_t i = 0; i < 12; ++i) {
    auto& p = commands[i]->results[0];
    commands[i]->agrees = p.agrees = false;
    commands[i]->worst = p.cls = i == 11 ? dr::DriftClass::kNanInf : dr::DriftClass::kDrift;
    p.stats.max_ulp = i == 11 ? 0 : i + 2;
  }
  const std::string html = page(r, {"vtrace compare", "vtrace compare x", "t.vtrace", ""});
  const auto worst = html.find("id=\"worst\"");
  REQUIRE(worst != std::string::npos);
  const auto first_row = html.find("<tr><td>", worst);
  REQUIRE(first_row != std::string::npos);
  CHECK(html.substr(first_row, 8 + std::to_string(commands[11]->event).size() + 5) ==
        fmt::format("<tr><td>{}</td>", commands[11]->event));
  // Each row names its region, which tells apart the rows of one command compared as several.
  CHECK(has(html, "<th>node</th><th>region</th>"));
  REQUIRE_FALSE(commands[11]->region.empty());
  const auto row_end = html.find("</tr>", first_row);
  CHECK(html.substr(first_row, row_end - first_row)
            .find("<td>" + commands[11]->region + "</td>") != std::string::npos);
  CHECK(dr::worse_command(*commands[11], *commands[10]));
  CHECK_FALSE(dr::worse_command(*commands[10], *commands[11]));
  CHECK(dr::worse_command(*commands[10], *commands[9]));  // 12 ULP before 11
  // reference is extract's default baseline; any other is named.
  CHECK(has(html, fmt::format("vtrace extract t.vtrace --event {} -o repro-{}.vtrace</code>",
                              commands[11]->event, commands[11]->event)));
  r.runtimes = {"cpu", "cpu-splitk"};
  CHECK(
      has(page(r, {"vtrace compare", "vtrace compare x", "t.vtrace", ""}),
          fmt::format("vtrace extract t.vtrace --event {} -o repro-{}.vtrace --runtime cpu</code>",
                      commands[11]->event, commands[11]->event)));
}

TEST_CASE("the HTML report of --resync draws the introduced error beside the inherited one",
          "[report]") {
  const auto r = drifting(true);
  const std::string html = page(r);
  CHECK(has(html, "class=\"introduced\""));
  CHECK(has(html, "introduced (on the baseline's inputs)"));
  CHECK(has(html, "<th>introduced</th>"));
  CHECK(has(html, "<tr><th>resync</th><td>yes</td></tr>"));
  // The worst-results table says which commands only carry error in: their repro matches.
  CHECK_FALSE(has(html, "only carries error in"));  // the one that disagrees introduces it
  auto carried = r;
  for (auto& c : carried.commands) {
    if (c.agrees || c.introduced.empty()) continue;
    for (auto& p : c.introduced) {
      p.agrees = true;
      p.cls = dr::DriftClass::kBitwise;
    }
  }
  CHECK(has(page(carried),
            "only carries error in (introduces none on the baseline's inputs): its "
            "repro matches"));
}

TEST_CASE("the HTML report of a match says so, and escapes what it shows", "[report]") {
  auto r = compare("tiny.vtrace", false);
  r.trace = "<script>alert(1)</script>";
  const std::string html = page(r);
  CHECK(has(html, "<b class=\"verdict-match\">match</b>"));
  CHECK(has(html, "None: every runtime agrees"));
  CHECK(has(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_FALSE(has(html, "<script>alert(1)"));
  std::ostringstream bad;
  bad.setstate(std::ios::badbit);
  CHECK_FALSE(rep::write_html_report(r, bad, {}).has_value());
}

TEST_CASE("the HTML report's histograms are well-formed SVG: their bucket names are escaped",
          "[report]") {
  const auto r = drifting(false);
  const std::string html = page(r);
  CHECK(has(html, "<title>&lt;1e-4: "));  // the magnitude buckets "<1e-4", "<1e-3", ...
  CHECK_FALSE(has(html, "<title><1e-4"));
  CHECK(svg_fault(html).empty());
  INFO(svg_fault(html));
}

TEST_CASE(
    "the HTML report writes invalid UTF-8 as the JSON writer does (U+FFFD) and controls as "
    "numeric references",
    "[report]") {
  auto r = compare("tiny.vtrace", false);
  auto heading = [&](const std::string& trace) {
    r.trace = trace;
    const std::string html = page(r);
    const std::string open = "<h1>vtrace compare: ";
    const auto at = html.find(open);
    REQUIRE(at != std::string::npos);
    const auto end = html.find("</h1>", at);
    REQUIRE(end != std::string::npos);
    return html.substr(at + open.size(), end - at - open.size());
  };
  const std::string fffd = "\xEF\xBF\xBD";
  // A lone continuation byte, a truncated sequence at the end, an overlong '/', a surrogate, a
  // byte that starts nothing; valid two-, three- and four-byte characters stay as they are.
  CHECK(heading("a\x80"
                "b") == "a" + fffd + "b");
  CHECK(heading("\xC3\xA9t\xC3") == "\xC3\xA9t" + fffd);
  CHECK(heading("\xC0\xAF") == fffd + fffd);
  CHECK(heading("\xED\xA0\x80!") == fffd + fffd + fffd + "!");
  CHECK(heading("\xE2\x82x") == fffd + "x");
  CHECK(heading("\xFF\xF0\x9F\x98\x80\xE2\x82\xAC") == fffd + "\xF0\x9F\x98\x80\xE2\x82\xAC");
  // Controls: tab and newline stay; the rest (and DEL) are numeric references; NUL is U+FFFD.
  CHECK(heading("a\tb\nc\x01"
                "d\x1B\x7F\re") == "a\tb\nc&#x1;d&#x1B;&#x7F;&#xD;e");
  CHECK(heading(std::string("x\0y", 3)) == "x" + fffd + "y");
  // Any bytes (markup and controls aside): the same text as the JSON reports write.
  std::uint64_t state = 99;
  for (int n = 0; n < 3000; ++n) {
    std::string bytes;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t length = (state >> 40) % 14;
    for (std::size_t i = 0; i < length; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      auto b = static_cast<unsigned char>(state >> 56);
      if (b < 0x80 && (b < 0x20 || b == 0x7F || std::strchr("&<>\"'\\", b) != nullptr)) b = 'a';
      bytes += static_cast<char>(b);
    }
    const std::string json = vtrace::replayer::json_text(nlohmann::json(bytes));
    INFO(nlohmann::json(bytes).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
    CHECK(heading(bytes) == json.substr(1, json.size() - 2));
  }
}

TEST_CASE("the HTML report of a cut trace qualifies its verdict as the text and JSON do",
          "[report]") {
  // tiny cut after event 12, its first SubmitBegin: no footer, and that submit has no SubmitEnd.
  vtrace::test::ScratchDir dir("html-cut");
  const auto cut = dir / "cut.vtrace";
  vtrace::test::CutCopyOptions thirteen;
  thirteen.events = 13;
  vtrace::test::write_cut_copy(golden("tiny.vtrace"), cut, thirteen);
  const auto r = compare_path(cut, false);
  REQUIRE_FALSE(r.complete());
  REQUIRE(r.verdict() == "match");
  REQUIRE(r.unfinished_submits == std::vector<std::uint64_t>{12});
  const std::string html = page(r);
  CHECK(has(html,
            "<b class=\"verdict-match\">match</b> (incomplete trace: 13 recovered events "
            "compared)"));
  CHECK(r.to_json()["complete"] == false);
  CHECK(has(html, "<tr><th>recovered</th><td><code>" + cut.string() + "</code>: "));
  CHECK(has(html, r.recovered.front()->recovery.note));
  CHECK(has(html, "13 recovered events used"));
  CHECK(has(html, "<tr><th>unfinished submits</th><td>SubmitBegin at event 12 has no SubmitEnd"));
  // A complete trace says none of it.
  const std::string whole = page(compare("tiny.vtrace", false));
  CHECK(has(whole, "<b class=\"verdict-match\">match</b></td>"));
  CHECK_FALSE(has(whole, "incomplete"));
  CHECK_FALSE(has(whole, "<th>recovered</th>"));
  CHECK_FALSE(has(whole, "<th>unfinished submits</th>"));
}

TEST_CASE("a first divergence with no command to extract gets the comparison's reproduce line",
          "[report]") {
  auto r = drifting(false);
  REQUIRE(r.first_divergence.has_value());
  // A structural divergence: no command, no comparison of numbers.
  r.first_divergence->command.reset();
  r.first_divergence->order.reset();
  const std::string html =
      page(r, {"vtrace compare", "vtrace compare 'a b.vtrace' --runtimes x,y", "a b.vtrace", ""});
  const auto at = html.find("id=\"first-divergence\"");
  REQUIRE(at != std::string::npos);
  const auto section = html.substr(at, html.find("</section>", at) - at);
  INFO(section);
  CHECK(has(section,
            "reproduce: <code>vtrace compare &#39;a b.vtrace&#39; --runtimes x,y</code>"));
}

TEST_CASE("the HTML report's structural table says how many differences it leaves out",
          "[report]") {
  auto r = compare("tiny.vtrace", false);
  auto rows = [](const std::string& html) {
    const auto at = html.find("id=\"structural\"");
    const auto end = html.find("</section>", at);
    std::size_t n = 0;
    for (auto row = html.find("<tr><td>", at); row < end; row = html.find("<tr><td>", row + 1)) {
      ++n;
    }
    return n;
  };
  r.structural.clear();
  for (std::uint64_t i = 0; i < 100; ++i) {
    r.structural.push_back({i, i, "call", "cpu-splitk", "reference", "outcome", "ok", "error"});
  }
  std::string html = page(r);
  CHECK(rows(html) == 100);
  CHECK(has(html, "Structural differences (100)"));
  CHECK_FALSE(has(html, "more (all in --json"));
  for (std::uint64_t i = 100; i < 250; ++i) {
    r.structural.push_back({i, i, "call", "cpu-splitk", "reference", "outcome", "ok", "error"});
  }
  html = page(r);
  CHECK(rows(html) == 100);
  CHECK(has(html, "Structural differences (250)"));
  CHECK(has(html, "... and 150 more (all in --json <code>structural</code>)"));
}

TEST_CASE("the HTML report renders in headless Chromium without a script error", "[report]") {
  std::string chromium;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(candidate)) chromium = candidate;
  }
  if (chromium.empty()) VTRACE_SKIP("Chromium is not installed (Debian: chromium)");
  // Kept in the build tree: the page, what Chromium made of it, and the screenshot.
  const auto dir = std::filesystem::path(VTRACE_REPORT_OUTPUT_DIR) / "html-chromium";
  std::filesystem::create_directories(dir);
  const auto html = dir / "report.html";
  {
    std::ofstream out(html);
    REQUIRE(rep::write_html_report(drifting(true), out,
                                   {"vtrace compare", "vtrace compare x", "", ""}));
  }
  // The DOM after the scripts ran, and the console: a script error shows in both.
  const auto dom = dir / "dom.html";
  const auto log = dir / "console.log";
  // Its profile, caches and crash reports in the test's folder, not the user's $HOME.
  const auto profile = dir / "profile";
  const std::string flags = fmt::format(
      "--headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --user-data-dir={}",
      profile.string());
  chromium = fmt::format("HOME={0} XDG_CONFIG_HOME={0}/config XDG_CACHE_HOME={0}/cache {1}",
                         profile.string(), chromium);
  const int dumped = std::system(fmt::format("{} {} --dump-dom file://{} >{} 2>{}", chromium, flags,
                                             html.string(), dom.string(), log.string())
                                     .c_str());
  REQUIRE(WIFEXITED(dumped));
  REQUIRE(WEXITSTATUS(dumped) == 0);
  std::ifstream in(dom);
  const std::string rendered{std::istreambuf_iterator<char>(in), {}};
  std::ifstream console_in(log);
  const std::string console{std::istreambuf_iterator<char>(console_in), {}};
  INFO(console);
  CHECK(has(rendered, "data-rendered=\"ok\""));
  CHECK_FALSE(has(console, "Uncaught"));
  CHECK(has(rendered, "id=\"error-chart\""));
  CHECK(has(rendered, "<svg"));
  // A screenshot beside it, for a person (scripts/html-report-screenshot.sh makes one too).
  const auto shot = dir / "screenshot.png";
  std::filesystem::remove(shot);
  const int shot_status = std::system(
      fmt::format("{} {} --window-size=1200,2000 --screenshot={} file://{} >/dev/null 2>&1",
                  chromium, flags, shot.string(), html.string())
          .c_str());
  CHECK(WIFEXITED(shot_status));
  CHECK(std::filesystem::exists(shot));
  CHECK(std::filesystem::file_size(shot) > 10000);
}
