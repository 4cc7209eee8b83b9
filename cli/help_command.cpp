// vtrace help [SUBCOMMAND], vtrace --version, and what the top level says when the command line
// names no known subcommand or CLI11 refuses it (docs/CLI.md, "Exit codes" and the error rules).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <vector>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/schema/format.h"

#ifndef VTRACE_VERSION
#error "VTRACE_VERSION (the project() VERSION) is defined by cli/CMakeLists.txt"
#endif

namespace vtrace::cli {

namespace {

// The optimal string alignment distance: insertions, deletions, substitutions and transpositions
// of neighbours, one edit each ("replya" is 1 from "replay").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: the distance between a's first i and b's first j characters.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

const CLI::App* find_subcommand(const CLI::App& app, std::string_view name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// The known names a mistyped `word` most likely meant: the only name `word` begins, else the
// nearest within 2 edits, else every name `word` begins (several: the user picks); empty when
// none is that close.
std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& names) {
  std::vector<std::string> prefixed;
  if (!word.empty()) {
    std::copy_if(names.begin(), names.end(), std::back_inserter(prefixed),
                 [&](const std::string& name) { return name.starts_with(word); });
  }
  if (prefixed.size() == 1) return prefixed;
  std::optional<std::string> best;
  std::size_t best_distance = 3;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance && d < word.size()) {
      best = name;
      best_distance = d;
    }
  }
  if (best) return {*best};
  return prefixed;
}

std::string unknown_subcommand_message(const CLI::App& app, std::string_view word) {
  const auto names = subcommand_names(app);
  const auto nearest = nearest_names(word, names);
  if (nearest.size() == 1) {
    return fmt::format("unknown subcommand `{}`; did you mean `{}`?", word, nearest.front());
  }
  if (nearest.size() > 1) {
    return fmt::format("unknown subcommand `{}`; did you mean `{}`?", word,
                       fmt::join(nearest, "` or `"));
  }
  return fmt::format("unknown subcommand `{}`; the subcommands are {}", word,
                     fmt::join(names, ", "));
}

int run_help(const CLI::App& app, const std::string& subcommand) {
  if (subcommand.empty()) {
    fmt::print("{}", app.help());
    return kExitOk;
  }
  const CLI::App* sub = find_subcommand(app, subcommand);
  if (sub == nullptr) {
    print_error(unknown_subcommand_message(app, subcommand));
    return kExitUsage;
  }
  fmt::print("{}", sub->help(app.get_name()));
  return kExitOk;
}

}  // namespace

std::string version_text() {
  return fmt::format("vtrace {} (writes trace format {}.{})", VTRACE_VERSION, schema::kFormatMajor,
                     schema::kFormatMinor);
}

namespace {
// Words of the command line that start with '-' and name an existing file (`-a.vtrace`): CLI11
// reads them as options, so a refusal says how such a file is named (usage_failure_message).
std::vector<std::string> g_dash_files;
// The command line's words after the program's name, as typed (usage_failure_message orders the
// words CLI11 did not expect by them).
std::vector<std::string> g_words;

// `unexpected` (CLI11's leftovers, in its own order) in the order they were typed.
std::vector<std::string> in_typed_order(std::vector<std::string> unexpected) {
  std::vector<std::string> ordered;
  for (const std::string& word : g_words) {
    const auto it = std::find(unexpected.begin(), unexpected.end(), word);
    if (it == unexpected.end()) continue;
    ordered.push_back(word);
    unexpected.erase(it);
  }
  ordered.insert(ordered.end(), unexpected.begin(), unexpected.end());  // not typed as such
  return ordered;
}

std::string not_expected(const std::vector<std::string>& words) {
  return fmt::format("the following argument{} not expected: {}",
                     words.size() == 1 ? " was" : "s were", fmt::join(words, " "));
}
}  // namespace

std::optional<int> run_before_parse(const CLI::App& app, int argc, const char* const* argv) {
  g_dash_files.clear();
  g_words.assign(argv + std::min(argc, 1), argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") break;
    std::error_code ec;
    if (word.size() > 1 && word.starts_with('-') && std::filesystem::exists(argv[i], ec)) {
      g_dash_files.emplace_back(word);
    }
  }
  // The global options are flags, so the first word that is no option names the subcommand.
  const auto global_flag = [](std::string_view word) {
    return word == "-q" || word == "--quiet" || word == "-h" || word == "--help" ||
           word == "--version";
  };
  int at = 1;
  while (at < argc && std::string_view(argv[at]).starts_with('-')) {
    const std::string_view word = argv[at];
    if (word == "--") break;
    if (!global_flag(word)) {
      // Before any subcommand only the global flags are known (CLI11 would only say that a
      // subcommand is required).
      print_error(fmt::format("the following argument was not expected: {}; see `vtrace help`",
                              word));
      return kExitUsage;
    }
    ++at;
  }
  if (at >= argc || std::string_view(argv[at]) == "--") return std::nullopt;
  const std::string_view first = argv[at];
  if (first == "help") {
    // `help [SUBCOMMAND]`, with the global flags anywhere: anything else is refused, not ignored.
    std::optional<std::string> subcommand;
    for (int i = at + 1; i < argc; ++i) {
      const std::string_view word = argv[i];
      if (word == "-q" || word == "--quiet") continue;
      if (word.starts_with('-') || subcommand) {
        print_error(fmt::format("help takes one subcommand name and no option: `{}` was not "
                                "expected; see `vtrace help`",
                                word));
        return kExitUsage;
      }
      subcommand = std::string(word);
    }
    return run_help(app, subcommand.value_or(std::string()));
  }
  if (find_subcommand(app, first) != nullptr) return std::nullopt;
  print_error(unknown_subcommand_message(app, first));
  return kExitUsage;
}

std::string usage_failure_message(const CLI::App* app, const CLI::Error& error) {
  std::string what = error.what();
  // CLI11's sentences start with a capital ("The following argument was not expected", "A
  // subcommand is required"); ours do not.
  if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
      (what[1] == ' ' || std::islower(static_cast<unsigned char>(what[1])))) {
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  }
  // What decimal_integers let through and CLI11 still cannot convert is a number too large for
  // its option's type: "could not convert: --steps = 99999999999" says it as
  // "--steps: 99999999999 is out of range".
  constexpr std::string_view kNotConverted = "could not convert: ";
  if (const auto equals = what.find(" = ");
      what.starts_with(kNotConverted) && equals != std::string::npos) {
    const std::string name = what.substr(kNotConverted.size(), equals - kNotConverted.size());
    what = fmt::format("{}: {} is out of range", name, what.substr(equals + 3));
  }
  const auto parsed = app->get_subcommands();
  // CLI11 lists the words it did not expect in its own order, and checks a missing required
  // option first, so that `compare t.vtrace -r cpu` would say only that --runtimes is required.
  const std::vector<std::string> extras = in_typed_order(app->remaining(true));
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr && !extras.empty()) {
    what = not_expected(extras);
  } else if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && !extras.empty()) {
    what += ", and " + not_expected(extras);
  }
  const std::string help =
      parsed.empty() ? "vtrace help" : fmt::format("vtrace help {}", parsed.front()->get_name());
  if (!g_dash_files.empty()) {
    const std::string& file = g_dash_files.front();
    what += fmt::format(" (`{0}` was read as an option: a file whose name starts with '-' goes "
                        "after `--`, or as ./{0})",
                        file);
  }
  return fmt::format("vtrace: {}; see `{}`\n", what, help);
}

void add_help_command(CLI::App& app) {
  app.add_subcommand("help",
                     "Print this overview, or with SUBCOMMAND its options: help [SUBCOMMAND]");
}

}  // namespace vtrace::cli
