// Reader of .vtrace files: the one reader every consumer (replay, info, dump, verify) visits.
//
// open() reads the header and, when the file ends with a valid trailer, the footer's seek and
// blob indexes: event N is then reached by decompressing only the frame that holds it. A file
// without a footer (a crashed recording) is scanned frame by frame: every complete frame is
// recovered, plus the complete records of the decodable prefix of a cut last frame, and
// recovery() says how many events were recovered and at which offset the file was cut.
//
// Every size read from the file is checked against format.h's limits before anything is
// allocated; every event passes the FlatBuffers verifier (verify_event_record) before a visitor
// sees it; zstd content checksums are checked, and a mismatch names the frame and its offset.
// Format 1.1 files also check the header (open() refuses a header that does not match its hash)
// and the footer (one that does not match the trailer's checksum is not trusted: open() scans the
// data frames as for an unfinished recording, and verify_all() reports kChecksumMismatch).
//
// Ownership: the reader owns its source. Spans handed to visitors are valid during the call only.
// Thread rules: one thread at a time.
// Errors: TraceError (trace_error.h); no input crashes the reader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"
#include "vtrace/schema/trace_writer.h"

namespace vtrace::schema {

struct FrameInfo {
  std::uint64_t file_offset = 0;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t content_bytes = 0;
  std::uint64_t first_event = 0;
  std::uint64_t event_count = 0;
  std::uint64_t blob_count = 0;
  BlobId content_hash;     // XXH3-128 of the decompressed content
  bool complete = true;    // false only for a cut last frame of a recovered file
};

// The first data frame a salvage scan (TraceReaderOptions::salvage) found damaged: the scan ended
// there, as if the file were cut at `file_offset`.
struct DamagedFrame {
  std::uint64_t index = 0;  // data frame index (the frames before it were recovered)
  std::uint64_t file_offset = 0;
  TraceError error;  // what the check found, naming the frame and offset
};

struct RecoveryInfo {
  bool footer_present = true;
  std::uint64_t events_recovered = 0;
  std::uint64_t cut_offset = 0;     // where the valid data ends (file size when complete)
  std::uint64_t file_bytes = 0;
  std::string note;                 // one sentence for people; empty when complete
  std::optional<DamagedFrame> damaged;  // salvage mode only: where the scan met damage
};

struct TraceTotals {
  std::uint64_t events = 0;
  std::uint64_t blobs = 0;
  std::uint64_t payload_raw_bytes = 0;     // distinct payloads, decoded
  std::uint64_t payload_stored_bytes = 0;  // distinct payloads, as encoded before compression
  std::uint64_t compressed_bytes = 0;      // all data frames, compressed
  std::uint64_t file_bytes = 0;
};

// Implemented by the events layer (schema/src/events.cpp): runs the FlatBuffers verifier for a
// `vtrace.Event` with format.h's limits. Returns false for anything that does not verify.
bool verify_event_record(std::span<const std::uint8_t> bytes);

struct TraceReaderOptions {
  // Checks the footer's XXH3-128 of each frame's compressed and decompressed bytes, and lets zstd
  // check its content checksums. Off only for measurements.
  bool verify_checksums = true;
  // The check every event record passes before a visitor sees it. Tests of the container inject a
  // verifier for synthetic records; everything else keeps the default.
  std::function<bool(std::span<const std::uint8_t>)> verify_event = verify_event_record;
  // Repair's mode (trace_repair.h): the footer is not read; open() scans the data frames as for an
  // unfinished recording and checks each one fully (zstd checksum, record structure, every event
  // verified, every payload hashed to its id). The first frame that fails any check ends the scan
  // as a cut would, instead of failing open(): the frames before it are recovered and
  // recovery().damaged names it. A read error of the source still fails open().
  bool salvage = false;
};

// Whether open() refused the file because its header frame does not match its own hash or the
// footer's copy of it (a header lowered to minor 0 hides its own hash; only the footer's copy
// catches it). repair_trace refuses such a file: salvage mode reads no footer.
bool is_header_damage(const TraceError& error);

class TraceReader {
 public:
  static TraceResult<std::unique_ptr<TraceReader>> open(std::unique_ptr<ByteSource> source,
                                                        TraceReaderOptions options = {});
  static TraceResult<std::unique_ptr<TraceReader>> open(const std::filesystem::path& path,
                                                        TraceReaderOptions options = {});
  ~TraceReader();

  const TraceHeaderInfo& header() const;
  bool complete() const;
  const RecoveryInfo& recovery() const;
  const std::vector<FrameInfo>& frames() const;
  TraceTotals totals() const;
  std::uint64_t event_count() const;
  // The footer's summary bytes (`vtrace.TraceSummary`); empty for a recovered file.
  std::span<const std::uint8_t> summary() const;

  // Calls visit(ordinal, verified event bytes) for ordinals in [first, last) in order; stops early
  // when visit returns false. Decompresses only the frames that hold those events. The bytes are
  // 8-byte aligned (FlatBuffers reads scalars in place) and valid only during the call.
  using EventVisitor = std::function<bool(std::uint64_t, std::span<const std::uint8_t>)>;
  TraceResult<void> visit_events(std::uint64_t first, std::uint64_t last,
                                 const EventVisitor& visit);
  // The decoded payload with this id; kMissingBlob if absent.
  TraceResult<std::vector<std::uint8_t>> blob(const BlobId& id);
  // How payload `id` is stored (its encoding, as the blob index says); nullopt if absent. Lets a
  // rewriter (repair) store it the same way: put_blob element_bytes 2 for kBytePlanes16.
  std::optional<BlobEncoding> blob_encoding(const BlobId& id) const;
  // Reads every frame once and checks checksums, record structure, event verification and the
  // footer's indexes against what was found (`vtrace verify`).
  TraceResult<void> verify_all();

  // How many data frames were decompressed so far (each decode counts; cache hits do not). Lets
  // tests and tools check that seeking does not decompress earlier frames.
  std::uint64_t frames_decompressed() const;

 private:
  struct Impl;
  explicit TraceReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtrace::schema
