#include "vtrace/schema/trace_summary.h"

#include <algorithm>
#include <string>
#include <utility>

#include "vtrace/schema/events.h"

namespace vtrace::schema {

void SummaryTally::add(const fb::Event& event) {
  ++events_;
  const auto kind = static_cast<std::size_t>(event.body_type());
  if (kind < kKinds && event_kind_known(event)) {
    ++counts_[kind];
  } else {
    ++unknown_kinds_;
  }
  if (event.body_as_SubmitBegin() != nullptr) ++submits_;
  if (const auto* u = event.body_as_EncodeUpload()) upload_bytes_ += u->payload_bytes();
  if (const auto* r = event.body_as_Readback(); r != nullptr && r->payload() != nullptr) {
    readback_bytes_ += r->payload_bytes();
  }
  if (const auto* c = event.body_as_CounterSnapshot(); c != nullptr && c->counters() != nullptr) {
    last_counters_ = *c->counters();
  }
}

std::vector<std::uint8_t> SummaryTally::finish(const TraceWriteStats& stats,
                                               const std::optional<fb::Counters>& final_counters,
                                               std::string_view interrupted_by,
                                               std::string_view repaired) const {
  std::vector<std::pair<std::string_view, std::uint64_t>> named;
  for (std::size_t i = 0; i < kKinds; ++i) {
    if (counts_[i] != 0)
      named.emplace_back(event_kind_name(static_cast<fb::EventBody>(i)), counts_[i]);
  }
  if (unknown_kinds_ != 0) named.emplace_back("Unknown", unknown_kinds_);
  std::sort(named.begin(), named.end());

  flatbuffers::FlatBufferBuilder fbb(512);
  std::vector<flatbuffers::Offset<fb::EventKindCount>> counts;
  counts.reserve(named.size());
  for (const auto& [name, count] : named) {
    counts.push_back(
        fb::CreateEventKindCount(fbb, fbb.CreateString(name.data(), name.size()), count));
  }
  const auto counts_v = fbb.CreateVector(counts);
  flatbuffers::Offset<flatbuffers::String> interrupted;
  if (!interrupted_by.empty()) {
    interrupted = fbb.CreateString(interrupted_by.data(), interrupted_by.size());
  }
  flatbuffers::Offset<flatbuffers::String> repaired_text;
  if (!repaired.empty()) repaired_text = fbb.CreateString(repaired.data(), repaired.size());
  const std::optional<fb::Counters>& counters = final_counters ? final_counters : last_counters_;
  fb::TraceSummaryBuilder b(fbb);
  b.add_event_counts(counts_v);
  if (counters) b.add_final_counters(&*counters);
  b.add_events(events_);
  b.add_blobs(stats.blobs);
  b.add_blob_references(stats.blob_references);
  b.add_payload_raw_bytes(stats.payload_raw_bytes);
  b.add_payload_referenced_bytes(stats.payload_referenced_bytes);
  b.add_submits(submits_);
  b.add_readback_bytes(readback_bytes_);
  b.add_upload_bytes(upload_bytes_);
  if (!interrupted.IsNull()) b.add_interrupted_by(interrupted);
  if (!repaired_text.IsNull()) b.add_repaired(repaired_text);
  fbb.Finish(b.Finish());
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace vtrace::schema
