// vtrace dump T [--json] [--events A:B] [--payloads] [--payload-bytes N]: every field of every
// event, the call it records (step_text.h, as replay describes it) and, with --payloads, the blobs
// it links to (schema::event_links), each cut to its first N bytes with --payload-bytes.
// vtrace dump T --summary [--json]: every field of the footer's summary instead.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "commands.h"
#include "event_text.h"
#include "vtrace/replayer/json_text.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/step_text.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::cli {

namespace {

struct DumpOptions {
  std::string trace;
  bool json = false;
  std::string events;
  bool payloads = false;
  std::optional<std::uint64_t> payload_bytes;  // at most this many bytes of each payload
  bool summary = false;
};

// --summary: the footer's TraceSummary, every field by name ("summary {...}", or with --json one
// line {"summary": {...}}). A recovered trace has no footer: its summary is said to be missing
// (text) or null, with the reader's note (JSON), and the exit is 0: the dump showed what is there.
int dump_summary(const DumpOptions& o, const schema::TraceReader& reader,
                 const EventText& printer) {
  const auto bytes = reader.summary();
  if (schema::read_trace_summary(bytes) == nullptr) {
    const std::string why =
        !reader.complete() ? reader.recovery().note : std::string("the footer holds no summary");
    if (o.json) {
      fmt::print("{}\n", replayer::json_text(nlohmann::json{{"summary", nullptr}, {"note", why}}));
    } else {
      fmt::print("summary: none ({})\n", why);
    }
    return kExitOk;
  }
  if (o.json) {
    auto body = printer.summary_json(bytes);
    if (!body) {
      print_error(about_file(o.trace, "the summary: " + body.error()));
      return kExitUsage;
    }
    fmt::print("{}\n", replayer::json_text(nlohmann::json{{"summary", std::move(*body)}}));
  } else {
    auto body = printer.summary_text(bytes);
    if (!body) {
      print_error(about_file(o.trace, "the summary: " + body.error()));
      return kExitUsage;
    }
    fmt::print("summary {}\n", *body);
  }
  return kExitOk;
}

// The call an event records, as replay describes it (step_text.h); nullopt for an event that is
// no call (RuntimeOpened, Released, ...) or one that does not decode.
std::optional<std::string> call_of(std::uint64_t ordinal, const fb::Event& e) {
  auto step = replayer::decode_step(ordinal, e);
  if (!step) return std::nullopt;
  std::string text = replayer::describe_step(*step);
  if (text == step->kind) return std::nullopt;
  return text;
}

std::string hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xF]);
  }
  return out;
}

int run_dump(const DumpOptions& o) {
  EventRange range;
  if (!o.events.empty()) {
    auto parsed = parse_event_range(o.events);
    if (!parsed) {
      print_error("--events: " + parsed.error());
      return kExitUsage;
    }
    range = *parsed;
  }
  auto reader = schema::TraceReader::open(o.trace);
  if (!reader) {
    print_error(about_file(o.trace, reader.error().message));
    return kExitUsage;
  }
  const bool show_payloads = o.payloads || o.payload_bytes.has_value();
  const std::uint64_t shown_bytes =
      o.payload_bytes.value_or(std::numeric_limits<std::uint64_t>::max());
  auto printer = EventText::create();
  if (!printer) {
    print_error(printer.error());
    return kExitUsage;
  }
  if (o.summary) return dump_summary(o, **reader, *printer);
  if (!o.events.empty()) {
    auto fitted = fit_event_range(range, "--events", o.events, o.trace, (*reader)->event_count());
    if (!fitted) {
      print_error(fitted.error());
      return kExitUsage;
    }
    range = *fitted;
  }
  const std::uint64_t end = std::min(range.end, (*reader)->event_count());
  std::optional<std::string> failure;
  auto visited = (*reader)->visit_events(
      std::min(range.first, end), end, [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
        const fb::Event* event = schema::event_of(bytes);
        const std::string_view kind = schema::event_kind_name(*event);
        // Each payload id (BlobId::hex) to its bytes in hex, at most --payload-bytes of them,
        // and to its full length.
        nlohmann::json payloads = nlohmann::json::object();
        nlohmann::json payload_sizes = nlohmann::json::object();
        if (show_payloads) {
          for (const auto& id : schema::event_links(*event).payloads) {
            auto blob = (*reader)->blob(id);
            if (!blob) {
              failure = about_file(o.trace, fmt::format("event {} ({}): {}", ordinal, kind,
                                                        blob.error().message));
              return false;
            }
            const std::span<const std::uint8_t> bytes_of(*blob);
            payloads[id.hex()] =
                hex(bytes_of.first(std::min<std::uint64_t>(bytes_of.size(), shown_bytes)));
            payload_sizes[id.hex()] = bytes_of.size();
          }
        }
        if (!schema::event_kind_known(*event)) {
          // A kind newer than this build (docs/FORMAT.md): its fields cannot be named, but the
          // event is listed with what every event has, and the dump goes on.
          const auto body_type = static_cast<unsigned>(event->body_type());
          if (o.json) {
            nlohmann::json line = {{"event", ordinal},
                                   {"kind", kind},
                                   {"fields",
                                    {{"seq", event->seq()},
                                     {"body_type", body_type},
                                     {"required", event->required()},
                                     {"bytes", bytes.size()}}}};
            fmt::print("{}\n", replayer::json_text(line));
          } else {
            fmt::print("#{} {} {{seq: {}, body_type: {}, required: {}, bytes: {}}}\n", ordinal, kind,
                       event->seq(), body_type, event->required(), bytes.size());
          }
          return true;
        }
        if (o.json) {
          auto body = printer->json(bytes);
          if (!body) {
            failure = about_file(o.trace, fmt::format("event {} ({}): {}", ordinal, kind, body.error()));
            return false;
          }
          const auto call = call_of(ordinal, *event);
          nlohmann::json line = {{"event", ordinal},
                                 {"kind", kind},
                                 {"call", call ? nlohmann::json(*call) : nlohmann::json(nullptr)},
                                 {"fields", std::move(*body)}};
          if (show_payloads) {
            line["payloads"] = payloads;
            line["payload_sizes"] = payload_sizes;
          }
          fmt::print("{}\n", replayer::json_text(line));
        } else {
          auto body = printer->text(bytes);
          if (!body) {
            failure = about_file(o.trace, fmt::format("event {} ({}): {}", ordinal, kind, body.error()));
            return false;
          }
          if (const auto call = call_of(ordinal, *event)) {
            fmt::print("#{} {} {} {}\n", ordinal, kind, *call, *body);
          } else {
            fmt::print("#{} {} {}\n", ordinal, kind, *body);
          }
          for (const auto& [id, bytes_hex] : payloads.items()) {
            const auto size = payload_sizes[id].get<std::uint64_t>();
            const auto shown = bytes_hex.get<std::string>();
            fmt::print("    payload {} ({} bytes{}) {}\n", id, size,
                       shown.size() / 2 < size
                           ? fmt::format(", the first {} shown", shown.size() / 2)
                           : "",
                       shown);
          }
        }
        return true;
      });
  if (!visited) {
    print_error(about_file(o.trace, visited.error().message));
    return kExitUsage;
  }
  if (failure) {
    print_error(*failure);
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void add_dump_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto options = std::make_shared<DumpOptions>();
  auto* cmd = app.add_subcommand("dump", "Print every field of every event");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->add_flag("--json", options->json, "One JSON object per line (keys: docs/CLI.md)");
  cmd->add_option("--events", options->events, "Only events A:B (A:, :B or N also work)");
  cmd->add_flag("--payloads", options->payloads, "Also print the payload bytes in hex");
  cmd->add_option("--payload-bytes", options->payload_bytes,
                  "Print at most N bytes of each payload, with its full length (implies "
                  "--payloads)");
  auto* summary = cmd->add_flag(
      "--summary", options->summary,
      "Print the footer's summary (every field: counts by kind, submits, bytes, final counters, "
      "interrupted_by, repaired) instead of the events");
  for (const char* other : {"--events", "--payloads", "--payload-bytes"}) {
    summary->excludes(cmd->get_option(other));
  }
  cmd->callback([options, run]() { *run = [options]() { return run_dump(*options); }; });
}

}  // namespace vtrace::cli
