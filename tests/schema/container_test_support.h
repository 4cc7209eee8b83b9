// Helpers for the container tests (and the fuzz and CLI regression tests): an in-memory sink, a
// source that records which bytes were read, synthetic event records and a verifier for them,
// zstd frames made by hand, a way to rebuild a trace's footer with edited indexes and to replace
// one data frame (a payload changed behind a valid frame checksum). Users link zstd and xxhash.
#pragma once

#include <container_generated.h>
#include <xxhash.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/schema/trace_writer.h"

namespace vtrace::schema::testing {

// Collects written bytes in memory; readable from the test thread while the writer runs.
class MemorySink final : public ByteSink {
 public:
  struct State {
    std::mutex mu;
    std::vector<std::uint8_t> bytes;
    bool committed = false;
  };
  explicit MemorySink(std::shared_ptr<State> state) : state_(std::move(state)) {}
  TraceResult<void> write(std::span<const std::uint8_t> bytes) override {
    std::lock_guard lk(state_->mu);
    state_->bytes.insert(state_->bytes.end(), bytes.begin(), bytes.end());
    return {};
  }
  TraceResult<void> flush() override { return {}; }
  TraceResult<void> commit() override {
    std::lock_guard lk(state_->mu);
    state_->committed = true;
    return {};
  }
  std::uint64_t bytes_written() const override {
    std::lock_guard lk(state_->mu);
    return state_->bytes.size();
  }
  std::string describe() const override { return "memory.vtrace"; }

 private:
  std::shared_ptr<State> state_;
};

// A source over bytes that records every range read, to prove what a seek touched.
class RecordingSource final : public ByteSource {
 public:
  explicit RecordingSource(std::vector<std::uint8_t> bytes,
                           std::shared_ptr<std::vector<std::pair<std::uint64_t, std::uint64_t>>> log)
      : inner_(memory_source(std::move(bytes), "recorded.vtrace")), log_(std::move(log)) {}
  std::uint64_t size() const override { return inner_->size(); }
  TraceResult<void> read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
    log_->emplace_back(offset, out.size());
    return inner_->read_at(offset, out);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  std::shared_ptr<std::vector<std::pair<std::uint64_t, std::uint64_t>>> log_;
};

// Synthetic event records: "EVT" + ordinal (u32 LE) + filler whose length varies with the
// ordinal. They are not vtrace.Event tables, so readers get verify_synthetic_event.
inline std::vector<std::uint8_t> synthetic_event(std::uint32_t ordinal) {
  std::vector<std::uint8_t> e(8 + (ordinal * 37u) % 200u);
  e[0] = 'E';
  e[1] = 'V';
  e[2] = 'T';
  e[3] = 0;
  std::memcpy(e.data() + 4, &ordinal, 4);
  for (std::size_t i = 8; i < e.size(); ++i) e[i] = static_cast<std::uint8_t>((ordinal + i) % 7);
  return e;
}

inline bool verify_synthetic_event(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 8 && bytes[0] == 'E' && bytes[1] == 'V' && bytes[2] == 'T' && bytes[3] == 0;
}

inline TraceReaderOptions synthetic_options() {
  TraceReaderOptions o;
  o.verify_event = verify_synthetic_event;
  return o;
}

// N(0,1) samples as IEEE binary16, little endian: the shape of real activations.
inline std::vector<std::uint8_t> normal_f16(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<std::uint8_t> out(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const float f = dist(rng);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
    std::uint32_t half = 0;
    if (exp <= 0) {
      half = sign;  // flush tiny values to zero: fine for test data
    } else if (exp >= 31) {
      half = sign | 0x7BFFu;
    } else {
      half = sign | (static_cast<std::uint32_t>(exp) << 10) | ((bits >> 13) & 0x3FFu);
    }
    out[2 * i] = static_cast<std::uint8_t>(half & 0xFF);
    out[2 * i + 1] = static_cast<std::uint8_t>(half >> 8);
  }
  return out;
}

using Bytes = std::vector<std::uint8_t>;

// The footer frame's offset, from the trailer (the last 32 bytes).
inline std::uint64_t footer_offset(const Bytes& b) {
  std::uint64_t off = 0;
  std::memcpy(&off, b.data() + b.size() - kTrailerBytes, 8);
  return off;
}

// A data frame holding `records`, compressed the way the writer does (content checksum on).
inline Bytes zstd_frame(const Bytes& records) {
  Bytes out(ZSTD_compressBound(records.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const std::size_t n =
      ZSTD_compress2(cctx, out.data(), out.size(), records.data(), records.size());
  ZSTD_freeCCtx(cctx);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

inline void put_le64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// Rewrites a trace's footer after `mutate` edits copies of its indexes: mutate(frames, blobs), or
// mutate(frames, blobs, totals) to edit the totals too. checksummed: keep the footer's
// header_hash and write the trailer's footer checksum (format 1.1), so that every 1.1 check stays
// on; otherwise the footer is written the 1.0 way (no header hash, checksum 0: not checked).
template <typename Mutate>
Bytes with_rebuilt_footer(const Bytes& trace, Mutate&& mutate, bool checksummed = false) {
  const std::uint64_t foff = footer_offset(trace);
  Bytes table(trace.begin() + static_cast<std::ptrdiff_t>(foff + 8),
              trace.end() - static_cast<std::ptrdiff_t>(kTrailerBytes));
  REQUIRE(!table.empty());
  const auto* f = flatbuffers::GetRoot<vtrace::container::Footer>(table.data());
  const auto* fvec = f != nullptr ? f->frames() : nullptr;
  const auto* bvec = f != nullptr ? f->blobs() : nullptr;
  const auto* svec = f != nullptr ? f->summary() : nullptr;
  if (fvec == nullptr || bvec == nullptr || svec == nullptr || f->totals() == nullptr) {
    FAIL("the footer lacks its indexes");
  }
  std::vector<vtrace::container::FrameEntry> frames;
  for (flatbuffers::uoffset_t i = 0; i < fvec->size(); ++i) frames.push_back(*fvec->Get(i));
  std::vector<vtrace::container::BlobEntry> blobs;
  for (flatbuffers::uoffset_t i = 0; i < bvec->size(); ++i) blobs.push_back(*bvec->Get(i));
  vtrace::container::Totals totals = *f->totals();
  if constexpr (std::is_invocable_v<Mutate&, decltype(frames)&, decltype(blobs)&,
                                    vtrace::container::Totals&>) {
    mutate(frames, blobs, totals);
  } else {
    mutate(frames, blobs);
  }
  flatbuffers::FlatBufferBuilder fbb;
  auto fv = fbb.CreateVectorOfStructs(frames);
  auto bv = fbb.CreateVectorOfStructs(blobs);
  auto sv = fbb.CreateVector(svec->data(), svec->size());
  const vtrace::container::Hash128* hh = checksummed ? f->header_hash() : nullptr;
  fbb.Finish(vtrace::container::CreateFooter(fbb, fv, bv, &totals, sv, hh));
  Bytes out(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(foff));
  const std::uint32_t content = static_cast<std::uint32_t>(fbb.GetSize() + kTrailerBytes);
  for (std::uint32_t v : {kFooterSkippableMagic, content}) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  out.insert(out.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  put_le64(out, foff);
  put_le64(out, 8ull + content);
  std::uint64_t checksum = 0;
  if (checksummed) {
    checksum = XXH3_64bits(fbb.GetBufferPointer(), fbb.GetSize());
    if (checksum == 0) checksum = 1;
  }
  put_le64(out, checksum);
  for (char c : kTrailerMagic) out.push_back(static_cast<std::uint8_t>(c));
  return out;
}

// A payload changed behind valid checksums: decompresses data frame `frame`, lets `edit` change
// its content (same length), recompresses it with a valid zstd content checksum, and rebuilds
// the footer with that frame's new size and both XXH3-128 hashes (later frames moved), all
// 1.1 checks on. Only the payload's own hash (its id) can then tell. keep_content_hash: leave the
// footer's XXH3-128 of the content as it was (then that hash is what tells).
template <typename Edit>
Bytes with_frame_content_changed(const Bytes& trace, std::size_t frame, Edit&& edit,
                                 bool keep_content_hash = false) {
  const std::uint64_t foff = footer_offset(trace);
  const Bytes table(trace.begin() + static_cast<std::ptrdiff_t>(foff + 8),
                    trace.end() - static_cast<std::ptrdiff_t>(kTrailerBytes));
  const auto* f = flatbuffers::GetRoot<vtrace::container::Footer>(table.data());
  REQUIRE(f->frames() != nullptr);
  REQUIRE(frame < f->frames()->size());
  const vtrace::container::FrameEntry old =
      *f->frames()->Get(static_cast<flatbuffers::uoffset_t>(frame));
  Bytes content(old.content_bytes());
  const std::size_t n = ZSTD_decompress(content.data(), content.size(),
                                        trace.data() + old.file_offset(), old.compressed_bytes());
  REQUIRE(n == content.size());
  edit(content);
  REQUIRE(content.size() == old.content_bytes());
  const Bytes recompressed = zstd_frame(content);
  Bytes spliced(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(old.file_offset()));
  spliced.insert(spliced.end(), recompressed.begin(), recompressed.end());
  spliced.insert(
      spliced.end(),
      trace.begin() + static_cast<std::ptrdiff_t>(old.file_offset() + old.compressed_bytes()),
      trace.end());
  const std::int64_t shift = static_cast<std::int64_t>(recompressed.size()) -
                             static_cast<std::int64_t>(old.compressed_bytes());
  // The trailer's footer offset moves with the data before it.
  const std::uint64_t new_foff = foff + static_cast<std::uint64_t>(shift);
  std::memcpy(spliced.data() + spliced.size() - kTrailerBytes, &new_foff, 8);
  const XXH128_hash_t ch = XXH3_128bits(content.data(), content.size());
  const XXH128_hash_t zh = XXH3_128bits(recompressed.data(), recompressed.size());
  return with_rebuilt_footer(
      spliced,
      [&](std::vector<vtrace::container::FrameEntry>& frames,
          std::vector<vtrace::container::BlobEntry>&) {
        for (std::size_t i = frame; i < frames.size(); ++i) {
          const auto& e = frames[i];
          const bool it = i == frame;
          frames[i] = vtrace::container::FrameEntry(
              e.file_offset() + static_cast<std::uint64_t>(it ? 0 : shift),
              it ? recompressed.size() : e.compressed_bytes(), e.content_bytes(), e.first_event(),
              e.event_count(), e.blob_count(),
              it && !keep_content_hash ? vtrace::container::Hash128(ch.low64, ch.high64)
                                       : e.content_hash(),
              it ? vtrace::container::Hash128(zh.low64, zh.high64) : e.compressed_hash());
        }
      },
      true);
}

inline std::uint32_t read_u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// Copies of index entries with one field changed (the generated structs are immutable).
inline container::FrameEntry frame_with(const container::FrameEntry& e, std::uint64_t offset,
                                        std::uint64_t compressed, std::uint64_t content) {
  return {offset,          compressed,     content,          e.first_event(),
          e.event_count(), e.blob_count(), e.content_hash(), e.compressed_hash()};
}
inline container::BlobEntry blob_with(const container::BlobEntry& e, std::uint64_t frame,
                                      std::uint64_t raw) {
  return {e.id(), frame, e.record_offset(), raw, e.stored_bytes(), e.encoding()};
}

}  // namespace vtrace::schema::testing
