// The object table (object_table.h).
#include "vtrace/replayer/object_table.h"

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

namespace {
template <typename Map>
auto* find_live(const Map& own, const Map& foreign, const ObjectRef& ref) {
  using Ptr = decltype(own.begin()->second.get());
  if (ref.space == ObjectRef::Space::kNull) return Ptr{nullptr};
  const Map& table = ref.space == ObjectRef::Space::kOwn ? own : foreign;
  auto it = table.find(ref.ordinal);
  return it == table.end() ? Ptr{nullptr} : it->second.get();
}
}  // namespace

const rt::Buffer* ObjectTable::buffer(const ObjectRef& ref) const {
  return find_live(buffers_, foreign_buffers_, ref);
}
rt::Stream* ObjectTable::stream(const ObjectRef& ref) const {
  return find_live(streams_, foreign_streams_, ref);
}
const rt::Fence* ObjectTable::fence(const ObjectRef& ref) const {
  return find_live(fences_, foreign_fences_, ref);
}
rt::AllocationPermit* ObjectTable::permit(std::uint64_t generation) {
  auto it = permits_.find(generation);
  return it == permits_.end() ? nullptr : &it->second;
}
rt::StaticWeightImportSession* ObjectTable::session(std::uint64_t ordinal) const {
  auto it = sessions_.find(ordinal);
  return it == sessions_.end() ? nullptr : it->second.get();
}

std::optional<rt::CommandPtr> ObjectTable::take_command(const ObjectRef& ref,
                                                        bool null_is_missing) {
  switch (ref.space) {
    case ObjectRef::Space::kOwn: {
      auto it = commands_.find(ref.ordinal);
      if (it == commands_.end() || (null_is_missing && !it->second)) return std::nullopt;
      rt::CommandPtr command = std::move(it->second);
      commands_.erase(it);
      return command;
    }
    case ObjectRef::Space::kForeign:
      return foreign_command();
    case ObjectRef::Space::kNull:
      break;
  }
  return rt::CommandPtr{};
}

void ObjectTable::keep_buffer(std::uint64_t ordinal, rt::BufferPtr buffer) {
  buffers_[ordinal] = std::move(buffer);
}
void ObjectTable::keep_stream(std::uint64_t ordinal, rt::StreamPtr stream) {
  streams_[ordinal] = std::move(stream);
}
void ObjectTable::keep_fence(std::uint64_t ordinal, rt::FencePtr fence) {
  fences_[ordinal] = std::move(fence);
}
void ObjectTable::keep_command(std::uint64_t ordinal, rt::CommandPtr command) {
  commands_[ordinal] = std::move(command);
}
void ObjectTable::keep_permit(std::uint64_t generation, rt::AllocationPermit permit) {
  permits_.insert_or_assign(generation, std::move(permit));
}
void ObjectTable::keep_session(std::uint64_t ordinal,
                               std::unique_ptr<rt::StaticWeightImportSession> session) {
  sessions_[ordinal] = std::move(session);
}

void ObjectTable::release(ObjectKind kind, std::uint64_t ordinal) {
  switch (kind) {
    case ObjectKind::kBuffer:
      buffers_.erase(ordinal);
      return;
    case ObjectKind::kStream:
      streams_.erase(ordinal);
      return;
    case ObjectKind::kCommand:
      commands_.erase(ordinal);
      return;
    case ObjectKind::kFence:
      fences_.erase(ordinal);
      return;
    case ObjectKind::kImportSession:
      return;
  }
}

rt::Buffer* ObjectTable::aux_scratch() {
  if (!aux_scratch_) {
    auto request = rt::BufferRequest::create(
        *rt::ResourceId::create("resource.replay.foreign-scratch"), 64, 16,
        rt::BufferUsage::kScratch, rt::ElementType::kU8);
    if (!request) return nullptr;
    auto permit = aux_.admit(*request);
    if (!permit) return nullptr;
    auto buffer = aux_.allocate(std::move(*permit));
    if (buffer) aux_scratch_ = std::move(*buffer);
  }
  return aux_scratch_.get();
}

rt::Stream* ObjectTable::aux_stream() {
  if (!aux_stream_) {
    if (auto s = aux_.create_stream()) aux_stream_ = std::move(*s);
  }
  return aux_stream_.get();
}

rt::CommandPtr ObjectTable::foreign_command() {
  rt::Buffer* scratch = aux_scratch();
  if (scratch == nullptr) return nullptr;
  auto command = aux_.encode_zero(*scratch, 0, 1);
  return command ? std::move(*command) : nullptr;
}

void ObjectTable::make_foreign(const step::ForeignObjectSeen& s) {
  switch (s.kind) {
    case ObjectKind::kBuffer: {
      if (!s.descriptor) return;
      const auto& d = *s.descriptor;
      auto request = rt::BufferRequest::create(d.resource_id, d.size_bytes, d.alignment_bytes,
                                               d.usage, d.element_type);
      if (!request) return;
      auto permit = aux_.admit(*request);
      if (!permit) return;
      if (auto b = aux_.allocate(std::move(*permit))) foreign_buffers_[s.ordinal] = std::move(*b);
      return;
    }
    case ObjectKind::kStream:
      if (auto st = aux_.create_stream()) foreign_streams_[s.ordinal] = std::move(*st);
      return;
    case ObjectKind::kFence: {
      rt::Stream* st = aux_stream();
      rt::CommandPtr command = foreign_command();
      if (st == nullptr || !command) return;
      if (auto f = aux_.submit(*st, rt::CommandBatch::singleton(std::move(command)))) {
        foreign_fences_[s.ordinal] = std::move(*f);
      }
      return;
    }
    case ObjectKind::kCommand:        // made fresh at each use: submit consumes it
    case ObjectKind::kImportSession:  // never handed across runtimes by this version
      return;
  }
}

}  // namespace vtrace::replayer
