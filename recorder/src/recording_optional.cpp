// RecordingRuntime: the optional DeviceRuntime methods (spec 5.2) and the static-weight import
// session. Each records its own event kind (format 1.2: GuardedSubmissionQueried,
// BeginStaticWeightImport, ImportComponent, ...; vtrace.fbs) through the bracket of call_bracket.h.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "call_bracket.h"
#include "recorder_state.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/schema/events.h"

namespace vtrace::recorder {

namespace {

// Records seal_reusable_executables or reusable_executable_preparation, whose events differ only
// in their table (`Builder` is its builder): the stream, then the preparation or the error.
template <typename Builder>
void record_preparation(Call& call, const rt::Stream& stream,
                        const rt::Result<rt::ReusableExecutionPreparation>& r) {
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& stream_ref) {
                flatbuffers::Offset<fb::ReusablePreparation> preparation;
                if (r) preparation = schema::build_preparation(e.fbb(), *r);
                const auto error = e.error_of(r);
                Builder b(e.fbb());
                b.add_stream(&stream_ref);
                b.add_preparation(preparation);
                b.add_error(error);
                return b.Finish();
              });
}

class RecordedImportSession final : public rt::StaticWeightImportSession {
 public:
  RecordedImportSession(RecordingRuntime::State* s, std::uint64_t o,
                        std::unique_ptr<rt::StaticWeightImportSession> in)
      : state_(s), ordinal_(o), inner_(std::move(in)) {}
  // The format has no release event for a session; a flight recorder still learns it is gone
  // (one dropped unsealed, after a failed import, would otherwise stop every later checkpoint).
  ~RecordedImportSession() override {
    inner_.reset();
    Call call(*state_);
    call.session_dropped(ordinal_);
  }
  RecordedImportSession(const RecordedImportSession&) = delete;
  RecordedImportSession& operator=(const RecordedImportSession&) = delete;

  rt::Result<void> import_component(std::span<const std::uint8_t> payload,
                                    const rt::Buffer& destination,
                                    std::uint64_t destination_offset_bytes) override {
    Call call(*state_);
    auto r = inner_->import_component(payload, *unwrap(&destination), destination_offset_bytes);
    auto blob = call.put_blob(payload, 1);
    call.record([&](Refs& refs) { return refs.buffer(&destination); },
                [&](Event& e, const fb::ObjectRef& dst) {
                  const auto error = e.error_of(r);
                  const auto payload_ref = blob ? std::optional(to_fb(*blob)) : std::nullopt;
                  fb::ImportComponentBuilder b(e.fbb());
                  b.add_session(ordinal_);
                  b.add_destination(&dst);
                  b.add_destination_offset_bytes(destination_offset_bytes);
                  if (payload_ref) b.add_payload(&*payload_ref);
                  b.add_payload_bytes(payload.size());
                  b.add_error(error);
                  return b.Finish();
                });
    return r;
  }

  rt::Result<void> seal() override {
    Call call(*state_);
    auto r = inner_->seal();
    call.record([&](Event& e) {
      return fb::CreateSealStaticWeightImport(e.fbb(), ordinal_, e.error_of(r));
    });
    return r;
  }

 private:
  RecordingRuntime::State* state_;
  std::uint64_t ordinal_;
  std::unique_ptr<rt::StaticWeightImportSession> inner_;
};

}  // namespace

std::optional<rt::Result<std::unique_ptr<rt::StaticWeightImportSession>>>
RecordingRuntime::begin_static_weight_import() {
  Call call(*state_);
  auto r = call.inner().begin_static_weight_import();
  const auto ordinal = call.mint(detail::kSession, r && *r);
  call.record([&](Event& e) {
    const auto error = r && !*r ? e.error(r->error()) : flatbuffers::Offset<fb::Error>{};
    fb::BeginStaticWeightImportBuilder b(e.fbb());
    b.add_supported(r.has_value());
    if (ordinal) b.add_session(*ordinal);
    b.add_error(error);
    return b.Finish();
  });
  if (!ordinal) return r;
  return rt::Result<std::unique_ptr<rt::StaticWeightImportSession>>(
      call.own<RecordedImportSession>(ordinal, std::move(**r)));
}

std::optional<rt::Result<rt::CommandPtr>> RecordingRuntime::encode_static_weight_transform(
    const rt::StaticWeightTransformRequest& request) {
  Call call(*state_);
  rt::StaticWeightTransformRequest forwarded{unwrap(request.source), unwrap(request.destination),
                                             request.transform_id};
  auto r = call.inner().encode_static_weight_transform(forwarded);
  const auto ordinal = call.mint(detail::kCommand, r && *r);
  call.record(
      // Braces: the references are resolved left to right (ForeignObjectSeen order).
      [&](Refs& refs) {
        return std::pair{refs.buffer(request.source), refs.buffer(request.destination)};
      },
      [&](Event& e, const auto& buffers) {
        const auto id = e.fbb().CreateString(request.transform_id);
        const auto error = r && !*r ? e.error(r->error()) : flatbuffers::Offset<fb::Error>{};
        fb::EncodeStaticWeightTransformBuilder b(e.fbb());
        b.add_source(&buffers.first);
        b.add_destination(&buffers.second);
        b.add_transform_id(id);
        b.add_supported(r.has_value());
        if (ordinal) b.add_command(*ordinal);
        b.add_error(error);
        return b.Finish();
      });
  if (!ordinal) return r;
  return rt::Result<rt::CommandPtr>(call.own<detail::RecordedCommand>(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::configure_reusable_executables(
    rt::Stream& stream, const rt::ReusableExecutionPlan& plan) {
  Call call(*state_);
  auto r = call.inner().configure_reusable_executables(unwrap(stream), plan);
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& stream_ref) {
                flatbuffers::Offset<fb::ReusablePreparation> preparation;
                if (r) preparation = schema::build_preparation(e.fbb(), *r);
                const auto error = e.error_of(r);
                fb::ConfigureReusableExecutablesBuilder b(e.fbb());
                b.add_stream(&stream_ref);
                b.add_maximum_executables(plan.maximum_executables());
                b.add_catalog_lifetime(to_fb(plan.catalog_lifetime()));
                b.add_preparation(preparation);
                b.add_error(error);
                return b.Finish();
              });
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::seal_reusable_executables(
    rt::Stream& stream) {
  Call call(*state_);
  auto r = call.inner().seal_reusable_executables(unwrap(stream));
  record_preparation<fb::SealReusableExecutablesBuilder>(call, stream, r);
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::reusable_executable_preparation(
    const rt::Stream& stream) const {
  Call call(*state_);
  auto r = call.inner().reusable_executable_preparation(unwrap(stream));
  record_preparation<fb::ReusablePreparationQueriedBuilder>(call, stream, r);
  return r;
}

rt::Result<std::vector<rt::ReusableExecutionProgram>> RecordingRuntime::reusable_execution_catalog(
    const rt::Stream& stream) const {
  Call call(*state_);
  auto r = call.inner().reusable_execution_catalog(unwrap(stream));
  call.record(
      [&](Refs& refs) { return refs.stream(&stream); },
      [&](Event& e, const fb::ObjectRef& stream_ref) {
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::ReusableProgram>>> catalog;
        if (r) {
          std::vector<flatbuffers::Offset<fb::ReusableProgram>> programs;
          for (const auto& p : *r) {
            programs.push_back(fb::CreateReusableProgram(
                e.fbb(), e.fbb().CreateString(p.program_id), p.node_count));
          }
          catalog = e.fbb().CreateVector(programs);
        }
        return fb::CreateReusableCatalogQueried(e.fbb(), &stream_ref, catalog, e.error_of(r));
      });
  return r;
}

rt::Result<std::optional<rt::CommandPtr>> RecordingRuntime::encode_reusable_execution(
    const rt::ReusableExecutionInvocation& invocation) {
  Call call(*state_);
  auto r = call.inner().encode_reusable_execution(invocation);
  const auto ordinal = call.mint(detail::kCommand, r && r->has_value());
  call.record([&](Event& e) {
    const auto id = e.fbb().CreateString(invocation.program_id);
    const auto error = e.error_of(r);
    fb::EncodeReusableExecutionBuilder b(e.fbb());
    b.add_program_id(id);
    b.add_node_index(invocation.node_index);
    if (ordinal) b.add_command(*ordinal);
    b.add_error(error);
    return b.Finish();
  });
  if (!ordinal) return r;
  return std::optional<rt::CommandPtr>(call.own<detail::RecordedCommand>(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionTrim> RecordingRuntime::trim_reusable_executables(
    rt::Stream& stream) {
  Call call(*state_);
  auto r = call.inner().trim_reusable_executables(unwrap(stream));
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& stream_ref) {
                const auto error = e.error_of(r);
                fb::TrimReusableExecutablesBuilder b(e.fbb());
                b.add_stream(&stream_ref);
                if (r) {
                  b.add_released_executables(r->released_executables);
                  b.add_released_rejections(r->released_rejections);
                }
                b.add_error(error);
                return b.Finish();
              });
  return r;
}

rt::Result<std::vector<rt::CommandPtr>> RecordingRuntime::coalesce_program_bindings(
    std::vector<rt::CommandPtr> commands) {
  Call call(*state_);
  // The references before the wrapped call: unwrapping the commands ends their wrappers.
  const auto commands_in = call.resolve([&](Refs& refs) {
    std::vector<fb::ObjectRef> in;
    for (const auto& c : commands) in.push_back(refs.command(c.get()));
    return in;
  });
  std::vector<rt::CommandPtr> forwarded;
  forwarded.reserve(commands.size());
  for (auto& c : commands) forwarded.push_back(unwrap(std::move(c)));
  auto r = call.inner().coalesce_program_bindings(std::move(forwarded));
  const auto ordinals = call.mint_each(detail::kCommand, r ? r->size() : 0);
  call.record([&](Event& e) {
    const auto in = e.fbb().CreateVectorOfStructs(commands_in);
    flatbuffers::Offset<flatbuffers::Vector<std::uint64_t>> out;
    if (r) out = e.fbb().CreateVector(ordinals);
    return fb::CreateCoalesceProgramBindings(e.fbb(), in, out, e.error_of(r));
  });
  if (!r) return r;
  std::vector<rt::CommandPtr> out;
  out.reserve(r->size());
  for (std::size_t i = 0; i < r->size(); ++i) {
    out.push_back(call.own<detail::RecordedCommand>(ordinals[i], std::move((*r)[i])));
  }
  return out;
}

bool RecordingRuntime::supports_guarded_submission() const {
  Call call(*state_);
  const bool supported = call.inner().supports_guarded_submission();
  call.record([&](Event& e) { return fb::CreateGuardedSubmissionQueried(e.fbb(), supported); });
  return supported;
}

std::optional<rt::SubmissionAttribution> RecordingRuntime::submission_attribution(
    const rt::Fence& fence) const {
  Call call(*state_);
  auto a = call.inner().submission_attribution(unwrap(fence));
  call.record(
      [&](Refs& refs) { return refs.fence(&fence); },
      [&](Event& e, const fb::ObjectRef& ref) {
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>> rows;
        if (a) rows = schema::build_attribution_rows(e.fbb(), *a);
        return fb::CreateSubmissionAttribution(e.fbb(), &ref, rows);
      });
  return a;
}

}  // namespace vtrace::recorder
