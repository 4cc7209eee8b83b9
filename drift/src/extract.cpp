// `vtrace extract` (extract.h): the window's state from a baseline replay, its repro through the
// recorder.
#include "vtrace/drift/extract.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "vtrace/drift/command_effects.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/shell_words.h"
#include "vtrace/replayer/step_executor.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::drift {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;

namespace {

using Failure = std::unexpected<rp::ReplayFailure>;

Failure usage(std::string message) {
  return Failure(rp::ReplayFailure{rp::ReplayFailure::Kind::kUsage, std::move(message)});
}

// One command the recording ran, in execution order.
struct Executed {
  const rp::step::Entry* entry = nullptr;
  std::uint64_t begin = 0;  // its SubmitBegin
  const rp::step::SubmitBegin* batch = nullptr;
  const CommandEffects* info = nullptr;  // nullptr: not one of the four re-encodable kinds
};

bool same_region(const Region& a, const Region& b) {
  return a.buffer == b.buffer && a.offset_bytes == b.offset_bytes &&
         a.length_bytes == b.length_bytes;
}

// The window [first, last] in the half-open A:B notation of --events (B = last + 1).
std::string window_text(const ExtractOptions& o) {
  return fmt::format("{}:{}", o.first_event, o.last_event + 1);
}

// "a" or "an" before an event kind name.
std::string_view article(std::string_view word) {
  return !word.empty() &&
                 std::string_view("AEIOUaeiou").find(word.front()) != std::string_view::npos
             ? "an"
             : "a";
}

// Why no command of [first, last] can be extracted.
std::string nothing_to_extract(const rp::ReplayPlan& plan, const ExtractOptions& o) {
  if (o.first_event != o.last_event) {
    return fmt::format("events {} encode no command that a successful submit ran", window_text(o));
  }
  const auto& s = plan.steps()[o.first_event];
  static const std::set<std::string> encodes = {"EncodeCopy", "EncodeUpload", "EncodeZero",
                                                "EncodeDenseLinear"};
  if (encodes.count(s.kind) > 0) {
    return fmt::format("event {} ({}) encodes a command that no successful submit ran",
                       o.first_event, s.kind);
  }
  return fmt::format(
      "event {} is {} {}, not an encoded command: extract takes the event of an EncodeCopy, "
      "EncodeUpload, EncodeZero or EncodeDenseLinear (`vtrace compare --deep` names them)",
      o.first_event, article(s.kind), s.kind);
}

class Extraction {
 public:
  Extraction(const rp::ReplayPlan& plan, const std::filesystem::path& trace,
             const ExtractOptions& options, const rt::RuntimeRegistry& registry)
      : plan_(plan), trace_(trace), options_(options), registry_(registry) {}

  std::expected<ExtractReport, rp::ReplayFailure> run(const std::filesystem::path& output) {
    if (auto w = window(); !w) return Failure(w.error());
    if (auto s = baseline(); !s) return Failure(s.error());
    return record(output);
  }

 private:
  // The effects of every command and the order the recording ran them in; then the window.
  std::expected<void, rp::ReplayFailure> window() {
    for (const auto& s : plan_.steps()) effects_.visit(s);
    std::vector<Executed> executed;
    for (const auto& s : plan_.steps()) {
      const auto* begin = std::get_if<rp::step::SubmitBegin>(&s.body);
      if (begin == nullptr) continue;
      if (!plan_.submit_ran(s.ordinal)) continue;
      for (const auto& e : begin->entries) {
        executed.push_back({&e, s.ordinal, begin, effects_.find(e.command)});
      }
    }
    auto in_range = [&](const Executed& x) {
      return x.info != nullptr && x.info->event >= options_.first_event &&
             x.info->event <= options_.last_event;
    };
    auto first = std::find_if(executed.begin(), executed.end(), in_range);
    if (first == executed.end()) return usage(nothing_to_extract(plan_, options_));
    auto last = std::find_if(executed.rbegin(), executed.rend(), in_range).base();
    before_.assign(executed.begin(), first);
    std::erase_if(before_, [&](const Executed& x) { return x.begin != first->begin; });
    window_.assign(first, last);
    for (const auto& x : window_) {
      if (x.info == nullptr) {
        return usage(fmt::format(
            "command {} (run by the submit at event {}) lies inside the window and is not a copy, "
            "upload, zero or dense linear: vtrace cannot encode it again",
            x.entry->command.ordinal, x.begin));
      }
      if (x.info->foreign) {
        return usage(fmt::format("event {} ({}) names a foreign buffer, whose contents this "
                                 "runtime cannot read",
                                 x.info->event, x.info->kind));
      }
      for (const auto* list : {&x.info->reads, &x.info->writes}) {
        for (const auto& r : *list) buffers_.insert(r.buffer);
      }
      // The window keeps the recording's batches: each is submitted and its results read back
      // before the next runs, so a later batch that writes the same buffer hides nothing.
      if (batches_.empty() || batches_.back().begin != x.begin) {
        batches_.push_back({x.begin, x.batch, {}, {}, {}});
      }
      auto& batch = batches_.back();
      batch.commands.push_back(&x);
      for (const auto& w : x.info->writes) {
        if (std::none_of(batch.written.begin(), batch.written.end(),
                         [&](const Region& v) { return same_region(v, w); })) {
          batch.written.push_back(w);
        }
      }
    }
    return {};
  }

  rp::ReplayFailure runtime_failure(const std::string& what, const rp::BufferAccessError& e) {
    return {rp::ReplayFailure::Kind::kUsage,
            fmt::format("{} on {} failed: {}", what, options_.runtime, e.message)};
  }

  // Replays the trace on the baseline up to the window, then reads its inputs, runs it and reads
  // its results.
  std::expected<void, rp::ReplayFailure> baseline() {
    auto target = rp::open_target(plan_, trace_, options_.runtime, options_.open, registry_, 0);
    if (!target) return Failure(target.error());
    rp::StepExecutor executor(plan_, *target->runtime, *target->auxiliary);
    for (const auto& s : plan_.steps()) {
      if (s.ordinal == window_.front().begin) break;
      (void)executor.execute(s);
    }
    for (const auto& x : before_) {
      if (x.info == nullptr) {
        return usage(fmt::format(
            "command {} runs before the window in the same batch (event {}) and is not a copy, "
            "upload, zero or dense linear: vtrace cannot run it alone to reach the window's state",
            x.entry->command.ordinal, x.begin));
      }
      if (auto ran = executor.run_private(*x.info->step); !ran) {
        return Failure(runtime_failure(fmt::format("running event {}", x.info->event), ran.error()));
      }
    }
    for (const std::uint64_t b : buffers_) {
      const rt::Buffer* live = executor.objects().buffer({b, rp::ObjectRef::Space::kOwn});
      if (live == nullptr) {
        return usage(fmt::format("buffer#{} is not live on {} before the window", b,
                                 options_.runtime));
      }
      const auto descriptor = target->runtime->buffer_descriptor(*live);
      auto bytes = executor.read_buffer(b, {0, descriptor.size_bytes});
      if (!bytes) {
        return Failure(runtime_failure(fmt::format("reading buffer#{}", b), bytes.error()));
      }
      contents_[b] = std::move(*bytes);
      descriptors_[b] = descriptor;
    }
    for (auto& batch : batches_) {
      for (const Executed* x : batch.commands) {
        if (auto ran = executor.run_private(*x->info->step); !ran) {
          return Failure(
              runtime_failure(fmt::format("running event {}", x->info->event), ran.error()));
        }
      }
      for (const auto& w : batch.written) {
        auto bytes = executor.read_buffer(w.buffer, {w.offset_bytes, w.length_bytes});
        if (!bytes) {
          return Failure(
              runtime_failure(fmt::format("reading buffer#{}", w.buffer), bytes.error()));
        }
        batch.results.push_back(std::move(*bytes));
      }
    }
    return {};
  }

  // The plan's step that creates `ordinal` of `kind` (Admit by generation, Allocate by buffer,
  // StreamCreated by stream).
  template <typename Step>
  const rp::ReplayStep* creating(std::uint64_t ordinal) const {
    for (const auto& s : plan_.steps()) {
      const auto* b = std::get_if<Step>(&s.body);
      if (b == nullptr) continue;
      if constexpr (std::is_same_v<Step, rp::step::Admit>) {
        if (b->generation == ordinal) return &s;
      } else if constexpr (std::is_same_v<Step, rp::step::Allocate>) {
        if (b->buffer == ordinal) return &s;
      } else {
        if (b->stream == ordinal) return &s;
      }
    }
    return nullptr;
  }

  // Runs one plan step on the repro; false when it failed (`why` says how).
  static bool ran(rp::StepExecutor& repro, const rp::ReplayStep& s, std::string& why) {
    const auto seen = repro.execute(s);
    if (seen.outcome && *seen.outcome) {
      why = fmt::format("event {} ({}) failed: {}", s.ordinal, s.kind, (*seen.outcome)->message());
      return false;
    }
    if (!seen.problems.empty()) {
      why = fmt::format("event {} ({}) could not run", s.ordinal, s.kind);
      return false;
    }
    return true;
  }

  std::expected<ExtractReport, rp::ReplayFailure> record(const std::filesystem::path& output) {
    auto target = rp::open_target(plan_, trace_, options_.runtime, options_.open, registry_, 0);
    if (!target) return Failure(target.error());
    recorder::RecorderOptions ro;
    ro.writer.zstd_level = options_.zstd_level;
    ro.workload_description =
        fmt::format("vtrace extract of events {} of {} on {}", window_text(options_),
                    trace_.filename().string(), options_.runtime);
    auto recording = recorder::RecordingRuntime::create(std::move(target->runtime),
                                                        options_.runtime, output, ro);
    if (!recording) {
      return usage(fmt::format("cannot write the repro: {}", recording.error().message()));
    }
    // A repro that could not be recorded whole is not left behind: the recorder's destructor
    // would finish it as a complete, valid trace of a partial window.
    const auto discard = [&](Failure failure) {
      (void)(*recording)->close();
      std::error_code ec;
      std::filesystem::remove(output, ec);
      std::filesystem::remove(std::filesystem::path(output.string() + ".partial"), ec);
      return failure;
    };
    ExtractReport report;
    report.trace = trace_.string();
    report.recovered = recovered_trace(trace_, plan_);
    report.output = output.string();
    report.runtime = options_.runtime;
    std::string why;
    {
      rp::StepExecutor repro(plan_, **recording, *target->auxiliary);
      if (!allocate_and_upload(repro, report, why)) {
        return discard(usage(
            fmt::format("the repro could not be recorded on {}: {}", options_.runtime, why)));
      }
      std::set<std::uint64_t> encoded;  // a command submitted in two batches is encoded once
      for (std::size_t k = 0; k < batches_.size(); ++k) {
        const auto& batch = batches_[k];
        if (!run_batch(repro, k, encoded, why)) {
          return discard(usage(
              fmt::format("the repro could not be recorded on {}: {}", options_.runtime, why)));
        }
        for (std::size_t i = 0; i < batch.written.size(); ++i) {
          const auto& w = batch.written[i];
          auto bytes = repro.read_buffer(w.buffer, {w.offset_bytes, w.length_bytes});
          if (!bytes) {
            return discard(Failure(
                runtime_failure(fmt::format("reading buffer#{}", w.buffer), bytes.error())));
          }
          ++report.readbacks;
          if (*bytes != batch.results[i] && report.reproduces_baseline) {
            report.reproduces_baseline = false;
            report.difference = fmt::format(
                "buffer#{} [{}, {}) reads back differently in the repro than in the original run "
                "(after the batch of event {})",
                w.buffer, w.offset_bytes, w.offset_bytes + w.length_bytes, batch.begin);
          }
        }
      }
    }
    if (auto closed = (*recording)->close(); !closed) {
      return discard(usage(fmt::format("cannot write the repro: {}", closed.error().message)));
    }
    for (const auto& x : window_) {
      report.commands.push_back({x.info->event, x.entry->command.ordinal, x.begin, x.info->kind,
                                 x.info->call, x.info->shapes, x.entry->node_index});
    }
    if (auto reader = schema::TraceReader::open(output)) report.events = (*reader)->event_count();
    return report;
  }

  bool allocate_and_upload(rp::StepExecutor& repro, ExtractReport& report, std::string& why) {
    for (const std::uint64_t b : buffers_) {
      const auto* allocate = creating<rp::step::Allocate>(b);
      const auto* admit =
          allocate ? creating<rp::step::Admit>(
                         std::get<rp::step::Allocate>(allocate->body).generation)
                   : nullptr;
      if (admit == nullptr) {
        why = fmt::format("buffer#{} has no Admit and Allocate in the trace", b);
        return false;
      }
      if (!ran(repro, *admit, why) || !ran(repro, *allocate, why)) return false;
      report.buffers.push_back({b, descriptors_[b].resource_id.str(), descriptors_[b].size_bytes});
    }
    // The stream the window's first batch ran on.
    const auto& stream = window_.front().batch->stream;
    const auto* created = stream.space == rp::ObjectRef::Space::kOwn
                              ? creating<rp::step::StreamCreated>(stream.ordinal)
                              : nullptr;
    if (created == nullptr) {
      why = "the window's batch runs on a stream the trace does not create";
      return false;
    }
    if (!ran(repro, *created, why)) return false;
    for (const std::uint64_t b : buffers_) {
      if (auto written = repro.write_buffer(b, 0, contents_[b]); !written) {
        why = fmt::format("uploading buffer#{}: {}", b, written.error().message);
        return false;
      }
      report.uploaded_bytes += contents_[b].size();
    }
    return true;
  }

  // Batch `k` of the window: its commands encoded as recorded (each once), one batch with their
  // entries on the stream of the window's first batch (the one the repro creates), a wait.
  bool run_batch(rp::StepExecutor& repro, std::size_t k, std::set<std::uint64_t>& encoded,
                 std::string& why) {
    const auto& window_batch = batches_[k];
    rp::step::SubmitBegin batch;
    batch.stream = batches_.front().batch->stream;
    for (const Executed* x : window_batch.commands) {
      if (encoded.insert(x->info->encoded_as).second && !ran(repro, *x->info->step, why)) {
        return false;
      }
      rp::step::Entry entry = *x->entry;
      entry.command = {x->info->encoded_as, rp::ObjectRef::Space::kOwn};
      batch.entries.push_back(entry);
    }
    // Ordinals past the plan's: the executor keys its pending submit and fence by them.
    const std::uint64_t begin = plan_.steps().size() + 3 * k;
    const std::uint64_t fence = begin;
    if (!ran(repro, {begin, "SubmitBegin", batch}, why)) return false;
    if (!ran(repro, {begin + 1, "SubmitEnd", rp::step::SubmitEnd{begin, fence, {}, false}}, why)) {
      return false;
    }
    rp::step::WaitFence wait;
    wait.fence = {fence, rp::ObjectRef::Space::kOwn};
    const auto waited = repro.execute({begin + 2, "WaitFence", wait});
    if (waited.fence && std::holds_alternative<rt::RuntimeError>(*waited.fence)) {
      why = fmt::format("waiting for the window's batch of event {} failed: {}", window_batch.begin,
                        std::get<rt::RuntimeError>(*waited.fence).message());
      return false;
    }
    return true;
  }

  const rp::ReplayPlan& plan_;
  const std::filesystem::path& trace_;
  const ExtractOptions& options_;
  const rt::RuntimeRegistry& registry_;
  CommandEffectsMap effects_;
  std::vector<Executed> before_;  // the window's first batch's commands before it
  std::vector<Executed> window_;
  std::set<std::uint64_t> buffers_;  // every buffer the window reads or writes
  // The window's commands by the recording's batch (in order): each batch's distinct written
  // regions, first writes first, and their contents after it on the baseline.
  struct WindowBatch {
    std::uint64_t begin = 0;  // its SubmitBegin
    const rp::step::SubmitBegin* batch = nullptr;
    std::vector<const Executed*> commands;
    std::vector<Region> written;
    std::vector<std::vector<std::uint8_t>> results;
  };
  std::vector<WindowBatch> batches_;
  std::map<std::uint64_t, std::vector<std::uint8_t>> contents_;  // before the window
  std::map<std::uint64_t, rt::BufferDescriptor> descriptors_;
};

}  // namespace

nlohmann::json ExtractReport::to_json() const {
  nlohmann::json cmds = nlohmann::json::array();
  for (const auto& c : commands) {
    cmds.push_back(
        {{"event", c.event},
         {"command", c.command},
         {"submit_event", c.submit_event},
         {"kind", c.kind},
         {"call", c.call},
         {"shapes", c.shapes},
         {"node_index", c.node_index ? nlohmann::json(*c.node_index) : nlohmann::json(nullptr)}});
  }
  nlohmann::json bufs = nlohmann::json::array();
  for (const auto& b : buffers) {
    bufs.push_back({{"ordinal", b.ordinal}, {"resource_id", b.resource_id}, {"bytes", b.bytes}});
  }
  return {{"trace", trace},
          {"output", output},
          {"runtime", runtime},
          {"events", events},
          {"commands", cmds},
          {"buffers", bufs},
          {"uploaded_bytes", uploaded_bytes},
          {"readbacks", readbacks},
          {"reproduces_baseline", reproduces_baseline},
          {"difference", difference.empty() ? nlohmann::json(nullptr) : nlohmann::json(difference)},
          {"complete", !recovered.has_value()},
          {"recovery", recovered ? recovered->to_json() : nlohmann::json(nullptr)}};
}

std::string extract_command_line(const std::string& trace, std::uint64_t event,
                                 const std::string& baseline, const std::string& open_words) {
  std::string line =
      rp::shell_command({"vtrace", "extract", rp::path_argument(trace), "--event",
                         std::to_string(event), "-o", fmt::format("repro-{}.vtrace", event)});
  if (baseline != "reference") line += " " + rp::shell_command({"--runtime", baseline});
  return line + open_words;
}

std::expected<ExtractReport, rp::ReplayFailure> extract_commands(
    const std::filesystem::path& trace, const std::filesystem::path& output,
    const ExtractOptions& options, const rt::RuntimeRegistry& registry) {
  if (options.first_event > options.last_event) {
    return usage(fmt::format("--events {} is empty (the first event comes after the last)",
                             window_text(options)));
  }
  auto plan = rp::open_plan(trace);
  if (!plan) return Failure(plan.error());
  if (options.last_event >= plan->steps().size()) {
    return usage(fmt::format("event {} is past the trace's last event {}", options.last_event,
                             plan->steps().empty() ? 0 : plan->steps().size() - 1));
  }
  return Extraction(*plan, trace, options, registry).run(output);
}

}  // namespace vtrace::drift
