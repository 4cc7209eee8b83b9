// What an event links to outside its own fields: the objects it names, the objects it creates and
// releases, the permit and submit it pairs with, and the payload blobs it stores. One function,
// one case per event kind, that every reader of these links shares: the replay plan (its reference
// rules), the recorder's tests (every reference comes after the object's creation or its
// ForeignObjectSeen) and `vtrace dump --payloads`.
//
//   auto links = schema::event_links(*schema::event_of(record));
//   for (const auto& use : links.uses) ...      // kind + reference, null references left out
//
// Ownership: plain values; nothing borrowed. Thread rules: pure. Errors: none; an event of a kind
// this build does not know (or a 1.0-1.1 OptionalCall naming an unknown method) links to nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "vtrace/schema/format.h"
#include "vtrace/schema/objects.h"
#include "vtrace_generated.h"

namespace vtrace::schema {

struct ObjectLink {
  ObjectKind kind = ObjectKind::kBuffer;
  ObjectRef ref;
  friend bool operator==(const ObjectLink&, const ObjectLink&) = default;
};

struct EventLinks {
  std::vector<ObjectLink> uses;     // objects the call names, in field order (not null ones)
  std::vector<ObjectLink> creates;  // objects it returned (own), or the one ForeignObjectSeen names
  std::vector<ObjectLink> releases;            // objects whose last handle it records the end of
  std::vector<BlobId> payloads;                // payload blobs it stores, in field order
  std::optional<std::uint64_t> admits_permit;  // Admit: the generation returned
  std::optional<std::uint64_t> uses_permit;    // Allocate: the generation consumed
  std::optional<std::uint64_t> ends_submit;    // SubmitEnd: its SubmitBegin's sequence number
};

EventLinks event_links(const fb::Event& event);

}  // namespace vtrace::schema
