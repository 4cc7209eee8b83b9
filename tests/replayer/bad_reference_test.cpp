// Replay of traces whose events reference what cannot exist: an object no event created, a permit
// no Admit returned, a SubmitEnd of no SubmitBegin, an event whose sequence number is out of
// order, a region past its buffer or whose end overflows u64, and
// a footer claiming 2^40 events. Each fails with one error naming the event (or the frame), before
// the runtime is asked to do anything impossible and before anything is sized by the claim.
#include <container_generated.h>
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include "trace_fixtures.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace fb = vtrace::fb;
namespace rp = vtrace::replayer;
namespace vs = vtrace::schema;
using vtrace::test::ScratchDir;

namespace {

using Bytes = std::vector<std::uint8_t>;

std::filesystem::path tiny() {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace";
}

// Writes `value` over the 8 bytes at `field` (a pointer into `event`'s bytes), little endian.
void patch_u64(Bytes& event, const void* field, std::uint64_t value) {
  const auto at = static_cast<std::size_t>(static_cast<const std::uint8_t*>(field) - event.data());
  REQUIRE(at + 8 <= event.size());
  for (int k = 0; k < 8; ++k)
    event[at + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(value >> (8 * k));
}

// Copies tiny.vtrace to `destination` (re-putting its payloads) with the first event of `kind`
// changed in place by `patch`. Returns that event's ordinal.
std::uint64_t tiny_with_patched(const std::filesystem::path& destination, std::string_view kind,
                                const std::function<void(Bytes&, const fb::Event&)>& patch) {
  const std::uint64_t target = vtrace::test::first_event_of_kind(tiny(), kind);
  auto reader = vs::TraceReader::open(tiny());
  REQUIRE(reader.has_value());
  auto& r = **reader;
  auto sink = vs::open_file_sink(destination);
  REQUIRE(sink.has_value());
  auto writer = vs::TraceWriter::create(std::move(*sink), r.header());
  REQUIRE(writer.has_value());
  REQUIRE(r.visit_events(0, r.event_count(), [&](std::uint64_t n, std::span<const std::uint8_t> e) {
             for (const auto& id : vs::event_links(*vs::event_of(e)).payloads) {
               REQUIRE((*writer)->put_blob(r.blob(id).value(), 2).has_value());
             }
             Bytes bytes(e.begin(), e.end());
             if (n == target) patch(bytes, *vs::event_of(bytes));
             REQUIRE((*writer)->append_event(bytes).has_value());
             return true;
           }).has_value());
  REQUIRE((*writer)->close(r.summary()).has_value());
  return target;
}

// The one sentence replay ends with: the plan's or the replay's error, or the first mismatch.
std::string replay_outcome(const std::filesystem::path& trace) {
  auto report = rp::replay_trace(trace, {}, vtrace::runtime::default_registry());
  if (!report) return report.error().message;
  if (report->mismatches.empty()) return "matched";
  const auto& m = report->mismatches.front();
  return fmt::format("mismatch at event {}: {}: expected {}, got {}", m.event, m.call, m.expected,
                     m.actual);
}

}  // namespace

TEST_CASE("replay refuses an event naming an object no event created, naming the event",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-unknown");
  const auto path = dir / "t.vtrace";
  const std::uint64_t n = tiny_with_patched(path, "Readback", [](Bytes& b, const fb::Event& e) {
    patch_u64(b, e.body_as_Readback()->source(), 99);  // ObjectRef.ordinal
  });
  const std::string outcome = replay_outcome(path);
  CHECK(outcome ==
        fmt::format("{}: event {} (Readback): names buffer#99 before any event created it",
                    path.string(), n));
}

TEST_CASE("replay refuses an allocation with a permit no Admit returned, naming the event",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-permit");
  const auto path = dir / "t.vtrace";
  std::uint64_t generation = 0;
  (void)tiny_with_patched(path, "Admit", [&](Bytes& b, const fb::Event& e) {
    const std::uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(e.body_as_Admit())
                                    ->GetAddressOf(fb::Admit::VT_PERMIT_GENERATION);
    REQUIRE(field != nullptr);
    generation = e.body_as_Admit()->permit_generation().value();
    patch_u64(b, field, 99);  // the Admit now returned generation 99
  });
  const std::uint64_t allocate = vtrace::test::first_event_of_kind(path, "Allocate");
  CHECK(replay_outcome(path) ==
        fmt::format("{}: event {} (Allocate): allocates with permit generation {}, which no "
                    "Admit returned",
                    path.string(), allocate, generation));
}

TEST_CASE("replay refuses a SubmitEnd that names no SubmitBegin before it, naming the event",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-submit-end");
  const auto path = dir / "t.vtrace";
  const std::uint64_t n = tiny_with_patched(path, "SubmitEnd", [](Bytes& b, const fb::Event& e) {
    const std::uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(e.body_as_SubmitEnd())
                                    ->GetAddressOf(fb::SubmitEnd::VT_BEGIN_SEQ);
    REQUIRE(field != nullptr);
    patch_u64(b, field, 0);  // event 0 opened the runtime
  });
  CHECK(replay_outcome(path) ==
        fmt::format("{}: event {} (SubmitEnd): ends submit 0, which is not a SubmitBegin before it",
                    path.string(), n));
}

TEST_CASE("replay refuses an event whose sequence number is out of order, naming the event",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-seq");
  const auto path = dir / "t.vtrace";
  const std::uint64_t n = tiny_with_patched(path, "EncodeUpload", [](Bytes& b, const fb::Event& e) {
    const std::uint8_t* seq =
        reinterpret_cast<const flatbuffers::Table*>(&e)->GetAddressOf(fb::Event::VT_SEQ);
    REQUIRE(seq != nullptr);
    patch_u64(b, seq, e.seq() + 3);
  });
  CHECK(replay_outcome(path) == fmt::format("{}: event {} (EncodeUpload): has sequence number {}",
                                            path.string(), n, n + 3));
}

TEST_CASE("replay refuses an event whose payload size claim is not its payload's size, naming both",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-payload-bytes");
  for (const std::string kind : {"EncodeUpload", "Readback"}) {
    for (const std::uint64_t claim : {std::uint64_t{1}, ~std::uint64_t{0}}) {
      const auto path = dir / fmt::format("{}-{}.vtrace", kind, claim);
      std::string payload;
      std::uint64_t holds = 0;
      const std::uint64_t n = tiny_with_patched(path, kind, [&](Bytes& b, const fb::Event& e) {
        const flatbuffers::Table* body =
            kind == "EncodeUpload"
                ? reinterpret_cast<const flatbuffers::Table*>(e.body_as_EncodeUpload())
                : reinterpret_cast<const flatbuffers::Table*>(e.body_as_Readback());
        REQUIRE(body != nullptr);
        const auto offset = static_cast<flatbuffers::voffset_t>(
            kind == "EncodeUpload" ? static_cast<int>(fb::EncodeUpload::VT_PAYLOAD_BYTES)
                                   : static_cast<int>(fb::Readback::VT_PAYLOAD_BYTES));
        const std::uint8_t* field = body->GetAddressOf(offset);
        REQUIRE(field != nullptr);
        holds = kind == "EncodeUpload" ? e.body_as_EncodeUpload()->payload_bytes()
                                       : e.body_as_Readback()->payload_bytes();
        const auto links = vs::event_links(e);
        REQUIRE(links.payloads.size() == 1);
        payload = links.payloads.front().hex();
        patch_u64(b, field, claim);
      });
      INFO(kind << " claiming " << claim);
      CHECK(replay_outcome(path) ==
            fmt::format("{}: event {} ({}): claims {} payload bytes, but its payload {} holds {}",
                        path.string(), n, kind, claim, payload, holds));
    }
  }
}

TEST_CASE("replay of a region past its buffer or overflowing u64 fails naming the event",
          "[replayer][bounds]") {
  ScratchDir dir("bad-ref-region");
  const auto path = dir / "t.vtrace";
  SECTION("a readback region whose end overflows u64 is refused by the plan") {
    const std::uint64_t n = tiny_with_patched(path, "Readback", [](Bytes& b, const fb::Event& e) {
      patch_u64(b, e.body_as_Readback()->region(), ~0ull - 1);  // source_offset_bytes
    });
    const std::string outcome = replay_outcome(path);
    INFO(outcome);
    CHECK_THAT(outcome,
               Catch::StartsWith(fmt::format("{}: event {} (Readback): ", path.string(), n)) &&
                   Catch::Contains("overflows u64"));
  }
  SECTION("a readback region past the end of its buffer is a mismatch at that event") {
    const std::uint64_t n = tiny_with_patched(path, "Readback", [](Bytes& b, const fb::Event& e) {
      patch_u64(b, e.body_as_Readback()->region(), 1ull << 40);
    });
    const std::string outcome = replay_outcome(path);
    INFO(outcome);
    CHECK_THAT(outcome, Catch::StartsWith(fmt::format("mismatch at event {}: ", n)) &&
                            Catch::Contains("readback_source_out_of_bounds"));
  }
  SECTION("a dense linear output region whose end overflows u64") {
    const std::uint64_t n =
        tiny_with_patched(path, "EncodeDenseLinear", [](Bytes& b, const fb::Event& e) {
          const auto* launch = e.body_as_EncodeDenseLinear()->launches()->Get(0);
          patch_u64(b, reinterpret_cast<const std::uint8_t*>(&launch->output()) + 16, ~0ull - 3);
        });
    const std::string outcome = replay_outcome(path);
    INFO(outcome);
    CHECK_THAT(outcome, Catch::Contains(fmt::format("event {}", n)));
    CHECK(outcome != "matched");
  }
  SECTION("a dense linear input region past the end of its buffer is a mismatch at that event") {
    const std::uint64_t n =
        tiny_with_patched(path, "EncodeDenseLinear", [](Bytes& b, const fb::Event& e) {
          const auto* launch = e.body_as_EncodeDenseLinear()->launches()->Get(0);
          patch_u64(b, reinterpret_cast<const std::uint8_t*>(&launch->input()) + 16, 1ull << 40);
        });
    const std::string outcome = replay_outcome(path);
    INFO(outcome);
    CHECK_THAT(outcome, Catch::StartsWith(fmt::format("mismatch at event {}: ", n)));
  }
}

TEST_CASE("a footer claiming 2^40 events fails the plan cleanly instead of sizing anything by it",
          "[replayer][bounds]") {
  // A consistent index that lies: 10241 one-byte "frames" each claiming 512 MiB of content and as
  // many events as that can hold; the reader accepts the index (it cannot know better without
  // decoding), so every consumer must not allocate by the event count.
  ScratchDir dir("bad-ref-huge");
  Bytes file;
  {
    std::ifstream in(tiny(), std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::uint32_t header_size = 0;
  std::memcpy(&header_size, file.data() + 4, 4);
  file.resize(8 + header_size);  // tiny is a 1.0 file: a footer without checksum is accepted
  const std::uint64_t frames = 10241, content = vs::kMaxFrameContentBytes;
  const std::uint64_t per_frame = content / vs::kRecordPrefixBytes;
  std::vector<vtrace::container::FrameEntry> entries;
  const vtrace::container::Hash128 zero(0, 0);
  for (std::uint64_t i = 0; i < frames; ++i) {
    entries.emplace_back(file.size() + i, 1, content, i * per_frame, per_frame, 0, zero, zero);
  }
  const std::uint64_t events = frames * per_frame;
  REQUIRE(events > (1ull << 40));
  const std::uint64_t footer_at = file.size() + frames;
  file.resize(footer_at, 0);
  flatbuffers::FlatBufferBuilder fbb;
  auto fv = fbb.CreateVectorOfStructs(entries);
  auto bv = fbb.CreateVectorOfStructs(std::vector<vtrace::container::BlobEntry>{});
  const vtrace::container::Totals totals(events, 0, 0, 0, frames, 0);
  fbb.Finish(vtrace::container::CreateFooter(fbb, fv, bv, &totals, fbb.CreateVector(Bytes{})));
  const auto put = [&](std::uint64_t v, int n) {
    for (int k = 0; k < n; ++k) file.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  };
  put(vs::kFooterSkippableMagic, 4);
  put(fbb.GetSize() + vs::kTrailerBytes, 4);
  file.insert(file.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  put(footer_at, 8);
  put(8 + fbb.GetSize() + vs::kTrailerBytes, 8);
  put(0, 8);
  for (char c : vs::kTrailerMagic) file.push_back(static_cast<std::uint8_t>(c));
  const auto path = dir / "huge.vtrace";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()),
              static_cast<std::streamsize>(file.size()));
  }
  auto reader = vs::TraceReader::open(path);
  REQUIRE(reader.has_value());
  CHECK((*reader)->event_count() == events);
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(plan.error().message,
             Catch::Contains(fmt::format("frame 0 at offset {}", entries[0].file_offset())));
  CHECK_FALSE((*reader)->verify_all().has_value());
}
