// `vtrace extract`: a standalone minimal trace that reproduces one command (or a window of
// commands) of a recorded trace.
//
// The trace is replayed on the baseline runtime (`runtime`, default reference) up to the batch
// that runs the window's first command; the commands of that batch before it are run one at a
// time on the executor's private stream (StepExecutor::run_private), so the state is the one just
// before the window. The full contents of every buffer the window's commands read or write are
// read there. Then the window is run the same way and every region it writes is read: the
// baseline's results in the original run.
//
// The repro is recorded through the recorder (RecordingRuntime) on a fresh instance of the same
// runtime, so it is an ordinary trace: the allocations the window touches (their recorded
// requests), one stream, an upload of each buffer's contents (one submit each, waited for), the
// window's commands encoded with their recorded arguments and submitted as one batch (with their
// recorded phases, node indices and logical work), a wait, and a readback of every region they
// write. Its readbacks hold what the baseline computed in isolation; they are checked against the
// baseline's results in the original run (`reproduces_baseline`): a runtime whose results depend
// on more than the window's inputs (nondeterminism) makes the repro differ, and says so.
// `vtrace replay repro.vtrace` then matches on the baseline and shows the drifting runtime's
// mismatch.
//
// The window: the commands executed from the first one whose encode event is in
// [first_event, last_event] to the last such one, in execution order, every command executed in
// between included (a command encoded outside the range but run between two of them belongs to
// it). Only submits the recording saw succeed count. Between two batches of a window nothing but
// its commands is carried (an import session's writes there are not).
//
// Ownership: the report owns its values; the repro file is the caller's. Thread rules: one
// thread. Errors: ReplayFailure kTrace (unreadable trace), kUsage (no command encoded in the
// range and submitted, an event past the end, a command that names a foreign buffer or cannot be
// encoded again, a repro that cannot be written), kRuntimeUnavailable.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vtrace/drift/lockstep.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::drift {

struct ExtractOptions {
  std::uint64_t first_event = 0;  // --event N: first = last = N
  std::uint64_t last_event = 0;
  std::string runtime = "reference";
  runtime::RuntimeOpenOptions open{};  // device_memory_bytes 0 = the recorded capacity
  int zstd_level = 1;
};

struct ExtractedCommand {
  std::uint64_t event = 0;    // its encode event in the source trace
  std::uint64_t command = 0;  // its recorded ordinal
  std::uint64_t submit_event = 0;
  std::string kind;
  std::string call;
  std::string shapes;
  std::optional<std::uint32_t> node_index;
};

struct ExtractedBuffer {
  std::uint64_t ordinal = 0;  // in the source trace
  std::string resource_id;
  std::uint64_t bytes = 0;
};

struct ExtractReport {
  std::string trace;   // the source trace
  std::string output;  // the repro written
  std::string runtime;
  std::vector<ExtractedCommand> commands;  // in execution order
  std::vector<ExtractedBuffer> buffers;    // uploaded, in ordinal order
  std::uint64_t uploaded_bytes = 0;
  std::uint64_t readbacks = 0;
  std::uint64_t events = 0;  // of the repro
  // Every readback of the repro equals what the baseline computed in the original run.
  bool reproduces_baseline = true;
  std::string difference;  // when not: which region differs
  // The source trace when the reader recovered it (no footer): only its recovered events exist.
  std::optional<RecoveredTrace> recovered;

  // Stable keys (docs/CLI.md, `vtrace extract --json`).
  nlohmann::json to_json() const;
};

std::expected<ExtractReport, replayer::ReplayFailure> extract_commands(
    const std::filesystem::path& trace, const std::filesystem::path& output,
    const ExtractOptions& options, const runtime::RuntimeRegistry& registry);

// The `vtrace extract` command line that writes the repro of the command encoded at `event` to
// repro-<event>.vtrace, shell-quoted: `--runtime baseline` when the baseline is not extract's
// default (reference), then `open_words` as given (runtime options with their leading spaces,
// replayer::open_option_words). What compare's reports print beside a command that diverges.
std::string extract_command_line(const std::string& trace, std::uint64_t event,
                                 const std::string& baseline, const std::string& open_words);

}  // namespace vtrace::drift
