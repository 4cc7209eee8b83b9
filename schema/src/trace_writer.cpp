// The writer: the calling thread appends records to `chunk_`; a worker thread owns the zstd
// context and the sink. Hand-over points (chunk full, flush(), frame end) depend only on the call
// sequence, which is what makes the output byte-identical for identical calls.
//
// A second thread, the pre-compressor, helps only when there is a backlog: while the worker is
// busy with one job, it compresses the next whole frame waiting in the queue with its own zstd
// context (same parameters, one-shot ZSTD_compress2 per frame, so the bytes are those the worker
// would have made); the worker then writes that frame as is. Frames are written in queue order by
// the worker alone, so the file is the same whichever thread compressed which frame.
//
// Longer than the ~600-line guide on purpose: the calling thread's chunking, the worker and the
// pre-compressor hand frames to each other through one queue whose order is what makes the bytes
// deterministic; keeping the three in one file keeps that protocol readable in one place.
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
  bool whole = false;  // a whole frame in one job (no flush point): one ZSTD_compress2 call
  // The pre-compressor's work on a whole frame (guarded by mu; `compressed` is written by the
  // thread that set kRunning, read by the worker once kDone).
  enum class Pre : std::uint8_t { kNone, kRunning, kDone } pre = Pre::kNone;
  std::vector<std::uint8_t> compressed;
  XXH128_hash_t compressed_hash{};
  std::optional<TraceError> pre_error;
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
  Impl(std::unique_ptr<ByteSink> s, TraceWriterOptions o)
      : sink(std::move(s)), sink_name(sink->describe()), options(o) {}

  // --- fixed after create()
  // Released by close(), which writes last: the file is final, or what reached it stays (a sink
  // that received nothing removes its empty file then, byte_io.h).
  std::unique_ptr<ByteSink> sink;
  std::string sink_name;  // sink->describe(), for messages after close()
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
  bool worker_compressing = false;  // the worker compresses the job it took (not pre-compressed)
  bool stopping = false;
  bool closed = false;
  std::optional<TraceError> error;   // the first failure; the writer is stopped once set
  std::vector<std::vector<std::uint8_t>> spare;  // recycled job buffers
  std::vector<std::vector<std::uint8_t>> spare_out;  // recycled compressed-frame buffers
  bool frame_streaming = false;  // a part of the frame being filled was handed over (flush)
  std::condition_variable cv_pre;  // the pre-compressor: a job is queued, one finished, or stop
  std::unordered_map<BlobId, StoredBlob, BlobIdHash> blobs;
  TraceWriteStats stats;
  std::uint64_t payload_stored_bytes = 0;
  std::vector<container::FrameEntry> frames;  // appended by the worker at each frame end
  std::uint64_t file_pos = 0;                 // bytes handed to the sink (worker writes it)

  XXH3_state_t* content_state = nullptr;  // of the frame being filled

  // --- worker only
  ZSTD_CCtx* cctx = nullptr;
  XXH3_state_t* compressed_state = nullptr;
  bool in_frame = false;
  std::uint64_t frame_offset = 0;
  std::vector<std::uint8_t> out;
  std::thread worker;

  // --- pre-compressor only
  ZSTD_CCtx* pre_cctx = nullptr;
  std::thread pre_worker;

  ~Impl() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeCCtx(pre_cctx);
    XXH3_freeState(content_state);
    XXH3_freeState(compressed_state);
  }

  TraceError stopped_error() const {
    return make_error(TraceErrorKind::kWriterFailed,
                      fmt::format("the writer of {} stopped after an earlier failure: {}",
                                  sink_name, error ? error->message : "closed"));
  }

  // Called with mu held. Hands the current chunk to the worker; blocks while more than two frames'
  // worth of records is already waiting (the memory bound: one frame for each of the two threads
  // that compress, so the pre-compressor can work while the worker does).
  void submit_locked(std::unique_lock<std::mutex>& lk, ZSTD_EndDirective directive,
                     bool wake = true) {
    const std::uint64_t cap = 2 * options.frame_target_bytes;
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
    job.whole = directive == ZSTD_e_end && !frame_streaming;
    frame_streaming = directive != ZSTD_e_end;
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
    if (!wake) return;
    cv_work.notify_one();
    cv_pre.notify_one();
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
    if (job.whole) return process_whole_frame(job);
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
    if (job.directive == ZSTD_e_end) record_frame(job.meta, XXH3_128bits_digest(compressed_state));
    return {};
  }

  // Compresses a whole frame into `job.compressed` with `context` (the worker's or the
  // pre-compressor's: same parameters, so the same bytes) and hashes the result.
  TraceResult<void> compress_whole(Job& job, ZSTD_CCtx* context, std::vector<std::uint8_t> out_buffer,
                                   XXH3_state_t* hash_state) const {
    out_buffer.resize(ZSTD_compressBound(job.data.size()));
    const std::size_t n = ZSTD_compress2(context, out_buffer.data(), out_buffer.size(),
                                         job.data.data(), job.data.size());
    if (ZSTD_isError(n)) {
      return std::unexpected(make_error(
          TraceErrorKind::kIo, fmt::format("zstd cannot compress a frame of {}: {}",
                                           sink->describe(), ZSTD_getErrorName(n))));
    }
    out_buffer.resize(n);
    XXH3_128bits_reset(hash_state);
    XXH3_128bits_update(hash_state, out_buffer.data(), n);
    job.compressed_hash = XXH3_128bits_digest(hash_state);
    job.compressed = std::move(out_buffer);
    return {};
  }

  std::vector<std::uint8_t> take_out_buffer_locked() {
    if (spare_out.empty()) return {};
    auto buffer = std::move(spare_out.back());
    spare_out.pop_back();
    return buffer;
  }

  TraceResult<void> process_whole_frame(Job& job) {
    if (job.pre != Job::Pre::kDone) {
      std::vector<std::uint8_t> buffer;
      {
        std::lock_guard lk(mu);
        buffer = take_out_buffer_locked();
      }
      if (auto r = compress_whole(job, cctx, std::move(buffer), compressed_state); !r) return r;
    } else if (job.pre_error) {
      return std::unexpected(*job.pre_error);
    }
    const std::size_t n = job.compressed.size();
    {
      std::lock_guard lk(mu);
      frame_offset = file_pos;
    }
    if (auto r = sink->write(std::span<const std::uint8_t>(job.compressed.data(), n)); !r) return r;
    if (auto r = sink->flush(); !r) return r;
    {
      std::lock_guard lk(mu);
      file_pos += n;
    }
    record_frame(job.meta, job.compressed_hash);
    return {};
  }

  void record_frame(const FrameMeta& meta, const XXH128_hash_t& compressed_hash) {
    std::lock_guard lk(mu);
    frames.emplace_back(frame_offset, file_pos - frame_offset, meta.content_bytes,
                        meta.first_event, meta.event_count, meta.blob_count,
                        to_fb(meta.content_hash), to_fb(compressed_hash));
    stats.frames = frames.size();
    in_frame = false;
  }

  // The pre-compressor: the first whole frame waiting behind the one the worker is on.
  void run_pre() {
    XXH3_state_t* hash_state = XXH3_createState();
    std::unique_lock lk(mu);
    for (;;) {
      Job* next = nullptr;
      cv_pre.wait(lk, [&] {
        if (stopping && queue.empty()) return true;
        if (error || hash_state == nullptr) return stopping;
        // Only a frame the worker will not reach first: the front one while the worker
        // compresses a job of its own, or one behind a job the worker will compress. (A frame
        // behind a pre-compressed one would make the worker wait for this thread again.)
        for (std::size_t i = 0; i < queue.size(); ++i) {
          const bool beside = i == 0 ? worker_compressing : queue[i - 1].pre == Job::Pre::kNone;
          if (beside && queue[i].whole && queue[i].pre == Job::Pre::kNone) {
            next = &queue[i];
            return true;
          }
        }
        return stopping;
      });
      if (next == nullptr) break;
      next->pre = Job::Pre::kRunning;
      std::vector<std::uint8_t> buffer = take_out_buffer_locked();
      lk.unlock();
      // deque::push_back and pop_front keep references to the other elements valid, and the
      // worker waits for a kRunning job before it takes it: `next` stays put.
      auto r = compress_whole(*next, pre_cctx, std::move(buffer), hash_state);
      lk.lock();
      if (!r) next->pre_error = r.error();
      next->pre = Job::Pre::kDone;
      cv_work.notify_all();
    }
    lk.unlock();
    XXH3_freeState(hash_state);
  }

  void run() {
    std::unique_lock lk(mu);
    const auto interval = std::chrono::milliseconds(options.flush_interval_ms);
    auto next_timer = std::chrono::steady_clock::now() + interval;
    for (;;) {
      // Nothing for the worker: no job, or a flushing thread is running the worker's step
      // (flush()), which notifies only when it leaves a job behind.
      if ((queue.empty() || worker_busy) && !stopping) {
        if (options.flush_interval_ms == 0) {
          cv_work.wait(lk, [&] { return (!queue.empty() && !worker_busy) || stopping; });
        } else if (cv_work.wait_until(lk, next_timer) == std::cv_status::timeout && !worker_busy) {
          // The timer flush: the one place where frame boundaries depend on timing.
          next_timer = std::chrono::steady_clock::now() + interval;
          if (frame_unflushed && !error && !closed) {
            frame_unflushed = false;
            Job job;
            job.data = std::move(chunk);
            chunk = {};
            job.directive = ZSTD_e_flush;
            frame_streaming = true;
            queued_bytes += job.data.size();
            queue.push_back(std::move(job));
          }
        }
        continue;
      }
      if (worker_busy) {  // stopping while a flushing thread runs the worker's step
        cv_work.wait(lk, [&] { return !worker_busy; });
        continue;
      }
      if (queue.empty()) break;  // stopping and drained
      if (queue.front().pre == Job::Pre::kRunning) {
        // The pre-compressor is on it: wait rather than compress it twice.
        cv_work.wait(lk, [&] { return queue.front().pre != Job::Pre::kRunning; });
      }
      run_front_locked(lk);
    }
  }

  // Takes the front job and processes it with `lk` released: the worker's step, which flush()
  // also takes on the calling thread when the worker is idle. `worker_busy` keeps the worker (and
  // so the worker-only state: cctx, compressed_state, out) to one thread at a time.
  void run_front_locked(std::unique_lock<std::mutex>& lk) {
    Job job = std::move(queue.front());
    queue.pop_front();
    worker_busy = true;
    worker_compressing = !job.raw && job.pre != Job::Pre::kDone;
    // The next frame may be compressed beside it (a wake-up only when there is one).
    if (worker_compressing && !queue.empty()) cv_pre.notify_one();
    const bool skip = error.has_value();
    lk.unlock();
    TraceResult<void> r;
    if (!skip) r = process(job);
    lk.lock();
    worker_busy = false;
    worker_compressing = false;
    queued_bytes -= job.data.size();
    job.data.clear();
    if (spare.size() < 4) spare.push_back(std::move(job.data));
    if (spare_out.size() < 2 && job.compressed.capacity() > 0) {
      job.compressed.clear();
      spare_out.push_back(std::move(job.compressed));
    }
    if (!r) fail_locked(std::move(r.error()));
    cv_done.notify_all();
    // A job queued meanwhile, when this ran on a flushing thread (the worker waits while
    // `worker_busy`); otherwise the worker is left asleep.
    if (!queue.empty()) cv_work.notify_one();
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
  impl->pre_cctx = ZSTD_createCCtx();
  if (impl->pre_cctx == nullptr) {
    return std::unexpected(make_error(TraceErrorKind::kIo, "cannot allocate the zstd context"));
  }
  for (ZSTD_CCtx* context : {impl->cctx, impl->pre_cctx}) {
    ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, options.zstd_level);
    ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1);
  }
  impl->out.resize(ZSTD_CStreamOutSize());
  impl->chunk.reserve(impl->chunk_reserve());
  if (auto r = impl->queue_header(header); !r) {
    impl->closed = true;
    return std::unexpected(r.error());
  }
  Impl* raw = impl.get();
  impl->worker = std::thread([raw] { raw->run(); });
  impl->pre_worker = std::thread([raw] { raw->run_pre(); });
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
    const bool idle = m.queue.empty() && !m.worker_busy;
    m.submit_locked(lk, ZSTD_e_flush, !idle);
    // An idle worker would only be woken to do this one job while this thread waits for it: the
    // calling thread runs the worker's step itself, on the same context and in the same place in
    // the job order (the job is the only one), so the bytes are the same, without the two thread
    // hand-overs (bench/bench_recorder.cpp, BM_Recorder_CpuSteadyState).
    if (idle && !m.error && !m.queue.empty()) m.run_front_locked(lk);
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
                                      fmt::format("{} is already closed", m.sink_name)));
  }
  if (!m.error && m.frame.content_bytes > 0) m.end_frame_locked(lk);
  m.wait_idle_locked(lk);
  m.closed = true;
  m.stopping = true;
  m.cv_work.notify_all();
  m.cv_pre.notify_all();
  lk.unlock();
  if (m.worker.joinable()) m.worker.join();
  if (m.pre_worker.joinable()) m.pre_worker.join();
  lk.lock();
  if (!m.error) {
    if (auto r = m.write_footer(summary); !r) m.error = r.error();
  }
  m.sink.reset();
  if (m.error) return std::unexpected(*m.error);
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
