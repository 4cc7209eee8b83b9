// The objects events refer to, as one vocabulary for the recorder, the replay plan, the replayer
// and the tools: their kinds and their references. vtrace.fbs's ObjectKind and ObjectRef are the
// wire form of these two; each pair is tied value by value (objects.cpp).
//
// Thread rules: plain values. Errors: from_fb answers nullopt for a kind this build does not know.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrace_generated.h"

namespace vtrace::schema {

enum class ObjectKind : std::uint8_t { kBuffer, kStream, kCommand, kFence, kImportSession };
inline constexpr std::size_t kObjectKindCount = 5;

// "buffer", "stream", "command", "fence", "import session".
std::string_view object_kind_name(ObjectKind kind);
// The kind as an index in [0, kObjectKindCount), for tables per kind.
constexpr std::size_t index_of(ObjectKind kind) { return static_cast<std::size_t>(kind); }

// A recorded object reference: an own ordinal (an object this runtime made), a foreign ordinal
// (one the product passed in from elsewhere), or no object at all (a null pointer).
struct ObjectRef {
  enum class Space : std::uint8_t { kOwn, kForeign, kNull };
  std::uint64_t ordinal = 0;
  Space space = Space::kNull;
  std::string to_string(ObjectKind kind) const;  // "buffer#3", "foreign stream#0", "null"
  friend bool operator==(const ObjectRef&, const ObjectRef&) = default;
};

fb::ObjectKind to_fb(ObjectKind kind);
std::optional<ObjectKind> from_fb(fb::ObjectKind kind);
fb::ObjectRef to_fb(const ObjectRef& ref);
// A missing reference (nullptr) or one in the Null space is the null reference.
ObjectRef from_fb(const fb::ObjectRef* ref);

}  // namespace vtrace::schema
