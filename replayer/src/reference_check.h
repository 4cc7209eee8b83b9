// ReferenceCheck: the plan's reference rules (replay_plan.h), one check per step type: every
// object a step names was created by an earlier event (and not released), every permit it
// allocates with was admitted, every SubmitEnd names a SubmitBegin; and the payload ids the steps
// need. Private to replay_plan.cpp.
#pragma once

#include <fmt/format.h>

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::replayer::detail {

// Checks that every reference names an object created earlier, and collects payload ids.
class ReferenceCheck {
 public:
  std::optional<std::string> visit(const ReplayStepBody& body, std::vector<schema::BlobId>& blobs) {
    return std::visit([&](const auto& s) { return check(s, blobs); }, body);
  }

 private:
  static std::size_t index(ObjectKind k) { return static_cast<std::size_t>(k); }
  std::optional<std::string> use(const ObjectRef& r, ObjectKind k) {
    if (r.space == ObjectRef::Space::kNull) return std::nullopt;
    const auto& set = r.space == ObjectRef::Space::kOwn ? own_[index(k)] : foreign_[index(k)];
    if (set.contains(r.ordinal)) return std::nullopt;
    return fmt::format("names {} before any event created it", r.to_string(k));
  }
  std::optional<std::string> create(std::optional<std::uint64_t> ordinal, ObjectKind k) {
    if (ordinal) own_[index(k)].insert(*ordinal);
    return std::nullopt;
  }
  template <typename... R>
  std::optional<std::string> all(R... results) {
    std::optional<std::string> first;
    ((first = first ? first : results), ...);
    return first;
  }

  std::optional<std::string> check(const step::ForeignObjectSeen& s, auto&) {
    foreign_[index(s.kind)].insert(s.ordinal);
    return std::nullopt;
  }
  std::optional<std::string> check(const step::Admit& s, auto&) {
    if (s.generation) permits_.insert(*s.generation);
    return std::nullopt;
  }
  std::optional<std::string> check(const step::Allocate& s, auto&) {
    if (!permits_.contains(s.generation)) {
      return fmt::format("allocates with permit generation {}, which no Admit returned",
                         s.generation);
    }
    return create(s.buffer, ObjectKind::kBuffer);
  }
  std::optional<std::string> check(const step::BufferDescriptorQueried& s, auto&) {
    return use(s.buffer, ObjectKind::kBuffer);
  }
  template <ObjectKind K>
  std::optional<std::string> check(const step::Released<K>& s, auto&) {
    return use({s.ordinal, ObjectRef::Space::kOwn}, K);
  }
  std::optional<std::string> check(const step::StreamCreated& s, auto&) {
    return create(s.stream, ObjectKind::kStream);
  }
  std::optional<std::string> check(const step::StreamStateQueried& s, auto&) {
    return use(s.stream, ObjectKind::kStream);
  }
  std::optional<std::string> check(const step::EncodeCopy& s, auto&) {
    return all(use(s.source, ObjectKind::kBuffer), use(s.destination, ObjectKind::kBuffer),
               create(s.command, ObjectKind::kCommand));
  }
  std::optional<std::string> check(const step::EncodeUpload& s, auto& blobs) {
    blobs.push_back(s.payload);
    return all(use(s.destination, ObjectKind::kBuffer), create(s.command, ObjectKind::kCommand));
  }
  std::optional<std::string> check(const step::EncodeZero& s, auto&) {
    return all(use(s.destination, ObjectKind::kBuffer), create(s.command, ObjectKind::kCommand));
  }
  std::optional<std::string> check(const step::EncodeDenseLinear& s, auto&) {
    for (const auto& l : s.launches) {
      for (const auto* r : {&l.input, &l.weight, &l.output}) {
        if (auto bad = use(r->buffer, ObjectKind::kBuffer)) return bad;
      }
    }
    return create(s.command, ObjectKind::kCommand);
  }
  std::optional<std::string> check(const step::SubmitBegin& s, auto&) {
    if (auto bad = use(s.stream, ObjectKind::kStream)) return bad;
    for (const auto& e : s.entries) {
      if (auto bad = use(e.command, ObjectKind::kCommand)) return bad;
    }
    return std::nullopt;
  }
  std::optional<std::string> check(const step::SubmitEnd& s, auto&) {
    if (!begins_.contains(s.begin_seq)) {
      return fmt::format("ends submit {}, which is not a SubmitBegin before it", s.begin_seq);
    }
    return create(s.fence, ObjectKind::kFence);
  }
  std::optional<std::string> check(const step::SubmissionAttribution& s, auto&) {
    return use(s.fence, ObjectKind::kFence);
  }
  std::optional<std::string> check(const step::QueryFence& s, auto&) {
    return use(s.fence, ObjectKind::kFence);
  }
  std::optional<std::string> check(const step::WaitFence& s, auto&) {
    return use(s.fence, ObjectKind::kFence);
  }
  std::optional<std::string> check(const step::Synchronize& s, auto&) {
    return use(s.stream, ObjectKind::kStream);
  }
  std::optional<std::string> check(const step::Readback& s, auto& blobs) {
    if (s.payload) blobs.push_back(*s.payload);
    return all(use(s.stream, ObjectKind::kStream), use(s.source, ObjectKind::kBuffer));
  }
  std::optional<std::string> check(const step::OptionalCall& s, auto& blobs) {
    if (s.payload) blobs.push_back(*s.payload);
    if (auto bad = all(use(s.stream, ObjectKind::kStream), use(s.buffer, ObjectKind::kBuffer),
                       use(s.destination, ObjectKind::kBuffer))) {
      return bad;
    }
    for (const auto& c : s.commands_in) {
      if (auto bad = use(c, ObjectKind::kCommand)) return bad;
    }
    if (s.session) {
      if (s.method == "begin_static_weight_import") {
        create(s.session, ObjectKind::kImportSession);
      } else if (auto bad = use({*s.session, ObjectRef::Space::kOwn}, ObjectKind::kImportSession)) {
        return bad;
      }
    }
    create(s.command, ObjectKind::kCommand);
    for (const auto c : s.commands_out) create(c, ObjectKind::kCommand);
    return std::nullopt;
  }
  std::optional<std::string> check(const auto&, auto&) { return std::nullopt; }

 public:
  std::set<std::uint64_t> begins_;

 private:
  std::array<std::set<std::uint64_t>, 5> own_;
  std::array<std::set<std::uint64_t>, 5> foreign_;
  std::set<std::uint64_t> permits_;
};

}  // namespace vtrace::replayer::detail
