// Errors of the trace layer: one kind and one sentence naming the file, the frame or event, and
// what was expected. Library code returns these; it never throws or aborts on bad input.
//
// Thread rules: TraceError is a plain value; trace_error_kind_name() (a view of a static string,
//   valid for the whole program) and about_file() are pure: both may be called from any thread.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace vtrace::schema {

enum class TraceErrorKind : std::uint8_t {
  kIo,                 // the file or the memory: a failed open/read/write/fsync/rename (the
                       // path and the OS's reason), a path that is not a regular file, a sink
                       // used after commit, an allocation or a zstd step that failed
  kNotATrace,          // no vtrace header frame at offset 0
  kUnsupportedVersion, // newer major: "written by format 2.0; this reader reads 1.x"
  kTruncated,          // the file ends inside a frame (a crashed or cut recording)
  kChecksumMismatch,   // zstd content checksum failed: names the frame and its offset
  kCorrupt,            // any other malformed structure (bad sizes, bad record kind, bad index)
  kVerifyFailed,       // a FlatBuffers table failed the verifier
  kTooLarge,           // a size field exceeds the limits of format.h; refused before allocating
  kUnknownRequiredEvent,
  kMissingBlob,        // an event references a payload the trace does not hold
  kWriterFailed,       // the writer stopped after an earlier failure
};

struct TraceError {
  TraceErrorKind kind;
  std::string message;
};

template <typename T>
using TraceResult = std::expected<T, TraceError>;

std::string_view trace_error_kind_name(TraceErrorKind kind);

// "<file>: <message>", unless the message already names the file as a word of its own (the trace
// layer's sentences do: "<file>: ...", "cannot open <file>: ...", "<file> has no footer ...",
// "cannot write <file>.partial: ..."), so
// that every error names its file exactly once. A name that only occurs inside another word (a
// trace called `e`) does not count. Pure.
std::string about_file(std::string_view file, std::string_view message);

}  // namespace vtrace::schema
