// The writer's own limits and frame boundaries: a record at the size limit and one byte past it,
// a footer over its limit, a frame that ends exactly at its target, flushes with nothing new; and
// the byte sinks and sources after their end (a sink after commit, a read past a source's end).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "schema/container_test_support.h"
#include "vtrace/schema/format.h"

namespace vs = vtrace::schema;
using vs::testing::Bytes;
using vs::testing::MemorySink;

namespace {

// An event of `size` bytes that verify_synthetic_event accepts.
Bytes event_of_size(std::size_t size, std::uint8_t fill) {
  Bytes e(size, fill);
  e[0] = 'E';
  e[1] = 'V';
  e[2] = 'T';
  e[3] = 0;
  return e;
}

struct Writing {
  std::shared_ptr<MemorySink::State> state = std::make_shared<MemorySink::State>();
  std::unique_ptr<vs::TraceWriter> writer;
  explicit Writing(vs::TraceWriterOptions options = {}) {
    auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), {}, options);
    REQUIRE(w.has_value());
    writer = std::move(*w);
  }
  Bytes bytes() const {
    std::lock_guard lk(state->mu);
    return state->bytes;
  }
};

std::unique_ptr<vs::TraceReader> open_ok(Bytes bytes) {
  auto r = vs::TraceReader::open(vs::memory_source(std::move(bytes), "limits.vtrace"),
                                 vs::testing::synthetic_options());
  if (!r) FAIL("open failed: " << r.error().message);
  return std::move(*r);
}

// Events of 95 bytes: records of 100 bytes with their 5-byte prefix.
constexpr std::size_t kEventBytes = 95;
constexpr std::uint64_t kRecordBytes = kEventBytes + vs::kRecordPrefixBytes;

// Six such events into frames of three records' target, with `between` run after each append.
template <typename Between>
Bytes six_events_in_frames_of_three(Between&& between) {
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 3 * kRecordBytes;
  Writing w(o);
  for (std::uint8_t i = 0; i < 6; ++i) {
    REQUIRE(w.writer->append_event(event_of_size(kEventBytes, i)).has_value());
    between(*w.writer);
  }
  REQUIRE(w.writer->close({}).has_value());
  return w.bytes();
}

}  // namespace

TEST_CASE("an event of exactly the record limit is written and read back, and one byte more is "
          "refused and the writer goes on",
          "[schema]") {
  Writing w;
  REQUIRE(w.writer->append_event(event_of_size(64, 1)).value() == 0);
  {
    const auto over = w.writer->append_event(event_of_size(vs::kMaxRecordBytes + 1, 0));
    REQUIRE_FALSE(over.has_value());
    CHECK(over.error().kind == vs::TraceErrorKind::kTooLarge);
    CHECK(over.error().message ==
          fmt::format("event 1 has {} bytes; the limit is {}", vs::kMaxRecordBytes + 1,
                      vs::kMaxRecordBytes));
  }
  REQUIRE(w.writer->append_event(event_of_size(vs::kMaxRecordBytes, 0)).value() == 1);
  REQUIRE(w.writer->append_event(event_of_size(64, 2)).value() == 2);
  REQUIRE(w.writer->close({}).has_value());
  auto reader = open_ok(w.bytes());
  REQUIRE(reader->event_count() == 3);
  std::vector<std::size_t> sizes;
  REQUIRE(reader
              ->visit_events(0, 3,
                             [&](std::uint64_t, std::span<const std::uint8_t> e) {
                               sizes.push_back(e.size());
                               return true;
                             })
              .has_value());
  CHECK(sizes == std::vector<std::size_t>{64, vs::kMaxRecordBytes, 64});
}

TEST_CASE("a payload whose record would pass the record limit is refused and the writer goes on",
          "[schema]") {
  Writing w;
  const Bytes over(vs::kMaxRecordBytes - vs::kBlobRecordHeaderBytes + 1, 0);
  const auto refused = w.writer->put_blob(over, 1);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().kind == vs::TraceErrorKind::kTooLarge);
  CHECK(refused.error().message.find(fmt::format("has {} bytes; the limit is {}", over.size(),
                                                 over.size() - 1)) != std::string::npos);
  const Bytes small(16, 3);
  REQUIRE(w.writer->put_blob(small, 1).has_value());
  REQUIRE(w.writer->append_event(event_of_size(64, 1)).has_value());
  const auto stats = w.writer->close({});
  REQUIRE(stats.has_value());
  CHECK(stats->blobs == 1);
  CHECK(stats->payload_raw_bytes == 16);
}

TEST_CASE("a footer over its limit is refused at close, naming the limit, and nothing is "
          "committed",
          "[schema]") {
  Writing w;
  REQUIRE(w.writer->append_event(event_of_size(64, 1)).has_value());
  const Bytes summary(vs::kMaxFooterBytes, 0);
  const auto closed = w.writer->close(summary);
  REQUIRE_FALSE(closed.has_value());
  CHECK(closed.error().kind == vs::TraceErrorKind::kTooLarge);
  CHECK(closed.error().message.find(fmt::format("the limit is {}", vs::kMaxFooterBytes)) !=
        std::string::npos);
  std::lock_guard lk(w.state->mu);
  CHECK_FALSE(w.state->committed);
}

TEST_CASE("a frame ends when its content reaches the target exactly, and close adds no empty "
          "frame",
          "[schema]") {
  auto reader = open_ok(six_events_in_frames_of_three([](vs::TraceWriter&) {}));
  REQUIRE(reader->frames().size() == 2);
  for (const auto& frame : reader->frames()) {
    CHECK(frame.event_count == 3);
    CHECK(frame.content_bytes == 3 * kRecordBytes);
  }
}

TEST_CASE("flush() with nothing appended since the last one writes nothing", "[schema]") {
  const Bytes plain = six_events_in_frames_of_three([](vs::TraceWriter&) {});
  // A flush right after each append flushes its record; the second finds nothing new, and a
  // flush after the append that ended a frame finds the next frame empty.
  const Bytes flushed_twice = six_events_in_frames_of_three([](vs::TraceWriter& w) {
    REQUIRE(w.flush().has_value());
    REQUIRE(w.flush().has_value());
  });
  const Bytes flushed_once = six_events_in_frames_of_three(
      [](vs::TraceWriter& w) { REQUIRE(w.flush().has_value()); });
  CHECK(flushed_twice == flushed_once);
  CHECK(open_ok(flushed_twice)->event_count() == 6);
  // Flushes only after the appends that end frames: no frame has a record waiting.
  int appended = 0;
  const Bytes at_frame_ends = six_events_in_frames_of_three([&](vs::TraceWriter& w) {
    if (++appended % 3 == 0) REQUIRE(w.flush().has_value());
  });
  CHECK(at_frame_ends == plain);
}

TEST_CASE("the timer flush writes and flushes nothing while no record waits", "[schema]") {
  // A memory sink that counts its flushes: an idle timer must not reach the sink at all.
  class CountingSink final : public vs::ByteSink {
   public:
    CountingSink(std::shared_ptr<MemorySink::State> state, std::shared_ptr<std::atomic<int>> n)
        : inner_(std::move(state)), flushes_(std::move(n)) {}
    vs::TraceResult<void> write(std::span<const std::uint8_t> b) override { return inner_.write(b); }
    vs::TraceResult<void> flush() override {
      ++*flushes_;
      return inner_.flush();
    }
    vs::TraceResult<void> commit() override { return inner_.commit(); }
    std::uint64_t bytes_written() const override { return inner_.bytes_written(); }
    std::string describe() const override { return inner_.describe(); }

   private:
    MemorySink inner_;
    std::shared_ptr<std::atomic<int>> flushes_;
  };
  auto state = std::make_shared<MemorySink::State>();
  auto flushes = std::make_shared<std::atomic<int>>(0);
  vs::TraceWriterOptions o;
  o.flush_interval_ms = 1;
  auto writer =
      vs::TraceWriter::create(std::make_unique<CountingSink>(state, flushes), {}, o).value();
  REQUIRE(writer->append_event(event_of_size(64, 1)).has_value());
  REQUIRE(writer->flush().has_value());
  const auto bytes_now = [&] {
    std::lock_guard lk(state->mu);
    return state->bytes.size();
  };
  const auto flushed_bytes = bytes_now();
  const int flushed = flushes->load();
  CHECK(flushed >= 1);
  // Many timer periods with nothing appended (not a timing check: nothing may reach the sink
  // however many of them pass).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(bytes_now() == flushed_bytes);
  CHECK(flushes->load() == flushed);
  REQUIRE(writer->close({}).has_value());
  std::lock_guard lk(state->mu);
  CHECK(open_ok(state->bytes)->event_count() == 1);
}

TEST_CASE("a file sink refuses writes and a second commit once committed, saying so", "[schema]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("vtrace-writer-limits-{}", ::getpid());
  std::filesystem::create_directories(dir);
  for (const bool raw : {false, true}) {
    INFO("raw " << raw);
    const auto path = dir / (raw ? "raw.bin" : "sink.vtrace");
    auto sink = raw ? vs::open_raw_file_sink(path) : vs::open_file_sink(path);
    REQUIRE(sink.has_value());
    const std::uint8_t byte = 7;
    REQUIRE((*sink)->write({&byte, 1}).has_value());
    REQUIRE((*sink)->commit().has_value());
    const std::string committed = fmt::format("{} is already committed", path.string());
    const auto write = (*sink)->write({&byte, 1});
    REQUIRE_FALSE(write.has_value());
    CHECK(write.error().message == committed);
    const auto again = (*sink)->commit();
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message == committed);
    CHECK(std::filesystem::file_size(path) == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a memory source refuses a read that starts past its end, even of no bytes",
          "[schema]") {
  const auto source = vs::memory_source(Bytes(8, 1), "eight.bin");
  std::uint8_t out[1];
  CHECK(source->read_at(8, std::span<std::uint8_t>(out, 0)).has_value());  // at the end: nothing
  const auto past = source->read_at(9, std::span<std::uint8_t>(out, 0));
  REQUIRE_FALSE(past.has_value());
  CHECK(past.error().kind == vs::TraceErrorKind::kTruncated);
  CHECK(past.error().message == "eight.bin: read of 0 bytes at offset 9 passes the end (8 bytes)");
}
