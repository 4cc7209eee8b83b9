// ReplayPlan::build: decode every event into a typed step (event_decoder.h), then validate
// references (reference_check.h, over schema::event_links) and payloads.
#include "vtrace/replayer/replay_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "event_decoder.h"
#include "reference_check.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"

namespace vtrace::replayer {

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;
using schema::TraceError;
using schema::TraceErrorKind;
using schema::TraceResult;

// build() reserves steps for at most this many events up front; a longer trace grows the vector.
constexpr std::uint64_t kStepsReservedAtMost = 1u << 12;

namespace {

// The payload a step names and the size its event claims for it, if it names one.
std::optional<std::pair<schema::BlobId, std::uint64_t>> payload_claim(const ReplayStepBody& body) {
  if (const auto* u = std::get_if<step::EncodeUpload>(&body)) {
    return std::pair{u->payload, u->payload_bytes};
  }
  if (const auto* c = std::get_if<step::ImportComponent>(&body)) {
    return std::pair{c->payload, c->payload_bytes};
  }
  if (const auto* r = std::get_if<step::Readback>(&body); r != nullptr && r->payload) {
    return std::pair{*r->payload, r->payload_bytes};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::uint8_t>* ReplayPlan::payload(const schema::BlobId& id) const {
  auto it = payloads_.find(id);
  return it == payloads_.end() ? nullptr : &it->second;
}

TraceResult<ReplayStep> decode_step(std::uint64_t ordinal, const fb::Event& event) {
  const std::string_view kind = schema::event_kind_name(event);
  auto body = detail::decode_body(ordinal, kind, event);
  if (!body) return std::unexpected(body.error());
  return ReplayStep{ordinal, std::string(kind), std::move(*body)};
}

TraceResult<ReplayPlan> ReplayPlan::build(schema::TraceReader& reader) {
  ReplayPlan plan;
  plan.trace_complete_ = reader.complete();
  if (const auto* metadata = schema::read_trace_metadata(reader.header().metadata);
      metadata != nullptr && metadata->runtime_name() != nullptr) {
    plan.recorded_runtime_ = metadata->runtime_name()->str();
  }
  if (const auto* metadata = schema::read_trace_metadata(reader.header().metadata);
      metadata != nullptr && metadata->window() != nullptr) {
    plan.counter_baseline_ = metadata->window()->baseline_event();
  }
  if (!plan.trace_complete_) {
    const auto& recovery = reader.recovery();
    plan.recovery_.note = recovery.note;
    plan.recovery_.events_recovered = recovery.events_recovered;
    plan.recovery_.cut_offset = recovery.cut_offset;
    plan.recovery_.file_bytes = recovery.file_bytes;
  }
  detail::ReferenceCheck references;
  std::vector<std::pair<std::uint64_t, schema::BlobId>> named;  // (event, payload), in event order
  std::optional<TraceError> failure;
  // The event count is the footer's claim, which each frame proves only when it is decoded: a
  // hostile footer may claim 2^40 events, or ~10^8 a frame (tests/replayer/bad_reference_test.cpp,
  // tests/fuzz). Reserve no more than a few pages of steps.
  plan.steps_.reserve(std::min<std::uint64_t>(reader.event_count(), kStepsReservedAtMost));
  auto visited = reader.visit_events(
      0, reader.event_count(), [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
        const fb::Event* event = schema::event_of(bytes);
        const std::string_view kind = schema::event_kind_name(*event);
        if (event->seq() != ordinal) {
          failure =
              detail::corrupt(ordinal, kind, fmt::format("has sequence number {}", event->seq()));
          return false;
        }
        auto body = detail::decode_body(ordinal, kind, *event);
        if (!body) {
          failure = body.error();
          return false;
        }
        // A skipped step (an annotation of a kind this build does not know) links to nothing.
        const auto links = std::holds_alternative<step::Skipped>(*body)
                               ? schema::EventLinks{}
                               : schema::event_links(*event);
        if (auto bad = references.visit(ordinal, std::holds_alternative<step::SubmitBegin>(*body),
                                        links)) {
          failure = detail::corrupt(ordinal, kind, *bad);
          return false;
        }
        if (const auto* opened = std::get_if<step::RuntimeOpened>(&*body);
            opened != nullptr && plan.recorded_runtime_.empty()) {
          plan.recorded_runtime_ = opened->registry_name;
        }
        for (const auto& id : links.payloads) named.emplace_back(ordinal, id);
        plan.steps_.push_back({ordinal, std::string(kind), std::move(*body)});
        return true;
      });
  if (!visited) return std::unexpected(visited.error());
  if (failure) return std::unexpected(*failure);

  // Steps are pushed from ordinal 0 with seq == ordinal, so steps_[n].ordinal == n.
  for (const auto& [ordinal, id] : named) {
    if (plan.payloads_.contains(id)) continue;
    auto bytes = reader.blob(id);
    if (bytes) {
      plan.payload_bytes_ += bytes->size();
      plan.payloads_.emplace(id, std::move(*bytes));
      continue;
    }
    const std::string& kind = plan.steps_[ordinal].kind;
    if (bytes.error().kind == TraceErrorKind::kMissingBlob && !plan.trace_complete_) {
      // The cut lost this payload: replay everything before the event that needs it.
      plan.recovery_.stopped_at = ordinal;
      plan.recovery_.stop_reason =
          fmt::format("event {} ({}) names payload {}, which the cut file does not hold", ordinal,
                      kind, id.hex());
      plan.steps_.resize(ordinal);
      break;
    }
    return std::unexpected(TraceError{bytes.error().kind, fmt::format("event {} ({}): {}", ordinal,
                                                                      kind, bytes.error().message)});
  }

  // What an event says of its payload's size must be what the payload holds: the replayer
  // uploads and compares the payload's bytes, so a wrong claim would otherwise pass unseen.
  for (const auto& s : plan.steps_) {
    const auto claim = payload_claim(s.body);
    if (!claim) continue;
    const auto found = plan.payloads_.find(claim->first);
    if (found == plan.payloads_.end() || found->second.size() == claim->second) continue;
    return std::unexpected(
        detail::corrupt(s.ordinal, s.kind,
                        fmt::format("claims {} payload bytes, but its payload {} holds {}",
                                    claim->second, claim->first.hex(), found->second.size())));
  }

  std::set<std::uint64_t> open_submits;
  for (const auto& s : plan.steps_) {
    if (std::holds_alternative<step::SubmitBegin>(s.body)) open_submits.insert(s.ordinal);
    if (const auto* end = std::get_if<step::SubmitEnd>(&s.body)) {
      open_submits.erase(end->begin_seq);
      plan.submit_ends_[end->begin_seq] = s.ordinal;
    }
  }
  plan.unfinished_submits_.assign(open_submits.begin(), open_submits.end());
  return plan;
}

}  // namespace vtrace::replayer
