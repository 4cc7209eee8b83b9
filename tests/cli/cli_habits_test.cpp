// The `vtrace` command line as people type it: what a new user tried, and what it must do, one
// TEST_CASE per habit (cli_test.cpp has every subcommand's own output and exit codes).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_vtrace.h"
#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/schema/format.h"

namespace {

using vtrace::test::golden;
using vtrace::test::run_shell;
using vtrace::test::run_vtrace;
namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `output` is one sentence on stderr starting `vtrace: `.
bool one_error_line(const std::string& output) {
  return output.starts_with("vtrace: ") && output.find('\n') == output.size() - 1;
}

// A refusal before anything ran: exit 2, one error line that says `says`, none of `outputs`
// created.
void check_refused(const vtrace::test::Run& run, const std::string& says,
                   std::initializer_list<std::string> outputs) {
  INFO(run.output);
  CHECK(run.code == 2);
  CHECK(one_error_line(run.output));
  CHECK_THAT(run.output, Catch::Contains(says));
  for (const auto& output : outputs) CHECK_FALSE(fs::exists(output));
}

}  // namespace

TEST_CASE("an output that is the same file as an input is refused before anything runs",
          "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-same-file");
  const auto trace = (dir / "same.vtrace").string();
  fs::copy_file(golden("tiny"), trace);
  const std::string original = read_bytes(trace);
  fs::create_hard_link(trace, dir / "linked.vtrace");
  fs::create_symlink(trace, dir / "symlinked.vtrace");
  const auto repro = (dir / "repro.vtrace").string();
  // The same file however it is spelled: as given, through `.` and `..`, a hard link, a symlink.
  const std::vector<std::string> spellings = {
      trace, (dir / "." / "same.vtrace").string(),
      (dir / ".." / fs::path(trace).parent_path().filename() / "same.vtrace").string(),
      (dir / "linked.vtrace").string(), (dir / "symlinked.vtrace").string()};
  for (const auto& same : spellings) {
    INFO(same);
    for (const auto& command : {
             fmt::format("replay {} --json {}", trace, same),
             fmt::format("compare {} --runtimes reference,cpu --json {}", trace, same),
             fmt::format("diff {} {} --json {}", golden("tiny-v1.2"), trace, same),
             fmt::format("diff {} {} --json {}", trace, golden("tiny-v1.2"), same),
             fmt::format("extract {} --event 12 -o {}", trace, same),
             fmt::format("extract {} --event 12 -o {} --json {}", trace, repro, same),
         }) {
      INFO(command);
      auto run = run_vtrace(command);
      INFO(run.output);
      CHECK(run.code == 2);
      CHECK(one_error_line(run.output));
      CHECK_THAT(run.output, Catch::Contains(" is the same file as "));
      CHECK_THAT(run.output, Catch::Contains(same));
      CHECK_THAT(run.output, Catch::Contains(trace));
      CHECK(read_bytes(trace) == original);
      CHECK_FALSE(fs::exists(repro));
      CHECK_FALSE(fs::exists(repro + ".partial"));
    }
  }
  // Two outputs of one command that do not exist yet: compared by path.
  for (const auto& json : {repro, (dir / "." / "repro.vtrace").string(), repro + ".partial"}) {
    auto both =
        run_vtrace(fmt::format("extract {} --event 12 -o {} --json {}", trace, repro, json));
    INFO(both.output);
    CHECK(both.code == 2);
    CHECK(one_error_line(both.output));
    CHECK_THAT(both.output, Catch::Contains(fmt::format("-o {}", repro)));
    CHECK_THAT(both.output, Catch::Contains(fmt::format("--json {}", json)));
    CHECK_FALSE(fs::exists(repro));
  }

  // record: the weights it reads, as the trace or as the trace's .partial.
  const auto weights = (dir / "w.safetensors").string();
  std::ofstream(weights) << "not looked at before the refusal";
  const std::string weight_bytes = read_bytes(weights);
  for (const auto& output : {weights, (dir / "." / "w.safetensors").string()}) {
    auto record = run_vtrace(fmt::format("record -w decode --weights {} -o {}", weights, output));
    INFO(record.output);
    CHECK(record.code == 2);
    CHECK(one_error_line(record.output));
    CHECK_THAT(record.output, Catch::Contains(fmt::format("-o {} is the same file as --weights {}",
                                                          output, weights)));
    CHECK(read_bytes(weights) == weight_bytes);
  }
  const auto partial_weights = (dir / "t.vtrace.partial").string();
  fs::copy_file(weights, partial_weights);
  auto partial = run_vtrace(fmt::format("record -w decode --weights {} -o {}", partial_weights,
                                        (dir / "t.vtrace").string()));
  INFO(partial.output);
  CHECK(partial.code == 2);
  CHECK_THAT(partial.output, Catch::Contains("(written as "));
  CHECK_THAT(partial.output, Catch::Contains(fmt::format("--weights {}", partial_weights)));
  CHECK(read_bytes(partial_weights) == weight_bytes);
  CHECK_FALSE(fs::exists(dir / "t.vtrace"));

  // Another file still works.
  CHECK(run_vtrace(fmt::format("replay {} --json {}", trace, (dir / "r.json").string())).code == 0);
}

namespace {

// The command after `label` on the first line that has it ("reproduce: vtrace replay ...").
std::string line_after(const std::string& output, const std::string& label) {
  const auto at = output.find(label);
  REQUIRE(at != std::string::npos);
  const auto begin = at + label.size();
  return output.substr(begin, output.find('\n', begin) - begin);
}

// Runs `line` (it starts `vtrace `) in `sh -c`, with the vtrace under test first on PATH.
vtrace::test::Run run_line(const std::string& line) {
  REQUIRE(line.starts_with("vtrace "));
  const auto bin = fs::path(VTRACE_CLI_PATH).parent_path().string();
  return run_shell(fmt::format("export PATH=\"{}:$PATH\"; {}", bin, line));
}

}  // namespace

TEST_CASE("every reproduce line runs in a shell even for a path with a space", "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-reproduce");
  fs::create_directories(dir / "with space");
  const auto recorded = dir / "with space" / "decode.vtrace";
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), recorded);
  const auto altered = (dir / "with space" / "it's altered.vtrace").string();
  const auto changed = vtrace::test::rewrite_with_altered_readback(
      recorded, altered, [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x0400); });
  const auto json = (dir / "with space" / "report.json").string();

  // replay: the text line and the JSON report's.
  auto replay = run_vtrace(fmt::format("replay \"{}\" --json \"{}\"", altered, json));
  INFO(replay.output);
  REQUIRE(replay.code == 1);
  const std::string text_line = line_after(replay.output, "reproduce: ");
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  const std::string json_line = report["first_mismatch"]["reproduce"].get<std::string>();
  CHECK(json_line == text_line);
  for (const auto& line : {text_line, json_line}) {
    INFO(line);
    auto again = run_line(line);
    INFO(again.output);
    CHECK(again.code == 1);
    CHECK_THAT(again.output, Catch::Contains(fmt::format("MISMATCH at event {}:", changed.event)));
    CHECK_THAT(again.output, Catch::Contains("verdict: mismatch (1 mismatches)"));
  }

  // compare: a drift names its first divergent command and how to see it again.
  const auto longer = (dir / "with space" / "long.vtrace").string();
  REQUIRE(run_vtrace(fmt::format("record --workload decode --hidden 48 --ffn 1024 --layers 2 "
                                 "--steps 2 -o \"{}\"",
                                 longer))
              .code == 0);
  auto compare =
      run_vtrace(fmt::format("compare \"{}\" --runtimes reference,cpu-splitk --deep", longer));
  INFO(compare.output);
  REQUIRE(compare.code == 1);
  const auto compare_line = line_after(compare.output, "reproduce: ");
  INFO(compare_line);
  auto compared = run_line(compare_line);
  CHECK(compared.code == 1);
  CHECK(compared.output == compare.output);

  // diff: the same.
  auto diff = run_vtrace(fmt::format("diff \"{}\" \"{}\"", altered, recorded.string()));
  INFO(diff.output);
  REQUIRE(diff.code == 1);
  const auto diff_line = line_after(diff.output, "reproduce: ");
  INFO(diff_line);
  auto diffed = run_line(diff_line);
  CHECK(diffed.code == 1);
  CHECK(diffed.output == diff.output);
}

TEST_CASE("a reproduce line runs for a trace whose name starts with a dash", "[cli][habits]") {
  // `vtrace replay -- -t.vtrace` is how such a file is named; the line printed names it
  // `./-t.vtrace`, which no option parser takes for an option.
  vtrace::test::ScratchDir dir("habits-dash");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "-recorded.vtrace");
  const auto changed = vtrace::test::rewrite_with_altered_readback(
      dir / "-recorded.vtrace", (dir / "-altered.vtrace").string(),
      [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x0400); });
  const auto bin = fs::path(VTRACE_CLI_PATH).parent_path().string();
  const auto in_dir = [&](const std::string& line) {
    return run_shell(fmt::format("cd '{}' && export PATH=\"{}:$PATH\"; {}", (dir / "").string(),
                                 bin, line));
  };
  REQUIRE(in_dir("vtrace record --workload decode --hidden 48 --ffn 1024 --layers 2 --steps 2 "
                 "-o ./-long.vtrace")
              .code == 0);
  // Without `--`, CLI11 reads the name as an option: the refusal says how to name the file.
  auto misread = in_dir("vtrace replay -altered.vtrace");
  CHECK(misread.code == 2);
  CHECK_THAT(misread.output,
             Catch::Contains("(`-altered.vtrace` was read as an option: a file whose name starts "
                             "with '-' goes after `--`, or as ./-altered.vtrace)"));
  CHECK(std::count(misread.output.begin(), misread.output.end(), '\n') == 1);
  for (const char* command : {"vtrace replay -- -altered.vtrace",
                              "vtrace compare --runtimes reference,cpu-splitk -- -long.vtrace",
                              "vtrace diff -- -altered.vtrace -recorded.vtrace"}) {
    INFO(command);
    auto first = in_dir(command);
    INFO(first.output);
    REQUIRE(first.code == 1);
    const auto line = line_after(first.output, "reproduce: ");
    INFO(line);
    const bool compare = std::string(command).starts_with("vtrace compare");
    CHECK_THAT(line, Catch::Contains(compare ? " ./-long.vtrace" : " ./-altered.vtrace"));
    auto again = in_dir(line);
    INFO(again.output);
    CHECK(again.code == 1);
    if (!compare) {
      CHECK_THAT(again.output, Catch::Contains(fmt::format("event {}", changed.event)));
    }
  }
}

TEST_CASE("vtrace names an unknown subcommand and the nearest one and has help and --version",
          "[cli][habits]") {
  auto typo = run_vtrace("replya");
  CHECK(typo.code == 2);
  CHECK(typo.output == "vtrace: unknown subcommand `replya`; did you mean `replay`?\n");
  for (const auto& [word, meant] :
       {std::pair{"lst-runtimes", "list-runtimes"}, std::pair{"recrod", "record"},
        std::pair{"dum", "dump"}, std::pair{"extr", "extract"},
        std::pair{"--quiet comapre", "compare"},
        // The only subcommand a word begins wins over a nearer spelling of another.
        std::pair{"repa", "repair"}, std::pair{"exp", "export"},
        // Several that it begins: all of them.
        std::pair{"ex", "extract` or `export"}}) {
    INFO(word);
    auto run = run_vtrace(word);
    CHECK(run.code == 2);
    CHECK_THAT(run.output, Catch::Contains(fmt::format("did you mean `{}`?", meant)));
  }
  auto unknown = run_vtrace("frobnicate");
  INFO(unknown.output);
  CHECK(unknown.code == 2);
  CHECK(one_error_line(unknown.output));
  CHECK_THAT(unknown.output, Catch::StartsWith("vtrace: unknown subcommand `frobnicate`; the "
                                               "subcommands are record, replay, compare"));

  auto version = run_vtrace("--version");
  CHECK(version.code == 0);
  CHECK(version.output == fmt::format("vtrace {} (writes trace format {}.{})\n", VTRACE_VERSION,
                                      vtrace::schema::kFormatMajor, vtrace::schema::kFormatMinor));

  auto overview = run_vtrace("help");
  CHECK(overview.code == 0);
  CHECK(overview.output == run_vtrace("--help").output);
  for (const char* sub : {"record", "replay", "list-runtimes", "help", "--version"}) {
    CHECK_THAT(overview.output, Catch::Contains(sub));
  }
  for (const char* sub : {"replay", "dump", "record"}) {
    INFO(sub);
    auto help = run_vtrace(fmt::format("help {}", sub));
    CHECK(help.code == 0);
    CHECK_THAT(help.output, Catch::Contains(fmt::format("Usage: vtrace {} ", sub)));
    CHECK(help.output == run_vtrace(fmt::format("{} --help", sub)).output);
  }
  auto help_typo = run_vtrace("help replya");
  CHECK(help_typo.code == 2);
  CHECK(help_typo.output == "vtrace: unknown subcommand `replya`; did you mean `replay`?\n");
  // What help does not take is refused, not ignored; so is an option before any subcommand.
  for (const auto& [words, unexpected] :
       {std::pair{"help --bogus", "`--bogus` was not expected"},
        std::pair{"help list-runtimes x", "`x` was not expected"},
        std::pair{"--bogus", "the following argument was not expected: --bogus"},
        std::pair{"--bogus replay t.vtrace", "the following argument was not expected: --bogus"}}) {
    INFO(words);
    auto run = run_vtrace(words);
    CHECK(run.code == 2);
    CHECK(one_error_line(run.output));
    CHECK_THAT(run.output, Catch::Contains(unexpected));
  }
  CHECK(run_vtrace("help -q replay").output == run_vtrace("replay --help").output);
}

TEST_CASE("CLI11 refusals are one line with the vtrace prefix and exit 2", "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-cli11");
  const auto out = (dir / "x.vtrace").string();
  for (const auto& [arguments, says] : {
           std::pair{fmt::format("replay {} --bogus", golden("tiny")), std::string("--bogus")},
           std::pair{std::string("record -w tiny"), std::string("--output is required")},
           std::pair{fmt::format("record -w tiny --level 30 -o {}", out), std::string("--level")},
           std::pair{fmt::format("record -w tiny --seed abc -o {}", out), std::string("abc")},
           std::pair{fmt::format("record -w decode --seed -1 -o {}", out),
                     std::string("--seed: -1 is negative (expected 0 or more)")},
           std::pair{fmt::format("record -w decode --steps -1 -o {}", out), std::string("--steps")},
           std::pair{fmt::format("extract {} --event -1 -o {}", golden("tiny"), out),
                     std::string("--event: -1 is negative")},
           std::pair{fmt::format("dump {} --payload-bytes -1", golden("tiny")),
                     std::string("--payload-bytes: -1 is negative")},
           std::pair{std::string("replay"), std::string("trace is required")},
           std::pair{std::string(""), std::string("a subcommand is required")},
           // The words not expected come as typed (CLI11 lists `-r cpu` as `cpu -r`), and also
           // when a required option is missing (record's `-r` where compare wants --runtimes).
           std::pair{fmt::format("compare {} --runtimes cpu,reference -r cpu", golden("tiny")),
                     std::string("the following arguments were not expected: -r cpu;")},
           std::pair{fmt::format("replay {} --bogus x --y", golden("tiny")),
                     std::string("the following arguments were not expected: --bogus x --y;")},
           std::pair{fmt::format("compare {} -r cpu -r reference", golden("tiny")),
                     std::string("--runtimes is required, and the following arguments were not "
                                 "expected: -r cpu -r reference;")},
       }) {
    INFO(arguments);
    auto run = run_vtrace(arguments);
    check_refused(run, says, {out});
    CHECK_THAT(run.output, Catch::Contains("; see `vtrace help"));
  }
}

TEST_CASE("integer options are decimal: a leading zero is ignored, 0x, 0b and overflow are refused",
          "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-decimal");
  const auto out = (dir / "d.vtrace").string();
  const std::string decode = "record -w decode --hidden 8 --ffn 16 --layers 1";
  // CLI11 alone reads 010 as octal 8 and 0x10 as 16.
  auto ten = run_vtrace(fmt::format("{} --steps 010 --level 019 -o {}", decode, out));
  INFO(ten.output);
  CHECK(ten.code == 0);
  CHECK_THAT(ten.output, Catch::Contains(" steps=10 "));
  fs::remove(out);
  for (const auto& [arguments, says] : {
           std::pair{decode + " --steps 0x10", std::string("--steps: `0x10` is not a decimal")},
           std::pair{decode + " --steps 0b11", std::string("--steps: `0b11` is not a decimal")},
           std::pair{decode + " --steps 1e3", std::string("--steps: `1e3` is not a decimal")},
           std::pair{decode + " --hidden ''", std::string("--hidden: `` is not a decimal")},
           // strtoull saturates a seed past 2^64 - 1 without a word; a steps count past 2^32 - 1
           // fails CLI11's conversion.
           std::pair{decode + " --seed 18446744073709551616",
                     std::string("--seed: 18446744073709551616 is out of range")},
           std::pair{decode + " --steps 99999999999",
                     std::string("--steps: 99999999999 is out of range")},
           // The range checks read the value as decimal too (020 is not octal 16).
           std::pair{decode + " --level 020", std::string("--level: 20 is not in 1 to 19")},
           std::pair{fmt::format("replay {} --repeat 065", golden("tiny")),
                     std::string("--repeat: 65 is not in 1 to 64")},
           std::pair{fmt::format("replay {} --exit-skip 010x", golden("tiny")),
                     std::string("--exit-skip: `010x` is not a decimal")},
           // An exit status is 0 to 255: 256 would wrap to 0, "runtime unavailable" read as
           // success.
           std::pair{fmt::format("replay {} --runtime no-such --exit-skip 256", golden("tiny")),
                     std::string("--exit-skip: 256 is not in 0 to 255")},
           std::pair{fmt::format("compare {} --runtimes reference,no-such --exit-skip 256",
                                 golden("tiny")),
                     std::string("--exit-skip: 256 is not in 0 to 255")},
           std::pair{fmt::format("extract {} --event 20 --runtime no-such --exit-skip 300",
                                 golden("tiny")),
                     std::string("--exit-skip: 300 is not in 0 to 255")},
       }) {
    INFO(arguments);
    check_refused(run_vtrace(fmt::format("{} -o {}", arguments, out)), says, {out});
  }
  // Every integer option of every subcommand, as its help lists them (UINT or INT), refuses hex:
  // a new option cannot miss the rule.
  std::size_t swept = 0;
  for (const char* sub : {"record", "replay", "compare", "diff", "extract", "export", "info",
                          "dump", "verify", "repair", "demo", "list-runtimes"}) {
    std::istringstream help(run_vtrace(fmt::format("help {}", sub)).output);
    for (std::string line; std::getline(help, line);) {
      std::istringstream words(line);
      std::string names;
      std::string type;
      words >> names >> type;
      if (!names.starts_with("-") || !(type.starts_with("UINT") || type.starts_with("INT"))) {
        continue;
      }
      const std::string option = names.substr(names.rfind(',') + 1);
      INFO(sub << " " << option);
      auto run = run_vtrace(fmt::format("{} {} 0x10", sub, option));
      CHECK(run.code == 2);
      CHECK_THAT(run.output, Catch::Contains(option + ": `0x10` is not a decimal whole number"));
      ++swept;
    }
  }
  CHECK(swept >= 14);
}

namespace {

// A decode weights file for hidden 8, ffn 16, one layer; `head` false leaves the head out.
void write_weights(const fs::path& path, bool head) {
  namespace rt = vtrace::runtime;
  const auto tensor = [](std::string name, std::uint64_t out, std::uint64_t in) {
    return rt::TensorToWrite{std::move(name),
                             rt::ElementType::kF16,
                             {out, in},
                             std::vector<std::uint8_t>(out * in * 2, 0)};
  };
  std::vector<rt::TensorToWrite> tensors = {tensor("layers.0.up.weight", 16, 8),
                                            tensor("layers.0.down.weight", 8, 16)};
  if (head) tensors.push_back(tensor("head.weight", 8, 8));
  REQUIRE(rt::write_safetensors(path, tensors).has_value());
}

}  // namespace

TEST_CASE(
    "record checks every option value before anything runs and refuses options its "
    "workload does not take",
    "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-record-values");
  const auto trace = (dir / "t.vtrace").string();
  write_weights(dir / "headless.safetensors", false);
  write_weights(dir / "small.safetensors", true);
  for (const auto& [options, says] : {
           std::pair{std::string("-w decode --participants 9"),
                     std::string("decode takes 1 to 8 participants, not 9 (nothing was recorded)")},
           std::pair{std::string("-w decode --participants 0"), std::string("not 0")},
           std::pair{std::string("-w decode --hidden 0"),
                     std::string("decode takes hidden and ffn from 1 to 65536, not hidden 0")},
           std::pair{std::string("-w decode --ffn 70000"), std::string("ffn 70000")},
           std::pair{std::string("-w decode --layers 65"), std::string("1 to 64 layers, not 65")},
           std::pair{std::string("-w decode --steps 0"),
                     std::string("decode takes at least 1 step, not 0")},
           std::pair{fmt::format("-w decode --weights {}", (dir / "missing.safetensors").string()),
                     std::string("decode weights: ")},
           std::pair{fmt::format("-w decode --hidden 8 --ffn 16 --layers 1 --weights {}",
                                 (dir / "headless.safetensors").string()),
                     std::string("head.weight")},
           std::pair{fmt::format("-w decode --weights {}", (dir / "small.safetensors").string()),
                     std::string("has shape [16, 8], expected [2048, 512]")},
           std::pair{std::string("-w decode --weights ''"),
                     std::string("--weights: an empty path")},
           std::pair{
               std::string("-w tiny --steps 3"),
               std::string("workload `tiny` does not take --steps (it takes no workload options)")},
           std::pair{std::string("-w tiny --seed 2"), std::string("does not take --seed")},
           std::pair{fmt::format("-w tiny --weights {}", (dir / "small.safetensors").string()),
                     std::string("workload `tiny` does not take --weights")},
           std::pair{std::string("-w contract --hidden 8"),
                     std::string(
                         "workload `contract` does not take --hidden (it takes --seed, --steps)")},
       }) {
    INFO(options);
    check_refused(run_vtrace(fmt::format("record {} -o {}", options, trace)), says,
                  {trace, trace + ".partial"});
  }
  // An empty -o is refused at once, not after the workload ran.
  auto empty = run_shell(
      fmt::format("cd {} && {} record -w decode -o ''", (dir / "").string(), VTRACE_CLI_PATH));
  INFO(empty.output);
  CHECK(empty.code == 2);
  CHECK(one_error_line(empty.output));
  CHECK_THAT(empty.output, Catch::Contains("an empty path names no file to write the trace to"));
  CHECK_FALSE(fs::exists(dir / ".partial"));
  // What each workload takes still records.
  CHECK(run_vtrace(fmt::format("record -w decode --hidden 8 --ffn 16 --layers 1 --steps 1 "
                               "--weights {} -o {}",
                               (dir / "small.safetensors").string(), trace))
            .code == 0);
  CHECK(run_vtrace(
            fmt::format("record -w contract --seed 3 --steps 0 -o {}", (dir / "c.vtrace").string()))
            .code == 0);
}

TEST_CASE(
    "dump and replay and extract refuse an event range that starts past the last event "
    "and cut one that ends past it",
    "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-ranges");
  const auto tiny = golden("tiny");  // 30 events
  const auto repro = (dir / "repro.vtrace").string();
  for (const auto& [command, option] : {
           std::pair{"dump {} --events {}", "--events"},
           std::pair{"replay {} --events {}", "--events"},
           std::pair{"extract {} --events {} -o {}", "--events"},
           std::pair{"extract {} --event {} -o {}", "--event"},
       }) {
    for (const char* range : {"30:40", "30", "100:"}) {
      if (std::string(option) == "--event" && std::string(range).find(':') != std::string::npos) {
        continue;
      }
      const auto arguments = fmt::format(fmt::runtime(command), tiny, range, repro);
      INFO(arguments);
      check_refused(run_vtrace(arguments),
                    fmt::format("{} {} starts past the last event: {} has 30 events (0 to 29)",
                                option, range, tiny),
                    {repro});
    }
  }
  auto dumped = run_vtrace(fmt::format("dump {} --events 28:100", tiny));
  CHECK(dumped.code == 0);
  CHECK(dumped.output.starts_with("#28 "));
  CHECK_THAT(dumped.output, Catch::Contains("\n#29 "));
  auto replayed = run_vtrace(fmt::format("replay {} --events 28:100", tiny));
  INFO(replayed.output);
  CHECK(replayed.code == 0);
  CHECK_THAT(replayed.output, Catch::Contains("events 28..30 checked (30 executed)"));
}

TEST_CASE(
    "dump --json gives each payload id in hex beside its numbers and --payload-bytes cuts payloads",
    "[cli][habits]") {
  auto run = run_vtrace(fmt::format("dump --json --payloads {}", golden("tiny")));
  REQUIRE(run.code == 0);
  std::istringstream lines(run.output);
  std::string line;
  std::size_t ids = 0;
  while (std::getline(lines, line)) {
    const auto event = nlohmann::json::parse(line);
    const auto& body = event["fields"]["body"];
    if (!body.contains("payload")) continue;
    const auto& id = body["payload"];
    INFO(id.dump());
    REQUIRE(id.contains("hex"));
    const vtrace::schema::BlobId blob{id["low"].get<std::uint64_t>(),
                                      id["high"].get<std::uint64_t>()};
    CHECK(id["hex"] == blob.hex());
    if (id["low"] == 0 && id["high"] == 0) continue;  // no payload (a failed readback)
    CHECK(event["payloads"].contains(blob.hex()));    // the join
    CHECK(event["payload_sizes"][blob.hex()].get<std::uint64_t>() * 2 ==
          event["payloads"][blob.hex()].get<std::string>().size());
    ++ids;
  }
  CHECK(ids >= 3);  // the weights, the input, the readback

  auto cut = run_vtrace(fmt::format("dump --json --payload-bytes 2 {}", golden("tiny")));
  REQUIRE(cut.code == 0);
  std::istringstream cut_lines(cut.output);
  std::size_t shortened = 0;
  while (std::getline(cut_lines, line)) {
    const auto event = nlohmann::json::parse(line);
    REQUIRE(event.contains("payloads"));  // --payload-bytes implies --payloads
    for (const auto& [hex, bytes] : event["payloads"].items()) {
      CHECK(bytes.get<std::string>().size() <= 4);
      if (event["payload_sizes"][hex].get<std::uint64_t>() > 2) ++shortened;
    }
  }
  CHECK(shortened >= 3);
  auto text = run_vtrace(fmt::format("dump --payload-bytes 2 {} --events 0:30", golden("tiny")));
  REQUIRE(text.code == 0);
  CHECK_THAT(text.output, Catch::Contains(" (8 bytes, the first 2 shown) "));
}

TEST_CASE(
    "a report file that cannot be written whole names the path and the system's reason, exits "
    "2 after the text report, and leaves no incomplete file",
    "[cli][habits]") {
  vtrace::test::ScratchDir dir("habits-report-write");
  const auto at = [&](const char* name) { return (dir / name).string(); };
  const std::vector<std::pair<std::string, std::string>> commands = {
      {fmt::format("export {} --format chrome -o {}", golden("contract"), at("t.json")),
       at("t.json")},
      {fmt::format("replay {} --profile {}", golden("contract"), at("p.json")), at("p.json")},
      {fmt::format("replay {} --json {}", golden("contract"), at("r.json")), at("r.json")},
      {fmt::format("compare {} --runtimes reference,cpu --json {}", golden("contract"),
                   at("c.json")),
       at("c.json")},
      {fmt::format("compare {} --runtimes reference,cpu --html {}", golden("contract"),
                   at("c.html")),
       at("c.html")},
      {fmt::format("diff {} {} --json {}", golden("tiny"), golden("tiny-v1.2"), at("d.json")),
       at("d.json")},
  };
  for (const auto& [command, output] : commands) {
    INFO(command);
    // A file size limit of 0: the file opens, and its first write fails, EFBIG (vtrace ignores
    // SIGXFSZ itself: no `trap '' XFSZ` here, a user's shell has none).
    auto run = vtrace::test::run_shell(
        fmt::format("ulimit -f 0; {} {}", VTRACE_CLI_PATH, command));
    INFO(run.output);
    CHECK(run.code == 2);
    CHECK_THAT(run.output, Catch::Contains(fmt::format("vtrace: {}: writing the ", output)));
    CHECK_THAT(run.output,
               Catch::Contains(" failed (File too large); the incomplete file was removed"));
    CHECK(run.output.ends_with("the incomplete file was removed\n"));  // after any text report
    CHECK_FALSE(fs::exists(output));
  }
}

TEST_CASE("a standard output that cannot be written is one sentence and exit 2, never an abort",
          "[cli]") {
  // /dev/full: every write fails with ENOSPC. A large dump spills fmt's buffer (a throw), a small
  // info only fails at the final flush; a closed stdout fails with EBADF.
  for (const std::string& command :
       {fmt::format("dump {} >/dev/full", golden("decode-short")),
        fmt::format("dump {} --json >/dev/full", golden("decode-short")),
        fmt::format("info {} >/dev/full", golden("tiny")),
        fmt::format("verify {} >/dev/full", golden("tiny")),
        // Commands that flush stdout themselves before the end, and help and --version.
        fmt::format("replay {} >/dev/full", golden("tiny")),
        fmt::format("compare {} --runtimes reference,cpu >/dev/full", golden("tiny")),
        fmt::format("diff {0} {0} >/dev/full", golden("tiny")),
        std::string("help >/dev/full"), std::string("help replay >/dev/full"),
        std::string("--help >/dev/full"), std::string("replay --help >/dev/full"),
        std::string("--version >/dev/full"),
        fmt::format("dump {} >&-", golden("tiny"))}) {
    INFO(command);
    const auto run = vtrace::test::run_shell(fmt::format("{{ {} {}; }}", VTRACE_CLI_PATH, command));
    INFO(run.output);
    CHECK(run.code == 2);
    // The reason is named, however the failure came about.
    CHECK_THAT(run.output,
               Catch::StartsWith("vtrace: writing to standard output failed (") &&
                   Catch::EndsWith(command.ends_with("&-") ? "(Bad file descriptor)\n"
                                                           : "(No space left on device)\n"));
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
  }
}

TEST_CASE("vtrace info prints a trace's strings as one line each, control bytes escaped",
          "[cli]") {
  // A workload description (VTRACE_CAPTURE_WORKLOAD, or any producer) may hold a newline or a
  // terminal escape sequence; so may a file name.
  vtrace::test::ScratchDir dir("habits-printable");
  const auto trace = dir / "a\nb.vtrace";
  {
    namespace rt = vtrace::runtime;
    const auto& registry = rt::default_registry();
    auto inner = registry.open("reference", {.device_id = "device.vtrace.0"});
    REQUIRE(inner.has_value());
    auto foreign = registry.open("reference", {.device_id = "device.vtrace.1"});
    REQUIRE(foreign.has_value());
    vtrace::recorder::RecorderOptions options;
    options.workload_description = "red \x1b[31mtext\nsecond line";
    auto recording =
        vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference", trace, options);
    REQUIRE(recording.has_value());
    vtrace::workloads::WorkloadSpec spec;
    spec.kind = vtrace::workloads::WorkloadKind::kTiny;
    REQUIRE(vtrace::workloads::run_workload(spec, **recording, foreign->get()).has_value());
    REQUIRE((*recording)->close().has_value());
  }
  const auto run = run_vtrace(fmt::format("info '{}'", trace.string()));
  INFO(run.output);
  REQUIRE(run.code == 0);
  CHECK_THAT(run.output, Catch::Contains("trace:       " + (dir / "a\\x0Ab.vtrace").string()));
  CHECK_THAT(run.output, Catch::Contains("workload:    red \\x1B[31mtext\\x0Asecond line\n"));
  CHECK(run.output.find('\x1b') == std::string::npos);
}

namespace {

// The first keep(size) bytes of a golden trace, written to DIR/cut.vtrace: a trace cut as a
// crashed recording leaves it.
fs::path cut_golden(const vtrace::test::ScratchDir& dir, const char* name,
                    std::size_t (*keep)(std::size_t size)) {
  std::ifstream in(golden(name), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto cut = dir / "cut.vtrace";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, keep(bytes.size()));
  return cut;
}

}  // namespace

TEST_CASE(
    "vtrace replay and compare of a cut trace that holds no event exit 2: nothing run is no match",
          "[cli]") {
  vtrace::test::ScratchDir dir("habits-empty-recovery");
  // 500 bytes: inside the first data frame.
  const auto cut = cut_golden(dir, "tiny", [](std::size_t) -> std::size_t { return 500; });
  const auto run = run_vtrace(fmt::format("replay {}", cut.string()));
  INFO(run.output);
  CHECK(run.code == 2);
  CHECK_THAT(run.output, Catch::Contains("no event could be recovered, so nothing was replayed"));
  CHECK_FALSE(run.output.find("verdict: match") != std::string::npos);
  const auto compared = run_vtrace(fmt::format("compare {} --runtimes reference,cpu", cut.string()));
  INFO(compared.output);
  CHECK(compared.code == 2);
  CHECK_THAT(compared.output,
             Catch::Contains("no event could be recovered, so nothing was compared"));
  CHECK_FALSE(compared.output.find("verdict: match") != std::string::npos);
}

TEST_CASE("vtrace export of a cut trace warns that the timeline holds only the recovered events",
          "[cli]") {
  vtrace::test::ScratchDir dir("habits-export-cut");
  const auto cut = cut_golden(dir, "decode-short", [](std::size_t size) { return size / 2; });
  const auto out = (dir / "t.json").string();
  const auto run = run_vtrace(fmt::format("--quiet export {} --format chrome -o {}", cut.string(), out));
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK_THAT(run.output, Catch::StartsWith("vtrace: warning: " + cut.string() + " has no footer"));
  CHECK_THAT(run.output, Catch::Contains("; export uses "));
  CHECK(fs::exists(out));
  // The complete trace: no warning.
  const auto whole = run_vtrace(
      fmt::format("--quiet export {} --format chrome -o {}", golden("decode-short"), out));
  CHECK(whole.code == 0);
  CHECK(whole.output.find("warning") == std::string::npos);
}
