// The writer: the calling thread appends records to `chunk_`; a worker thread owns the zstd
// context and the sink. Hand-over points (chunk full, flush(), frame end) depend only on the call
// sequence, which is what makes the output byte-identical for identical calls.
#include "vtrace/schema/trace_writer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <container_generated.h>
#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>

#include "container_internal.h"

namespace vtrace::schema {
namespace {

using namespace detail;

// Records reach the compressor at frame end or flush() only. A frame handed over whole is
// compressed in one ZSTD_compress2 call (the fastest path zstd has; bench/bench_writer.cpp);
// frames with flush points are streamed. Compression of frame k overlaps appending to frame k+1.
constexpr std::uint64_t kMaxFrameTarget = 256ull << 20;

struct BlobIdHash {
  std::size_t operator()(const BlobId& id) const noexcept { return static_cast<std::size_t>(id.low); }
};

struct FrameMeta {
  std::uint64_t content_bytes = 0;
  std::uint64_t first_event = 0;
  std::uint64_t event_count = 0;
  std::uint64_t blob_count = 0;
  XXH128_hash_t content_hash{};  // set at frame end
};

struct Job {
  std::vector<std::uint8_t> data;
  ZSTD_EndDirective directive = ZSTD_e_continue;
  FrameMeta meta;    // meaningful when directive == ZSTD_e_end
  bool raw = false;  // written as is (the header frame), not compressed
};

struct StoredBlob {
  std::uint64_t frame_index = 0;
  std::uint64_t record_offset = 0;
  std::uint64_t raw_bytes = 0;
  std::uint64_t stored_bytes = 0;
  BlobEncoding encoding = BlobEncoding::kRaw;
};

container::Hash128 to_fb(const XXH128_hash_t& h) { return container::Hash128(h.low64, h.high64); }

}  // namespace

struct TraceWriter::Impl {
  Impl(std::unique_ptr<ByteSink> s, TraceWriterOptions o) : sink(std::move(s)), options(o) {}

  // --- fixed after create()
  std::unique_ptr<ByteSink> sink;
  TraceWriterOptions options;
  bool checksums = true;  // format 1.1 layout: header hash, footer checksum (header minor >= 1)
  BlobId header_hash;     // XXH3-128 of the header frame's content before the hash

  // --- guarded by mu
  mutable std::mutex mu;
  std::condition_variable cv_work;   // worker: a job is queued, or stop
  std::condition_variable cv_done;   // producers: a job finished (space, idle)
  std::vector<std::uint8_t> chunk;   // records not yet handed over
  FrameMeta frame;                   // the frame being filled
  std::uint64_t frame_index = 0;
  bool frame_unflushed = false;      // records appended since the last hand-over with a flush
  std::deque<Job> queue;
  std::uint64_t queued_bytes = 0;
  bool worker_busy = false;
  bool stopping = false;
  bool closed = false;
  std::optional<TraceError> error;   // the first failure; the writer is stopped once set
  std::vector<std::vector<std::uint8_t>> spare;  // recycled job buffers
  std::unordered_map<BlobId, StoredBlob, BlobIdHash> blobs;
  TraceWriteStats stats;
  std::uint64_t payload_stored_bytes = 0;
  std::vector<container::FrameEntry> frames;  // appended by the worker at each frame end
  std::uint64_t file_pos = 0;                 // bytes handed to the sink (worker writes it)

  XXH3_state_t* content_state = nullptr;  // of the frame being filled

  // --- worker only
  ZSTD_CCtx* cctx = nullptr;
  XXH3_state_t* compressed_state = nullptr;
  std::vector<std::uint8_t> whole_out;  // output of one-shot frames
  bool in_frame = false;
  std::uint64_t frame_offset = 0;
  std::vector<std::uint8_t> out;
  std::thread worker;

  ~Impl() {
    ZSTD_freeCCtx(cctx);
    XXH3_freeState(content_state);
    XXH3_freeState(compressed_state);
  }

  TraceError stopped_error() const {
    return make_error(TraceErrorKind::kWriterFailed,
                      fmt::format("the writer of {} stopped after an earlier failure: {}",
                                  sink->describe(), error ? error->message : "closed"));
  }

  // Called with mu held. Hands the current chunk to the worker; blocks while more than one frame's
  // worth of records is already waiting (the memory bound).
  void submit_locked(std::unique_lock<std::mutex>& lk, ZSTD_EndDirective directive) {
    const std::uint64_t cap = options.frame_target_bytes;
    cv_done.wait(lk, [&] { return error.has_value() || queued_bytes <= cap; });
    // The content hash is taken on the appending thread (the lighter load), record by record
    // while the bytes are still in cache (hash_record_locked); here it is only finished.
    if (directive == ZSTD_e_end) {
      frame.content_hash = XXH3_128bits_digest(content_state);
      XXH3_128bits_reset(content_state);
    }
    Job job;
    job.data = std::move(chunk);
    job.directive = directive;
    job.meta = frame;
    if (!spare.empty()) {
      chunk = std::move(spare.back());
      spare.pop_back();
    } else {
      chunk = {};
      chunk.reserve(chunk_reserve());
    }
    chunk.clear();
    if (error) return;  // the worker is stopped; drop the records
    queued_bytes += job.data.size();
    queue.push_back(std::move(job));
    cv_work.notify_one();
  }

  // A frame's worth up front: growing a 2 MiB chunk by doubling would copy it several times.
  std::size_t chunk_reserve() const {
    return static_cast<std::size_t>(std::min<std::uint64_t>(options.frame_target_bytes, 8u << 20) + (64u << 10));
  }

  // Adds the record just written at chunk[at..] to the frame's content hash.
  void hash_record_locked(std::size_t at) {
    XXH3_128bits_update(content_state, chunk.data() + at, chunk.size() - at);
  }

  void after_append_locked(std::unique_lock<std::mutex>& lk) {
    frame_unflushed = true;
    if (frame.content_bytes >= options.frame_target_bytes) end_frame_locked(lk);
  }

  void end_frame_locked(std::unique_lock<std::mutex>& lk) {
    submit_locked(lk, ZSTD_e_end);
    ++frame_index;
    frame = FrameMeta{};
    frame.first_event = stats.events;
    frame_unflushed = false;
  }

  void wait_idle_locked(std::unique_lock<std::mutex>& lk) {
    cv_done.wait(lk, [&] { return (queue.empty() && !worker_busy) || error.has_value(); });
  }

  void fail_locked(TraceError e) {
    if (!error) error = std::move(e);
    cv_done.notify_all();
  }

  // --- worker side
  TraceResult<void> write_out(std::size_t n) {
    if (n == 0) return {};
    XXH3_128bits_update(compressed_state, out.data(), n);
    auto r = sink->write(std::span<const std::uint8_t>(out.data(), n));
    if (!r) return r;
    std::lock_guard lk(mu);
    file_pos += n;
    return {};
  }

  TraceResult<void> process(Job& job) {
    if (job.raw) {
      if (auto r = sink->write(job.data); !r) return r;
      std::lock_guard lk(mu);
      file_pos += job.data.size();
      return {};
    }
    if (!in_frame && job.directive == ZSTD_e_end) return process_whole_frame(job);
    if (!in_frame) {
      ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
      XXH3_128bits_reset(compressed_state);
      std::lock_guard lk(mu);
      frame_offset = file_pos;
      in_frame = true;
    }
    ZSTD_inBuffer in{job.data.data(), job.data.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const std::size_t rc = ZSTD_compressStream2(cctx, &o, &in, job.directive);
      if (ZSTD_isError(rc)) {
        return std::unexpected(make_error(
            TraceErrorKind::kIo, fmt::format("zstd cannot compress frame {} of {}: {}",
                                             frames.size(), sink->describe(), ZSTD_getErrorName(rc))));
      }
      if (auto w = write_out(o.pos); !w) return w;
      const bool done = job.directive == ZSTD_e_continue ? in.pos == in.size : rc == 0;
      if (done) break;
    }
    if (job.directive != ZSTD_e_continue) {
      if (auto f = sink->flush(); !f) return f;
    }
    if (job.directive == ZSTD_e_end) record_frame(job.meta);
    return {};
  }

  TraceResult<void> process_whole_frame(Job& job) {
    whole_out.resize(ZSTD_compressBound(job.data.size()));
    const std::size_t n = ZSTD_compress2(cctx, whole_out.data(), whole_out.size(),
                                         job.data.data(), job.data.size());
    if (ZSTD_isError(n)) {
      return std::unexpected(make_error(
          TraceErrorKind::kIo, fmt::format("zstd cannot compress frame {} of {}: {}",
                                           frames.size(), sink->describe(), ZSTD_getErrorName(n))));
    }
    XXH3_128bits_reset(compressed_state);
    XXH3_128bits_update(compressed_state, whole_out.data(), n);
    {
      std::lock_guard lk(mu);
      frame_offset = file_pos;
    }
    if (auto r = sink->write(std::span<const std::uint8_t>(whole_out.data(), n)); !r) return r;
    if (auto r = sink->flush(); !r) return r;
    {
      std::lock_guard lk(mu);
      file_pos += n;
    }
    record_frame(job.meta);
    return {};
  }

  void record_frame(const FrameMeta& meta) {
    std::lock_guard lk(mu);
    frames.emplace_back(frame_offset, file_pos - frame_offset, meta.content_bytes,
                        meta.first_event, meta.event_count, meta.blob_count,
                        to_fb(meta.content_hash), to_fb(XXH3_128bits_digest(compressed_state)));
    stats.frames = frames.size();
    in_frame = false;
  }

  void run() {
    std::unique_lock lk(mu);
    const auto interval = std::chrono::milliseconds(options.flush_interval_ms);
    auto next_timer = std::chrono::steady_clock::now() + interval;
    for (;;) {
      if (queue.empty() && !stopping) {
        if (options.flush_interval_ms == 0) {
          cv_work.wait(lk, [&] { return !queue.empty() || stopping; });
        } else if (cv_work.wait_until(lk, next_timer) == std::cv_status::timeout) {
          // The timer flush: the one place where frame boundaries depend on timing.
          next_timer = std::chrono::steady_clock::now() + interval;
          if (frame_unflushed && !error && !closed) {
            frame_unflushed = false;
            Job job;
            job.data = std::move(chunk);
            chunk = {};
            job.directive = ZSTD_e_flush;
            queued_bytes += job.data.size();
            queue.push_back(std::move(job));
          }
        }
        continue;
      }
      if (queue.empty()) break;  // stopping and drained
      Job job = std::move(queue.front());
      queue.pop_front();
      worker_busy = true;
      const bool skip = error.has_value();
      lk.unlock();
      TraceResult<void> r;
      if (!skip) r = process(job);
      lk.lock();
      worker_busy = false;
      queued_bytes -= job.data.size();
      job.data.clear();
      if (spare.size() < 4) spare.push_back(std::move(job.data));
      if (!r) fail_locked(std::move(r.error()));
      cv_done.notify_all();
    }
  }

  // Queues the header frame for the worker, so that even the first sink error reaches the caller
  // the way every later one does: through kWriterFailed and close().
  TraceResult<void> queue_header(const TraceHeaderInfo& h) {
    flatbuffers::FlatBufferBuilder fbb(256);
    auto producer = fbb.CreateString(h.producer);
    auto version = fbb.CreateString(h.producer_version);
    auto metadata = fbb.CreateVector(h.metadata);
    fbb.Finish(container::CreateHeader(fbb, h.format_major, h.format_minor, producer, version,
                                       metadata));
    // A header of minor 0 gets the 1.0 layout (no checksums): what older writers produced, and
    // what tests of backward compatibility write.
    checksums = h.format_minor >= kFirstChecksummedMinor;
    const std::uint64_t content = kHeaderMagic.size() + fbb.GetSize();
    if (content + (checksums ? kHeaderHashBytes : 0) > kMaxHeaderBytes) {
      return std::unexpected(make_error(
          TraceErrorKind::kTooLarge,
          fmt::format("the header of {} would take {} bytes; the limit is {}", sink->describe(),
                      content, kMaxHeaderBytes)));
    }
    std::vector<std::uint8_t> bytes;
    bytes.reserve(8 + content + kHeaderHashBytes);
    append_u32(bytes, kHeaderSkippableMagic);
    append_u32(bytes, static_cast<std::uint32_t>(content + (checksums ? kHeaderHashBytes : 0)));
    for (char c : kHeaderMagic) bytes.push_back(static_cast<std::uint8_t>(c));
    bytes.insert(bytes.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    if (checksums) {
      // Format 1.1: the header frame ends with the XXH3-128 of its content so far.
      header_hash = header_hash_of(std::span<const std::uint8_t>(bytes).subspan(8));
      append_u64(bytes, header_hash.low);
      append_u64(bytes, header_hash.high);
    }
    Job job;
    job.data = std::move(bytes);
    job.raw = true;
    queued_bytes += job.data.size();
    queue.push_back(std::move(job));
    return {};
  }

  TraceResult<void> write_footer(std::span<const std::uint8_t> summary) {
    std::vector<container::BlobEntry> index;
    index.reserve(blobs.size());
    for (const auto& [id, b] : blobs) {
      index.emplace_back(container::Hash128(id.low, id.high), b.frame_index, b.record_offset,
                         b.raw_bytes, b.stored_bytes, static_cast<std::uint8_t>(b.encoding));
    }
    // The map's order is not deterministic; the index is sorted so the reader can bisect.
    std::sort(index.begin(), index.end(), [](const auto& a, const auto& b) {
      return BlobId{a.id().low(), a.id().high()} < BlobId{b.id().low(), b.id().high()};
    });
    std::uint64_t compressed = 0;
    for (const auto& f : frames) compressed += f.compressed_bytes();
    const container::Totals totals(stats.events, stats.blobs, stats.payload_raw_bytes,
                                   payload_stored_bytes, compressed, stats.blob_references);
    flatbuffers::FlatBufferBuilder fbb(1024 + frames.size() * 96 + index.size() * 64 +
                                       summary.size());
    auto fv = fbb.CreateVectorOfStructs(frames);
    auto bv = fbb.CreateVectorOfStructs(index);
    auto sv = fbb.CreateVector(summary.data(), summary.size());
    const container::Hash128 hh(header_hash.low, header_hash.high);
    fbb.Finish(container::CreateFooter(fbb, fv, bv, &totals, sv, checksums ? &hh : nullptr));
    const std::uint64_t content = fbb.GetSize() + kTrailerBytes;
    if (content > kMaxFooterBytes) {
      return std::unexpected(make_error(
          TraceErrorKind::kTooLarge,
          fmt::format("the footer of {} would take {} bytes; the limit is {}", sink->describe(),
                      content, kMaxFooterBytes)));
    }
    std::vector<std::uint8_t> bytes;
    bytes.reserve(8 + content);
    append_u32(bytes, kFooterSkippableMagic);
    append_u32(bytes, static_cast<std::uint32_t>(content));
    bytes.insert(bytes.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    append_u64(bytes, file_pos);          // footer_offset
    append_u64(bytes, 8 + content);       // footer_size
    // footer_checksum (format 1.1; 0 = not checked, the 1.0 layout)
    append_u64(bytes, checksums ? footer_checksum_of(std::span<const std::uint8_t>(
                                      fbb.GetBufferPointer(), fbb.GetSize()))
                                : 0);
    for (char c : kTrailerMagic) bytes.push_back(static_cast<std::uint8_t>(c));
    if (auto r = sink->write(bytes); !r) return r;
    file_pos += bytes.size();
    if (auto r = sink->flush(); !r) return r;
    return sink->commit();
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  if (impl_ && !impl_->closed) (void)close({});
}

TraceResult<std::unique_ptr<TraceWriter>> TraceWriter::create(std::unique_ptr<ByteSink> sink,
                                                              TraceHeaderInfo header,
                                                              TraceWriterOptions options) {
  if (!sink) {
    return std::unexpected(make_error(TraceErrorKind::kIo, "TraceWriter::create: no sink"));
  }
  options.zstd_level = std::clamp(options.zstd_level, ZSTD_minCLevel(), ZSTD_maxCLevel());
  options.frame_target_bytes = std::clamp<std::uint64_t>(options.frame_target_bytes, 1, kMaxFrameTarget);
  auto impl = std::make_unique<Impl>(std::move(sink), options);
  impl->cctx = ZSTD_createCCtx();
  impl->content_state = XXH3_createState();
  if (impl->content_state != nullptr) XXH3_128bits_reset(impl->content_state);
  impl->compressed_state = XXH3_createState();
  if (impl->cctx == nullptr || impl->content_state == nullptr || impl->compressed_state == nullptr) {
    return std::unexpected(make_error(TraceErrorKind::kIo, "cannot allocate the zstd context"));
  }
  ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_compressionLevel, options.zstd_level);
  ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_checksumFlag, 1);
  impl->out.resize(ZSTD_CStreamOutSize());
  impl->chunk.reserve(impl->chunk_reserve());
  if (auto r = impl->queue_header(header); !r) {
    impl->closed = true;
    return std::unexpected(r.error());
  }
  Impl* raw = impl.get();
  impl->worker = std::thread([raw] { raw->run(); });
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

TraceResult<std::uint64_t> TraceWriter::append_event(std::span<const std::uint8_t> event) {
  Impl& m = *impl_;
  std::unique_lock lk(m.mu);
  if (m.error || m.closed) return std::unexpected(m.stopped_error());
  if (event.size() > kMaxRecordBytes) {
    return std::unexpected(make_error(
        TraceErrorKind::kTooLarge,
        fmt::format("event {} has {} bytes; the limit is {}", m.stats.events, event.size(),
                    kMaxRecordBytes)));
  }
  const std::size_t at = m.chunk.size();
  m.chunk.resize(at + kRecordPrefixBytes + event.size());
  put_u32(m.chunk.data() + at, static_cast<std::uint32_t>(event.size()));
  m.chunk[at + 4] = static_cast<std::uint8_t>(RecordKind::kEvent);
  if (!event.empty()) std::memcpy(m.chunk.data() + at + kRecordPrefixBytes, event.data(), event.size());
  m.hash_record_locked(at);
  const std::uint64_t ordinal = m.stats.events++;
  m.frame.content_bytes += kRecordPrefixBytes + event.size();
  ++m.frame.event_count;
  m.after_append_locked(lk);
  if (m.error) return std::unexpected(m.stopped_error());
  return ordinal;
}

TraceResult<BlobId> TraceWriter::put_blob(std::span<const std::uint8_t> bytes,
                                          std::uint32_t element_bytes) {
  // Hash outside the lock: it is the costly part and touches only the caller's bytes.
  const BlobId id = blob_id_of(bytes.data(), bytes.size());
  Impl& m = *impl_;
  std::unique_lock lk(m.mu);
  if (m.error || m.closed) return std::unexpected(m.stopped_error());
  if (bytes.size() > kMaxRecordBytes - kBlobRecordHeaderBytes) {
    return std::unexpected(make_error(
        TraceErrorKind::kTooLarge, fmt::format("payload {} has {} bytes; the limit is {}", id.hex(),
                                               bytes.size(), kMaxRecordBytes - kBlobRecordHeaderBytes)));
  }
  ++m.stats.blob_references;
  m.stats.payload_referenced_bytes += bytes.size();
  if (m.blobs.contains(id)) return id;

  const BlobEncoding encoding =
      (element_bytes == 2 && m.options.byte_planes_for_16bit && bytes.size() % 2 == 0)
          ? BlobEncoding::kBytePlanes16
          : BlobEncoding::kRaw;
  const std::size_t payload = kBlobRecordHeaderBytes + bytes.size();
  const std::size_t at = m.chunk.size();
  m.chunk.resize(at + kRecordPrefixBytes + payload);
  std::uint8_t* p = m.chunk.data() + at;
  put_u32(p, static_cast<std::uint32_t>(payload));
  p[4] = static_cast<std::uint8_t>(RecordKind::kBlob);
  p += kRecordPrefixBytes;
  put_u64(p, id.low);
  put_u64(p + 8, id.high);
  put_u64(p + 16, bytes.size());
  p[24] = static_cast<std::uint8_t>(encoding);
  std::memset(p + 25, 0, 7);
  p += kBlobRecordHeaderBytes;
  if (encoding == BlobEncoding::kBytePlanes16) {
    encode_planes16(bytes, p);
  } else if (!bytes.empty()) {
    std::memcpy(p, bytes.data(), bytes.size());
  }
  m.hash_record_locked(at);
  m.blobs.emplace(id, StoredBlob{m.frame_index, m.frame.content_bytes, bytes.size(), bytes.size(),
                                 encoding});
  ++m.stats.blobs;
  m.stats.payload_raw_bytes += bytes.size();
  m.payload_stored_bytes += bytes.size();
  m.frame.content_bytes += kRecordPrefixBytes + payload;
  ++m.frame.blob_count;
  m.after_append_locked(lk);
  if (m.error) return std::unexpected(m.stopped_error());
  return id;
}

TraceResult<void> TraceWriter::flush() {
  Impl& m = *impl_;
  std::unique_lock lk(m.mu);
  if (m.error || m.closed) return std::unexpected(m.stopped_error());
  if (m.frame_unflushed) {
    m.frame_unflushed = false;
    m.submit_locked(lk, ZSTD_e_flush);
  }
  // flush() promises the bytes reached the sink, so it waits for the compressor.
  m.wait_idle_locked(lk);
  if (m.error) return std::unexpected(m.stopped_error());
  return {};
}

TraceResult<TraceWriteStats> TraceWriter::close(std::span<const std::uint8_t> summary) {
  Impl& m = *impl_;
  std::unique_lock lk(m.mu);
  if (m.closed) {
    if (m.error) return std::unexpected(*m.error);
    return std::unexpected(make_error(TraceErrorKind::kWriterFailed,
                                      fmt::format("{} is already closed", m.sink->describe())));
  }
  if (!m.error && m.frame.content_bytes > 0) m.end_frame_locked(lk);
  m.wait_idle_locked(lk);
  m.closed = true;
  m.stopping = true;
  m.cv_work.notify_all();
  lk.unlock();
  if (m.worker.joinable()) m.worker.join();
  lk.lock();
  if (m.error) return std::unexpected(*m.error);
  if (auto r = m.write_footer(summary); !r) {
    m.error = r.error();
    return std::unexpected(r.error());
  }
  m.stats.file_bytes = m.file_pos;
  return m.stats;
}

bool TraceWriter::failed() const {
  std::lock_guard lk(impl_->mu);
  return impl_->error.has_value();
}

TraceWriteStats TraceWriter::stats() const {
  std::lock_guard lk(impl_->mu);
  TraceWriteStats s = impl_->stats;
  s.file_bytes = impl_->file_pos;
  return s;
}

}  // namespace vtrace::schema
