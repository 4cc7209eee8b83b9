// vtrace repair T -o FIXED [--json R]: rewrite a crashed, cut or damaged trace into a valid one
// holding every recoverable event (schema/trace_repair.h), and say what was dropped and why.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/schema/trace_repair.h"

namespace vtrace::cli {

namespace {

struct RepairCommandOptions {
  std::string trace;
  std::string output;
  std::optional<std::string> json;
};

// The repaired trace is written to OUT.repairing and renamed to OUT at commit, not to the usual
// OUT.partial: the most common input is OUT.partial itself (an interrupted `vtrace record -o OUT`).
constexpr std::string_view kTemporarySuffix = ".repairing";
std::string temporary_of(const std::string& output) {
  return output + std::string(kTemporarySuffix);
}

std::string drop_text(const schema::RepairDrop& d) {
  return fmt::format("{}: {}", schema::repair_drop_where(d), d.reason);
}

nlohmann::json to_json(const RepairCommandOptions& o, const schema::RepairReport& r) {
  nlohmann::json drops = nlohmann::json::array();
  for (const auto& d : r.drops) {
    nlohmann::json missing = nlohmann::json::array();
    for (const auto& id : d.payloads_missing) missing.push_back(id.hex());
    drops.push_back(
        {{"part", schema::repair_part_name(d.part)},
         {"frame", d.frame_index ? nlohmann::json(*d.frame_index) : nlohmann::json()},
         {"offset", d.file_offset},
         {"bytes", d.bytes},
         {"first_event", d.first_event},
         {"events_lost", d.events_lost ? nlohmann::json(*d.events_lost) : nlohmann::json()},
         {"payloads_missing", missing},
         {"reason", d.reason}});
  }
  return {{"trace", o.trace},
          {"output", o.output},
          {"nothing_to_repair", r.nothing_to_repair},
          {"events_kept", r.events_kept},
          {"payloads_kept", r.payloads_kept},
          {"events_in_input",
           r.events_in_input ? nlohmann::json(*r.events_in_input) : nlohmann::json()},
          {"input_bytes", r.input_bytes},
          {"output_bytes", r.output_bytes},
          {"input_state", r.input_state},
          {"drops", drops}};
}

void print_report(const RepairCommandOptions& o, const schema::RepairReport& r) {
  if (r.nothing_to_repair) {
    fmt::print("{}: nothing to repair (it verifies): copied it to {} unchanged ({} events)\n",
               o.trace, o.output, r.events_kept);
    return;
  }
  const std::string of = r.events_in_input ? fmt::format(" of {}", *r.events_in_input) : "";
  fmt::print("repaired {} into {}: kept {}{} events and {} payloads; dropped {} part{}\n", o.trace,
             o.output, r.events_kept, of, r.payloads_kept, r.drops.size(),
             r.drops.size() == 1 ? "" : "s");
  if (!r.input_state.empty()) fmt::print("  input: {}\n", r.input_state);
  for (const auto& d : r.drops) fmt::print("  dropped {}\n", drop_text(d));
  fmt::print("  check it: vtrace verify {}\n", shell_quote(path_argument(o.output)));
}

int run_repair(const RepairCommandOptions& o, const GlobalOptions& global) {
  const std::string temporary = temporary_of(o.output);
  if (auto bad = refused_outputs(
          {{"-o", o.output, "the repaired trace", true, kTemporarySuffix},
           {"--json", o.json, "the JSON report"}},
          {{"the trace", o.trace}})) {
    print_error(*bad);
    return kExitUsage;
  }
  auto source = schema::open_file_source(o.trace);
  if (!source) {
    print_error(about_file(o.trace, source.error().message));
    return kExitUsage;
  }
  bool opened_output = false;
  const schema::OpenOutput open_output =
      [&]() -> schema::TraceResult<std::unique_ptr<schema::ByteSink>> {
    auto sink = schema::open_file_sink(o.output, kTemporarySuffix);
    if (sink) opened_output = true;
    return sink;
  };
  auto report = schema::repair_trace(**source, open_output);
  if (!report) {
    std::error_code ec;
    if (opened_output) std::filesystem::remove(temporary, ec);
    const auto kind = report.error().kind;
    const bool unreadable = kind == schema::TraceErrorKind::kIo ||
                            kind == schema::TraceErrorKind::kNotATrace ||
                            kind == schema::TraceErrorKind::kUnsupportedVersion ||
                            kind == schema::TraceErrorKind::kWriterFailed;
    print_error(about_file(o.trace, report.error().message) +
                (unreadable ? "" : " (nothing was written)"));
    return unreadable ? kExitUsage : kExitMismatch;
  }
  if (!global.quiet) print_report(o, *report);
  flush_stdout();
  if (o.json && !write_json_report(*o.json, to_json(o, *report))) return kExitUsage;
  return kExitOk;
}

}  // namespace

void add_repair_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<RepairCommandOptions>();
  auto* cmd = app.add_subcommand(
      "repair", "Rewrite a crashed, cut or damaged trace into a valid one (what can be recovered)");
  cmd->add_option("trace", options->trace, "The .vtrace file (or the .partial of a recording)")
      ->required();
  cmd->add_option("-o,--output", options->output, "The repaired trace to write")->required();
  cmd->add_option("--json", options->json, "Write what was kept and dropped as JSON to this file");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_repair(*options, global); };
  });
}

}  // namespace vtrace::cli
