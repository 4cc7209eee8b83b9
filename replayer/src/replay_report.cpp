#include "vtrace/replayer/replay_report.h"

namespace vtrace::replayer {

namespace {
nlohmann::json mismatch_json(const Mismatch& m) {
  return {{"event", m.event},
          {"call", m.call},
          {"expected", m.expected},
          {"actual", m.actual},
          {"reproduce", m.reproduce}};
}
}  // namespace

nlohmann::json ReplayReport::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& m : mismatches) list.push_back(mismatch_json(m));
  return {
      {"trace", trace},
      {"runtime", runtime},
      {"check", check},
      {"events", events},
      {"executed", executed},
      {"range", {{"first", first_event}, {"end", end_event}}},
      {"checked",
       {{"calls", checked.calls},
        {"readbacks", checked.readbacks},
        {"readback_bytes", checked.readback_bytes},
        {"attribution_rows", checked.attribution_rows},
        {"fences", checked.fences},
        {"counter_snapshots", checked.counter_snapshots},
        {"error_outcomes", checked.error_outcomes}}},
      {"mismatch_count", mismatch_count},
      {"mismatches", std::move(list)},
      {"first_mismatch", mismatches.empty() ? nlohmann::json(nullptr)
                                            : mismatch_json(mismatches.front())},
      {"verdict", matched() ? "match" : "mismatch"},
      {"complete", complete},
      {"recovery",
       complete ? nlohmann::json(nullptr)
                : nlohmann::json{{"note", recovery_note},
                                 {"events_recovered", events_recovered},
                                 {"cut_offset", cut_offset},
                                 {"file_bytes", file_bytes},
                                 {"stopped_at", stopped_at ? nlohmann::json(*stopped_at)
                                                           : nlohmann::json(nullptr)},
                                 {"stop_reason", stop_reason}}},
      {"unfinished_submits", unfinished_submits},
      {"runtime_differences", runtime_differences},
  };
}

}  // namespace vtrace::replayer
