// RecordingRuntime: the optional DeviceRuntime methods (spec 5.2) and the static-weight import
// session. Each records one OptionalCall event named by its method, through the bracket of
// call_bracket.h; OptionalFields lists what an OptionalCall may carry.
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

// The fields an OptionalCall may carry: references (resolved in the bracket's first phase), values
// and offsets already built in the event's builder.
struct OptionalFields {
  std::optional<fb::ObjectRef> stream, buffer, destination;
  std::optional<std::uint64_t> session, command;
  std::uint64_t offset_bytes = 0;
  std::optional<fb::BlobRef> payload;
  std::uint64_t payload_bytes = 0;
  flatbuffers::Offset<flatbuffers::String> text;
  std::uint32_t node_index = 0;
  std::uint64_t plan_maximum_executables = 0;
  fb::ReusableExecutionCatalogLifetime plan_lifetime =
      fb::ReusableExecutionCatalogLifetime::StartupSealed;
  flatbuffers::Offset<flatbuffers::Vector<const fb::ObjectRef*>> commands_in;
  bool supported = true;
  bool flag = false;
  flatbuffers::Offset<flatbuffers::Vector<std::uint64_t>> commands_out;
  flatbuffers::Offset<fb::ReusablePreparation> preparation;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::ReusableProgram>>> catalog;
  std::uint64_t released_executables = 0;
  std::uint64_t released_rejections = 0;
  flatbuffers::Offset<fb::Error> error;
};

// The OptionalCall body of `method` (the last thing a build phase does).
flatbuffers::Offset<fb::OptionalCall> optional_call(Event& e, std::string_view method,
                                                    const OptionalFields& f) {
  auto name = e.fbb().CreateString(method.data(), method.size());
  fb::OptionalCallBuilder b(e.fbb());
  b.add_method(name);
  if (f.stream) b.add_stream(&*f.stream);
  if (f.session) b.add_session(*f.session);
  if (f.buffer) b.add_buffer(&*f.buffer);
  if (f.destination) b.add_destination(&*f.destination);
  b.add_offset_bytes(f.offset_bytes);
  if (f.payload) b.add_payload(&*f.payload);
  b.add_payload_bytes(f.payload_bytes);
  b.add_text(f.text);
  b.add_node_index(f.node_index);
  b.add_plan_maximum_executables(f.plan_maximum_executables);
  b.add_plan_catalog_lifetime(f.plan_lifetime);
  b.add_commands_in(f.commands_in);
  b.add_supported(f.supported);
  b.add_flag(f.flag);
  if (f.command) b.add_command(*f.command);
  b.add_commands_out(f.commands_out);
  b.add_preparation(f.preparation);
  b.add_catalog(f.catalog);
  b.add_released_executables(f.released_executables);
  b.add_released_rejections(f.released_rejections);
  b.add_error(f.error);
  return b.Finish();
}

// Records the OptionalCall of a method on `stream`: fill(Event&, OptionalFields&) adds the fields
// after the stream.
template <typename Fill>
void record_on_stream(Call& call, std::string_view method, const rt::Stream& stream, Fill&& fill) {
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& stream_ref) {
                OptionalFields f;
                f.stream = stream_ref;
                std::forward<Fill>(fill)(e, f);
                return optional_call(e, method, f);
              });
}

// Records a preparation-returning optional method.
void record_preparation(Call& call, std::string_view method, const rt::Stream& stream,
                        const rt::Result<rt::ReusableExecutionPreparation>& r,
                        const rt::ReusableExecutionPlan* plan) {
  record_on_stream(call, method, stream, [&](Event& e, OptionalFields& f) {
    if (plan != nullptr) {
      f.plan_maximum_executables = plan->maximum_executables();
      f.plan_lifetime = to_fb(plan->catalog_lifetime());
    }
    if (r) {
      f.preparation = schema::build_preparation(e.fbb(), *r);
    } else {
      f.error = e.error(r.error());
    }
  });
}

class RecordedImportSession final : public rt::StaticWeightImportSession {
 public:
  RecordedImportSession(RecordingRuntime::State* s, std::uint64_t o,
                        std::unique_ptr<rt::StaticWeightImportSession> in)
      : state_(s), ordinal_(o), inner_(std::move(in)) {}

  rt::Result<void> import_component(std::span<const std::uint8_t> payload,
                                    const rt::Buffer& destination,
                                    std::uint64_t destination_offset_bytes) override {
    Call call(*state_);
    auto r = inner_->import_component(payload, *unwrap(&destination), destination_offset_bytes);
    auto blob = call.put_blob(payload, 1);
    call.record([&](Refs& refs) { return refs.buffer(&destination); },
                [&](Event& e, const fb::ObjectRef& dst) {
                  OptionalFields f;
                  f.buffer = dst;
                  f.session = ordinal_;
                  f.offset_bytes = destination_offset_bytes;
                  if (blob) f.payload = to_fb(*blob);
                  f.payload_bytes = payload.size();
                  f.error = e.error_of(r);
                  return optional_call(e, "static_weight_import.import_component", f);
                });
    return r;
  }

  rt::Result<void> seal() override {
    Call call(*state_);
    auto r = inner_->seal();
    call.record([&](Event& e) {
      OptionalFields f;
      f.session = ordinal_;
      f.error = e.error_of(r);
      return optional_call(e, "static_weight_import.seal", f);
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
    OptionalFields f;
    f.supported = r.has_value();
    f.session = ordinal;
    if (r && !*r) f.error = e.error(r->error());
    return optional_call(e, "begin_static_weight_import", f);
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
        OptionalFields f;
        f.buffer = buffers.first;
        f.destination = buffers.second;
        f.text = e.fbb().CreateString(request.transform_id);
        f.supported = r.has_value();
        f.command = ordinal;
        if (r && !*r) f.error = e.error(r->error());
        return optional_call(e, "encode_static_weight_transform", f);
      });
  if (!ordinal) return r;
  return rt::Result<rt::CommandPtr>(call.own<detail::RecordedCommand>(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::configure_reusable_executables(
    rt::Stream& stream, const rt::ReusableExecutionPlan& plan) {
  Call call(*state_);
  auto r = call.inner().configure_reusable_executables(unwrap(stream), plan);
  record_preparation(call, "configure_reusable_executables", stream, r, &plan);
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::seal_reusable_executables(
    rt::Stream& stream) {
  Call call(*state_);
  auto r = call.inner().seal_reusable_executables(unwrap(stream));
  record_preparation(call, "seal_reusable_executables", stream, r, nullptr);
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::reusable_executable_preparation(
    const rt::Stream& stream) const {
  Call call(*state_);
  auto r = call.inner().reusable_executable_preparation(unwrap(stream));
  record_preparation(call, "reusable_executable_preparation", stream, r, nullptr);
  return r;
}

rt::Result<std::vector<rt::ReusableExecutionProgram>> RecordingRuntime::reusable_execution_catalog(
    const rt::Stream& stream) const {
  Call call(*state_);
  auto r = call.inner().reusable_execution_catalog(unwrap(stream));
  record_on_stream(call, "reusable_execution_catalog", stream, [&](Event& e, OptionalFields& f) {
    if (r) {
      std::vector<flatbuffers::Offset<fb::ReusableProgram>> programs;
      for (const auto& p : *r) {
        programs.push_back(
            fb::CreateReusableProgram(e.fbb(), e.fbb().CreateString(p.program_id), p.node_count));
      }
      f.catalog = e.fbb().CreateVector(programs);
    } else {
      f.error = e.error(r.error());
    }
  });
  return r;
}

rt::Result<std::optional<rt::CommandPtr>> RecordingRuntime::encode_reusable_execution(
    const rt::ReusableExecutionInvocation& invocation) {
  Call call(*state_);
  auto r = call.inner().encode_reusable_execution(invocation);
  const auto ordinal = call.mint(detail::kCommand, r && r->has_value());
  call.record([&](Event& e) {
    OptionalFields f;
    f.text = e.fbb().CreateString(invocation.program_id);
    f.node_index = invocation.node_index;
    f.command = ordinal;
    f.error = e.error_of(r);
    return optional_call(e, "encode_reusable_execution", f);
  });
  if (!ordinal) return r;
  return std::optional<rt::CommandPtr>(call.own<detail::RecordedCommand>(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionTrim> RecordingRuntime::trim_reusable_executables(
    rt::Stream& stream) {
  Call call(*state_);
  auto r = call.inner().trim_reusable_executables(unwrap(stream));
  record_on_stream(call, "trim_reusable_executables", stream, [&](Event& e, OptionalFields& f) {
    if (r) {
      f.released_executables = r->released_executables;
      f.released_rejections = r->released_rejections;
    } else {
      f.error = e.error(r.error());
    }
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
    OptionalFields f;
    f.commands_in = e.fbb().CreateVectorOfStructs(commands_in);
    if (r) {
      f.commands_out = e.fbb().CreateVector(ordinals);
    } else {
      f.error = e.error(r.error());
    }
    return optional_call(e, "coalesce_program_bindings", f);
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
  call.record([&](Event& e) {
    OptionalFields f;
    f.flag = supported;
    return optional_call(e, "supports_guarded_submission", f);
  });
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
