// Repair of a crashed (no footer), cut or damaged trace (`vtrace repair`, docs/FORMAT.md
// "Repair").
//
// repair_trace() reads `source` in salvage mode (TraceReaderOptions::salvage): every data frame
// up to the first damaged one, each checked fully, plus the decodable prefix of a frame cut by the
// end of the file. A damaged frame is dropped whole, and so is everything after it: later events
// name objects created in the lost frame, so an event stream with a hole would not replay. The
// events kept are then the longest valid prefix: also cut before the first event naming a payload
// that was not recovered. They are re-written, with the payloads they name (stored in their
// original encoding), by a TraceWriter with the same header (producer, metadata and format
// version, hence the same layout rules) and a new footer. The footer's `vtrace.TraceSummary` is
// rebuilt from the events kept, as the recorder counts them (final_counters: those of the last
// CounterSnapshot kept, where the recorder asks the runtime once more at close).
//
// A trace that opens with its footer and passes verify_all() has nothing to repair: the output is
// then a byte-identical copy and RepairReport::nothing_to_repair is true.
//
// Ownership: `source` is borrowed for the call. `open_output` is called at most once, only when
//   something is recoverable (so a failed repair creates no file); the sink is committed at the
//   end. Thread rules: one call at a time per source. Every record must be a `vtrace.Event`.
// Errors: the header cannot be read (kNotATrace, kChecksumMismatch, kUnsupportedVersion, ...) or
//   no event is recoverable (kTruncated): nothing is written. A read error of the source or a
//   failure of the output (kIo, kWriterFailed) is returned as is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"
#include "vtrace/schema/trace_writer.h"

namespace vtrace::schema {

// One part of the input that the repaired trace does not carry.
struct RepairDrop {
  enum class Part : std::uint8_t {
    kDamagedFrame,  // a data frame that failed a check (reason: the check's sentence)
    kLaterFrames,   // the frames after a damaged one
    kCutFrame,      // the undecodable tail of a frame cut by the end of the file (0 bytes: cut
                    // right after a flush, only the frame's end is missing)
    kFooter,        // a footer (or trailing bytes) that is damaged or cut, or (0 bytes) absent
                    // after a complete frame
    kEvents,        // recovered events cut off because one names a payload that was not recovered
  };
  Part part = Part::kDamagedFrame;
  std::optional<std::uint64_t> frame_index;  // the (first) data frame of the part
  std::uint64_t file_offset = 0;             // where the dropped bytes start in the input
  std::uint64_t bytes = 0;                   // input bytes not carried over (0 for kEvents)
  std::uint64_t first_event = 0;             // ordinal of the first event lost
  // Events lost: exact when known (the footer's index was readable, or kEvents); nullopt means
  // "unknown after ordinal first_event - 1" (a file without a readable footer).
  std::optional<std::uint64_t> events_lost;
  std::vector<BlobId> payloads_missing;  // kEvents: the payload that stopped the events
  std::string reason;                    // one sentence naming what and where
};

std::string_view repair_part_name(RepairDrop::Part part);  // "damaged frame", "cut frame", ...
// A drop without its reason: "cut frame 0 at offset 15274 (86 bytes): events lost: unknown after
// event 592", "events: 3 events lost (events 40 to 42)". `vtrace repair` prints it with the
// reason after it; the repaired trace's summary (`repaired`) carries it as it is.
std::string repair_drop_where(const RepairDrop& drop);

struct RepairReport {
  bool nothing_to_repair = false;  // the input verified: the output is a byte-identical copy
  std::uint64_t events_kept = 0;
  std::uint64_t payloads_kept = 0;  // distinct payloads written
  // The input's event count according to its footer, when the footer was readable.
  std::optional<std::uint64_t> events_in_input;
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
  std::string
      input_state;  // the reader's sentence about the input: its recovery note, the check that
                    // failed, or (nothing to repair) that it is complete and verified
  std::vector<RepairDrop> drops;  // in file order
};

struct RepairOptions {
  TraceWriterOptions writer;  // how the repaired trace is written (frames, zstd level)
};

using OpenOutput = std::function<TraceResult<std::unique_ptr<ByteSink>>()>;

// Where `vtrace repair <trace>.partial` should write the finished trace: `trace` itself, unless
// something other than a regular file (a directory, say) now stands there, which repair would
// refuse; then "<stem>.repaired<ext>" beside it. For the messages that suggest that command.
std::filesystem::path repair_output_for(const std::filesystem::path& trace);

// "<trace>.partial" when it is a regular file that holds bytes (a recording cut short, for
// `vtrace repair`); nullopt when there is none, or only an empty one (a sink that wrote nothing
// removes its own, byte_io.h). For the messages that name what a failed recording left.
std::optional<std::filesystem::path> recoverable_partial(const std::filesystem::path& trace);

TraceResult<RepairReport> repair_trace(const ByteSource& source, const OpenOutput& open_output,
                                       const RepairOptions& options = {});

}  // namespace vtrace::schema
