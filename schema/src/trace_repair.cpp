// repair_trace: salvage-mode reader -> the longest valid prefix of events and their payloads ->
// TraceWriter with the input's header, a rebuilt summary and a new footer (trace_repair.h).
#include "vtrace/schema/trace_repair.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "container_internal.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/schema/trace_summary.h"

namespace vtrace::schema {
namespace {

using detail::make_error;

// Lets two readers (the footer's view and the salvage view) read one borrowed source.
class BorrowedSource final : public ByteSource {
 public:
  explicit BorrowedSource(const ByteSource& inner) : inner_(inner) {}
  std::uint64_t size() const override { return inner_.size(); }
  TraceResult<void> read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
    return inner_.read_at(offset, out);
  }
  std::string describe() const override { return inner_.describe(); }

 private:
  const ByteSource& inner_;
};

TraceResult<RepairReport> copy_intact(const ByteSource& source, const OpenOutput& open_output,
                                      RepairReport report) {
  auto sink = open_output();
  if (!sink) return std::unexpected(sink.error());
  std::vector<std::uint8_t> chunk(1u << 20);
  for (std::uint64_t at = 0; at < source.size();) {
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), source.size() - at));
    const std::span<std::uint8_t> part(chunk.data(), n);
    if (auto r = source.read_at(at, part); !r) return std::unexpected(r.error());
    if (auto w = (*sink)->write(part); !w) return std::unexpected(w.error());
    at += n;
  }
  if (auto c = (*sink)->commit(); !c) return std::unexpected(c.error());
  report.nothing_to_repair = true;
  report.output_bytes = source.size();
  return report;
}

// What the salvage reader did not recover, in file order. `indexed`: the input opened with its
// footer (its frame index says what each lost frame held).
std::vector<RepairDrop> lost_parts(const TraceReader& salvaged, const TraceReader* indexed) {
  std::vector<RepairDrop> drops;
  const RecoveryInfo& rec = salvaged.recovery();
  const auto& frames = salvaged.frames();
  const std::uint64_t recovered = salvaged.event_count();
  const std::uint64_t file_bytes = rec.file_bytes;
  const std::uint64_t data_end =
      indexed != nullptr && !indexed->frames().empty()
          ? indexed->frames().back().file_offset + indexed->frames().back().compressed_bytes
          : file_bytes;
  using Part = RepairDrop::Part;
  if (rec.damaged) {
    const DamagedFrame& d = *rec.damaged;
    RepairDrop drop{
        Part::kDamagedFrame, d.index, d.file_offset,  file_bytes - d.file_offset, recovered,
        std::nullopt,        {},      d.error.message};
    if (indexed != nullptr && d.index < indexed->frames().size()) {
      const auto& all = indexed->frames();
      const FrameInfo& f = all[d.index];
      drop.bytes = f.compressed_bytes;
      drop.events_lost = f.event_count;
      drops.push_back(drop);
      if (d.index + 1 < all.size()) {
        const FrameInfo& next = all[d.index + 1];
        const std::uint64_t later_events = indexed->event_count() - next.first_event;
        drops.push_back(RepairDrop{
            Part::kLaterFrames,
            d.index + 1,
            next.file_offset,
            data_end - next.file_offset,
            next.first_event,
            later_events,
            {},
            fmt::format("frames {} to {} come after the damaged frame {}: their events name "
                        "objects it created",
                        d.index + 1, all.size() - 1, d.index)});
      }
    } else {
      drop.reason += "; everything after it is dropped with it";
      drops.push_back(drop);
    }
    return drops;
  }
  if (!frames.empty() && !frames.back().complete) {
    const FrameInfo& f = frames.back();
    const std::uint64_t at = f.file_offset + f.compressed_bytes;
    // A file cut right after a flush lost no byte of data, only the end of its last frame and
    // whatever the recording did after.
    drops.push_back(RepairDrop{
        Part::kCutFrame,
        frames.size() - 1,
        at,
        file_bytes - at,
        recovered,
        std::nullopt,
        {},
        at == file_bytes
            ? fmt::format("frame {} at offset {} ends without its zstd end (the recording stopped "
                          "after a flush)",
                          frames.size() - 1, f.file_offset)
            : fmt::format("frame {} at offset {} is cut by the end of the file: its last {} bytes "
                          "do not decode to a complete record",
                          frames.size() - 1, f.file_offset, file_bytes - at)});
    return drops;
  }
  if (rec.cut_offset == file_bytes && indexed == nullptr) {
    drops.push_back(RepairDrop{Part::kFooter,
                               std::nullopt,
                               file_bytes,
                               0,
                               recovered,
                               std::nullopt,
                               {},
                               "the file ends after a complete frame without a footer (the "
                               "recording did not finish)"});
    return drops;
  }
  if (rec.cut_offset < file_bytes) {
    drops.push_back(RepairDrop{Part::kFooter,
                               std::nullopt,
                               rec.cut_offset,
                               file_bytes - rec.cut_offset,
                               recovered,
                               indexed != nullptr ? std::optional<std::uint64_t>(0) : std::nullopt,
                               {},
                               fmt::format("the {} bytes from offset {} are not a valid footer",
                                           file_bytes - rec.cut_offset, rec.cut_offset)});
  }
  return drops;
}

}  // namespace

std::string repair_drop_where(const RepairDrop& d) {
  const std::string where = d.frame_index ? fmt::format(" {}", *d.frame_index) : "";
  const std::string bytes = d.part == RepairDrop::Part::kEvents
                                ? std::string()
                                : fmt::format(" at offset {} ({} bytes)", d.file_offset, d.bytes);
  std::string lost;
  if (!d.events_lost) {
    lost = fmt::format(
        "events lost: unknown after event {}",
        d.first_event == 0 ? std::string("(none kept)") : std::to_string(d.first_event - 1));
  } else if (*d.events_lost == 0) {
    lost = "no events lost";
  } else {
    lost = fmt::format("{} events lost (events {} to {})", *d.events_lost, d.first_event,
                       d.first_event + *d.events_lost - 1);
  }
  return fmt::format("{}{}{}: {}", repair_part_name(d.part), where, bytes, lost);
}

std::string_view repair_part_name(RepairDrop::Part part) {
  switch (part) {
    case RepairDrop::Part::kDamagedFrame:
      return "damaged frame";
    case RepairDrop::Part::kLaterFrames:
      return "later frames";
    case RepairDrop::Part::kCutFrame:
      return "cut frame";
    case RepairDrop::Part::kFooter:
      return "footer";
    case RepairDrop::Part::kEvents:
      return "events";
  }
  return "unknown";
}

std::filesystem::path repair_output_for(const std::filesystem::path& trace) {
  std::error_code ec;
  const auto there = std::filesystem::symlink_status(trace, ec);
  if (!std::filesystem::exists(there) || std::filesystem::is_regular_file(there)) return trace;
  auto repaired = trace;
  repaired.replace_filename(trace.stem().string() + ".repaired" + trace.extension().string());
  return repaired;
}

std::optional<std::filesystem::path> recoverable_partial(const std::filesystem::path& trace) {
  auto partial = trace;
  partial += ".partial";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(partial, ec)) return std::nullopt;
  const auto size = std::filesystem::file_size(partial, ec);
  if (ec || size == 0) return std::nullopt;
  return partial;
}

TraceResult<RepairReport> repair_trace(const ByteSource& source, const OpenOutput& open_output,
                                       const RepairOptions& options) {
  RepairReport report;
  report.input_bytes = source.size();

  // The footer's view: says whether there is anything to repair, and what lost frames held.
  auto indexed = TraceReader::open(std::make_unique<BorrowedSource>(source));
  if (indexed && (*indexed)->complete()) {
    report.events_in_input = (*indexed)->event_count();
    if (auto verified = (*indexed)->verify_all(); verified) {
      report.events_kept = (*indexed)->event_count();
      report.payloads_kept = (*indexed)->totals().blobs;
      report.input_state = fmt::format(
          "{}: complete: {} events, {} frames, {} payloads, every checksum and index verified",
          source.describe(), report.events_kept, (*indexed)->frames().size(),
          report.payloads_kept);
      return copy_intact(source, open_output, std::move(report));
    } else {
      report.input_state = verified.error().message;
    }
  } else if (indexed) {
    report.input_state = (*indexed)->recovery().note;
  }
  // A damaged header: its own hash, which salvage mode checks too, or the footer's copy, which
  // catches a header lowered to minor 0 that salvage mode (no footer read) would take for a 1.0
  // header. Nothing is written.
  if (!indexed && is_header_damage(indexed.error())) {
    return std::unexpected(indexed.error());
  }
  const TraceReader* index = indexed && (*indexed)->complete() ? indexed->get() : nullptr;

  TraceReaderOptions salvage;
  salvage.salvage = true;
  auto opened = TraceReader::open(std::make_unique<BorrowedSource>(source), salvage);
  if (!opened) return std::unexpected(opened.error());
  TraceReader& in = **opened;
  if (report.input_state.empty()) report.input_state = in.recovery().note;
  report.drops = lost_parts(in, index);

  // The events to keep: every recovered one up to the first that names a payload not recovered.
  std::uint64_t keep = in.event_count();
  std::optional<RepairDrop> payload_drop;
  {
    auto visited = in.visit_events(0, keep, [&](std::uint64_t n, std::span<const std::uint8_t> e) {
      for (const BlobId& id : event_links(*event_of(e)).payloads) {
        if (in.blob_encoding(id)) continue;
        keep = n;
        payload_drop =
            RepairDrop{RepairDrop::Part::kEvents,
                       std::nullopt,
                       0,
                       0,
                       n,
                       in.event_count() - n,
                       {id},
                       fmt::format("event {} ({}) names payload {}, which the file does not hold",
                                   n, event_kind_name(*event_of(e)), id.hex())};
        return false;
      }
      return true;
    });
    if (!visited) return std::unexpected(visited.error());
  }
  if (payload_drop) report.drops.push_back(*payload_drop);
  if (keep == 0) {
    return std::unexpected(make_error(
        TraceErrorKind::kTruncated,
        fmt::format("{}: nothing is recoverable: no event before the first loss ({})",
                    source.describe(),
                    report.drops.empty() ? in.recovery().note : report.drops.front().reason)));
  }

  auto sink = open_output();
  if (!sink) return std::unexpected(sink.error());
  auto writer = TraceWriter::create(std::move(*sink), in.header(), options.writer);
  if (!writer) return std::unexpected(writer.error());
  SummaryTally summary;
  std::optional<TraceError> failure;
  auto copied = in.visit_events(0, keep, [&](std::uint64_t, std::span<const std::uint8_t> e) {
    const fb::Event& event = *event_of(e);
    for (const BlobId& id : event_links(event).payloads) {
      auto bytes = in.blob(id);
      if (!bytes) {
        failure = bytes.error();
        return false;
      }
      const bool planes = in.blob_encoding(id) == BlobEncoding::kBytePlanes16;
      if (auto put = (*writer)->put_blob(*bytes, planes ? 2 : 1); !put) {
        failure = put.error();
        return false;
      }
    }
    if (auto appended = (*writer)->append_event(e); !appended) {
      failure = appended.error();
      return false;
    }
    summary.add(event);
    return true;
  });
  if (!copied) return std::unexpected(copied.error());
  if (failure) return std::unexpected(*failure);
  // The marker: what was kept and dropped, in the trace itself (no file names, so the same
  // damage gives the same bytes wherever the file lies).
  std::string repaired = fmt::format("vtrace repair kept events 0 to {}", keep - 1);
  for (std::size_t i = 0; i < report.drops.size(); ++i) {
    repaired +=
        fmt::format("{}{}", i == 0 ? "; dropped " : "; ", repair_drop_where(report.drops[i]));
  }
  auto closed = (*writer)->close(summary.finish((*writer)->stats(), std::nullopt, {}, repaired));
  if (!closed) return std::unexpected(closed.error());
  report.events_kept = closed->events;
  report.payloads_kept = closed->blobs;
  report.output_bytes = closed->file_bytes;
  return report;
}

}  // namespace vtrace::schema
