// ReferenceCheck: the plan's reference rules (replay_plan.h) over the links of each event
// (schema::event_links): every object an event names was created by an earlier event and not yet
// released, every permit it allocates with was admitted, every SubmitEnd names a SubmitBegin
// before it. Private to replay_plan.cpp.
#pragma once

#include <fmt/format.h>

#include <array>
#include <optional>
#include <set>
#include <string>

#include "vtrace/schema/event_links.h"

namespace vtrace::replayer::detail {

class ReferenceCheck {
 public:
  // Checks one event's links against the events before it, then adds what it creates, releases
  // and begins. Returns why the event is refused, or nothing.
  std::optional<std::string> visit(std::uint64_t ordinal, bool submit_begin,
                                   const schema::EventLinks& links) {
    for (const auto& use : links.uses) {
      if (auto bad = check(use)) return bad;
    }
    for (const auto& released : links.releases) {
      if (auto bad = check(released)) return bad;
    }
    if (links.uses_permit && !permits_.contains(*links.uses_permit)) {
      return fmt::format("allocates with permit generation {}, which no Admit returned",
                         *links.uses_permit);
    }
    if (links.ends_submit && !begins_.contains(*links.ends_submit)) {
      return fmt::format("ends submit {}, which is not a SubmitBegin before it",
                         *links.ends_submit);
    }
    for (const auto& created : links.creates)
      live(created.ref, created.kind).insert(created.ref.ordinal);
    for (const auto& released : links.releases) {
      live(released.ref, released.kind).erase(released.ref.ordinal);
      released_[schema::index_of(released.kind)].insert(released.ref.ordinal);
    }
    if (links.admits_permit) permits_.insert(*links.admits_permit);
    if (submit_begin) begins_.insert(ordinal);
    return std::nullopt;
  }

 private:
  using Set = std::set<std::uint64_t>;
  Set& live(const schema::ObjectRef& r, schema::ObjectKind k) {
    return r.space == schema::ObjectRef::Space::kOwn ? own_[schema::index_of(k)]
                                                     : foreign_[schema::index_of(k)];
  }
  std::optional<std::string> check(const schema::ObjectLink& link) {
    if (live(link.ref, link.kind).contains(link.ref.ordinal)) return std::nullopt;
    if (link.ref.space == schema::ObjectRef::Space::kOwn &&
        released_[schema::index_of(link.kind)].contains(link.ref.ordinal)) {
      return fmt::format("names {} after the event that released it",
                         link.ref.to_string(link.kind));
    }
    return fmt::format("names {} before any event created it", link.ref.to_string(link.kind));
  }

  std::array<Set, schema::kObjectKindCount> own_, foreign_, released_;
  Set permits_, begins_;
};

}  // namespace vtrace::replayer::detail
