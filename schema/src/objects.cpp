#include "vtrace/schema/objects.h"

#include <fmt/format.h>

namespace vtrace::schema {

// The wire enums carry the same numbers (so the conversions are casts): tied here.
static_assert(static_cast<int>(fb::ObjectKind::Buffer) == static_cast<int>(ObjectKind::kBuffer));
static_assert(static_cast<int>(fb::ObjectKind::Stream) == static_cast<int>(ObjectKind::kStream));
static_assert(static_cast<int>(fb::ObjectKind::Command) == static_cast<int>(ObjectKind::kCommand));
static_assert(static_cast<int>(fb::ObjectKind::Fence) == static_cast<int>(ObjectKind::kFence));
static_assert(static_cast<int>(fb::ObjectKind::ImportSession) ==
              static_cast<int>(ObjectKind::kImportSession));
static_assert(static_cast<std::size_t>(fb::ObjectKind::MAX) + 1 == kObjectKindCount);
static_assert(static_cast<int>(fb::RefSpace::Own) == static_cast<int>(ObjectRef::Space::kOwn));
static_assert(static_cast<int>(fb::RefSpace::Foreign) ==
              static_cast<int>(ObjectRef::Space::kForeign));
static_assert(static_cast<int>(fb::RefSpace::Null) == static_cast<int>(ObjectRef::Space::kNull));
static_assert(fb::RefSpace::MAX == fb::RefSpace::Null);

std::string_view object_kind_name(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kBuffer:
      return "buffer";
    case ObjectKind::kStream:
      return "stream";
    case ObjectKind::kCommand:
      return "command";
    case ObjectKind::kFence:
      return "fence";
    case ObjectKind::kImportSession:
      return "import session";
  }
  return "object";
}

std::string ObjectRef::to_string(ObjectKind kind) const {
  switch (space) {
    case Space::kOwn:
      return fmt::format("{}#{}", object_kind_name(kind), ordinal);
    case Space::kForeign:
      return fmt::format("foreign {}#{}", object_kind_name(kind), ordinal);
    case Space::kNull:
      return "null";
  }
  return "null";
}

fb::ObjectKind to_fb(ObjectKind kind) { return static_cast<fb::ObjectKind>(kind); }

std::optional<ObjectKind> from_fb(fb::ObjectKind kind) {
  if (static_cast<std::size_t>(kind) >= kObjectKindCount) return std::nullopt;
  return static_cast<ObjectKind>(kind);
}

fb::ObjectRef to_fb(const ObjectRef& ref) {
  return fb::ObjectRef(ref.ordinal, static_cast<fb::RefSpace>(ref.space));
}

ObjectRef from_fb(const fb::ObjectRef* ref) {
  if (ref == nullptr || ref->space() == fb::RefSpace::Null) return {};
  return {ref->ordinal(),
          ref->space() == fb::RefSpace::Own ? ObjectRef::Space::kOwn : ObjectRef::Space::kForeign};
}

}  // namespace vtrace::schema
