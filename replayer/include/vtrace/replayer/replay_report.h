// What a replay found: counts of everything checked, and every mismatch with one command line
// that reproduces it. to_json() gives the report `vtrace replay --json` writes; its keys are
// frozen and documented in docs/CLI.md.
//
// Ownership: plain values that own their strings and vectors; nothing is borrowed from the plan,
//   the trace or the runtimes, so a report outlives them all. to_json() returns a new value (a
//   copy; Mismatch::difference is not in it, as docs/CLI.md says).
// Thread rules: no internal locking: const members (matched(), to_json()) may run concurrently
//   on one report while nobody modifies it.
// Errors: none; to_json() cannot fail. Its strings (the trace path, call texts) may hold bytes
//   that are not UTF-8, on which nlohmann's dump() throws: write it with json_text().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vtrace/replayer/difference.h"

namespace vtrace::replayer {

struct ReplayChecks {
  std::uint64_t calls = 0;              // call outcomes compared (success or error kind)
  std::uint64_t readbacks = 0;          // readback payloads compared
  std::uint64_t readback_bytes = 0;     // their bytes
  std::uint64_t attribution_rows = 0;   // submission attribution rows compared
  std::uint64_t fences = 0;             // fence answers compared (wait and query)
  std::uint64_t counter_snapshots = 0;  // counter snapshots compared
  std::uint64_t error_outcomes = 0;     // compared calls whose recorded outcome was an error
};

struct Mismatch {
  std::uint64_t event = 0;  // ordinal of the event whose outcome differs
  std::string call;         // "EncodeZero(buffer#2, offset 0, length 8)"
  std::string expected;     // what the trace recorded
  std::string actual;       // what the runtime did
  std::string reproduce;    // "vtrace replay T --events N:N+1 --runtime R --check M"
  Difference difference;    // what differs, structured (expected and actual are its text)
};

struct ReplayReport {
  std::string trace;
  std::string runtime;
  std::string check;             // "bits", "ulp:N", "none"
  std::uint64_t first_event = 0;  // the checked range [first_event, end_event)
  std::uint64_t end_event = 0;
  std::uint64_t events = 0;      // events checked (in the range)
  std::uint64_t executed = 0;    // events executed (the range and everything before it)
  ReplayChecks checked;
  std::vector<Mismatch> mismatches;    // at most ReplayOptions::max_mismatches
  std::uint64_t mismatch_count = 0;    // all of them
  // A recovered (cut) trace: the reader's note, and where the plan had to stop (ReplayPlan).
  bool complete = true;
  std::string recovery_note;
  std::uint64_t events_recovered = 0;
  std::uint64_t cut_offset = 0;  // where the valid data of the file ends
  std::uint64_t file_bytes = 0;
  std::optional<std::uint64_t> stopped_at;  // first event left out: its payload was lost
  std::string stop_reason;
  // Executed SubmitBegin events with no SubmitEnd in the trace (the run died inside the submit):
  // re-executed, their outcome not compared.
  std::vector<std::uint64_t> unfinished_submits;
  // What legitimately differs between the recorded device and the replay runtime (class,
  // fingerprint, capacity, attention policy, ...): information, never a mismatch
  // (replay_target.h).
  std::vector<std::string> runtime_differences;
  bool matched() const { return mismatch_count == 0; }
  nlohmann::json to_json() const;
};

}  // namespace vtrace::replayer
