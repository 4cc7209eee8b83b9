// The recording runtime: a scripted session that produces every event kind this build writes, its
// fields and outcomes, event_links checked against the schema, determinism, transparency, write
// failure, concurrency and capture options. Over ~600 lines on purpose: the cases share the
// script (run_script) and its outcome, which every field check reads.
#include <flatbuffers/idl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "recorder_test_support.h"
#include "support/importing_runtime.h"
#include "support/test_support.h"
#include "vtrace/recorder/open.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/format.h"

using namespace vtrace::recorder::testing;
using vtrace::recorder::RecorderOptions;
using vtrace::recorder::RecordingRuntime;
namespace schema = vtrace::schema;

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// Runs a scripted session that reaches every event kind, including failures and foreign handles.
// Returns what the product saw, for comparison with the trace.
struct ScriptOutcome {
  std::uint64_t permit_generation = 0;
  std::vector<std::uint8_t> uploaded;
  std::vector<std::uint8_t> readback;
  vtrace::runtime::CounterSnapshot counters_after_submit;
  std::string describe_code;
};

ScriptOutcome run_script(RecordingRuntime& rec, vtrace::runtime::DeviceRuntime& other) {
  namespace rt = vtrace::runtime;
  ScriptOutcome out;
  // Admission: one success, one over capacity.
  auto permit = rec.admit(request(64, rt::ElementType::kF16, "resource.a"));
  REQUIRE(permit.has_value());
  out.permit_generation = permit->generation();
  REQUIRE_FALSE(rec.admit(request(1ull << 40, rt::ElementType::kU8)).has_value());
  auto a = rec.allocate(std::move(*permit));
  REQUIRE(a.has_value());
  // A permit consumed before allocate: allocate fails.
  auto spent = rec.admit(request(32, rt::ElementType::kU8));
  REQUIRE(spent.has_value());
  REQUIRE(spent->into_parts().has_value());
  REQUIRE_FALSE(rec.allocate(std::move(*spent)).has_value());
  auto b = allocate(rec, 64, rt::ElementType::kF16, "resource.b");
  REQUIRE(rec.buffer_descriptor(**a).size_bytes == 64);

  auto stream = rec.create_stream();
  REQUIRE(stream.has_value());
  REQUIRE(rec.stream_state(**stream) == rt::StreamState::kReady);

  out.uploaded = f16_bytes({1.0f, 2.0f, 3.0f, 4.0f});
  auto upload = rec.encode_upload(out.uploaded, layout(rt::ElementType::kF16, 4), **a, 0);
  REQUIRE(upload.has_value());
  // Byte count disagreeing with the layout.
  REQUIRE_FALSE(rec.encode_upload(out.uploaded, layout(rt::ElementType::kF16, 3), **a, 0));
  auto zero = rec.encode_zero(*b, 0, 64);
  REQUIRE(zero.has_value());
  auto copy = rec.encode_copy(**a, *b, region(0, 8, 8));
  REQUIRE(copy.has_value());
  REQUIRE_FALSE(rec.encode_copy(**a, *b, region(60, 0, 8)).has_value());

  // A foreign buffer: made by another runtime instance.
  auto foreign = allocate(other, 48, rt::ElementType::kF16, "resource.foreign");
  auto foreign_copy = rec.encode_copy(*foreign, *b, region(0, 0, 8));
  REQUIRE(foreign_copy.has_value());  // the reference runtime refuses it at submit
  REQUIRE_FALSE(rec.submit(**stream, rt::CommandBatch::singleton(std::move(*foreign_copy))));

  // A command dropped without being submitted.
  { auto dropped = rec.encode_zero(*b, 0, 2); REQUIRE(dropped.has_value()); }

  // Dense linear: out[1][2] = in[1][4] x w[2][4]^T; w lives in a (first 16 bytes), in/out in b.
  const rt::DenseLinearLaunch launch{{b.get(), 32, 8}, {a->get(), 0, 16}, {b.get(), 48, 4},
                                     1, 4, 2};
  auto linear = rec.encode_dense_linear(rt::DenseLinearRequest{{&launch, 1}, 1, 1});
  REQUIRE(linear.has_value());

  rt::CommandBatch batch;
  batch.push_initialization(std::move(*upload));
  batch.push_initialization(std::move(*zero));
  batch.push_node_initialization(3, *rt::LogicalWork::create(rt::BatchingForm::kScalar, 1, 1),
                                 std::move(*copy));
  batch.push_compute(std::move(*linear));
  batch.require_logical_execution_path_attribution();
  auto fence = rec.submit(**stream, std::move(batch));
  REQUIRE(fence.has_value());
  out.counters_after_submit = *rec.counter_snapshot();
  (void)rec.submission_attribution(**fence);
  REQUIRE_FALSE(rt::is_pending(rec.query_fence(**fence)));
  REQUIRE(rec.wait_fence(**fence).has_value());
  REQUIRE(rec.synchronize(**stream).has_value());

  // A submit on another runtime's stream: DefinitelyNotSubmitted.
  auto other_stream = other.create_stream();
  REQUIRE(other_stream.has_value());
  auto z2 = rec.encode_zero(*b, 0, 2);
  REQUIRE(z2.has_value());
  REQUIRE_FALSE(rec.submit(**other_stream, rt::CommandBatch::singleton(std::move(*z2))));

  auto back = rec.readback(**stream, **a, region(0, 0, 8), layout(rt::ElementType::kF16, 4));
  REQUIRE(back.has_value());
  out.readback = *back;
  REQUIRE_FALSE(rec.readback(**stream, **a, region(0, 0, 8), layout(rt::ElementType::kU8, 8)));

  auto report = rec.describe_error(rt::RuntimeError(rt::ErrorKind::kCopyOutOfBounds, "oops"));
  REQUIRE(report.has_value());
  out.describe_code = report->code();
  // A message the report cannot carry (empty): describe_error fails, and says why.
  REQUIRE_FALSE(rec.describe_error(rt::RuntimeError(rt::ErrorKind::kInternal, "")).has_value());

  // Optional methods: an import session (the ImportingRuntime under the recorder); the others
  // keep the spec's defaults of the reference runtime.
  auto session = rec.begin_static_weight_import();
  REQUIRE(session.has_value());
  REQUIRE(session->has_value());
  REQUIRE((*session)->get()->import_component(f16_bytes({1.0f, 2.0f}), *b, 4).has_value());
  REQUIRE((*session)->get()->seal().has_value());
  REQUIRE_FALSE(rec.supports_guarded_submission());
  REQUIRE_FALSE(
      rec.encode_static_weight_transform({b.get(), b.get(), "transform.test"}).has_value());
  auto plan =
      rt::ReusableExecutionPlan::create(4, rt::ReusableExecutionCatalogLifetime::kOnDemandBounded);
  REQUIRE(plan.has_value());
  REQUIRE(rec.configure_reusable_executables(**stream, *plan).has_value());
  REQUIRE(rec.seal_reusable_executables(**stream).has_value());
  REQUIRE(rec.reusable_executable_preparation(**stream).has_value());
  REQUIRE(rec.reusable_execution_catalog(**stream).has_value());
  REQUIRE(rec.encode_reusable_execution({"program.test", 1}).has_value());
  REQUIRE(rec.trim_reusable_executables(**stream).has_value());
  auto z3 = rec.encode_zero(*b, 0, 2);
  REQUIRE(z3.has_value());
  std::vector<rt::CommandPtr> to_coalesce;
  to_coalesce.push_back(std::move(*z3));
  auto coalesced = rec.coalesce_program_bindings(std::move(to_coalesce));
  REQUIRE(coalesced.has_value());
  REQUIRE(coalesced->size() == 1);
  auto guarded = rec.submit_guarded(**stream, rt::CommandBatch::singleton(std::move((*coalesced)[0])),
                                    rt::SubmissionGuard{8});
  REQUIRE_FALSE(guarded.has_value());
  return out;
}

}  // namespace

TEST_CASE("a recorded session stores every event kind with its inputs and outcome") {
  namespace rt = vtrace::runtime;
  auto sink = std::make_shared<MemorySink::State>();
  ScriptOutcome outcome;
  {
    auto other = make_reference("device.recorder.other");
    RecorderOptions options;
    options.workload_description = "scripted round trip";
    auto rec = record_to_memory(std::make_unique<vtrace::test::ImportingRuntime>(make_reference()),
                                sink, options);
    outcome = run_script(*rec, *other);
    auto closed = rec->close();
    REQUIRE(closed.has_value());
    CHECK(closed->events == rec->events_recorded());
    CHECK_FALSE(rec->recording_failed());
  }
  auto trace = read_trace(sink->copy());
  REQUIRE(trace.reader->complete());

  // Every kind this build writes appears (all but OptionalCall, which only 1.0-1.1 wrote).
  std::set<std::string> seen;
  for (const auto& [kind, count] : trace.counts()) seen.insert(kind);
  for (auto k = static_cast<unsigned>(fb::EventBody::MIN) + 1;
       k <= static_cast<unsigned>(fb::EventBody::MAX); ++k) {
    const std::string kind(schema::event_kind_name(static_cast<fb::EventBody>(k)));
    INFO("event kind " << kind);
    CHECK(seen.count(kind) == (kind == "OptionalCall" ? 0 : 1));
  }
  // Sequence numbers are the record ordinals; every event is required.
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    CHECK(trace.event(i).seq() == i);
    CHECK(trace.event(i).required());
  }

  // Header metadata.
  const auto* meta = schema::read_trace_metadata(trace.reader->header().metadata);
  REQUIRE(meta != nullptr);
  CHECK(str(meta->runtime_name()) == "reference");
  CHECK(str(meta->workload_description()) == "scripted round trip");
  auto descriptor = schema::read_descriptor(meta->descriptor());
  REQUIRE(descriptor.has_value());
  CHECK(descriptor->id.str() == "device.recorder.test.0");

  const auto* opened = trace.event(0).body_as_RuntimeOpened();
  REQUIRE(opened != nullptr);
  CHECK(str(opened->registry_name()) == "reference");

  auto admits = trace.all<fb::Admit>(fb::EventBody::Admit);
  REQUIRE(admits.size() == 4);
  CHECK(admits[0]->permit_generation() == outcome.permit_generation);
  CHECK(admits[0]->error() == nullptr);
  CHECK(str(admits[0]->request()->resource_id()) == "resource.a");
  CHECK_FALSE(admits[1]->permit_generation().has_value());
  CHECK(str(admits[1]->error()->kind()) == "admission_over_capacity");

  auto allocs = trace.all<fb::Allocate>(fb::EventBody::Allocate);
  REQUIRE(allocs.size() == 3);
  CHECK(allocs[0]->buffer() == 0u);
  CHECK(allocs[0]->descriptor()->size_bytes() == 64);
  CHECK(allocs[0]->descriptor()->element_type() == fb::ElementType::F16);
  REQUIRE(allocs[0]->request() != nullptr);  // the permit's request, as its Admit said
  CHECK(str(allocs[0]->request()->resource_id()) == "resource.a");
  CHECK(allocs[0]->request()->size_bytes() == 64);
  CHECK(allocs[1]->request() == nullptr);  // consumed permit
  CHECK(allocs[1]->error() != nullptr);
  CHECK(allocs[2]->buffer() == 1u);

  auto queried = trace.all<fb::BufferDescriptorQueried>(fb::EventBody::BufferDescriptorQueried);
  REQUIRE_FALSE(queried.empty());
  CHECK(queried[0]->buffer()->ordinal() == 0);
  CHECK(queried[0]->buffer()->space() == fb::RefSpace::Own);

  auto streams = trace.all<fb::StreamCreated>(fb::EventBody::StreamCreated);
  REQUIRE(streams.size() == 1);
  CHECK(streams[0]->stream() == 0u);
  auto states = trace.all<fb::StreamStateQueried>(fb::EventBody::StreamStateQueried);
  REQUIRE(states.size() == 1);
  CHECK(states[0]->state() == fb::StreamState::Ready);

  auto uploads = trace.all<fb::EncodeUpload>(fb::EventBody::EncodeUpload);
  REQUIRE(uploads.size() == 2);
  CHECK(uploads[0]->command() == 0u);
  CHECK(uploads[0]->layout()->element_count() == 4);
  CHECK(uploads[0]->payload_bytes() == 8);
  auto payload = trace.reader->blob(schema::from_fb(*uploads[0]->payload()));
  REQUIRE(payload.has_value());
  CHECK(*payload == outcome.uploaded);
  CHECK(str(uploads[1]->error()->kind()) == "upload_byte_count_mismatch");
  CHECK_FALSE(uploads[1]->command().has_value());

  auto zeros = trace.all<fb::EncodeZero>(fb::EventBody::EncodeZero);
  REQUIRE(zeros.size() >= 2);
  CHECK(zeros[0]->destination()->ordinal() == 1);
  CHECK(zeros[0]->length_bytes() == 64);

  auto copies = trace.all<fb::EncodeCopy>(fb::EventBody::EncodeCopy);
  REQUIRE(copies.size() == 3);
  CHECK(copies[0]->region()->destination_offset_bytes() == 8);
  CHECK(str(copies[1]->error()->kind()) == "copy_out_of_bounds");
  CHECK(copies[2]->source()->space() == fb::RefSpace::Foreign);
  CHECK(copies[2]->source()->ordinal() == 0);
  CHECK(copies[2]->command() == 3u);

  auto foreign = trace.all<fb::ForeignObjectSeen>(fb::EventBody::ForeignObjectSeen);
  REQUIRE(foreign.size() == 2);  // the buffer, then the stream
  CHECK(foreign[0]->object() == fb::ObjectKind::Buffer);
  CHECK(foreign[0]->buffer_descriptor()->size_bytes() == 48);
  CHECK(str(foreign[0]->buffer_descriptor()->resource_id()) == "resource.foreign");
  CHECK(foreign[1]->object() == fb::ObjectKind::Stream);

  auto released_cmds = trace.all<fb::CommandReleased>(fb::EventBody::CommandReleased);
  REQUIRE(released_cmds.size() == 1);

  auto linears = trace.all<fb::EncodeDenseLinear>(fb::EventBody::EncodeDenseLinear);
  REQUIRE(linears.size() == 1);
  REQUIRE(linears[0]->launches()->size() == 1);
  CHECK(linears[0]->launches()->Get(0)->weight().buffer().ordinal() == 0);
  CHECK(linears[0]->launches()->Get(0)->output().offset_bytes() == 48);
  CHECK(linears[0]->launches()->Get(0)->in_features() == 4);
  CHECK(linears[0]->participant_count() == 1);

  auto begins = trace.all<fb::SubmitBegin>(fb::EventBody::SubmitBegin);
  auto ends = trace.all<fb::SubmitEnd>(fb::EventBody::SubmitEnd);
  REQUIRE(begins.size() == 4);
  REQUIRE(ends.size() == 4);
  REQUIRE(begins[0]->entries()->size() == 1);
  CHECK(begins[0]->entries()->Get(0)->command()->ordinal() == 3);
  CHECK(str(ends[0]->not_submitted()->kind()) == "foreign_buffer_in_command");
  CHECK_FALSE(ends[0]->fence().has_value());
  REQUIRE(begins[1]->entries()->size() == 4);
  CHECK(begins[1]->entries()->Get(2)->node_index() == 3u);
  CHECK(begins[1]->entries()->Get(2)->logical_work()->participant_count() == 1);
  CHECK(begins[1]->entries()->Get(3)->phase() == fb::CommandPhase::Compute);
  CHECK(begins[1]->attribution_requirement() == fb::AttributionRequirement::LogicalExecutionPath);
  CHECK(ends[1]->fence() == 0u);
  CHECK(begins[2]->stream()->space() == fb::RefSpace::Foreign);
  CHECK(str(ends[2]->not_submitted()->kind()) == "foreign_stream");
  CHECK(begins[3]->guarded());
  CHECK(begins[3]->guard_maximum_commands() == 8);
  CHECK(ends[3]->rejected() == fb::GuardedRejection::AttributionUnavailable);
  // SubmitEnd names its SubmitBegin, which comes first.
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    if (const auto* end = trace.event(i).body_as_SubmitEnd()) {
      REQUIRE(end->begin_seq() < i);
      CHECK(trace.event(end->begin_seq()).body_type() == fb::EventBody::SubmitBegin);
    }
  }

  auto snapshots = trace.all<fb::CounterSnapshot>(fb::EventBody::CounterSnapshot);
  REQUIRE(snapshots.size() == 6);  // 4 submits, 2 readbacks
  CHECK(schema::from_fb(*snapshots[1]->counters()) == outcome.counters_after_submit);
  CHECK(trace.event(snapshots[1]->after_seq()).body_type() == fb::EventBody::SubmitEnd);

  auto attribution =
      trace.all<fb::SubmissionAttribution>(fb::EventBody::SubmissionAttribution);
  REQUIRE(attribution.size() == 1);
  auto rows = schema::read_attribution(attribution[0]->rows());
  REQUIRE(rows.has_value());

  auto queries = trace.all<fb::QueryFence>(fb::EventBody::QueryFence);
  REQUIRE(queries.size() == 1);
  CHECK(queries[0]->result()->kind() == fb::FenceResultKind::Terminal);
  auto waits = trace.all<fb::WaitFence>(fb::EventBody::WaitFence);
  REQUIRE(waits.size() == 1);
  auto wait = schema::read_fence_wait(waits[0]->result());
  REQUIRE(wait.has_value());
  CHECK(wait->has_value());

  auto syncs = trace.all<fb::Synchronize>(fb::EventBody::Synchronize);
  REQUIRE(syncs.size() == 1);
  CHECK(syncs[0]->error() == nullptr);

  auto readbacks = trace.all<fb::Readback>(fb::EventBody::Readback);
  REQUIRE(readbacks.size() == 2);
  auto back = trace.reader->blob(schema::from_fb(*readbacks[0]->payload()));
  REQUIRE(back.has_value());
  CHECK(*back == outcome.readback);
  CHECK(readbacks[1]->payload() == nullptr);
  CHECK(str(readbacks[1]->error()->kind()) == "readback_element_type_mismatch");

  auto describes = trace.all<fb::DescribeError>(fb::EventBody::DescribeError);
  REQUIRE(describes.size() == 2);
  CHECK(str(describes[0]->error()->kind()) == "copy_out_of_bounds");
  CHECK(str(describes[0]->report()->code()) == outcome.describe_code);
  CHECK(describes[0]->vnext_error() == nullptr);
  CHECK(str(describes[1]->error()->kind()) == "internal");
  CHECK(describes[1]->report() == nullptr);
  REQUIRE(describes[1]->vnext_error() != nullptr);
  CHECK(str(describes[1]->vnext_error()->display()).find("failure code or message is empty") !=
        std::string::npos);

  // Each optional method as its own event kind (format 1.2), none as an OptionalCall.
  CHECK(trace.all<fb::OptionalCall>(fb::EventBody::OptionalCall).empty());
  auto imports = trace.all<fb::BeginStaticWeightImport>(fb::EventBody::BeginStaticWeightImport);
  REQUIRE(imports.size() == 1);
  CHECK(imports[0]->supported());
  CHECK(imports[0]->session() == 0);
  auto components = trace.all<fb::ImportComponent>(fb::EventBody::ImportComponent);
  REQUIRE(components.size() == 1);
  CHECK(components[0]->session() == 0);
  CHECK(components[0]->destination_offset_bytes() == 4);
  CHECK(components[0]->payload_bytes() == 4);
  CHECK(components[0]->error() == nullptr);
  auto imported = trace.reader->blob(schema::from_fb(*components[0]->payload()));
  REQUIRE(imported.has_value());
  CHECK(*imported == f16_bytes({1.0f, 2.0f}));
  auto guarded = trace.all<fb::GuardedSubmissionQueried>(fb::EventBody::GuardedSubmissionQueried);
  REQUIRE(guarded.size() == 1);
  CHECK_FALSE(guarded[0]->supported());
  auto configures =
      trace.all<fb::ConfigureReusableExecutables>(fb::EventBody::ConfigureReusableExecutables);
  REQUIRE(configures.size() == 1);
  CHECK(configures[0]->maximum_executables() == 4);
  CHECK(configures[0]->catalog_lifetime() == fb::ReusableExecutionCatalogLifetime::OnDemandBounded);
  CHECK(configures[0]->preparation()->state() == fb::ReusableExecutionState::Unsupported);
  CHECK(configures[0]->error() == nullptr);
  auto coalesces = trace.all<fb::CoalesceProgramBindings>(fb::EventBody::CoalesceProgramBindings);
  REQUIRE(coalesces.size() == 1);
  REQUIRE(coalesces[0]->commands_in()->size() == 1);
  REQUIRE(coalesces[0]->commands_out()->size() == 1);
  // The optional events come in call order.
  std::vector<fb::EventBody> order;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const auto k = trace.event(i).body_type();
    if (k == fb::EventBody::BeginStaticWeightImport ||
        k == fb::EventBody::GuardedSubmissionQueried ||
        k == fb::EventBody::ConfigureReusableExecutables ||
        k == fb::EventBody::CoalesceProgramBindings) {
      order.push_back(k);
    }
  }
  CHECK(order == std::vector<fb::EventBody>{fb::EventBody::BeginStaticWeightImport,
                                            fb::EventBody::GuardedSubmissionQueried,
                                            fb::EventBody::ConfigureReusableExecutables,
                                            fb::EventBody::CoalesceProgramBindings});

  // Handles released when the script's scope ended.
  CHECK(trace.all<fb::BufferReleased>(fb::EventBody::BufferReleased).size() == 2);
  CHECK(trace.all<fb::StreamReleased>(fb::EventBody::StreamReleased).size() == 1);
  CHECK(trace.all<fb::FenceReleased>(fb::EventBody::FenceReleased).size() == 1);

  // The footer summary agrees with the events.
  const auto* summary = schema::read_trace_summary(trace.reader->summary());
  REQUIRE(summary != nullptr);
  CHECK(summary->events() == trace.records.size());
  CHECK(summary->submits() == 4);
  std::size_t summed = 0;
  for (const auto* c : *summary->event_counts()) summed += c->count();
  CHECK(summed == trace.records.size());
}

TEST_CASE("recording the same workload twice gives byte-identical traces") {
  auto first = std::make_shared<MemorySink::State>();
  auto second = std::make_shared<MemorySink::State>();
  for (const auto& sink : {first, second}) {
    auto rec = record_to_memory(make_reference(), sink);
    (void)run_small_workload(*rec);
    REQUIRE(rec->close().has_value());
  }
  REQUIRE(first->copy().size() > 0);
  CHECK(first->copy() == second->copy());
}

TEST_CASE("recording does not change the results the product sees") {
  auto raw = make_reference();
  const auto plain = run_small_workload(*raw, 32, 3, 4);
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(make_reference(), sink);
  const auto recorded = run_small_workload(*rec, 32, 3, 4);
  CHECK(recorded.readbacks == plain.readbacks);
  CHECK(recorded.errors == plain.errors);
  REQUIRE(plain.counters.has_value());
  CHECK(recorded.counters == plain.counters);
  REQUIRE(rec->close().has_value());
  // And the trace holds what the product saw.
  auto trace = read_trace(sink->copy());
  auto readbacks = trace.all<fb::Readback>(fb::EventBody::Readback);
  std::vector<std::vector<std::uint8_t>> stored;
  for (const auto* r : readbacks) {
    if (r->payload() == nullptr) continue;
    auto bytes = trace.reader->blob(schema::from_fb(*r->payload()));
    REQUIRE(bytes.has_value());
    stored.push_back(*bytes);
  }
  CHECK(stored == plain.readbacks);
}

TEST_CASE("a trace that cannot be written reports the failure at close and changes nothing") {
  auto raw = make_reference();
  const auto plain = run_small_workload(*raw);
  auto sink = schema::open_raw_file_sink("/dev/full");
  REQUIRE(sink.has_value());
  auto created = RecordingRuntime::create(make_reference(), "reference", std::move(*sink));
  REQUIRE(created.has_value());
  auto& rec = **created;
  const auto recorded = run_small_workload(rec);
  CHECK(recorded.readbacks == plain.readbacks);
  CHECK(recorded.errors == plain.errors);
  CHECK(recorded.counters == plain.counters);
  auto closed = rec.close();
  REQUIRE_FALSE(closed.has_value());
  CHECK(closed.error().kind == schema::TraceErrorKind::kIo);
  CHECK(rec.recording_failed());
  // close() is idempotent: the same failure again.
  auto again = rec.close();
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().message == closed.error().message);
}

TEST_CASE("a payload the trace cannot hold stops the recording, and close says so though the "
          "file is complete") {
  // The writer refuses the payload and goes on; the recorder stops at it. The file ends well (the
  // events before the refusal, a footer), but close() must still report why recording stopped.
  namespace rt = vtrace::runtime;
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(make_reference(), sink);
  auto stream = rec->create_stream();
  REQUIRE(stream.has_value());
  auto target = allocate(*rec, 64, rt::ElementType::kU8);
  const std::vector<std::uint8_t> huge(schema::kMaxRecordBytes, 1);
  auto upload = rec->encode_upload(huge, layout(rt::ElementType::kU8, huge.size()), *target, 0);
  // The product sees the runtime's answer (64 bytes cannot take it), unchanged by the recorder.
  REQUIRE_FALSE(upload.has_value());
  {
    auto plain = make_reference("device.recorder.plain");
    auto plain_target = allocate(*plain, 64, rt::ElementType::kU8);
    auto answer =
        plain->encode_upload(huge, layout(rt::ElementType::kU8, huge.size()), *plain_target, 0);
    REQUIRE_FALSE(answer.has_value());
    CHECK(upload.error().kind() == answer.error().kind());
    CHECK(upload.error().message() == answer.error().message());
  }
  CHECK(rec->recording_failed());
  const auto recorded = rec->events_recorded();
  target.reset();
  auto closed = rec->close();
  REQUIRE_FALSE(closed.has_value());
  CHECK(closed.error().kind == schema::TraceErrorKind::kTooLarge);
  CHECK(closed.error().message.find(fmt::format("the limit is {}", schema::kMaxRecordBytes -
                                                                       schema::kBlobRecordHeaderBytes)) !=
        std::string::npos);
  auto trace = read_trace(sink->copy());
  CHECK(trace.reader->complete());
  CHECK(trace.records.size() == recorded);
}

TEST_CASE("four threads recording at once lose no event") {
  namespace rt = vtrace::runtime;
  constexpr int kThreads = 4;
  constexpr int kIterations = 25;
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(make_reference(), sink);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&rec, t] {
        // No Catch2 assertion on these threads (Catch2 is not thread-safe: ThreadSanitizer
        // reports its assertion counters): a failure returns early and the counts below fail.
        auto wanted =
            rt::BufferRequest::create(*rt::ResourceId::create("resource.test"), 64, 16,
                                      rt::BufferUsage::kActivations, rt::ElementType::kU8);
        if (!wanted) return;
        auto stream = rec->create_stream();
        auto buffer = rec->admit(std::move(*wanted));
        if (!stream || !buffer) return;
        auto storage = rec->allocate(std::move(*buffer));
        if (!storage) return;
        for (int i = 0; i < kIterations; ++i) {
          std::vector<std::uint8_t> bytes(64, static_cast<std::uint8_t>(t * 100 + i));
          auto up = rec->encode_upload(bytes, *rt::HostTransferLayout::create(rt::ElementType::kU8, 64),
                                       **storage, 0);
          if (!up) return;
          auto fence = rec->submit(**stream, rt::CommandBatch::singleton(std::move(*up)));
          if (!fence) return;
          if (!rec->wait_fence(**fence)) return;
          auto back = rec->readback(**stream, **storage, *rt::CopyRegion::create(0, 0, 64),
                                    *rt::HostTransferLayout::create(rt::ElementType::kU8, 64));
          if (!back || *back != bytes) return;
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  REQUIRE(rec->close().has_value());
  auto trace = read_trace(sink->copy());
  for (std::size_t i = 0; i < trace.records.size(); ++i) REQUIRE(trace.event(i).seq() == i);
  auto counts = trace.counts();
  CHECK(counts["StreamCreated"] == kThreads);
  CHECK(counts["Admit"] == kThreads);
  CHECK(counts["Allocate"] == kThreads);
  CHECK(counts["EncodeUpload"] == kThreads * kIterations);
  CHECK(counts["SubmitBegin"] == kThreads * kIterations);
  CHECK(counts["SubmitEnd"] == kThreads * kIterations);
  CHECK(counts["WaitFence"] == kThreads * kIterations);
  CHECK(counts["Readback"] == kThreads * kIterations);
  CHECK(counts["FenceReleased"] == kThreads * kIterations);
  CHECK(counts["CounterSnapshot"] == 2 * kThreads * kIterations);
  CHECK(counts["BufferReleased"] == kThreads);
  CHECK(counts["StreamReleased"] == kThreads);
  // Per stream: each thread's submits and readbacks add up to its iterations.
  std::map<std::uint64_t, int> submits_per_stream;
  std::map<std::uint64_t, int> readbacks_per_stream;
  for (const auto* b : trace.all<fb::SubmitBegin>(fb::EventBody::SubmitBegin)) {
    ++submits_per_stream[b->stream()->ordinal()];
  }
  for (const auto* r : trace.all<fb::Readback>(fb::EventBody::Readback)) {
    ++readbacks_per_stream[r->stream()->ordinal()];
  }
  REQUIRE(submits_per_stream.size() == kThreads);
  for (const auto& [stream, n] : submits_per_stream) CHECK(n == kIterations);
  for (const auto& [stream, n] : readbacks_per_stream) CHECK(n == kIterations);
  std::size_t total = 0;
  for (const auto& [kind, n] : counts) total += n;
  CHECK(total == trace.records.size());
  CHECK(trace.records.size() == rec->events_recorded());
}

namespace {

// A runtime that forwards to the reference runtime and, inside submit and wait_fence, reads the
// trace recorded so far (the bytes `peek` returns: a memory sink's, or a .partial file's) and
// notes the kind of the last event a crash at that point would leave behind ("none" when there is
// none): "submit <kind>" or "wait <kind>".
class PeekingRuntime final : public vtrace::runtime::ForwardingRuntime {
 public:
  using Peek = std::function<std::vector<std::uint8_t>()>;
  PeekingRuntime(std::unique_ptr<vtrace::runtime::DeviceRuntime> inner, Peek peek,
                 std::shared_ptr<std::vector<std::string>> seen)
      : ForwardingRuntime(std::move(inner)), peek_(std::move(peek)), seen_(std::move(seen)) {}

  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& s,
                                                                 rt::CommandBatch b) override {
    seen_->push_back("submit " + last_on_disk());
    return ForwardingRuntime::submit(s, std::move(b));
  }
  std::expected<rt::TerminalReceipt, rt::FenceIndeterminate> wait_fence(
      const rt::Fence& fence) override {
    seen_->push_back("wait " + last_on_disk());
    return ForwardingRuntime::wait_fence(fence);
  }

 private:
  // What a crash here would leave behind: the bytes written so far, read as a recovered file.
  std::string last_on_disk() const {
    auto reader =
        vtrace::schema::TraceReader::open(vtrace::schema::memory_source(peek_(), "partial.vtrace"));
    std::string last = "none";
    if (reader) {
      const auto n = (*reader)->event_count();
      if (n > 0) {
        (void)(*reader)->visit_events(n - 1, n, [&](std::uint64_t, std::span<const std::uint8_t> e) {
          last = std::string(vtrace::schema::event_kind_name(*vtrace::schema::event_of(e)));
          return true;
        });
      }
    }
    return last;
  }
  Peek peek_;
  std::shared_ptr<std::vector<std::string>> seen_;
};

// The entries of `seen` made in `call` ("submit", "wait"), without the call's name.
std::vector<std::string> seen_in(const std::vector<std::string>& seen, const std::string& call) {
  std::vector<std::string> out;
  for (const auto& s : seen) {
    if (s.starts_with(call + " ")) out.push_back(s.substr(call.size() + 1));
  }
  return out;
}

// Records run_small_workload(8, 1, 2) to memory with `options`; returns, for each submit, the
// last event kind the sink held while the wrapped submit ran.
std::vector<std::string> kinds_seen_in_submit(const RecorderOptions& options) {
  auto sink = std::make_shared<MemorySink::State>();
  auto seen = std::make_shared<std::vector<std::string>>();
  auto peeking = std::make_unique<PeekingRuntime>(
      make_reference(), [sink] { return sink->copy(); }, seen);
  auto rec = record_to_memory(std::move(peeking), sink, options);
  (void)run_small_workload(*rec, 8, 1, 2);
  REQUIRE(rec->close().has_value());
  return seen_in(*seen, "submit");
}

}  // namespace

TEST_CASE("a submit's intent is on disk before the wrapped submit runs, by default") {
  const RecorderOptions defaults;
  CHECK(defaults.flush_before_submit);
  const auto seen = kinds_seen_in_submit(defaults);
  // 1 weight upload + 2 steps.
  REQUIRE(seen.size() == 3);
  for (const auto& kind : seen) CHECK(kind == "SubmitBegin");
}

TEST_CASE("every event before a fence wait is on disk while the wrapped wait runs, with or "
          "without flush_before_submit") {
  for (const bool before_submit : {true, false}) {
    INFO("flush_before_submit " << before_submit);
    RecorderOptions options;
    options.flush_before_submit = before_submit;
    auto sink = std::make_shared<MemorySink::State>();
    auto seen = std::make_shared<std::vector<std::string>>();
    auto rec = record_to_memory(
        std::make_unique<PeekingRuntime>(make_reference(), [sink] { return sink->copy(); }, seen),
        sink, options);
    (void)run_small_workload(*rec, 8, 1, 2);
    REQUIRE(rec->close().has_value());
    // The kind of the event recorded just before each WaitFence: what the wait must have seen.
    auto trace = read_trace(sink->copy());
    std::vector<std::string> before_waits;
    for (std::size_t i = 1; i < trace.records.size(); ++i) {
      if (trace.event(i).body_type() == fb::EventBody::WaitFence) {
        before_waits.emplace_back(schema::event_kind_name(trace.event(i - 1)));
      }
    }
    REQUIRE(before_waits.size() == 3);
    CHECK(seen_in(*seen, "wait") == before_waits);
  }
}

TEST_CASE("with flush_before_submit off a submit's intent waits in memory for the next fence wait") {
  RecorderOptions options;
  options.flush_before_submit = false;
  const auto seen = kinds_seen_in_submit(options);
  REQUIRE(seen.size() == 3);
  // Nothing was flushed before the first submit; later ones see what the previous wait flushed.
  CHECK(seen[0] == "none");
  for (const auto& kind : seen) CHECK(kind != "SubmitBegin");
}

TEST_CASE("VTRACE_CAPTURE records a submit's intent before the wrapped submit runs") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace_capture_intent_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = dir / "intent.vtrace";
  // A registry whose runtime peeks at the capture's .partial file from inside submit (the file
  // is numbered when this process captured before, so it is found by its extension).
  auto seen = std::make_shared<std::vector<std::string>>();
  vtrace::runtime::RuntimeRegistry registry;
  registry.add("peeking", "reference, peeking at the capture file in submit",
               [seen, dir](const vtrace::runtime::RuntimeOpenOptions&)
                   -> vtrace::runtime::Result<std::unique_ptr<vtrace::runtime::DeviceRuntime>> {
                 auto read_partial = [dir] {
                   for (const auto& entry : std::filesystem::directory_iterator(dir)) {
                     if (entry.path().extension() != ".partial") continue;
                     std::ifstream in(entry.path(), std::ios::binary);
                     return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
                   }
                   return std::vector<std::uint8_t>();
                 };
                 return std::make_unique<PeekingRuntime>(make_reference(), read_partial, seen);
               });
  ::setenv("VTRACE_CAPTURE", path.c_str(), 1);
  {
    auto captured = vtrace::recorder::open_runtime("peeking", {}, registry);
    ::unsetenv("VTRACE_CAPTURE");
    REQUIRE(captured.has_value());
    REQUIRE(dynamic_cast<RecordingRuntime*>(captured->get()) != nullptr);
    (void)run_small_workload(**captured, 8, 1, 2);
  }
  const auto submits = seen_in(*seen, "submit");
  REQUIRE(submits.size() == 3);
  for (const auto& kind : submits) CHECK(kind == "SubmitBegin");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  REQUIRE(files.size() == 1);  // finalised: renamed from .partial
  CHECK(files[0].extension() == ".vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE makes open_runtime record to the named file") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace_capture_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = dir / "capture.vtrace";

  ::unsetenv("VTRACE_CAPTURE");
  {
    auto plain = vtrace::recorder::open_runtime("reference");
    REQUIRE(plain.has_value());
    CHECK(dynamic_cast<RecordingRuntime*>(plain->get()) == nullptr);
  }

  ::setenv("VTRACE_CAPTURE", path.c_str(), 1);
  ::setenv("VTRACE_CAPTURE_LEVEL", "5", 1);
  ::setenv("VTRACE_CAPTURE_WORKLOAD", "capture test", 1);
  {
    auto first = vtrace::recorder::open_runtime("reference");
    REQUIRE(first.has_value());
    REQUIRE(dynamic_cast<RecordingRuntime*>(first->get()) != nullptr);
    (void)run_small_workload(**first);
    auto second = vtrace::recorder::open_runtime("reference", {"device.vtrace.1"});
    REQUIRE(second.has_value());
    (void)run_small_workload(**second, 8, 1, 1);
  }  // the destructors finalise both traces
  // Capture that cannot start never costs the product its runtime: it runs unwrapped.
  ::setenv("VTRACE_CAPTURE_LEVEL", "not-a-number", 1);
  auto bad_level = vtrace::recorder::open_runtime("reference");
  ::unsetenv("VTRACE_CAPTURE_LEVEL");
  ::setenv("VTRACE_CAPTURE", (dir / "missing-dir" / "x.vtrace").c_str(), 1);
  auto bad_path = vtrace::recorder::open_runtime("reference");
  ::unsetenv("VTRACE_CAPTURE");
  ::unsetenv("VTRACE_CAPTURE_WORKLOAD");
  for (auto* bad : {&bad_level, &bad_path}) {
    REQUIRE(bad->has_value());
    CHECK(dynamic_cast<RecordingRuntime*>((*bad)->get()) == nullptr);
    CHECK(run_small_workload(***bad).readbacks.size() == 3);
  }

  std::vector<std::filesystem::path> traces;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) traces.push_back(entry.path());
  REQUIRE(traces.size() == 2);  // two runtimes, two files, none left .partial
  for (const auto& trace_path : traces) {
    CHECK(trace_path.extension() == ".vtrace");
    auto source = vtrace::schema::open_file_source(trace_path);
    REQUIRE(source.has_value());
    auto trace = read_trace(std::move(*source));
    CHECK(trace.reader->complete());
    const auto* meta = vtrace::schema::read_trace_metadata(trace.reader->header().metadata);
    REQUIRE(meta != nullptr);
    CHECK(str(meta->runtime_name()) == "reference");
    CHECK(str(meta->workload_description()) == "capture test");
    CHECK(meta->recorder()->zstd_level() == 5);
    CHECK(trace.counts()["Readback"] > 0);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE says in one sentence on stderr when the trace cannot be finished") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace_capture_close_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto err_file = dir.parent_path() /
                        ("vtrace_capture_close_err_" + std::to_string(::getpid()));
  StderrCapture err(err_file);
  ::setenv("VTRACE_CAPTURE", (dir / "full.vtrace").c_str(), 1);
  auto fine = vtrace::recorder::open_runtime("reference");
  auto failing = vtrace::recorder::open_runtime("reference", {"device.vtrace.1"});
  ::unsetenv("VTRACE_CAPTURE");
  REQUIRE(fine.has_value());
  REQUIRE(failing.has_value());
  REQUIRE(dynamic_cast<RecordingRuntime*>(fine->get()) != nullptr);
  REQUIRE(dynamic_cast<RecordingRuntime*>(failing->get()) != nullptr);
  // The second runtime of the family records to full.2.vtrace (open.h).
  const auto path = dir / "full.2.vtrace";
  REQUIRE(std::filesystem::exists(dir / "full.2.vtrace.partial"));
  const auto fine_result = run_small_workload(**fine);
  const auto failing_result = run_small_workload(**failing);
  fine->reset();
  CHECK(err.text().empty());  // a capture that ends well says nothing
  // The trace's final name is taken by a folder: the rename that finishes it fails.
  std::filesystem::create_directories(path / "in-the-way");
  failing->reset();
  const auto said = err.text();
  INFO(said);
  const auto partial = path.string() + ".partial";
  CHECK(said.starts_with(fmt::format("vtrace: VTRACE_CAPTURE={}: writing the trace failed: ",
                                     (dir / "full.vtrace").string())));
  // The repair goes beside the folder that took the name (`repair` would refuse the folder).
  CHECK(said.ends_with(fmt::format("; the events recorded so far are in {} (`vtrace repair {} -o "
                                   "{}` finishes it)\n",
                                   partial, partial, (dir / "full.2.repaired.vtrace").string())));
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  // The product saw what it sees without capture; the events are in the .partial.
  CHECK(failing_result.readbacks == fine_result.readbacks);
  auto source = vtrace::schema::open_file_source(partial);
  REQUIRE(source.has_value());
  CHECK(read_trace(std::move(*source)).counts()["Readback"] > 0);
  std::filesystem::remove(err_file);
  std::filesystem::remove_all(dir);
}

namespace {

// The object references and payload ids anywhere in one event's JSON (FlatBuffers' text generator
// over schema/vtrace.fbs): every {ordinal, space} object not in the Null space, and every
// {low, high} BlobRef, in field order.
void collect_links(const nlohmann::ordered_json& j,
                   std::vector<std::pair<std::uint64_t, std::string>>& refs, std::uint64_t& blobs) {
  if (j.is_object()) {
    if (j.size() == 2 && j.contains("ordinal") && j.contains("space")) {
      if (j["space"] != "Null") refs.emplace_back(j["ordinal"].get<std::uint64_t>(), j["space"]);
      return;
    }
    if (j.size() == 2 && j.contains("low") && j.contains("high")) {
      ++blobs;
      return;
    }
    for (const auto& [key, value] : j.items()) collect_links(value, refs, blobs);
  } else if (j.is_array()) {
    for (const auto& value : j) collect_links(value, refs, blobs);
  }
}

}  // namespace

TEST_CASE("a recording whose file receives no byte says so and leaves no empty .partial") {
#if defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("the child starts the writer's threads after a fork, which TSan refuses");
#endif
  // In a child with a file size limit of 0 (SIGXFSZ ignored): the .partial opens, and the
  // writer's first write, the header's, fails with EFBIG. The notice goes to a pipe.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace_nothing_written_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = dir / "t.vtrace";
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::signal(SIGXFSZ, SIG_IGN);
    const struct ::rlimit none {0, 0};
    if (::setrlimit(RLIMIT_FSIZE, &none) != 0) ::_exit(4);
    RecorderOptions options;
    options.failure_notice = "test";
    auto rec = RecordingRuntime::create(make_reference(), "reference", path, options);
    if (!rec) ::_exit(5);
    (void)run_small_workload(**rec);
    ::_exit((*rec)->close().has_value() ? 0 : 3);
  }
  ::close(pipe_fds[1]);
  std::string said;
  char buffer[512];
  for (::ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    said.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO(said);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(said == fmt::format("vtrace: test: writing the trace failed: cannot write {}.partial: "
                            "File too large; nothing had reached the file, and none is left\n",
                            path.string()));
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("event_links names every object reference and payload of every event kind") {
  // Checked against the schema itself: the references and payloads a reflection walk finds in
  // each event of the script (every kind this build writes) are the ones event_links lists, so a
  // kind or a field added to vtrace.fbs without its line in event_links.cpp fails here.
  namespace rt = vtrace::runtime;
  auto sink = std::make_shared<MemorySink::State>();
  {
    auto other = make_reference("device.recorder.other");
    auto rec =
        record_to_memory(std::make_unique<vtrace::test::ImportingRuntime>(make_reference()), sink);
    (void)run_script(*rec, *other);
    REQUIRE(rec->close().has_value());
  }
  auto trace = read_trace(sink->copy());
  std::ifstream fbs(std::filesystem::path(VTRACE_SOURCE_DIR) / "schema" / "vtrace.fbs");
  REQUIRE(fbs.good());
  const std::string schema_text((std::istreambuf_iterator<char>(fbs)), {});
  flatbuffers::Parser parser;
  parser.opts.strict_json = true;
  REQUIRE(parser.Parse(schema_text.c_str()));
  std::set<std::string> kinds;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const auto& event = trace.event(i);
    INFO(fmt::format("event {} ({})", i, schema::event_kind_name(event)));
    std::string text;
    REQUIRE(flatbuffers::GenerateText(parser, trace.records[i].data(), &text));
    std::vector<std::pair<std::uint64_t, std::string>> expected;
    std::uint64_t blobs = 0;
    const auto body = nlohmann::ordered_json::parse(text)["body"];
    collect_links(body, expected, blobs);
    const auto links = schema::event_links(event);
    std::vector<std::pair<std::uint64_t, std::string>> listed;
    for (const auto& use : links.uses) {
      // An import session is named by its ordinal (the `session` field), not by an ObjectRef.
      if (use.kind == schema::ObjectKind::kImportSession) {
        CHECK(body["session"] == use.ref.ordinal);
        continue;
      }
      listed.emplace_back(use.ref.ordinal,
                          use.ref.space == schema::ObjectRef::Space::kOwn ? "Own" : "Foreign");
    }
    CHECK(listed == expected);
    CHECK(links.payloads.size() == blobs);
    kinds.insert(std::string(schema::event_kind_name(event)));
  }
  CHECK(kinds.size() == static_cast<std::size_t>(fb::EventBody::MAX) - 1);  // all but OptionalCall
}

TEST_CASE("a handle of another recording is recorded as foreign, not as this recording's own") {
  // Both recordings wrap their handles the same way; only the owner tells them apart. Each
  // recording's first buffer is its own ordinal 0, so taking the other's for one's own would
  // name this recording's buffer instead.
  auto sink_a = std::make_shared<MemorySink::State>();
  auto sink_b = std::make_shared<MemorySink::State>();
  auto a = record_to_memory(make_reference(), sink_a);
  auto b = record_to_memory(make_reference(), sink_b);
  rt::BufferPtr buffer_a = allocate(*a, 64, rt::ElementType::kU8);
  rt::BufferPtr buffer_b = allocate(*b, 32, rt::ElementType::kU8);
  // The host runtimes encode another instance's buffer (submit refuses it).
  auto zero = b->encode_zero(*buffer_a, 0, 64);
  REQUIRE(zero.has_value());
  zero->reset();
  buffer_b.reset();
  REQUIRE(b->close().has_value());
  const auto trace = read_trace(sink_b->copy());
  const auto zeros = trace.all<fb::EncodeZero>(fb::EventBody::EncodeZero);
  REQUIRE(zeros.size() == 1);
  CHECK(zeros[0]->destination()->space() == fb::RefSpace::Foreign);
  CHECK(zeros[0]->destination()->ordinal() == 0);
  const auto foreign = trace.all<fb::ForeignObjectSeen>(fb::EventBody::ForeignObjectSeen);
  REQUIRE(foreign.size() == 1);
  CHECK(foreign[0]->object() == fb::ObjectKind::Buffer);
  CHECK(foreign[0]->buffer_descriptor()->size_bytes() == 64);
  buffer_a.reset();
  REQUIRE(a->close().has_value());
}
