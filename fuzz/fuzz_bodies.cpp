#include "fuzz_bodies.h"

#include <cstring>
#include <memory>
#include <string_view>
#include <variant>

#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/step_text.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::fuzz {

namespace {

using Bytes = std::vector<std::uint8_t>;

BodyOutcome refused(std::string step, const schema::TraceError& error) {
  return BodyOutcome{std::move(step), error.kind, error.message, 0};
}

schema::TraceResult<std::unique_ptr<schema::TraceReader>> open_trace(
    std::span<const std::uint8_t> bytes) {
  return schema::TraceReader::open(
      schema::memory_source(Bytes(bytes.begin(), bytes.end()), "fuzz.vtrace"));
}

// What `vtrace dump` and the replay plan do with one verified event: its kind, its links, and
// its decoding into a step with that step's text. A field that does not decode is an answer
// (kCorrupt, kUnknownRequiredEvent), not a failure of the body.
std::optional<schema::TraceError> decode_event(std::uint64_t ordinal,
                                               std::span<const std::uint8_t> record) {
  const fb::Event* event = schema::event_of(record);
  (void)schema::event_kind_name(*event);
  if (!schema::event_kind_known(*event)) return std::nullopt;
  const schema::EventLinks links = schema::event_links(*event);
  for (const auto& use : links.uses) (void)use.ref.to_string(use.kind);
  for (const auto& made : links.creates) (void)made.ref.to_string(made.kind);
  for (const auto& id : links.payloads) (void)id.hex();
  auto step = replayer::decode_step(ordinal, *event);
  if (!step) return step.error();
  (void)replayer::describe_step(*step);
  return std::nullopt;
}

// The payloads a step names, as the step executor fetches them from its plan.
std::vector<schema::BlobId> payloads_of(const replayer::ReplayStepBody& body) {
  namespace st = replayer::step;
  if (const auto* upload = std::get_if<st::EncodeUpload>(&body)) return {upload->payload};
  if (const auto* import = std::get_if<st::ImportComponent>(&body)) return {import->payload};
  if (const auto* readback = std::get_if<st::Readback>(&body); readback && readback->payload) {
    return {*readback->payload};
  }
  return {};
}

// Reads every byte of a span, so that the sanitizers see a view that points outside its owner.
std::uint64_t touch(std::span<const std::uint8_t> bytes) {
  std::uint64_t sum = 0;
  for (const std::uint8_t b : bytes) sum += b;
  return sum;
}

}  // namespace

BodyOutcome trace_file_body(std::span<const std::uint8_t> bytes) {
  auto opened = open_trace(bytes);
  if (!opened) return refused("open", opened.error());
  schema::TraceReader& reader = **opened;
  const schema::TraceHeaderInfo& header = reader.header();
  (void)schema::read_trace_metadata(header.metadata);
  (void)reader.complete();
  const schema::RecoveryInfo& recovery = reader.recovery();
  (void)recovery.note.size();
  std::uint64_t frame_events = 0;
  for (const schema::FrameInfo& frame : reader.frames()) frame_events += frame.event_count;
  (void)frame_events;
  (void)reader.totals();
  (void)schema::read_trace_summary(reader.summary());

  BodyOutcome outcome;
  std::optional<schema::TraceError> blob_error;
  auto visited = reader.visit_events(
      0, reader.event_count(), [&](std::uint64_t ordinal, std::span<const std::uint8_t> record) {
        ++outcome.events;
        (void)decode_event(ordinal, record);
        const fb::Event* event = schema::event_of(record);
        if (!schema::event_kind_known(*event)) return true;
        for (const schema::BlobId& id : schema::event_links(*event).payloads) {
          auto blob = reader.blob(id);
          if (!blob && !blob_error) blob_error = blob.error();
          if (blob) (void)touch(*blob);
        }
        return true;
      });
  auto verified = reader.verify_all();
  if (!visited) {
    BodyOutcome failed = refused("visit_events", visited.error());
    failed.events = outcome.events;
    return failed;
  }
  if (blob_error) {
    BodyOutcome failed = refused("blob", *blob_error);
    failed.events = outcome.events;
    return failed;
  }
  if (!verified) {
    BodyOutcome failed = refused("verify_all", verified.error());
    failed.events = outcome.events;
    return failed;
  }
  return outcome;
}

BodyOutcome event_record_body(std::span<const std::uint8_t> bytes) {
  // The reader hands visitors 8-byte aligned records (FlatBuffers reads scalars in place).
  std::vector<std::uint64_t> aligned((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(aligned.data(), bytes.data(), bytes.size());
  const std::span<const std::uint8_t> record(reinterpret_cast<const std::uint8_t*>(aligned.data()),
                                             bytes.size());
  if (!schema::verify_event_record(record)) {
    return BodyOutcome{"verify_event_record", schema::TraceErrorKind::kVerifyFailed,
                       "the bytes are not a verified vtrace.Event", 0};
  }
  if (auto error = decode_event(0, record)) return refused("decode_step", *error);
  return BodyOutcome{{}, std::nullopt, {}, 1};
}

BodyOutcome replay_plan_body(std::span<const std::uint8_t> bytes) {
  auto opened = open_trace(bytes);
  if (!opened) return refused("open", opened.error());
  auto plan = replayer::ReplayPlan::build(**opened);
  if (!plan) return refused("build", plan.error());
  (void)plan->recorded_runtime().size();
  (void)plan->payload_bytes();
  if (!plan->trace_complete()) {
    const replayer::PlanRecovery& recovery = plan->recovery();
    (void)recovery.note.size();
    (void)recovery.stop_reason.size();
  }
  for (const std::uint64_t begin : plan->unfinished_submits()) (void)plan->submit_end(begin);
  BodyOutcome outcome;
  for (const replayer::ReplayStep& step : plan->steps()) {
    ++outcome.events;
    (void)replayer::describe_step(step);
    if (std::holds_alternative<replayer::step::SubmitBegin>(step.body)) {
      (void)plan->submit_ran(step.ordinal);
    }
    for (const schema::BlobId& id : payloads_of(step.body)) {
      const std::vector<std::uint8_t>* payload = plan->payload(id);
      if (payload == nullptr) {
        return BodyOutcome{"payload", schema::TraceErrorKind::kMissingBlob,
                           "step " + std::to_string(step.ordinal) + " names payload " + id.hex() +
                               ", which the plan does not hold",
                           outcome.events};
      }
      (void)touch(*payload);
    }
  }
  return outcome;
}

BodyOutcome safetensors_body(std::span<const std::uint8_t> bytes) {
  auto file =
      runtime::SafetensorsFile::parse(Bytes(bytes.begin(), bytes.end()), "fuzz.safetensors");
  if (!file) return BodyOutcome{"parse", std::nullopt, file.error().message, 0};
  BodyOutcome outcome;
  for (const auto& [key, value] : file->metadata()) (void)(key.size() + value.size());
  for (const std::string& name : file->names()) {
    auto view = file->tensor(name);
    if (!view) return BodyOutcome{"tensor", std::nullopt, view.error().message, outcome.events};
    ++outcome.events;
    (void)touch(view->bytes);
    // f16_tensor answers a view for an F16 tensor of that shape and an error for anything else.
    (void)file->f16_tensor(name, view->shape);
  }
  return outcome;
}

int fuzz_trace_file(const std::uint8_t* data, std::size_t size) {
  (void)trace_file_body({data, size});
  return 0;
}
int fuzz_event_record(const std::uint8_t* data, std::size_t size) {
  (void)event_record_body({data, size});
  return 0;
}
int fuzz_replay_plan(const std::uint8_t* data, std::size_t size) {
  (void)replay_plan_body({data, size});
  return 0;
}
int fuzz_safetensors(const std::uint8_t* data, std::size_t size) {
  (void)safetensors_body({data, size});
  return 0;
}

std::vector<Bytes> event_records_of(std::span<const std::uint8_t> trace) {
  std::vector<Bytes> records;
  auto opened = open_trace(trace);
  if (!opened) return records;
  (void)(*opened)->visit_events(0, (*opened)->event_count(),
                                [&](std::uint64_t, std::span<const std::uint8_t> record) {
                                  records.emplace_back(record.begin(), record.end());
                                  return true;
                                });
  return records;
}

namespace {

// A safetensors file: the u64 LE header length, the header text, then `data`.
Bytes safetensors_bytes(std::string_view header, std::size_t data_bytes) {
  Bytes out;
  const std::uint64_t length = header.size();
  for (int shift = 0; shift < 64; shift += 8)
    out.push_back(static_cast<std::uint8_t>(length >> shift));
  out.insert(out.end(), header.begin(), header.end());
  for (std::size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<std::uint8_t>(i * 7 + 1));
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Bytes>> safetensors_seeds() {
  std::vector<std::pair<std::string, Bytes>> seeds;
  auto add = [&](std::string name, std::string_view header, std::size_t data_bytes) {
    seeds.emplace_back(std::move(name), safetensors_bytes(header, data_bytes));
  };
  add("empty-header", "{}", 0);
  add("f16-2x2", R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}})", 8);
  add("every-dtype",
      R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]},)"
      R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
      R"("c":{"dtype":"I8","shape":[2],"data_offsets":[4,6]},)"
      R"("d":{"dtype":"BF16","shape":[1],"data_offsets":[6,8]},)"
      R"("e":{"dtype":"U32","shape":[1],"data_offsets":[8,12]},)"
      R"("f":{"dtype":"I32","shape":[1],"data_offsets":[12,16]},)"
      R"("g":{"dtype":"F32","shape":[1,1],"data_offsets":[16,20]}})",
      20);
  add("metadata",
      R"({"__metadata__":{"format":"pt","note":"x"},"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
      4);
  add("scalar-and-empty",
      R"({"z":{"dtype":"F16","shape":[0,3],"data_offsets":[0,0]},"s":{"dtype":"F16","shape":[],"data_offsets":[0,2]}})",
      2);
  add("overlap",
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
      6);
  add("gap", R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4);
  add("offsets-past-data", R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})", 4);
  add("shape-overflow",
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4);
  add("unknown-dtype", R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8);
  add("repeated-key", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}})", 1);
  add("not-json", "{\"a\":", 0);
  // The 8-byte length alone claims 2^63 header bytes.
  Bytes huge(8, 0);
  huge[7] = 0x80;
  seeds.emplace_back("header-length-2^63", huge);
  return seeds;
}

}  // namespace vtrace::fuzz
