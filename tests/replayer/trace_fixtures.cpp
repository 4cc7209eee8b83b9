#include "trace_fixtures.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/schema/trace_writer.h"

namespace vtrace::test {

ScratchDir::ScratchDir(const std::string& stem) {
  static std::atomic<int> serial{0};
  path_ = std::filesystem::temp_directory_path() /
          fmt::format("vtrace-{}-{}-{}", stem, ::getpid(), serial++);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

workloads::WorkloadReport record_workload(const workloads::WorkloadSpec& spec,
                                          const std::filesystem::path& path,
                                          const std::string& runtime_name) {
  const auto& registry = runtime::default_registry();
  auto inner = registry.open(runtime_name, {.device_id = "device.vtrace.0"});
  REQUIRE(inner.has_value());
  auto foreign = registry.open(runtime_name, {.device_id = "device.vtrace.1"});
  REQUIRE(foreign.has_value());
  recorder::RecorderOptions options;
  options.workload_description = spec.describe();
  auto recording =
      recorder::RecordingRuntime::create(std::move(*inner), runtime_name, path, options);
  REQUIRE(recording.has_value());
  auto report = workloads::run_workload(spec, **recording, foreign->get());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  REQUIRE((*recording)->close().has_value());
  return *report;
}

void record_calls(const runtime::RuntimeRegistry& registry, const char* runtime,
                  const std::filesystem::path& path,
                  const std::function<void(runtime::DeviceRuntime&)>& calls) {
  auto inner = registry.open(runtime, {.device_id = "device.vtrace.0"});
  REQUIRE(inner.has_value());
  auto recording = recorder::RecordingRuntime::create(std::move(*inner), runtime, path, {});
  REQUIRE(recording.has_value());
  calls(**recording);
  REQUIRE((*recording)->close().has_value());
}

runtime::BufferPtr f16_buffer(runtime::DeviceRuntime& r, const char* id, std::uint64_t bytes) {
  auto request =
      runtime::BufferRequest::create(*runtime::ResourceId::create(id), bytes, 16,
                                     runtime::BufferUsage::kWeights, runtime::ElementType::kF16);
  REQUIRE(request.has_value());
  auto permit = r.admit(*request);
  REQUIRE(permit.has_value());
  auto b = r.allocate(std::move(*permit));
  REQUIRE(b.has_value());
  return std::move(*b);
}

workloads::WorkloadSpec small_decode_spec() {
  workloads::WorkloadSpec spec;
  spec.kind = workloads::WorkloadKind::kDecode;
  spec.seed = 3;
  spec.decode.hidden = 32;
  spec.decode.ffn = 64;
  spec.decode.layers = 2;
  spec.decode.participants = 3;
  spec.decode.steps = 3;
  return spec;
}

AlteredTrace rewrite_with_altered_readback(const std::filesystem::path& source,
                                           const std::filesystem::path& destination,
                                           const std::function<std::uint16_t(std::uint16_t)>& alter,
                                           std::uint64_t element_index) {
  auto reader = schema::TraceReader::open(source);
  REQUIRE(reader.has_value());
  auto& r = **reader;
  std::vector<std::vector<std::uint8_t>> events;
  std::optional<std::uint64_t> target;
  REQUIRE(r.visit_events(0, r.event_count(),
                         [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
                           events.emplace_back(bytes.begin(), bytes.end());
                           const auto* rb = schema::event_of(bytes)->body_as_Readback();
                           if (rb != nullptr && rb->payload() != nullptr) target = ordinal;
                           return true;
                         })
              .has_value());
  REQUIRE(target.has_value());

  auto sink = schema::open_file_sink(destination);
  REQUIRE(sink.has_value());
  auto writer = schema::TraceWriter::create(std::move(*sink), r.header());
  REQUIRE(writer.has_value());
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    auto& bytes = events[i];
    const fb::Event* event = schema::event_of(bytes);
    const fb::BlobRef* ref = nullptr;
    if (const auto* u = event->body_as_EncodeUpload()) ref = u->payload();
    if (const auto* rb = event->body_as_Readback()) ref = rb->payload();
    if (ref != nullptr) {
      auto blob = r.blob(schema::from_fb(*ref));
      REQUIRE(blob.has_value());
      if (i == *target) {
        REQUIRE(blob->size() >= 2 * (element_index + 1));
        const std::size_t at = 2 * element_index;
        const auto old = static_cast<std::uint16_t>((*blob)[at] | ((*blob)[at + 1] << 8));
        const std::uint16_t now = alter(old);
        (*blob)[at] = static_cast<std::uint8_t>(now & 0xFF);
        (*blob)[at + 1] = static_cast<std::uint8_t>(now >> 8);
      }
      auto id = (*writer)->put_blob(*blob, 2);
      REQUIRE(id.has_value());
      if (i == *target) {
        // BlobRef is a fixed-layout struct (two little-endian u64) inside the event bytes.
        const auto offset = static_cast<std::size_t>(reinterpret_cast<const std::uint8_t*>(ref) -
                                                     bytes.data());
        std::uint8_t patched[16];
        for (int k = 0; k < 8; ++k) {
          patched[k] = static_cast<std::uint8_t>(id->low >> (8 * k));
          patched[8 + k] = static_cast<std::uint8_t>(id->high >> (8 * k));
        }
        std::memcpy(bytes.data() + offset, patched, sizeof patched);
      }
    }
    REQUIRE((*writer)->append_event(bytes).has_value());
  }
  REQUIRE((*writer)->close(r.summary()).has_value());
  return {*target, element_index};
}

void write_cut_copy(const std::filesystem::path& source, const std::filesystem::path& destination,
                    const CutCopyOptions& options) {
  auto reader = schema::TraceReader::open(source);
  REQUIRE(reader.has_value());
  auto& r = **reader;
  REQUIRE(options.events <= r.event_count());
  {
    auto sink = schema::open_file_sink(destination);
    REQUIRE(sink.has_value());
    auto writer = schema::TraceWriter::create(std::move(*sink), r.header());
    REQUIRE(writer.has_value());
    REQUIRE(r.visit_events(0, options.events,
                           [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
                             const fb::Event* event = schema::event_of(bytes);
                             const fb::BlobRef* ref = nullptr;
                             if (const auto* u = event->body_as_EncodeUpload()) ref = u->payload();
                             if (const auto* rb = event->body_as_Readback()) ref = rb->payload();
                             if (ref != nullptr && ordinal != options.drop_payload_of) {
                               auto blob = r.blob(schema::from_fb(*ref));
                               REQUIRE(blob.has_value());
                               REQUIRE((*writer)->put_blob(*blob, 2).has_value());
                             }
                             REQUIRE((*writer)->append_event(bytes).has_value());
                             return true;
                           })
                .has_value());
    REQUIRE((*writer)->close({}).has_value());
  }
  if (options.keep_footer) return;
  auto written = schema::TraceReader::open(destination);
  REQUIRE(written.has_value());
  REQUIRE((*written)->complete());
  std::uint64_t data_end = 0;
  for (const auto& f : (*written)->frames()) data_end = f.file_offset + f.compressed_bytes;
  REQUIRE(data_end > 0);
  written->reset();
  std::filesystem::resize_file(destination, data_end);
}

std::uint64_t first_event_of_kind(const std::filesystem::path& trace, std::string_view kind) {
  auto reader = schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  std::optional<std::uint64_t> found;
  REQUIRE((*reader)
              ->visit_events(0, (*reader)->event_count(),
                             [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
                               if (schema::event_kind_name(*schema::event_of(bytes)) != kind) {
                                 return true;
                               }
                               found = ordinal;
                               return false;
                             })
              .has_value());
  REQUIRE(found.has_value());
  return *found;
}

const fb::EventBody kUnknownBody =
    static_cast<fb::EventBody>(static_cast<std::uint8_t>(fb::EventBody::MAX) + 1);

std::vector<std::uint8_t> finish_event(flatbuffers::FlatBufferBuilder& b, std::uint64_t seq,
                                       fb::EventBody type, flatbuffers::Offset<void> body,
                                       bool required) {
  fb::EventBuilder event(b);
  event.add_seq(seq);
  event.add_body_type(type);
  event.add_body(body);
  event.add_required(required);
  b.Finish(event.Finish());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

std::uint64_t write_tiny_plus(const std::filesystem::path& destination,
                              const std::function<void(schema::TraceWriter&, std::uint64_t)>& append) {
  const auto golden = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace";
  auto reader = schema::TraceReader::open(golden);
  REQUIRE(reader.has_value());
  auto& r = **reader;
  auto sink = schema::open_file_sink(destination);
  REQUIRE(sink.has_value());
  auto writer = schema::TraceWriter::create(std::move(*sink), r.header());
  REQUIRE(writer.has_value());
  REQUIRE(r.visit_events(0, r.event_count(),
                         [&](std::uint64_t, std::span<const std::uint8_t> bytes) {
                           const fb::Event* event = schema::event_of(bytes);
                           const fb::BlobRef* ref = nullptr;
                           if (const auto* u = event->body_as_EncodeUpload()) ref = u->payload();
                           if (const auto* rb = event->body_as_Readback()) ref = rb->payload();
                           if (ref != nullptr) {
                             auto blob = r.blob(schema::from_fb(*ref));
                             REQUIRE(blob.has_value());
                             REQUIRE((*writer)->put_blob(*blob, 2).has_value());
                           }
                           REQUIRE((*writer)->append_event(bytes).has_value());
                           return true;
                         })
              .has_value());
  const std::uint64_t first = r.event_count();
  append(**writer, first);
  REQUIRE((*writer)->close({}).has_value());
  return first;
}

std::uint64_t write_tiny_with_unknown_event(const std::filesystem::path& destination,
                                            bool required) {
  return write_tiny_plus(destination, [required](schema::TraceWriter& writer, std::uint64_t unknown) {
    {
      flatbuffers::FlatBufferBuilder b;
      // Any table serves as the body of a kind this build does not know.
      const auto body = fb::CreateCounterSnapshot(b, 0).Union();
      REQUIRE(writer.append_event(finish_event(b, unknown, kUnknownBody, body, required))
                  .has_value());
    }
    flatbuffers::FlatBufferBuilder b;
    const auto method = b.CreateString("supports_guarded_submission");
    fb::OptionalCallBuilder call(b);
    call.add_method(method);
    call.add_flag(false);
    const auto body = call.Finish().Union();
    REQUIRE(writer.append_event(finish_event(b, unknown + 1, fb::EventBody::OptionalCall, body, true))
                .has_value());
  });
}

}  // namespace vtrace::test
