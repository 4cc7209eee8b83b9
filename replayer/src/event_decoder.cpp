// The event decoder (event_decoder.h): one case per event kind of vtrace.fbs, each turning the
// event into its typed step with every field converted and checked; the 1.0-1.1 OptionalCall is
// decoded into the step of its method.
#include "event_decoder.h"

#include <fmt/format.h>

#include "vtrace/schema/events.h"

namespace vtrace::replayer::detail {

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;
using schema::TraceError;
using schema::TraceErrorKind;
using schema::TraceResult;

TraceError corrupt(std::uint64_t ordinal, std::string_view kind, std::string what) {
  return TraceError{TraceErrorKind::kCorrupt,
                    fmt::format("event {} ({}): {}", ordinal, kind, std::move(what))};
}

namespace {

// Decodes one event. `E` errors are wrapped with the event's ordinal and kind by the caller.
class Decoder {
 public:
  Decoder(std::uint64_t ordinal, std::string_view kind) : ordinal_(ordinal), kind_(kind) {}

  TraceError error(std::string what) const { return corrupt(ordinal_, kind_, std::move(what)); }
  TraceError wrap(const TraceError& e) const {
    return TraceError{e.kind, fmt::format("event {} ({}): {}", ordinal_, kind_, e.message)};
  }

  ObjectRef ref(const fb::ObjectRef* r) const { return schema::from_fb(r); }
  TraceResult<Outcome> outcome(const fb::Error* e) const {
    if (e == nullptr) return Outcome{};
    auto error = schema::read_error(e);
    if (!error) return std::unexpected(wrap(error.error()));
    return Outcome{*error};
  }
  // The outcome of a call that returns `result_field` on success: one rule for every event kind
  // that has a result and an error (exactly one of them is set).
  TraceResult<Outcome> result_or_error(const fb::Error* e, bool has_result,
                                       std::string_view result_field) const {
    auto out = outcome(e);
    if (!out) return out;
    if (out->has_value() == has_result) {
      return std::unexpected(
          error(fmt::format("needs exactly one of `{}` and `error`", result_field)));
    }
    return out;
  }
  template <typename T>
  TraceResult<T> need(const T* value, std::string_view field) const {
    if (value == nullptr) return std::unexpected(error(fmt::format("lacks `{}`", field)));
    return *value;
  }
  template <typename E>
  TraceResult<std::remove_cvref_t<decltype(*schema::from_fb(E{}))>> enum_of(
      E value, std::string_view field) const {
    auto v = schema::from_fb(value);
    if (!v) return std::unexpected(error(fmt::format("has an unknown `{}` value", field)));
    return *v;
  }
  template <typename T>
  TraceResult<T> lift(TraceResult<T> r) const {
    if (!r) return std::unexpected(wrap(r.error()));
    return r;
  }
  static std::optional<std::uint64_t> opt(flatbuffers::Optional<std::uint64_t> v) {
    return v.has_value() ? std::optional(*v) : std::nullopt;
  }

  TraceResult<ReplayStepBody> decode(const fb::Event& event) const;

 private:
  static std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }
  TraceResult<std::uint64_t> need_opt(flatbuffers::Optional<std::uint64_t> v,
                                      std::string_view field) const {
    if (!v.has_value()) return std::unexpected(error(fmt::format("lacks `{}`", field)));
    return *v;
  }
  TraceResult<ObjectRef> need_ref(const fb::ObjectRef* r, std::string_view field) const {
    const ObjectRef out = ref(r);
    if (out.space == ObjectRef::Space::kNull) {
      return std::unexpected(error(fmt::format("lacks `{}`", field)));
    }
    return out;
  }
  std::vector<ObjectRef> refs(const flatbuffers::Vector<const fb::ObjectRef*>* v) const {
    std::vector<ObjectRef> out;
    if (v != nullptr) {
      for (const auto* r : *v) out.push_back(ref(r));
    }
    return out;
  }
  static std::optional<std::vector<rt::ReusableExecutionProgram>> catalog(
      const flatbuffers::Vector<flatbuffers::Offset<fb::ReusableProgram>>* v) {
    if (v == nullptr) return std::nullopt;
    std::vector<rt::ReusableExecutionProgram> programs;
    for (const auto* p : *v) programs.push_back({str(p->program_id()), p->node_count()});
    return programs;
  }
  // A method that answered "not supported" carries nothing else.
  template <typename S>
  TraceResult<ReplayStepBody> unsupported(S s, bool has_error) const {
    if (has_error) return std::unexpected(error("is not supported and names an error"));
    return s;
  }
  TraceResult<step::PreparationAnswer> preparation(const fb::ObjectRef* stream,
                                                   const fb::ReusablePreparation* p,
                                                   const fb::Error* e) const {
    auto out = result_or_error(e, p != nullptr, "preparation");
    if (!out) return std::unexpected(out.error());
    step::PreparationAnswer answer{ref(stream), std::nullopt, std::move(*out)};
    if (p != nullptr) {
      auto prep = lift(schema::read_preparation(p));
      if (!prep) return std::unexpected(prep.error());
      answer.preparation = *prep;
    }
    return answer;
  }
  TraceResult<ReplayStepBody> optional_call(const fb::OptionalCall& e, bool required) const;

  std::uint64_t ordinal_;
  std::string_view kind_;
};

#define VTRACE_TRY(var, expr)                                      \
  auto var##_result = (expr);                                      \
  if (!var##_result) return std::unexpected(var##_result.error()); \
  auto var = std::move(*var##_result)

TraceResult<ReplayStepBody> Decoder::decode(const fb::Event& event) const {
  using B = fb::EventBody;
  switch (event.body_type()) {
    case B::RuntimeOpened: {
      const auto* e = event.body_as_RuntimeOpened();
      VTRACE_TRY(descriptor, lift(schema::read_descriptor(e->descriptor())));
      VTRACE_TRY(policy, enum_of(e->attention_policy(), "attention_policy"));
      return step::RuntimeOpened{e->registry_name() ? e->registry_name()->str() : "",
                                 std::move(descriptor), policy};
    }
    case B::ForeignObjectSeen: {
      const auto* e = event.body_as_ForeignObjectSeen();
      const auto kind = schema::from_fb(e->object());
      if (!kind) return std::unexpected(error("has an unknown object kind"));
      step::ForeignObjectSeen s{*kind, e->ordinal(), std::nullopt};
      if (s.kind == ObjectKind::kBuffer) {
        VTRACE_TRY(d, lift(schema::read_buffer_descriptor(e->buffer_descriptor())));
        s.descriptor = std::move(d);
      }
      return s;
    }
    case B::Admit: {
      const auto* e = event.body_as_Admit();
      VTRACE_TRY(request, lift(schema::read_buffer_request(e->request())));
      VTRACE_TRY(out, result_or_error(e->error(), e->permit_generation().has_value(),
                                      "permit_generation"));
      return step::Admit{std::move(request), opt(e->permit_generation()), std::move(out)};
    }
    case B::Allocate: {
      const auto* e = event.body_as_Allocate();
      VTRACE_TRY(out, result_or_error(e->error(), e->buffer().has_value(), "buffer"));
      step::Allocate s{e->permit_generation(), opt(e->buffer()), std::nullopt, std::move(out)};
      if (e->descriptor() != nullptr) {
        VTRACE_TRY(d, lift(schema::read_buffer_descriptor(e->descriptor())));
        s.descriptor = std::move(d);
      }
      return s;
    }
    case B::BufferDescriptorQueried: {
      const auto* e = event.body_as_BufferDescriptorQueried();
      VTRACE_TRY(d, lift(schema::read_buffer_descriptor(e->descriptor())));
      return step::BufferDescriptorQueried{ref(e->buffer()), std::move(d)};
    }
    case B::BufferReleased:
      return step::BufferReleased{event.body_as_BufferReleased()->buffer()};
    case B::StreamReleased:
      return step::StreamReleased{event.body_as_StreamReleased()->stream()};
    case B::CommandReleased:
      return step::CommandReleased{event.body_as_CommandReleased()->command()};
    case B::FenceReleased:
      return step::FenceReleased{event.body_as_FenceReleased()->fence()};
    case B::StreamCreated: {
      const auto* e = event.body_as_StreamCreated();
      VTRACE_TRY(out, result_or_error(e->error(), e->stream().has_value(), "stream"));
      return step::StreamCreated{opt(e->stream()), std::move(out)};
    }
    case B::StreamStateQueried: {
      const auto* e = event.body_as_StreamStateQueried();
      VTRACE_TRY(state, enum_of(e->state(), "state"));
      return step::StreamStateQueried{ref(e->stream()), state};
    }
    case B::EncodeCopy: {
      const auto* e = event.body_as_EncodeCopy();
      VTRACE_TRY(raw, need(e->region(), "region"));
      VTRACE_TRY(region, lift(schema::from_fb(raw)));
      VTRACE_TRY(out, result_or_error(e->error(), e->command().has_value(), "command"));
      return step::EncodeCopy{ref(e->source()), ref(e->destination()), region, opt(e->command()),
                              std::move(out)};
    }
    case B::EncodeUpload: {
      const auto* e = event.body_as_EncodeUpload();
      VTRACE_TRY(blob, need(e->payload(), "payload"));
      VTRACE_TRY(raw, need(e->layout(), "layout"));
      VTRACE_TRY(layout, lift(schema::from_fb(raw)));
      VTRACE_TRY(out, result_or_error(e->error(), e->command().has_value(), "command"));
      return step::EncodeUpload{
          schema::from_fb(blob),         e->payload_bytes(), layout,        ref(e->destination()),
          e->destination_offset_bytes(), opt(e->command()),  std::move(out)};
    }
    case B::EncodeZero: {
      const auto* e = event.body_as_EncodeZero();
      VTRACE_TRY(out, result_or_error(e->error(), e->command().has_value(), "command"));
      return step::EncodeZero{ref(e->destination()), e->destination_offset_bytes(),
                              e->length_bytes(), opt(e->command()), std::move(out)};
    }
    case B::EncodeDenseLinear: {
      const auto* e = event.body_as_EncodeDenseLinear();
      step::EncodeDenseLinear s;
      if (e->launches() != nullptr) {
        for (const auto* l : *e->launches()) {
          auto region = [&](const fb::RegionRef& r) {
            return step::Region{ref(&r.buffer()), r.offset_bytes(), r.length_bytes()};
          };
          s.launches.push_back({region(l->input()), region(l->weight()), region(l->output()),
                                l->rows(), l->in_features(), l->out_features()});
        }
      }
      s.participant_count = e->participant_count();
      s.token_count = e->token_count();
      s.command = opt(e->command());
      VTRACE_TRY(out, result_or_error(e->error(), e->command().has_value(), "command"));
      s.outcome = std::move(out);
      return s;
    }
    case B::SubmitBegin: {
      const auto* e = event.body_as_SubmitBegin();
      step::SubmitBegin s;
      s.stream = ref(e->stream());
      if (e->entries() != nullptr) {
        for (const auto* entry : *e->entries()) {
          step::Entry out;
          VTRACE_TRY(phase, enum_of(entry->phase(), "entries.phase"));
          out.phase = phase;
          if (entry->node_index().has_value()) out.node_index = *entry->node_index();
          if (entry->logical_work() != nullptr) {
            VTRACE_TRY(work, lift(schema::from_fb(*entry->logical_work())));
            out.logical_work = work;
          }
          out.command = ref(entry->command());
          s.entries.push_back(std::move(out));
        }
      }
      VTRACE_TRY(timing, enum_of(e->timing_mode(), "timing_mode"));
      VTRACE_TRY(path, enum_of(e->compute_path_requirement(), "compute_path_requirement"));
      VTRACE_TRY(attribution, enum_of(e->attribution_requirement(), "attribution_requirement"));
      s.timing = timing;
      s.path = path;
      s.attribution = attribution;
      if (e->declared_eager_indices() != nullptr) {
        s.declared_eager.assign(e->declared_eager_indices()->begin(),
                                e->declared_eager_indices()->end());
      }
      if (e->reusable_capture() != nullptr) {
        VTRACE_TRY(capture, lift(schema::read_reusable_capture(e->reusable_capture())));
        s.capture = std::move(capture);
      }
      s.guarded = e->guarded();
      s.guard_maximum_commands = e->guard_maximum_commands();
      return s;
    }
    case B::SubmitEnd: {
      const auto* e = event.body_as_SubmitEnd();
      VTRACE_TRY(out, outcome(e->not_submitted()));
      step::SubmitEnd s{e->begin_seq(), opt(e->fence()), std::move(out), e->rejected().has_value()};
      const int answers =
          int{s.fence.has_value()} + int{s.not_submitted.has_value()} + int{s.rejected};
      if (answers != 1) {
        return std::unexpected(error("needs exactly one of `fence`, `not_submitted`, `rejected`"));
      }
      return s;
    }
    case B::SubmissionAttribution: {
      const auto* e = event.body_as_SubmissionAttribution();
      VTRACE_TRY(rows, lift(schema::read_attribution(e->rows())));
      return step::SubmissionAttribution{ref(e->fence()), std::move(rows)};
    }
    case B::QueryFence: {
      const auto* e = event.body_as_QueryFence();
      VTRACE_TRY(result, lift(schema::read_fence_query(e->result())));
      return step::QueryFence{ref(e->fence()), std::move(result)};
    }
    case B::WaitFence: {
      const auto* e = event.body_as_WaitFence();
      VTRACE_TRY(result, lift(schema::read_fence_wait(e->result())));
      rt::FenceQuery q = result ? rt::FenceQuery(std::move(*result))
                                : rt::FenceQuery(std::move(result.error()).into_error());
      return step::WaitFence{ref(e->fence()), std::move(q)};
    }
    case B::Synchronize: {
      const auto* e = event.body_as_Synchronize();
      VTRACE_TRY(out, outcome(e->error()));
      return step::Synchronize{ref(e->stream()), std::move(out)};
    }
    case B::Readback: {
      const auto* e = event.body_as_Readback();
      VTRACE_TRY(raw_region, need(e->region(), "region"));
      VTRACE_TRY(region, lift(schema::from_fb(raw_region)));
      VTRACE_TRY(raw_layout, need(e->layout(), "layout"));
      VTRACE_TRY(layout, lift(schema::from_fb(raw_layout)));
      VTRACE_TRY(out, result_or_error(e->error(), e->payload() != nullptr, "payload"));
      std::optional<schema::BlobId> payload;
      if (e->payload() != nullptr) payload = schema::from_fb(*e->payload());
      return step::Readback{ref(e->stream()), ref(e->source()),   region,        layout,
                            payload,          e->payload_bytes(), std::move(out)};
    }
    case B::DescribeError: {
      const auto* e = event.body_as_DescribeError();
      VTRACE_TRY(input, lift(schema::read_error(e->error())));
      std::optional<rt::DeviceErrorReport> report;
      if (e->report() != nullptr) {
        VTRACE_TRY(r, lift(schema::read_error_report(e->report())));
        report = std::move(r);
      }
      return step::DescribeError{std::move(input), std::move(report)};
    }
    case B::OptionalCall:
      return optional_call(*event.body_as_OptionalCall(), event.required());
    case B::GuardedSubmissionQueried:
      return step::GuardedSubmissionQueried{event.body_as_GuardedSubmissionQueried()->supported()};
    case B::BeginStaticWeightImport: {
      const auto* e = event.body_as_BeginStaticWeightImport();
      step::BeginStaticWeightImport s{e->supported(), opt(e->session()), {}};
      if (!s.supported) return unsupported(s, e->error() != nullptr);
      VTRACE_TRY(out, result_or_error(e->error(), s.session.has_value(), "session"));
      s.outcome = std::move(out);
      return s;
    }
    case B::ImportComponent: {
      const auto* e = event.body_as_ImportComponent();
      VTRACE_TRY(session, need_opt(e->session(), "session"));
      VTRACE_TRY(blob, need(e->payload(), "payload"));
      VTRACE_TRY(destination, need_ref(e->destination(), "destination"));
      VTRACE_TRY(out, outcome(e->error()));
      return step::ImportComponent{session,
                                   destination,
                                   e->destination_offset_bytes(),
                                   schema::from_fb(blob),
                                   e->payload_bytes(),
                                   std::move(out)};
    }
    case B::SealStaticWeightImport: {
      const auto* e = event.body_as_SealStaticWeightImport();
      VTRACE_TRY(session, need_opt(e->session(), "session"));
      VTRACE_TRY(out, outcome(e->error()));
      return step::SealStaticWeightImport{session, std::move(out)};
    }
    case B::EncodeStaticWeightTransform: {
      const auto* e = event.body_as_EncodeStaticWeightTransform();
      VTRACE_TRY(source, need_ref(e->source(), "source"));
      VTRACE_TRY(destination, need_ref(e->destination(), "destination"));
      step::EncodeStaticWeightTransform s{source,         destination,       str(e->transform_id()),
                                          e->supported(), opt(e->command()), {}};
      if (!s.supported) return unsupported(s, e->error() != nullptr);
      VTRACE_TRY(out, result_or_error(e->error(), s.command.has_value(), "command"));
      s.outcome = std::move(out);
      return s;
    }
    case B::ConfigureReusableExecutables: {
      const auto* e = event.body_as_ConfigureReusableExecutables();
      step::ConfigureReusableExecutables s;
      VTRACE_TRY(answer, preparation(e->stream(), e->preparation(), e->error()));
      static_cast<step::PreparationAnswer&>(s) = std::move(answer);
      s.maximum_executables = e->maximum_executables();
      VTRACE_TRY(lifetime, enum_of(e->catalog_lifetime(), "catalog_lifetime"));
      s.catalog_lifetime = lifetime;
      return s;
    }
    case B::SealReusableExecutables: {
      const auto* e = event.body_as_SealReusableExecutables();
      VTRACE_TRY(answer, preparation(e->stream(), e->preparation(), e->error()));
      return step::SealReusableExecutables{std::move(answer)};
    }
    case B::ReusablePreparationQueried: {
      const auto* e = event.body_as_ReusablePreparationQueried();
      VTRACE_TRY(answer, preparation(e->stream(), e->preparation(), e->error()));
      return step::ReusablePreparationQueried{std::move(answer)};
    }
    case B::ReusableCatalogQueried: {
      const auto* e = event.body_as_ReusableCatalogQueried();
      VTRACE_TRY(out, result_or_error(e->error(), e->catalog() != nullptr, "catalog"));
      return step::ReusableCatalogQueried{ref(e->stream()), catalog(e->catalog()), std::move(out)};
    }
    case B::EncodeReusableExecution: {
      const auto* e = event.body_as_EncodeReusableExecution();
      VTRACE_TRY(out, outcome(e->error()));
      if (out && e->command().has_value()) {
        return std::unexpected(error("names a returned command and an error"));
      }
      return step::EncodeReusableExecution{str(e->program_id()), e->node_index(), opt(e->command()),
                                           std::move(out)};
    }
    case B::TrimReusableExecutables: {
      const auto* e = event.body_as_TrimReusableExecutables();
      const bool has_trim =
          e->released_executables().has_value() && e->released_rejections().has_value();
      VTRACE_TRY(out, result_or_error(e->error(), has_trim, "released_executables"));
      std::optional<rt::ReusableExecutionTrim> trim;
      if (has_trim)
        trim = rt::ReusableExecutionTrim{*e->released_executables(), *e->released_rejections()};
      return step::TrimReusableExecutables{ref(e->stream()), trim, std::move(out)};
    }
    case B::CoalesceProgramBindings: {
      const auto* e = event.body_as_CoalesceProgramBindings();
      VTRACE_TRY(out, result_or_error(e->error(), e->commands_out() != nullptr, "commands_out"));
      step::CoalesceProgramBindings s{refs(e->commands_in()), {}, std::move(out)};
      if (e->commands_out() != nullptr) {
        s.commands_out.assign(e->commands_out()->begin(), e->commands_out()->end());
      }
      return s;
    }
    case B::CounterSnapshot: {
      const auto* e = event.body_as_CounterSnapshot();
      VTRACE_TRY(counters, need(e->counters(), "counters"));
      return step::CounterSnapshot{e->after_seq(), schema::from_fb(counters)};
    }
    default:
      break;
  }
  if (!event.required()) return step::Skipped{std::string(kind_)};
  return std::unexpected(TraceError{
      TraceErrorKind::kUnknownRequiredEvent,
      fmt::format("event {}: unknown required event kind {}; this replayer cannot reproduce it",
                  ordinal_, static_cast<unsigned>(event.body_type()))});
}

// A format 1.0-1.1 OptionalCall: the step of its method, from the fields that method used (the
// only place that dispatches on the method's name).
TraceResult<ReplayStepBody> Decoder::optional_call(const fb::OptionalCall& e, bool required) const {
  const std::string method = str(e.method());
  // The outcome, read only for a method this build knows (an unknown one is skipped unread).
  auto result = [&]() -> TraceResult<Outcome> {
    auto out = outcome(e.error());
    if (out && *out && (e.command().has_value() || e.commands_out() != nullptr)) {
      return std::unexpected(error("names a returned command and an error"));
    }
    return out;
  };
  auto answer = [&]() -> TraceResult<step::PreparationAnswer> {
    auto out = result();
    if (!out) return std::unexpected(out.error());
    step::PreparationAnswer a{ref(e.stream()), std::nullopt, std::move(*out)};
    if (e.preparation() != nullptr) {
      auto p = lift(schema::read_preparation(e.preparation()));
      if (!p) return std::unexpected(p.error());
      a.preparation = *p;
    }
    return a;
  };
  if (method == "supports_guarded_submission") return step::GuardedSubmissionQueried{e.flag()};
  if (method == "begin_static_weight_import") {
    VTRACE_TRY(out, result());
    return step::BeginStaticWeightImport{e.supported(), opt(e.session()), std::move(out)};
  }
  if (method == "static_weight_import.import_component") {
    VTRACE_TRY(session, need_opt(e.session(), "session"));
    VTRACE_TRY(blob, need(e.payload(), "payload"));
    VTRACE_TRY(destination, need_ref(e.buffer(), "buffer"));
    VTRACE_TRY(out, result());
    return step::ImportComponent{session,           destination,
                                 e.offset_bytes(),  schema::from_fb(blob),
                                 e.payload_bytes(), std::move(out)};
  }
  if (method == "static_weight_import.seal") {
    VTRACE_TRY(session, need_opt(e.session(), "session"));
    VTRACE_TRY(out, result());
    return step::SealStaticWeightImport{session, std::move(out)};
  }
  if (method == "encode_static_weight_transform") {
    VTRACE_TRY(source, need_ref(e.buffer(), "buffer"));
    VTRACE_TRY(destination, need_ref(e.destination(), "destination"));
    VTRACE_TRY(out, result());
    return step::EncodeStaticWeightTransform{source,        destination,      str(e.text()),
                                             e.supported(), opt(e.command()), std::move(out)};
  }
  if (method == "configure_reusable_executables") {
    step::ConfigureReusableExecutables s;
    VTRACE_TRY(a, answer());
    static_cast<step::PreparationAnswer&>(s) = std::move(a);
    s.maximum_executables = e.plan_maximum_executables();
    VTRACE_TRY(lifetime, enum_of(e.plan_catalog_lifetime(), "plan_catalog_lifetime"));
    s.catalog_lifetime = lifetime;
    return s;
  }
  if (method == "seal_reusable_executables") {
    VTRACE_TRY(a, answer());
    return step::SealReusableExecutables{std::move(a)};
  }
  if (method == "reusable_executable_preparation") {
    VTRACE_TRY(a, answer());
    return step::ReusablePreparationQueried{std::move(a)};
  }
  if (method == "reusable_execution_catalog") {
    VTRACE_TRY(out, result());
    return step::ReusableCatalogQueried{ref(e.stream()), catalog(e.catalog()), std::move(out)};
  }
  if (method == "encode_reusable_execution") {
    VTRACE_TRY(out, result());
    return step::EncodeReusableExecution{str(e.text()), e.node_index(), opt(e.command()),
                                         std::move(out)};
  }
  if (method == "trim_reusable_executables") {
    VTRACE_TRY(out, result());
    std::optional<rt::ReusableExecutionTrim> trim;
    if (!out) trim = rt::ReusableExecutionTrim{e.released_executables(), e.released_rejections()};
    return step::TrimReusableExecutables{ref(e.stream()), trim, std::move(out)};
  }
  if (method == "coalesce_program_bindings") {
    VTRACE_TRY(out, result());
    step::CoalesceProgramBindings s{refs(e.commands_in()), {}, std::move(out)};
    if (e.commands_out() != nullptr) {
      s.commands_out.assign(e.commands_out()->begin(), e.commands_out()->end());
    }
    return s;
  }
  if (!required) return step::Skipped{fmt::format("OptionalCall {}", method)};
  return std::unexpected(
      TraceError{TraceErrorKind::kUnknownRequiredEvent,
                 fmt::format("event {} (OptionalCall): unknown required optional method `{}`; this "
                             "replayer cannot reproduce it",
                             ordinal_, method)});
}

#undef VTRACE_TRY

}  // namespace

TraceResult<ReplayStepBody> decode_body(std::uint64_t ordinal, std::string_view kind,
                                        const fb::Event& event) {
  return Decoder(ordinal, kind).decode(event);
}

}  // namespace vtrace::replayer::detail
