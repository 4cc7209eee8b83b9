// Helpers shared by the subcommands: event ranges, the stderr progress bar, error printing.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "vtrace/replayer/shell_words.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::cli {

// "A:B" (events A to B-1), "A:" (A to the end), ":B", or "N" (event N only).
struct EventRange {
  std::uint64_t first = 0;
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
};
std::expected<EventRange, std::string> parse_event_range(std::string_view text);
// The one rule for a range given as `option` `text` (dump and replay --events, extract --events
// and --event) on `trace`, which has `event_count` events: a range that starts past the last event
// is refused ("--events 30:40 starts past the last event: t.vtrace has 30 events (0 to 29)"); one
// that ends past it is cut there (as `A:` is).
std::expected<EventRange, std::string> fit_event_range(EventRange range, std::string_view option,
                                                       std::string_view text,
                                                       std::string_view trace,
                                                       std::uint64_t event_count);
// The same against the events of `trace` as the reader counts them (a recovered trace: those
// recovered); the reader's sentence naming the file when it cannot be read.
std::expected<EventRange, std::string> fit_event_range(EventRange range, std::string_view option,
                                                       std::string_view text,
                                                       const std::string& trace);

// One-line progress bar on stderr, drawn only when stderr is a terminal and not quiet.
class Progress {
 public:
  Progress(std::string label, bool quiet);
  ~Progress();
  void update(std::uint64_t done, std::uint64_t total);

 private:
  std::string label_;
  bool enabled_;
  int last_permille_ = -1;
};

// "vtrace: <message>" on stderr.
void print_error(std::string_view message);
// "vtrace: warning: <message>" on stderr (printed even with --quiet: it qualifies the result).
void print_warning(std::string_view message);

// Standard output's failures, kept until the end (main): every flush of stdout goes through
// flush_stdout, which remembers the errno of the first failed flush, so the final message can say
// why ("No space left on device") even when the failure happened in a command's earlier flush.
// A write that fmt::print reports by throwing is noted with note_stdout_failure.
void flush_stdout();
void note_stdout_failure(int err);
// nullopt when everything written to stdout got out; else "writing to standard output failed
// (reason)". Flushes first.
std::optional<std::string> stdout_failure();

// `text` safe to print as part of one line on a terminal: each control byte (below 0x20, and 0x7F:
// newlines, escape sequences) written as \xNN, everything else unchanged. For strings a trace
// carries (producer, workload, names), which a hostile or careless producer may fill with anything.
std::string printable(std::string_view text);

// "<file>: <message>", naming the file once (schema/trace_error.h).
using schema::about_file;

// What a trace's header says it recorded: the runtime's registry name and the workload's
// description (each "" when absent). nullopt when the header cannot be read (the command that
// then opens the trace says why).
struct RecordedFacts {
  std::string runtime;
  std::string workload;
};
std::optional<RecordedFacts> recorded_facts(const std::string& trace);

// Why `output` cannot become a trace file, checked before anything runs: it is empty, it exists
// and is a directory, a device or another non-regular file (the .partial would be renamed over
// it), its directory does not exist, or, new, it cannot be created there (tried: created and
// removed at once; /proc, a read-only mount). devices_ok: a device or pipe is fine (a report to
// /dev/stdout, not a trace renamed over /dev/full). nullopt when it can.
std::optional<std::string> unusable_output(const std::string& output, std::string_view what,
                                           bool devices_ok);

// Whether `a` and `b` name one file: std::filesystem::equivalent when both exist (hard and
// symbolic links, `./x`, `d/../x`), else the same weakly_canonical absolute path (an output that
// does not exist yet).
bool same_file(const std::string& a, const std::string& b);

// A file a subcommand reads, named as the message names it: `role` "the trace", "--weights";
// an empty `path`: none given.
struct InputFile {
  std::string_view role;
  std::string path;
};
// A file a subcommand writes: `role` as for InputFile ("-o", "--json"), `what` what it holds
// ("the trace", "the JSON report"); nullopt `path`: not asked for. A trace (`trace`) is written
// as PATH<temporary> (PATH.partial; `repair` writes PATH.repairing) and renamed when complete, so
// that file is written too, and PATH may not be a device (unusable_output's devices_ok).
struct OutputFile {
  std::string_view role;
  std::optional<std::string> path;
  std::string_view what;
  bool trace = false;
  std::string_view temporary = ".partial";
};
// Why `outputs` cannot be written, checked before anything runs (so nothing is replaced and no
// file is created): one is unusable_output, or one (or a trace's temporary) is the same_file as
// one of `inputs` or as another output. One sentence naming both files; nullopt when all can be.
// When all can be and a report file among them is standard output itself (`--json /dev/stdout`,
// `-o /dev/fd/1`, or the file stdout is redirected to; at most one can be), standard output is
// kept for that file from here on: what the command prints goes to stderr, and write_report_file
// writes that file to the original standard output, which so carries the report alone.
std::optional<std::string> refused_outputs(std::initializer_list<OutputFile> outputs,
                                           std::initializer_list<InputFile> inputs);

// Whether `path` names the file standard output is open on (same device and inode: /dev/stdout,
// /dev/fd/1, or the file stdout was redirected to), or, once refused_outputs kept standard
// output for a report file, whether `path` is that file's. False when either cannot be examined.
bool is_standard_output(const std::string& path);

// "; the events recorded so far are in OUT.partial (`vtrace repair OUT.partial -o OUT` finishes
// it)" when the writer left one that holds bytes, else "; nothing had reached the file, and none
// is left" (a sink that wrote nothing removes its .partial).
// The command is shell words (shell_command).
std::string partial_note(const std::string& output);

// Every `reproduce:` line is shell words (vtrace/replayer/shell_words.h: one rule for the CLI's
// lines, the replayer's and the HTML report's).
using replayer::path_argument;
using replayer::open_option_words;
using replayer::shell_command;
using replayer::shell_quote;

// Human-readable byte count: "1.5 MiB".
std::string human_bytes(std::uint64_t bytes);

// Writes a report file (`what`: "the JSON report", "the timeline", ...) at `path`: `body`
// writes the content to the stream and answers a sentence when it cannot (else nullopt). Every
// failure (opening, `body`, writing, closing) prints one sentence on stderr naming the path, what
// failed and the system's reason where it gives one ("No space left on device"), and removes an
// incomplete regular file (a device such as /dev/stdout is left alone); answers whether the
// file was written. The report file refused_outputs kept standard output for is written there.
// The report writers of the CLI all go through it.
bool write_report_file(const std::string& path, std::string_view what,
                       const std::function<std::optional<std::string>(std::ostream&)>& body);

// Writes `report` (indented JSON) to `path` through write_report_file. Called after the text
// report is printed, so a bad path loses none of it.
bool write_json_report(const std::string& path, const nlohmann::json& report);

}  // namespace vtrace::cli
