// The bodies of the libFuzzer targets (fuzz/fuzz_*.cpp), shared with the regression tests of
// tests/fuzz/: each takes untrusted bytes and does with them everything a user-facing path does,
// so a crasher found by the fuzzer is replayed by `make test` through the very same code.
//
//   trace_file_body     TraceReader::open on a memory source, recovery(), frames(), totals(),
//                       summary(), every event visited and decoded as replay and `vtrace dump` do
//                       (event_links, decode_step, describe_step), every payload an event links to
//                       looked up with blob(), then verify_all().
//   event_record_body   one event record: verify_event_record, then (if it verifies) the same
//                       decoding as above, without the container.
//   replay_plan_body    open, then ReplayPlan::build; if it builds, every step described and every
//                       payload, SubmitEnd pairing and recovery field of the plan read.
//   safetensors_body    SafetensorsFile::parse of the bytes, then names(), tensor() and
//                       f16_tensor() of every tensor, every tensor byte read.
//
// Each body answers a BodyOutcome: whether the bytes were refused and, if so, at which step and
// with what error. Nothing a body does depends on anything but the bytes (no files, no clock), so
// an outcome is reproducible. The fuzz_* functions are the libFuzzer signature (always 0).
//
// Seeds: event_records_of cuts the event records out of a trace (the seeds of the event target);
// safetensors_seeds are hand-made safetensors files and headers (the seeds of that target).
//
// Ownership: the bodies copy the input; nothing is kept between calls.
// Thread rules: no shared state; concurrent calls are fine.
// Errors: none thrown; a refusal is a BodyOutcome, never an exception or an abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vtrace/schema/trace_error.h"

namespace vtrace::fuzz {

struct BodyOutcome {
  // Empty when every step accepted the bytes; else the step that refused them ("open",
  // "visit_events", "blob", "verify_all", "verify_event_record", "decode_step", "build", "parse").
  // Later steps are not run once one refuses, except that verify_all runs after a failed visit.
  std::string refused_at;
  std::optional<schema::TraceErrorKind> kind;  // the trace error's kind (trace and plan bodies)
  std::string message;                         // the error's sentence
  std::uint64_t events = 0;  // events visited (trace), steps planned (plan), tensors (safetensors)
  bool refused() const { return !refused_at.empty(); }
};

BodyOutcome trace_file_body(std::span<const std::uint8_t> bytes);
BodyOutcome event_record_body(std::span<const std::uint8_t> bytes);
BodyOutcome replay_plan_body(std::span<const std::uint8_t> bytes);
BodyOutcome safetensors_body(std::span<const std::uint8_t> bytes);

int fuzz_trace_file(const std::uint8_t* data, std::size_t size);
int fuzz_event_record(const std::uint8_t* data, std::size_t size);
int fuzz_replay_plan(const std::uint8_t* data, std::size_t size);
int fuzz_safetensors(const std::uint8_t* data, std::size_t size);

// The event records of a trace, in order (every event of a trace that opens; none otherwise).
std::vector<std::vector<std::uint8_t>> event_records_of(std::span<const std::uint8_t> trace);
// Hand-made safetensors inputs, (name, bytes): valid files of every dtype, a metadata block, an
// empty header, and headers that are refused for each reason the parser names.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> safetensors_seeds();

}  // namespace vtrace::fuzz
