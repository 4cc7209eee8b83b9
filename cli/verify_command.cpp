// vtrace verify T: integrity only (checksums, record structure, event verification, indexes).
#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::cli {

namespace {

struct VerifyOptions {
  std::string trace;
};

int run_verify(const VerifyOptions& o, const GlobalOptions& global) {
  auto reader = schema::TraceReader::open(o.trace);
  if (!reader) {
    // A file that is no trace (missing, a directory, another format, a newer major) is a usage
    // error; a trace whose header or footer is damaged failed an integrity check.
    const auto kind = reader.error().kind;
    const bool unreadable = kind == schema::TraceErrorKind::kIo ||
                            kind == schema::TraceErrorKind::kNotATrace ||
                            kind == schema::TraceErrorKind::kUnsupportedVersion;
    print_error(about_file(o.trace, reader.error().message) +
                (unreadable ? "" : " (integrity check failed)"));
    return unreadable ? kExitUsage : kExitMismatch;
  }
  if (auto verified = (*reader)->verify_all(); !verified) {
    print_error(about_file(o.trace, verified.error().message) + " (integrity check failed)");
    return kExitMismatch;
  }
  const auto& r = **reader;
  if (!r.complete()) {
    // The note names the file, the events recovered and where the file was cut.
    print_error(about_file(o.trace, r.recovery().note));
    return kExitMismatch;
  }
  if (!global.quiet) {
    fmt::print("{}: OK: {} events, {} frames, {} payloads, every checksum and index verified\n",
               o.trace, r.event_count(), r.frames().size(), r.totals().blobs);
  }
  return kExitOk;
}

}  // namespace

void add_verify_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<VerifyOptions>();
  auto* cmd = app.add_subcommand("verify", "Check a trace's integrity (fast; runs nothing)");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_verify(*options, global); };
  });
}

}  // namespace vtrace::cli
