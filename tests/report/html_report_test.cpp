// The HTML comparison report (vtrace/report/html_report.h): its sections and facts for a match, a
// drift and a --resync comparison, escaping, no external resource; and, when Chromium is
// installed, the page rendered headless without a script error (a screenshot is kept).
#include "vtrace/report/html_report.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/test_support.h"
#include "vtrace/drift/lockstep.h"

namespace dr = vtrace::drift;
namespace rep = vtrace::report;
namespace rt = vtrace::runtime;

namespace {

std::filesystem::path golden(const char* name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
}

dr::CompareReport compare(const char* trace, bool resync) {
  dr::CompareOptions options;
  options.runtimes = {"reference", "cpu-splitk"};
  options.deep = true;
  options.resync = resync;
  auto report = dr::compare_trace(golden(trace), options, rt::default_registry());
  REQUIRE(report.has_value());
  return std::move(*report);
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
      page(r, {"vtrace compare", "vtrace compare 'my trace.vtrace' --runtimes a,b", "t v.vtrace"});
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
  const auto diverged = std::find_if(r.commands.begin(), r.commands.end(),
                                     [&](const auto& c) { return c.order == r.first_divergence->order; });
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
  const std::string html = page(r, {"vtrace compare", "vtrace compare x", "t.vtrace"});
  const auto worst = html.find("id=\"worst\"");
  REQUIRE(worst != std::string::npos);
  const auto first_row = html.find("<tr><td>", worst);
  REQUIRE(first_row != std::string::npos);
  CHECK(html.substr(first_row, 8 + std::to_string(commands[11]->event).size() + 5) ==
        fmt::format("<tr><td>{}</td>", commands[11]->event));
  CHECK(dr::worse_command(*commands[11], *commands[10]));
  CHECK_FALSE(dr::worse_command(*commands[10], *commands[11]));
  CHECK(dr::worse_command(*commands[10], *commands[9]));  // 12 ULP before 11
  // reference is extract's default baseline; any other is named.
  CHECK(has(html, fmt::format("vtrace extract t.vtrace --event {} -o repro-{}.vtrace</code>",
                              commands[11]->event, commands[11]->event)));
  r.runtimes = {"cpu", "cpu-splitk"};
  CHECK(
      has(page(r, {"vtrace compare", "vtrace compare x", "t.vtrace"}),
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
  CHECK(has(page(carried), "only carries error in (introduces none on the baseline's inputs): its "
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
    REQUIRE(
        rep::write_html_report(drifting(true), out, {"vtrace compare", "vtrace compare x", ""}));
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
