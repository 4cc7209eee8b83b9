// event_links (event_links.h): one case per event kind of vtrace.fbs.
#include "vtrace/schema/event_links.h"

#include <string_view>

#include "vtrace/schema/events.h"

namespace vtrace::schema {

namespace {

using K = ObjectKind;

class Links {
 public:
  void use(K kind, const fb::ObjectRef* ref) {
    const ObjectRef r = from_fb(ref);
    if (r.space != ObjectRef::Space::kNull) out.uses.push_back({kind, r});
  }
  void use_own(K kind, std::uint64_t ordinal) {
    out.uses.push_back({kind, {ordinal, ObjectRef::Space::kOwn}});
  }
  void create(K kind, flatbuffers::Optional<std::uint64_t> ordinal) {
    if (ordinal.has_value()) out.creates.push_back({kind, {*ordinal, ObjectRef::Space::kOwn}});
  }
  void create_each(K kind, const flatbuffers::Vector<std::uint64_t>* ordinals) {
    if (ordinals == nullptr) return;
    for (const auto o : *ordinals) out.creates.push_back({kind, {o, ObjectRef::Space::kOwn}});
  }
  void release(K kind, std::uint64_t ordinal) {
    out.releases.push_back({kind, {ordinal, ObjectRef::Space::kOwn}});
  }
  void payload(const fb::BlobRef* blob) {
    if (blob != nullptr) out.payloads.push_back(from_fb(*blob));
  }
  void commands(const flatbuffers::Vector<const fb::ObjectRef*>* refs) {
    if (refs == nullptr) return;
    for (const auto* r : *refs) use(K::kCommand, r);
  }

  // A format 1.0-1.1 OptionalCall: which fields link depends on its method.
  void optional_call(const fb::OptionalCall& e) {
    const std::string_view method = e.method() ? e.method()->string_view() : std::string_view();
    use(K::kStream, e.stream());
    use(K::kBuffer, e.buffer());
    use(K::kBuffer, e.destination());
    commands(e.commands_in());
    if (e.session().has_value()) {
      if (method == "begin_static_weight_import") {
        create(K::kImportSession, e.session());
      } else {
        use_own(K::kImportSession, *e.session());
      }
    }
    create(K::kCommand, e.command());
    create_each(K::kCommand, e.commands_out());
    payload(e.payload());
  }

  EventLinks out;
};

}  // namespace

EventLinks event_links(const fb::Event& event) {
  using B = fb::EventBody;
  Links l;
  switch (event.body_type()) {
    case B::ForeignObjectSeen: {
      const auto* e = event.body_as_ForeignObjectSeen();
      if (const auto kind = from_fb(e->object())) {
        l.out.creates.push_back({*kind, {e->ordinal(), ObjectRef::Space::kForeign}});
      }
      break;
    }
    case B::Admit: {
      const auto* e = event.body_as_Admit();
      if (e->permit_generation().has_value()) l.out.admits_permit = *e->permit_generation();
      break;
    }
    case B::Allocate: {
      const auto* e = event.body_as_Allocate();
      l.out.uses_permit = e->permit_generation();
      l.create(K::kBuffer, e->buffer());
      break;
    }
    case B::BufferDescriptorQueried:
      l.use(K::kBuffer, event.body_as_BufferDescriptorQueried()->buffer());
      break;
    case B::BufferReleased:
      l.release(K::kBuffer, event.body_as_BufferReleased()->buffer());
      break;
    case B::StreamCreated:
      l.create(K::kStream, event.body_as_StreamCreated()->stream());
      break;
    case B::StreamReleased:
      l.release(K::kStream, event.body_as_StreamReleased()->stream());
      break;
    case B::StreamStateQueried:
      l.use(K::kStream, event.body_as_StreamStateQueried()->stream());
      break;
    case B::EncodeCopy: {
      const auto* e = event.body_as_EncodeCopy();
      l.use(K::kBuffer, e->source());
      l.use(K::kBuffer, e->destination());
      l.create(K::kCommand, e->command());
      break;
    }
    case B::EncodeUpload: {
      const auto* e = event.body_as_EncodeUpload();
      l.use(K::kBuffer, e->destination());
      l.payload(e->payload());
      l.create(K::kCommand, e->command());
      break;
    }
    case B::EncodeZero: {
      const auto* e = event.body_as_EncodeZero();
      l.use(K::kBuffer, e->destination());
      l.create(K::kCommand, e->command());
      break;
    }
    case B::EncodeDenseLinear: {
      const auto* e = event.body_as_EncodeDenseLinear();
      if (e->launches() != nullptr) {
        for (const auto* launch : *e->launches()) {
          for (const auto* r : {&launch->input(), &launch->weight(), &launch->output()}) {
            l.use(K::kBuffer, &r->buffer());
          }
        }
      }
      l.create(K::kCommand, e->command());
      break;
    }
    case B::CommandReleased:
      l.release(K::kCommand, event.body_as_CommandReleased()->command());
      break;
    case B::SubmitBegin: {
      const auto* e = event.body_as_SubmitBegin();
      l.use(K::kStream, e->stream());
      if (e->entries() != nullptr) {
        for (const auto* entry : *e->entries()) l.use(K::kCommand, entry->command());
      }
      break;
    }
    case B::SubmitEnd: {
      const auto* e = event.body_as_SubmitEnd();
      l.out.ends_submit = e->begin_seq();
      l.create(K::kFence, e->fence());
      break;
    }
    case B::SubmissionAttribution:
      l.use(K::kFence, event.body_as_SubmissionAttribution()->fence());
      break;
    case B::QueryFence:
      l.use(K::kFence, event.body_as_QueryFence()->fence());
      break;
    case B::WaitFence:
      l.use(K::kFence, event.body_as_WaitFence()->fence());
      break;
    case B::FenceReleased:
      l.release(K::kFence, event.body_as_FenceReleased()->fence());
      break;
    case B::Synchronize:
      l.use(K::kStream, event.body_as_Synchronize()->stream());
      break;
    case B::Readback: {
      const auto* e = event.body_as_Readback();
      l.use(K::kStream, e->stream());
      l.use(K::kBuffer, e->source());
      l.payload(e->payload());
      break;
    }
    case B::OptionalCall:
      l.optional_call(*event.body_as_OptionalCall());
      break;
    case B::BeginStaticWeightImport:
      l.create(K::kImportSession, event.body_as_BeginStaticWeightImport()->session());
      break;
    case B::ImportComponent: {
      const auto* e = event.body_as_ImportComponent();
      if (e->session().has_value()) l.use_own(K::kImportSession, *e->session());
      l.use(K::kBuffer, e->destination());
      l.payload(e->payload());
      break;
    }
    case B::SealStaticWeightImport: {
      const auto* e = event.body_as_SealStaticWeightImport();
      if (e->session().has_value()) l.use_own(K::kImportSession, *e->session());
      break;
    }
    case B::EncodeStaticWeightTransform: {
      const auto* e = event.body_as_EncodeStaticWeightTransform();
      l.use(K::kBuffer, e->source());
      l.use(K::kBuffer, e->destination());
      l.create(K::kCommand, e->command());
      break;
    }
    case B::ConfigureReusableExecutables:
      l.use(K::kStream, event.body_as_ConfigureReusableExecutables()->stream());
      break;
    case B::SealReusableExecutables:
      l.use(K::kStream, event.body_as_SealReusableExecutables()->stream());
      break;
    case B::ReusablePreparationQueried:
      l.use(K::kStream, event.body_as_ReusablePreparationQueried()->stream());
      break;
    case B::ReusableCatalogQueried:
      l.use(K::kStream, event.body_as_ReusableCatalogQueried()->stream());
      break;
    case B::EncodeReusableExecution:
      l.create(K::kCommand, event.body_as_EncodeReusableExecution()->command());
      break;
    case B::TrimReusableExecutables:
      l.use(K::kStream, event.body_as_TrimReusableExecutables()->stream());
      break;
    case B::CoalesceProgramBindings: {
      const auto* e = event.body_as_CoalesceProgramBindings();
      l.commands(e->commands_in());
      l.create_each(K::kCommand, e->commands_out());
      break;
    }
    case B::NONE:
    case B::RuntimeOpened:
    case B::DescribeError:
    case B::CounterSnapshot:
    case B::GuardedSubmissionQueried:
      break;  // these name no object and store no payload
  }
  return std::move(l.out);
}

}  // namespace vtrace::schema
