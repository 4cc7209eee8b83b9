#include "vtrace/schema/format.h"

#include <xxhash.h>

#include "vtrace/schema/trace_error.h"

namespace vtrace::schema {

std::string BlobId::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(15 - i)] = kDigits[(high >> (4 * i)) & 0xF];
    out[static_cast<std::size_t>(31 - i)] = kDigits[(low >> (4 * i)) & 0xF];
  }
  return out;
}

BlobId blob_id_of(const void* data, std::size_t size) {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return BlobId{h.low64, h.high64};
}

std::string about_file(std::string_view file, std::string_view message) {
  if (file.empty()) return std::string(message);
  for (std::size_t at = message.find(file); at != std::string_view::npos;
       at = message.find(file, at + 1)) {
    const std::size_t end = at + file.size();
    const bool starts = at == 0 || message[at - 1] == ' ';
    // ".partial" and ".repairing" are the file's own names while it is written.
    const bool ends = end == message.size() || message[end] == ':' || message[end] == ' ' ||
                      message[end] == '.' || message[end] == ',' || message[end] == ')';
    if (starts && ends) return std::string(message);
  }
  return std::string(file) + ": " + std::string(message);
}

std::string_view trace_error_kind_name(TraceErrorKind kind) {
  switch (kind) {
    case TraceErrorKind::kIo: return "io";
    case TraceErrorKind::kNotATrace: return "not-a-trace";
    case TraceErrorKind::kUnsupportedVersion: return "unsupported-version";
    case TraceErrorKind::kTruncated: return "truncated";
    case TraceErrorKind::kChecksumMismatch: return "checksum-mismatch";
    case TraceErrorKind::kCorrupt: return "corrupt";
    case TraceErrorKind::kVerifyFailed: return "verify-failed";
    case TraceErrorKind::kTooLarge: return "too-large";
    case TraceErrorKind::kUnknownRequiredEvent: return "unknown-required-event";
    case TraceErrorKind::kMissingBlob: return "missing-blob";
    case TraceErrorKind::kWriterFailed: return "writer-failed";
  }
  return "unknown";
}

}  // namespace vtrace::schema
