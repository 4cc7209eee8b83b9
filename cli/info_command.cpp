// vtrace info T: header, runtime, descriptor, event counts by kind, payload bytes, frames.
#include <fmt/format.h>

#include <map>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::cli {

namespace {

struct InfoOptions {
  std::string trace;
};

int run_info(const InfoOptions& o) {
  auto opened = schema::TraceReader::open(o.trace);
  if (!opened) {
    print_error(about_file(o.trace, opened.error().message));
    return kExitUsage;
  }
  auto& reader = **opened;
  const auto& header = reader.header();
  // Every string from the file, and the path, through printable(): one field, one line.
  fmt::print("trace:       {}\n", printable(o.trace));
  fmt::print("format:      {}.{} (producer {} {})\n", header.format_major, header.format_minor,
             printable(header.producer), printable(header.producer_version));
  if (const auto* m = schema::read_trace_metadata(header.metadata)) {
    const auto* name = m->runtime_name();
    fmt::print("runtime:     {}\n", name != nullptr ? printable(name->str()) : "?");
    if (const auto* w = m->workload_description(); w != nullptr) {
      fmt::print("workload:    {}\n", printable(w->str()));
    }
    if (auto d = schema::read_descriptor(m->descriptor())) {
      std::vector<std::string> caps;
      for (const auto& c : d->capabilities) caps.push_back(printable(c.str()));
      fmt::print("descriptor:  {} class {} ordinal {} memory {} fingerprint {}\n",
                 printable(d->id.str()), runtime::device_class_name(d->device_class), d->ordinal,
                 human_bytes(d->total_memory_bytes),
                 printable(d->runtime_implementation_fingerprint));
      fmt::print("capabilities: {}\n", fmt::join(caps, ", "));
    }
    if (const auto* rec = m->recorder(); rec != nullptr) {
      fmt::print("recorder:    zstd level {}, frame target {}\n", rec->zstd_level(),
                 human_bytes(rec->frame_target_bytes()));
    }
    if (const auto* w = m->window(); w != nullptr) {
      // A flight window or a capture started mid-run (docs/FLIGHT.md).
      const auto detail = w->detail() != nullptr && w->detail()->size() > 0
                              ? fmt::format(" ({})", printable(w->detail()->str()))
                              : std::string();
      fmt::print(
          "window:      number {}, written by {}{} at event {} of the run (batch {}); holds {} "
          "batches from event {} of the run after {} synthesized events\n",
          w->window_number(), w->trigger() != nullptr ? printable(w->trigger()->str()) : "?",
          detail,
          w->trigger_event(), w->trigger_batch(), w->batches(), w->first_event(),
          w->prologue_events());
    }
  }

  // Counts by kind: from the footer summary when present, else by visiting every event.
  std::map<std::string, std::uint64_t> counts;
  const auto* summary = schema::read_trace_summary(reader.summary());
  const auto* event_counts = summary != nullptr ? summary->event_counts() : nullptr;
  if (event_counts != nullptr) {
    for (const auto* c : *event_counts) {
      const auto* kind = c->kind();
      counts[kind != nullptr ? printable(kind->str()) : "?"] = c->count();
    }
  } else {
    auto visited = reader.visit_events(0, reader.event_count(),
                                       [&](std::uint64_t, std::span<const std::uint8_t> bytes) {
                                         ++counts[std::string(schema::event_kind_name(
                                             *schema::event_of(bytes)))];
                                         return true;
                                       });
    if (!visited) {
      print_error(about_file(o.trace, visited.error().message));
      return kExitUsage;
    }
  }
  fmt::print("events:      {}\n", reader.event_count());
  for (const auto& [kind, count] : counts) fmt::print("  {:<24} {}\n", kind, count);

  const auto totals = reader.totals();
  std::uint64_t content = 0;
  for (const auto& f : reader.frames()) content += f.content_bytes;
  const double ratio = totals.compressed_bytes == 0
                           ? 0.0
                           : static_cast<double>(content) / static_cast<double>(totals.compressed_bytes);
  fmt::print("payloads:    {} distinct, {} raw, {} stored before compression\n", totals.blobs,
             human_bytes(totals.payload_raw_bytes), human_bytes(totals.payload_stored_bytes));
  if (summary != nullptr) {
    fmt::print("dedup:       {} references to {} payloads, {} referenced for {} stored\n",
               summary->blob_references(), summary->blobs(),
               human_bytes(summary->payload_referenced_bytes()),
               human_bytes(summary->payload_raw_bytes()));
  }
  fmt::print("compression: {} of records in {} compressed, ratio {:.2f}\n", human_bytes(content),
             human_bytes(totals.compressed_bytes), ratio);
  fmt::print("frames:      {}\n", reader.frames().size());
  fmt::print("file:        {}\n", human_bytes(totals.file_bytes));
  if (reader.complete()) {
    // info reads the header and footer only (by design): the data frames are not checked here.
    fmt::print(
        "status:      complete (header and footer; data frames not verified: run vtrace verify)\n");
  } else {
    fmt::print("status:      recovered: {}\n", printable(reader.recovery().note));
  }
  if (summary != nullptr && summary->interrupted_by() != nullptr) {
    fmt::print(
        "interrupted: by {}: the recording stopped at a call boundary before the workload's "
        "end\n",
        printable(summary->interrupted_by()->str()));
  }
  if (summary != nullptr && summary->repaired() != nullptr) {
    fmt::print("repaired:    {}\n", printable(summary->repaired()->str()));
  }
  return kExitOk;
}

}  // namespace

void add_info_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto options = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Summarise a trace: runtime, event counts, sizes");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->callback([options, run]() { *run = [options]() { return run_info(*options); }; });
}

}  // namespace vtrace::cli
