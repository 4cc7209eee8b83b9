// Errors of the trace layer: one kind and one sentence naming the file, the frame or event, and
// what was expected. Library code returns these; it never throws or aborts on bad input.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace vtrace::schema {

enum class TraceErrorKind : std::uint8_t {
  kIo,                 // open/read/write/rename failed (errno text included)
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

}  // namespace vtrace::schema
