// Streaming writer of .vtrace files (docs/FORMAT.md).
//
// The calling thread only appends records to an in-memory chunk; a background thread compresses
// chunks into zstd data frames (content checksums on) and writes them to the sink. Memory stays
// bounded whatever the trace's length: about two frames of pending records plus the largest
// payload; append_* blocks while the compressor is that far behind.
//
// Frames end when they hold frame_target_bytes of records, or at close(). flush() makes every
// appended record reach the sink without ending the frame (a zstd block flush), so a reader of a
// cut file recovers it; the recorder calls flush() at every fence wait. Flush points depend only
// on the record sequence, so the same sequence always gives the same bytes. The optional timer
// flush (flush_interval_ms > 0) trades that byte-identity (never the decoded content) for a bound
// on how much a crash can lose; it is off by default.
//
// Payloads are content-addressed: put_blob() stores a payload once, under its XXH3-128, and later
// identical payloads cost nothing but the id.
//
// Ownership: the writer owns the sink from create() on, and two threads of its own (compressor
//   and pre-compressor, joined by close()). A create() that fails destroys the sink unwritten (a
//   file sink then removes its empty temporary file). The sink is committed (a file sink's
//   .partial renamed) only by a close() that succeeds, which the destructor calls when the owner
//   did not; close() destroys the sink either way, so a failed one leaves what reached the file
//   (or, if nothing did, no file). append_event() and put_blob() copy their bytes before
//   returning.
// Thread rules: all methods are thread-safe (internally serialized); the recorder adds its own
//   total order on top.
// Errors: the first sink failure (disk full, I/O error) stops the writer: later calls return
//   kWriterFailed at once without blocking, and close() reports the original error. What was
//   written before the failure stays recoverable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::schema {

// What the header frame holds besides magic and version.
struct TraceHeaderInfo {
  std::uint16_t format_major = kFormatMajor;
  // The writer lays the file out for this minor: from kFirstChecksummedMinor (1) on with the header
  // hash and the footer checksum; 0 gives the 1.0 layout without them (for compatibility tests).
  std::uint16_t format_minor = kFormatMinor;
  std::string producer = "vtrace";
  std::string producer_version;
  // A FlatBuffers `vtrace.TraceMetadata` (schema/vtrace.fbs): runtime name, descriptor, attention
  // policy, recorder options. Opaque to the container.
  std::vector<std::uint8_t> metadata;
};

struct TraceWriterOptions {
  int zstd_level = 1;                           // justified in docs/FORMAT.md by bench/ figures
  std::uint64_t frame_target_bytes = 2u << 20;  // uncompressed record bytes per data frame
  std::uint32_t flush_interval_ms = 0;        // 0 = off (keeps files byte-identical)
  bool byte_planes_for_16bit = true;          // BlobEncoding::kBytePlanes16 for 16-bit payloads
};

struct TraceWriteStats {
  std::uint64_t events = 0;
  std::uint64_t blobs = 0;                 // distinct payloads stored
  std::uint64_t blob_references = 0;       // put_blob calls
  std::uint64_t payload_raw_bytes = 0;     // sum over distinct payloads, decoded
  std::uint64_t payload_referenced_bytes = 0;  // sum over all put_blob calls
  std::uint64_t frames = 0;
  std::uint64_t file_bytes = 0;
};

class TraceWriter {
 public:
  // Queues the header frame (the background thread writes it first). The sink is usually
  // open_file_sink(path). Errors here: kIo for a null sink ("TraceWriter::create: no sink") or
  // when the zstd context (or a hash state) cannot be allocated; kTooLarge for a header over
  // kMaxHeaderBytes. Sink failures, even on the header, surface through later calls and close().
  // Options out of range are clamped: zstd_level to zstd's levels, frame_target_bytes to
  // [1, 256 MiB].
  static TraceResult<std::unique_ptr<TraceWriter>> create(std::unique_ptr<ByteSink> sink,
                                                          TraceHeaderInfo header,
                                                          TraceWriterOptions options = {});
  ~TraceWriter();  // closes without a summary if close() was not called; never throws

  // Appends one finished FlatBuffers `vtrace.Event`; returns its ordinal (0, 1, 2, ...).
  TraceResult<std::uint64_t> append_event(std::span<const std::uint8_t> event);
  // Stores a payload once. element_bytes (1, 2 or 4) selects the byte-plane encoding for 2.
  TraceResult<BlobId> put_blob(std::span<const std::uint8_t> bytes, std::uint32_t element_bytes);
  TraceResult<void> flush();
  // Ends the last frame, writes the footer (seek index, blob index, totals and `summary`, a
  // FlatBuffers `vtrace.TraceSummary`) and commits the sink (renames .partial); then destroys
  // the sink, committed or not.
  TraceResult<TraceWriteStats> close(std::span<const std::uint8_t> summary);

  bool failed() const;
  TraceWriteStats stats() const;

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtrace::schema
