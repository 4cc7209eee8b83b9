// The lockstep comparison (lockstep.h): execute every step on every runtime, then compare.
#include "vtrace/drift/lockstep.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "vtrace/drift/command_effects.h"
#include "vtrace/replayer/comparator.h"
#include "vtrace/replayer/step_executor.h"
#include "vtrace/replayer/step_text.h"

namespace vtrace::drift {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;

namespace {

struct Lane {
  std::string name;
  rp::ReplayTarget target;
  std::unique_ptr<rp::StepExecutor> executor;
};

rp::CheckMode structure_only() { return rp::CheckMode::none(); }

PairResult pair(const std::string& name, std::span<const std::uint8_t> expected,
                std::span<const std::uint8_t> actual, rt::ElementType type,
                const DriftCheck& check) {
  const auto c = compare_values(expected, actual, type, check);
  return {name, c.cls, c.agrees, c.stats, {}};
}

// A region's bytes on one runtime, to put back after the private runs of a batch.
struct Saved {
  Region region;
  std::vector<std::uint8_t> bytes;
};

class Lockstep {
 public:
  Lockstep(const rp::ReplayPlan& plan, std::vector<Lane>& lanes, const CompareOptions& options,
           CompareReport& report)
      : plan_(plan), lanes_(lanes), options_(options), report_(report) {}

  void run() {
    std::vector<rp::Observation> seen(lanes_.size());
    for (const auto& s : plan_.steps()) {
      ++report_.events;
      writes_.visit(s);
      const auto* begin = std::get_if<rp::step::SubmitBegin>(&s.body);
      if (begin) {
        begins_[s.ordinal] = begin;
        if (options_.deep || options_.resync) probe(s.ordinal, *begin);
      }
      for (std::size_t r = 0; r < lanes_.size(); ++r) seen[r] = lanes_[r].executor->execute(s);
      structure(s, seen);
      if (const auto* readback = std::get_if<rp::step::Readback>(&s.body)) {
        this->readback(s, *readback, seen);
      }
      if (const auto* end = std::get_if<rp::step::SubmitEnd>(&s.body);
          end && after_batch_.erase(end->begin_seq) > 0) {
        deep(*end);
      }
    }
  }

 private:
  void structural(const rp::ReplayStep& s, const std::string& runtime, const std::string& against,
                  const rp::Observation& expected, const rp::Observation& actual,
                  std::vector<StructuralDifference>& into, bool divergence) {
    for (const auto& d : rp::compare(expected, actual, structure_only()).differences) {
      const auto text = rp::render(d, expected, actual);
      into.push_back({into.size(), s.ordinal, rp::describe_step(s), runtime, against,
                      std::string(rp::difference_kind_name(d.kind)), text.expected, text.actual});
      if (divergence && !report_.first_divergence) {
        report_.first_divergence =
            FirstDivergence{s.ordinal, std::nullopt, std::nullopt, s.kind, rp::describe_step(s),
                            runtime,   DriftClass::kStructural};
      }
    }
  }

  void structure(const rp::ReplayStep& s, const std::vector<rp::Observation>& seen) {
    const rp::Observation recorded = rp::recorded_observation(s, plan_);
    for (std::size_t r = 0; r < lanes_.size(); ++r) {
      structural(s, lanes_[r].name, "recording", recorded, seen[r], report_.vs_recording, false);
      if (r > 0)
        structural(s, lanes_[r].name, lanes_[0].name, seen[0], seen[r], report_.structural, true);
    }
  }

  static std::optional<FirstDivergence> first_disagreeing(const CommandComparison& c,
                                                          const std::vector<PairResult>& pairs) {
    for (const auto& p : pairs) {
      if (!p.agrees) {
        return FirstDivergence{c.event, c.command, c.order, c.kind, c.call, p.runtime, p.cls};
      }
    }
    return std::nullopt;
  }

  void add(CommandComparison c) {
    c.order = report_.commands.size();  // its index in `commands`
    for (const auto& p : c.results) c.worst = worst(c.worst, p.cls);
    for (const auto& p : c.introduced) c.worst_introduced = worst(c.worst_introduced, p.cls);
    auto first = first_disagreeing(c, c.results);
    c.agrees = !first.has_value();
    if (first && !report_.first_divergence) report_.first_divergence = first;
    if (auto introduced = first_disagreeing(c, c.introduced);
        introduced && !report_.first_introduced) {
      report_.first_introduced = introduced;
    }
    report_.commands.push_back(std::move(c));
  }

  void readback(const rp::ReplayStep& s, const rp::step::Readback& b,
                const std::vector<rp::Observation>& seen) {
    if (!seen[0].readback) return;  // the baseline has nothing to compare with (structural)
    const auto type = b.layout.element_type();
    CommandComparison c;
    c.event = s.ordinal;
    c.kind = s.kind;
    c.call = rp::describe_step(s);
    c.shapes = fmt::format("{} x {}", rt::element_type_name(type), b.layout.element_count());
    const auto base = seen[0].readback->bytes();
    // One entry per runtime after the baseline, in order (the HTML report's columns rely on it).
    for (std::size_t r = 1; r < lanes_.size(); ++r) {
      if (!seen[r].readback) {  // also a structural difference of the step
        c.results.push_back({lanes_[r].name,
                             DriftClass::kStructural,
                             false,
                             {},
                             "it answered no readback (see `structural`)"});
        continue;
      }
      c.results.push_back(
          pair(lanes_[r].name, base, seen[r].readback->bytes(), type, options_.check));
    }
    if (b.payload) {
      const auto* recorded = plan_.payload(*b.payload);
      for (std::size_t r = 0; r < lanes_.size(); ++r) {
        if (recorded && seen[r].readback) {
          c.vs_recording.push_back(
              pair(lanes_[r].name, *recorded, seen[r].readback->bytes(), type, options_.check));
        }
      }
    }
    add(std::move(c));
  }

  // ---- per-command comparison (--deep, --resync) ----------------------------------------------

  // One command of a batch run privately: its info and entry.
  struct Probe {
    const rp::step::Entry* entry;
    const CommandEffects* info;
  };

  // Before a batch the recording submitted runs on the lanes, its commands are run one at a time
  // on every lane's private stream (run_private) and what each wrote is compared right after it;
  // with --resync they are run once more, each after its inputs were overwritten with the
  // baseline's. Every region those runs touch is saved first and put back after each pass, so
  // the product's batch then runs on exactly the state the recording's did. A batch this cannot
  // do (a command of a kind that cannot be encoded again, a region that cannot be read or written
  // as elements, a private run the baseline refuses) is compared after it ran instead (deep()).
  void probe(std::uint64_t begin, const rp::step::SubmitBegin& b) {
    if (!plan_.submit_ran(begin)) return;  // nothing ran on the recording
    std::vector<Probe> probes;
    std::vector<Region> touched;
    for (const auto& entry : b.entries) {
      const CommandEffects* info = writes_.find(entry.command);
      if (info == nullptr || info->step == nullptr || info->foreign) return fall_back(begin);
      probes.push_back({&entry, info});
      touched.insert(touched.end(), info->writes.begin(), info->writes.end());
      if (options_.resync) touched.insert(touched.end(), info->reads.begin(), info->reads.end());
    }
    std::vector<std::vector<Saved>> saved(lanes_.size());
    for (std::size_t r = 0; r < lanes_.size(); ++r) {
      for (const auto& w : touched) {
        auto bytes = lanes_[r].executor->read_buffer(w.buffer, {w.offset_bytes, w.length_bytes});
        if (!bytes) return fall_back(begin);
        saved[r].push_back({w, std::move(*bytes)});
      }
    }
    // The state is put back even when a pass stopped half-way (the baseline refused a command).
    std::vector<CommandComparison> compared;
    const bool ran = private_pass(begin, probes, false, compared);
    if (!restore(saved) || !ran) return fall_back(begin);
    if (options_.resync) {
      std::vector<CommandComparison> resynced;
      const auto skipped = report_.deep_regions_skipped;  // the same regions: counted once
      const bool resync_ran = private_pass(begin, probes, true, resynced);
      report_.deep_regions_skipped = skipped;
      if (!restore(saved) || !resync_ran) return fall_back(begin);
      // Both passes compare the same (command, region) pairs, in the same order.
      for (std::size_t i = 0; i < std::min(compared.size(), resynced.size()); ++i) {
        compared[i].introduced = std::move(resynced[i].results);
      }
    }
    for (auto& c : compared) add(std::move(c));
  }

  void fall_back(std::uint64_t begin) {
    ++report_.batches_after_submit;
    after_batch_.insert(begin);
  }

  // Puts every saved region back on its lane; false when a write failed.
  bool restore(const std::vector<std::vector<Saved>>& saved) {
    for (std::size_t r = 0; r < lanes_.size(); ++r) {
      for (const auto& s : saved[r]) {
        if (!lanes_[r].executor->write_buffer(s.region.buffer, s.region.offset_bytes, s.bytes)) {
          return false;
        }
      }
    }
    return true;
  }

  // Runs the batch's commands one at a time on every lane (after copying the baseline's inputs
  // into the others when `resync`), comparing each written region right after its command: one
  // comparison per (command, written region), in order. False when the baseline could not run one.
  bool private_pass(std::uint64_t begin, const std::vector<Probe>& probes, bool resync,
                    std::vector<CommandComparison>& out) {
    for (const auto& probe : probes) {
      std::vector<std::string> notes(lanes_.size());
      if (resync) {
        for (const auto& in : probe.info->reads) {
          auto base = lanes_[0].executor->read_buffer(in.buffer, {in.offset_bytes, in.length_bytes});
          if (!base) return false;
          for (std::size_t r = 1; r < lanes_.size(); ++r) {
            if (auto w = lanes_[r].executor->write_buffer(in.buffer, in.offset_bytes, *base); !w) {
              notes[r] = fmt::format("its inputs could not be resynced: {}", w.error().message);
            }
          }
        }
      }
      for (std::size_t r = 0; r < lanes_.size(); ++r) {
        if (auto ran = lanes_[r].executor->run_private(*probe.info->step); !ran) {
          if (r == 0) return false;
          notes[r] = fmt::format("running it alone failed: {}", ran.error().message);
        }
      }
      for (const auto& w : probe.info->writes) {
        if (auto c = compare_region(begin, *probe.entry, *probe.info, w, notes)) {
          out.push_back(std::move(*c));
        }
      }
    }
    return true;
  }

  // ---- after the batch (a batch probe() could not run command by command) ----------------------
  void deep(const rp::step::SubmitEnd& end) {
    auto it = begins_.find(end.begin_seq);
    if (it == begins_.end() || !end.fence) return;
    // The batch must have finished on every runtime before its regions are read.
    for (auto& lane : lanes_) {
      if (const auto* fence =
              lane.executor->objects().fence({*end.fence, rp::ObjectRef::Space::kOwn})) {
        (void)lane.executor->live_runtime().wait_fence(*fence);
      }
    }
    // A region is compared for the last command of the batch that writes it: what is read after
    // the batch is that command's result (an earlier writer's is gone).
    struct Item {
      const rp::step::Entry* entry;
      const CommandEffects* info;
      const Region* write;
    };
    std::vector<Item> items;
    for (const auto& entry : it->second->entries) {
      const CommandEffects* info = writes_.find(entry.command);
      if (info == nullptr) continue;
      for (const auto& w : info->writes) items.push_back({&entry, info, &w});
    }
    const std::vector<std::string> no_notes(lanes_.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Region& w = *items[i].write;
      const bool overwritten = std::any_of(
          items.begin() + static_cast<std::ptrdiff_t>(i) + 1, items.end(), [&](const Item& later) {
            const Region& v = *later.write;
            return v.buffer == w.buffer && v.offset_bytes < w.offset_bytes + w.length_bytes &&
                   w.offset_bytes < v.offset_bytes + v.length_bytes;
          });
      if (overwritten) {
        ++report_.deep_regions_overwritten;
        continue;
      }
      if (auto c = compare_region(it->first, *items[i].entry, *items[i].info, w, no_notes)) {
        add(std::move(*c));
      }
    }
  }

  // Reads region `w` on every lane and compares it with the baseline's; nullopt (counted as
  // skipped) when the baseline cannot read it as elements. `notes[r]`: why lane r's answer is
  // structural (its private run or resync failed), else empty.
  std::optional<CommandComparison> compare_region(std::uint64_t begin, const rp::step::Entry& entry,
                                                  const CommandEffects& info, const Region& w,
                                                  const std::vector<std::string>& notes) {
    const rp::ByteRange range{w.offset_bytes, w.length_bytes};
    auto base = lanes_[0].executor->read_buffer(w.buffer, range);
    if (!base) {
      ++report_.deep_regions_skipped;
      return std::nullopt;
    }
    const auto* buffer =
        lanes_[0].executor->objects().buffer({w.buffer, rp::ObjectRef::Space::kOwn});
    const auto type = lanes_[0].executor->live_runtime().buffer_descriptor(*buffer).element_type;
    CommandComparison c;
    c.event = info.event;
    c.command = entry.command.ordinal;
    c.submit_event = begin;
    c.kind = info.kind;
    c.call = info.call;
    c.shapes = info.shapes;
    c.node_index = entry.node_index;
    if (entry.logical_work) c.participants = entry.logical_work->participant_count();
    c.region = fmt::format("buffer#{} [{}, {})", w.buffer, w.offset_bytes,
                           w.offset_bytes + w.length_bytes);
    for (std::size_t r = 1; r < lanes_.size(); ++r) {
      auto bytes = lanes_[r].executor->read_buffer(w.buffer, range);
      if (!notes[r].empty() || !bytes) {
        c.results.push_back({lanes_[r].name, DriftClass::kStructural, false, {},
                             notes[r].empty() ? bytes.error().message : notes[r]});
        continue;
      }
      c.results.push_back(pair(lanes_[r].name, *base, *bytes, type, options_.check));
    }
    return c;
  }

  const rp::ReplayPlan& plan_;
  std::vector<Lane>& lanes_;
  const CompareOptions& options_;
  CompareReport& report_;
  CommandEffectsMap writes_;
  std::map<std::uint64_t, const rp::step::SubmitBegin*> begins_;
  std::set<std::uint64_t> after_batch_;  // batches compared after they ran (deep())
};

nlohmann::json stats_json(const ElementStats& s) {
  nlohmann::json ulp = nlohmann::json::object();
  nlohmann::json magnitude = nlohmann::json::object();
  for (std::size_t i = 0; i < kUlpBuckets.size(); ++i)
    ulp[std::string(kUlpBuckets[i])] = s.ulp_histogram[i];
  for (std::size_t i = 0; i < kMagnitudeBuckets.size(); ++i) {
    magnitude[std::string(kMagnitudeBuckets[i])] = s.magnitude_histogram[i];
  }
  return {{"elements", s.elements},
          {"differing", s.differing},
          {"max_abs_error", s.max_abs_error},
          {"mean_abs_error", s.mean_abs_error},
          {"max_rel_error", s.max_rel_error},
          {"max_ulp", s.max_ulp},
          {"first_differing",
           s.first_differing ? nlohmann::json(*s.first_differing) : nlohmann::json(nullptr)},
          {"ulp_histogram", ulp},
          {"magnitude_histogram", magnitude}};
}

nlohmann::json pairs_json(const std::vector<PairResult>& pairs) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : pairs) {
    out[p.runtime] = {
        {"class", drift_class_name(p.cls)}, {"agrees", p.agrees}, {"stats", stats_json(p.stats)}};
    if (!p.note.empty()) out[p.runtime]["note"] = p.note;
  }
  return out;
}

nlohmann::json structural_json(const std::vector<StructuralDifference>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : list) {
    out.push_back({{"event", d.event},
                   {"call", d.call},
                   {"runtime", d.runtime},
                   {"against", d.against},
                   {"kind", d.kind},
                   {"expected", d.expected},
                   {"actual", d.actual}});
  }
  return out;
}

nlohmann::json recovery_json(const std::optional<RecoveredTrace>& r) {
  return r ? r->to_json() : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json RecoveredTrace::to_json() const {
  const auto& x = recovery;
  return {{"note", x.note},
          {"events_recovered", x.events_recovered},
          {"cut_offset", x.cut_offset},
          {"file_bytes", x.file_bytes},
          {"stopped_at", x.stopped_at ? nlohmann::json(*x.stopped_at) : nlohmann::json(nullptr)},
          {"stop_reason", x.stop_reason}};
}

std::optional<RecoveredTrace> recovered_trace(const std::filesystem::path& path,
                                              const rp::ReplayPlan& plan) {
  if (plan.trace_complete()) return std::nullopt;
  return RecoveredTrace{path.string(), plan.steps().size(), plan.recovery()};
}

bool worse_command(const CommandComparison& a, const CommandComparison& b) {
  // 2: a structural answer, 1: NaN or infinity appeared or vanished, 0: numbers only.
  const auto severity = [](const CommandComparison& c) {
    int s = 0;
    for (const auto& p : c.results) {
      if (p.cls == DriftClass::kStructural) return 2;
      if (p.cls == DriftClass::kNanInf) s = 1;
    }
    return s;
  };
  const auto max_ulp = [](const CommandComparison& c) {
    std::uint64_t m = 0;
    for (const auto& p : c.results) m = std::max(m, p.stats.max_ulp);
    return m;
  };
  if (severity(a) != severity(b)) return severity(a) > severity(b);
  return max_ulp(a) > max_ulp(b);
}

bool CompareReport::complete() const {
  return std::none_of(recovered.begin(), recovered.end(),
                      [](const std::optional<RecoveredTrace>& r) { return r.has_value(); });
}

const CommandComparison* CompareReport::command_of(const FirstDivergence& divergence) const {
  if (!divergence.order) return nullptr;
  const auto it = std::find_if(commands.begin(), commands.end(), [&](const CommandComparison& c) {
    return c.order == *divergence.order;
  });
  return it == commands.end() ? nullptr : &*it;
}

CompareCounts CompareReport::counts() const {
  CompareCounts n;
  struct Seen {
    bool disagrees = false, introduces = false;
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, Seen> seen;  // (submit_event, command)
  for (const auto& c : commands) {
    ++n.results;
    if (!c.command) {
      ++n.readbacks;
      continue;
    }
    ++n.regions;
    auto& s = seen[{c.submit_event.value_or(0), *c.command}];
    s.disagrees = s.disagrees || !c.agrees;
    s.introduces = s.introduces || std::any_of(c.introduced.begin(), c.introduced.end(),
                                               [](const PairResult& p) { return !p.agrees; });
  }
  n.commands = seen.size();
  for (const auto& [key, s] : seen) {
    n.commands_disagreeing += s.disagrees ? 1U : 0U;
    n.commands_introducing += s.introduces ? 1U : 0U;
    n.commands_carrying_only += s.disagrees && !s.introduces ? 1U : 0U;
  }
  return n;
}

std::string CompareReport::verdict() const {
  if (!structural.empty()) return "structural";
  for (const auto& c : commands) {
    if (!c.agrees) return "drift";
  }
  return "match";
}

namespace {
nlohmann::json counts_json(const CompareCounts& n) {
  return {{"results", n.results},
          {"readbacks", n.readbacks},
          {"regions", n.regions},
          {"commands", n.commands},
          {"commands_disagreeing", n.commands_disagreeing},
          {"commands_introducing", n.commands_introducing},
          {"commands_carrying_only", n.commands_carrying_only}};
}
}  // namespace

nlohmann::json CompareReport::to_json() const {
  nlohmann::json commands_json = nlohmann::json::array();
  for (const auto& c : commands) {
    nlohmann::json j = {
        {"ordinal", c.order},
        {"event", c.event},
        {"command", c.command ? nlohmann::json(*c.command) : nlohmann::json(nullptr)},
        {"kind", c.kind},
        {"call", c.call},
        {"shapes", c.shapes},
        {"node_index", c.node_index ? nlohmann::json(*c.node_index) : nlohmann::json(nullptr)},
        {"participants", c.participants},
        {"class", drift_class_name(c.worst)},
        {"agrees", c.agrees},
        {"runtimes", pairs_json(c.results)}};
    if (c.submit_event) j["submit_event"] = *c.submit_event;
    if (!c.region.empty()) j["region"] = c.region;
    if (!c.vs_recording.empty()) j["vs_recording"] = pairs_json(c.vs_recording);
    if (resync && c.command) {
      j["introduced"] = pairs_json(c.introduced);
      j["introduced_class"] = drift_class_name(c.worst_introduced);
      j["inherited"] = pairs_json(c.results);
    }
    commands_json.push_back(std::move(j));
  }
  auto divergence_json = [](const std::optional<FirstDivergence>& first) -> nlohmann::json {
    if (!first) return nullptr;
    const auto& f = *first;
    return {{"event", f.event},
            {"command", f.command ? nlohmann::json(*f.command) : nlohmann::json(nullptr)},
            {"ordinal", f.order ? nlohmann::json(*f.order) : nlohmann::json(nullptr)},
            {"kind", f.kind},
            {"call", f.call},
            {"runtime", f.runtime},
            {"class", drift_class_name(f.cls)}};
  };
  // compare: replay's `recovery` object (or null); diff: one per trace, keyed by its label.
  nlohmann::json recovery = nullptr;
  if (recovered.size() == 1) {
    recovery = recovery_json(recovered.front());
  } else if (!complete()) {
    recovery = nlohmann::json::object();
    for (std::size_t i = 0; i < recovered.size(); ++i) {
      recovery[i < runtimes.size() ? runtimes[i] : std::to_string(i)] = recovery_json(recovered[i]);
    }
  }
  nlohmann::json out = {{"trace", trace},
                        {"runtimes", runtimes},
                        {"check", check},
                        {"deep", deep},
                        {"resync", resync},
                        {"events", events},
                        {"commands_compared", commands.size()},
                        {"counts", counts_json(counts())},
                        {"first_divergence", divergence_json(first_divergence)},
                        {"first_introduced", divergence_json(first_introduced)},
                        {"commands", commands_json},
                        {"structural", structural_json(structural)},
                        {"vs_recording", structural_json(vs_recording)},
                        {"deep_regions_skipped", deep_regions_skipped},
                        {"deep_regions_overwritten", deep_regions_overwritten},
                        {"batches_after_submit", batches_after_submit},
                        {"verdict", verdict()},
                        {"complete", complete()},
                        {"recovery", recovery}};
  if (recovered.size() == 1) out["unfinished_submits"] = unfinished_submits;
  return out;
}

std::expected<CompareReport, rp::ReplayFailure> compare_trace(const std::filesystem::path& trace,
                                                              const CompareOptions& options,
                                                              const rt::RuntimeRegistry& registry) {
  if (options.runtimes.size() < 2) {
    return std::unexpected(rp::ReplayFailure{
        rp::ReplayFailure::Kind::kUsage,
        fmt::format("compare needs at least two runtimes (the first is the baseline); got {}",
                    options.runtimes.size())});
  }
  // The report keys each runtime's results by its label: two lanes of one label would merge.
  for (std::size_t i = 0; i < options.runtimes.size(); ++i) {
    const auto label = [&](std::size_t k) {
      return k < options.labels.size() ? options.labels[k] : options.runtimes[k];
    };
    for (std::size_t k = 0; k < i; ++k) {
      if (label(k) == label(i)) {
        return std::unexpected(rp::ReplayFailure{
            rp::ReplayFailure::Kind::kUsage,
            fmt::format("--runtimes names {} twice (each runtime once)", label(i))});
      }
    }
  }
  auto plan = rp::open_plan(trace);
  if (!plan) return std::unexpected(plan.error());
  std::vector<Lane> lanes;
  for (unsigned i = 0; i < options.runtimes.size(); ++i) {
    auto target = rp::open_target(*plan, trace, options.runtimes[i], options.open, registry, i);
    if (!target) return std::unexpected(target.error());
    const std::string label = i < options.labels.size() ? options.labels[i] : options.runtimes[i];
    lanes.push_back({label, std::move(*target), nullptr});
  }
  for (auto& lane : lanes) {
    lane.executor =
        std::make_unique<rp::StepExecutor>(*plan, *lane.target.runtime, *lane.target.auxiliary);
  }
  CompareReport report;
  report.trace = options.trace_label.empty() ? trace.string() : options.trace_label;
  for (const auto& lane : lanes) report.runtimes.push_back(lane.name);
  report.check = options.check.to_string();
  report.deep = options.deep || options.resync;
  report.resync = options.resync;
  report.recovered.push_back(recovered_trace(trace, *plan));
  report.unfinished_submits = plan->unfinished_submits();
  Lockstep(*plan, lanes, options, report).run();
  // A submit the recording never saw end (a recovered trace) finishes before its objects go.
  for (const std::uint64_t begin : plan->unfinished_submits()) {
    for (auto& lane : lanes) lane.executor->settle_submit(begin);
  }
  // Executors first (they release their objects on their runtimes), then the runtimes.
  for (auto& lane : lanes) lane.executor.reset();
  return report;
}

std::expected<CompareReport, rp::ReplayFailure> repeat_trace(const std::filesystem::path& trace,
                                                             const std::string& runtime,
                                                             unsigned runs,
                                                             rt::RuntimeOpenOptions open,
                                                             const rt::RuntimeRegistry& registry) {
  if (runs < 2) {
    return std::unexpected(
        rp::ReplayFailure{rp::ReplayFailure::Kind::kUsage,
                          fmt::format("a repeat comparison needs at least 2 runs; got {}", runs)});
  }
  CompareOptions options;
  options.deep = true;
  options.open = open;
  for (unsigned k = 1; k <= runs; ++k) {
    options.runtimes.push_back(runtime);
    options.labels.push_back(fmt::format("{}#{}", runtime, k));
  }
  return compare_trace(trace, options, registry);
}

}  // namespace vtrace::drift
