// The trace writer against raw zstd, byte planes against plain f16, and zstd levels 1/3/6: the
// figures behind the writer's defaults (docs/FORMAT.md, "Choice of zstd level").
//
// Data: what a recording holds: N(0,1) f16 activation payloads (16 KiB to 64 KiB, each distinct)
// interleaved with small event records (~150 bytes, partly repetitive, like FlatBuffers tables).
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <zstd.h>

#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/trace_writer.h"

namespace {

namespace vs = vtrace::schema;
using Bytes = std::vector<std::uint8_t>;

Bytes normal_f16(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Bytes out(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const float f = dist(rng);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
    std::uint32_t half = sign;
    if (exp >= 31) {
      half = sign | 0x7BFFu;
    } else if (exp > 0) {
      half = sign | (static_cast<std::uint32_t>(exp) << 10) | ((bits >> 13) & 0x3FFu);
    }
    out[2 * i] = static_cast<std::uint8_t>(half & 0xFF);
    out[2 * i + 1] = static_cast<std::uint8_t>(half >> 8);
  }
  return out;
}

// An event-like record: a fixed vtable-ish prefix, a few varying integers, some zeros.
Bytes event_record(std::uint32_t i) {
  Bytes e(120 + (i % 5) * 16, 0);
  const std::uint8_t prefix[] = {0x0C, 0, 0, 0, 0x08, 0, 0x0E, 0, 0x04, 0, 0x08, 0, 0x0C, 0};
  std::memcpy(e.data(), prefix, sizeof prefix);
  std::memcpy(e.data() + 16, &i, 4);
  const std::uint64_t handle = 0x1000 + (i % 64);
  std::memcpy(e.data() + 24, &handle, 8);
  const std::uint32_t tokens = i * 7 % 4096;
  std::memcpy(e.data() + 40, &tokens, 4);
  return e;
}

struct Workload {
  std::vector<Bytes> payloads;  // distinct, so dedup does not flatter the writer
  std::vector<Bytes> events;
  std::uint64_t record_bytes = 0;  // what the writer's frames hold (prefixes included)
  Bytes stream;                    // the same bytes, concatenated, for the zstd baseline
};

// ~64 MiB of records, 8 events per payload: long enough that the writer's per-session setup
// (zstd workspace, frame buffers) weighs no more than in a real recording.
const Workload& workload() {
  static const Workload w = [] {
    Workload out;
    std::mt19937 rng(42);
    std::uint32_t ev = 0;
    while (out.record_bytes < (64u << 20)) {
      const std::size_t elems = 8192u * (1u + rng() % 4u);
      out.payloads.push_back(normal_f16(elems, static_cast<std::uint32_t>(out.payloads.size())));
      out.record_bytes += 5 + 32 + out.payloads.back().size();
      for (int k = 0; k < 8; ++k) {
        out.events.push_back(event_record(ev++));
        out.record_bytes += 5 + out.events.back().size();
      }
    }
    return out;
  }();
  return w;
}

class NullSink final : public vs::ByteSink {
 public:
  vs::TraceResult<void> write(std::span<const std::uint8_t> bytes) override {
    written_ += bytes.size();
    return {};
  }
  vs::TraceResult<void> flush() override { return {}; }
  vs::TraceResult<void> commit() override { return {}; }
  std::uint64_t bytes_written() const override { return written_; }
  std::string describe() const override { return "null"; }

 private:
  std::uint64_t written_ = 0;
};

// The writer's record stream, assembled the writer's way (byte planes for the payloads).
Bytes record_stream(const Workload& w, bool planes) {
  Bytes s;
  s.reserve(w.record_bytes);
  std::size_t e = 0;
  for (const auto& p : w.payloads) {
    const std::uint32_t len = static_cast<std::uint32_t>(32 + p.size());
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<std::uint8_t>(len >> (8 * i)));
    s.push_back(2);
    s.resize(s.size() + 32, 0);
    const std::size_t at = s.size();
    s.resize(at + p.size());
    const std::size_t n = p.size() / 2;
    for (std::size_t i = 0; i < n; ++i) {
      s[at + i] = planes ? p[2 * i] : p[i];
      s[at + n + i] = planes ? p[2 * i + 1] : p[n + i];
    }
    for (int k = 0; k < 8 && e < w.events.size(); ++k, ++e) {
      const auto& ev = w.events[e];
      const std::uint32_t elen = static_cast<std::uint32_t>(ev.size());
      for (int i = 0; i < 4; ++i) s.push_back(static_cast<std::uint8_t>(elen >> (8 * i)));
      s.push_back(1);
      s.insert(s.end(), ev.begin(), ev.end());
    }
  }
  return s;
}

void BM_Writer_Throughput(benchmark::State& state) {
  const Workload& w = workload();
  const int level = static_cast<int>(state.range(0));
  std::uint64_t file_bytes = 0;
  for (auto _ : state) {
    vs::TraceWriterOptions o;
    o.zstd_level = level;
    auto writer = vs::TraceWriter::create(std::make_unique<NullSink>(), vs::TraceHeaderInfo{}, o).value();
    std::size_t e = 0;
    for (const auto& p : w.payloads) {
      benchmark::DoNotOptimize(writer->put_blob(p, 2));
      for (int k = 0; k < 8 && e < w.events.size(); ++k, ++e) {
        benchmark::DoNotOptimize(writer->append_event(w.events[e]));
      }
    }
    file_bytes = writer->close({}).value().file_bytes;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<std::uint64_t>(state.iterations()) * w.record_bytes));
  state.counters["ratio"] = static_cast<double>(w.record_bytes) / static_cast<double>(file_bytes);
  state.counters["file_MiB"] = static_cast<double>(file_bytes) / (1 << 20);
}
BENCHMARK(BM_Writer_Throughput)->Arg(1)->Arg(3)->Arg(6)->Unit(benchmark::kMillisecond)->UseRealTime();

// The baseline: one ZSTD_compress2 call per 2 MiB frame, same level, same bytes, checksum on,
// on one thread, without hashing or dedup.
void BM_Zstd_Compress2(benchmark::State& state) {
  const Workload& w = workload();
  const int level = static_cast<int>(state.range(0));
  static const Bytes stream = record_stream(w, true);
  Bytes out(ZSTD_compressBound(2u << 20));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::uint64_t compressed = 0;
  for (auto _ : state) {
    compressed = 0;
    for (std::size_t at = 0; at < stream.size(); at += 2u << 20) {
      const std::size_t n = std::min<std::size_t>(2u << 20, stream.size() - at);
      const std::size_t c = ZSTD_compress2(cctx, out.data(), out.size(), stream.data() + at, n);
      if (ZSTD_isError(c)) state.SkipWithError("ZSTD_compress2 failed");
      compressed += c;
    }
    benchmark::DoNotOptimize(out.data());
  }
  ZSTD_freeCCtx(cctx);
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<std::uint64_t>(state.iterations()) * stream.size()));
  state.counters["ratio"] = static_cast<double>(stream.size()) / static_cast<double>(compressed);
}
BENCHMARK(BM_Zstd_Compress2)->Arg(1)->Arg(3)->Arg(6)->Unit(benchmark::kMillisecond)->UseRealTime();

// Compressed size of 4 MiB of N(0,1) f16 at a level, as is (arg 0) or as byte planes (arg 1).
void BM_BytePlanes(benchmark::State& state) {
  static const Bytes plain = normal_f16(2u << 20, 99);
  const bool planes = state.range(0) != 0;
  const int level = static_cast<int>(state.range(1));
  Bytes input(plain.size());
  const std::size_t n = plain.size() / 2;
  for (std::size_t i = 0; i < n; ++i) {
    input[planes ? i : 2 * i] = plain[2 * i];
    input[planes ? n + i : 2 * i + 1] = plain[2 * i + 1];
  }
  Bytes out(ZSTD_compressBound(input.size()));
  std::size_t c = 0;
  for (auto _ : state) {
    c = ZSTD_compress(out.data(), out.size(), input.data(), input.size(), level);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<std::uint64_t>(state.iterations()) * input.size()));
  state.counters["ratio"] = static_cast<double>(input.size()) / static_cast<double>(c);
  state.counters["compressed_MiB"] = static_cast<double>(c) / (1 << 20);
}
BENCHMARK(BM_BytePlanes)
    ->ArgsProduct({{0, 1}, {1, 3, 6}})
    ->ArgNames({"planes", "level"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
