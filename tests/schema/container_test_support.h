// Helpers for the container tests (and the fuzz regression tests): an in-memory sink, a source
// that records which bytes were read, synthetic event records and a verifier for them, and a way
// to rebuild a trace's footer with edited indexes.
#pragma once

#include <container_generated.h>

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

inline std::uint32_t read_u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

inline void put_le64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// The trailer's footer offset of a complete trace.
inline std::uint64_t footer_offset(const std::vector<std::uint8_t>& b) {
  std::uint64_t off = 0;
  std::memcpy(&off, b.data() + b.size() - kTrailerBytes, 8);
  return off;
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

// Rewrites a trace's footer after `mutate` edits copies of its indexes: mutate(frames, blobs), or
// mutate(frames, blobs, totals) to edit the totals too. The new footer has no header hash and a
// footer checksum of 0 (not checked), as a 1.0 footer.
template <typename Mutate>
std::vector<std::uint8_t> with_rebuilt_footer(const std::vector<std::uint8_t>& trace,
                                              Mutate&& mutate) {
  const std::uint64_t foff = footer_offset(trace);
  std::vector<std::uint8_t> table(trace.begin() + static_cast<std::ptrdiff_t>(foff + 8),
                                  trace.end() - static_cast<std::ptrdiff_t>(kTrailerBytes));
  REQUIRE(!table.empty());
  const auto* f = flatbuffers::GetRoot<container::Footer>(table.data());
  const auto* fvec = f != nullptr ? f->frames() : nullptr;
  const auto* bvec = f != nullptr ? f->blobs() : nullptr;
  const auto* svec = f != nullptr ? f->summary() : nullptr;
  if (fvec == nullptr || bvec == nullptr || svec == nullptr || f->totals() == nullptr) {
    FAIL("the footer lacks its indexes");
  }
  std::vector<container::FrameEntry> frames;
  for (flatbuffers::uoffset_t i = 0; i < fvec->size(); ++i) frames.push_back(*fvec->Get(i));
  std::vector<container::BlobEntry> blobs;
  for (flatbuffers::uoffset_t i = 0; i < bvec->size(); ++i) blobs.push_back(*bvec->Get(i));
  container::Totals totals = *f->totals();
  if constexpr (std::is_invocable_v<Mutate&, decltype(frames)&, decltype(blobs)&,
                                    container::Totals&>) {
    mutate(frames, blobs, totals);
  } else {
    mutate(frames, blobs);
  }
  flatbuffers::FlatBufferBuilder fbb;
  auto fv = fbb.CreateVectorOfStructs(frames);
  auto bv = fbb.CreateVectorOfStructs(blobs);
  auto sv = fbb.CreateVector(svec->data(), svec->size());
  fbb.Finish(container::CreateFooter(fbb, fv, bv, &totals, sv));
  std::vector<std::uint8_t> out(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(foff));
  const std::uint32_t content = static_cast<std::uint32_t>(fbb.GetSize() + kTrailerBytes);
  for (std::uint32_t v : {kFooterSkippableMagic, content}) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  out.insert(out.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  put_le64(out, foff);
  put_le64(out, 8ull + content);
  put_le64(out, 0);
  for (char c : kTrailerMagic) out.push_back(static_cast<std::uint8_t>(c));
  return out;
}

}  // namespace vtrace::schema::testing
