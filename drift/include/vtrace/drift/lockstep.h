// Lockstep comparison: one trace replayed on N runtimes step by step, the first named the
// baseline, every answer of every runtime compared with the baseline's (and with the recording).
//
// Each runtime gets its own StepExecutor (and an auxiliary instance for foreign objects); every
// step is executed on all of them before the next. Per step:
//   - structure: the observations of each runtime and of the baseline are compared with
//     replayer::compare under CheckMode::none (outcomes, error kinds, descriptors, fences,
//     attribution, counters, ...): any difference is a `structural` entry;
//   - numbers: a Readback both answered is a compared command (numeric.h: class, statistics,
//     agreement under the check);
//   - deep (`deep`): before each batch the recording submitted runs, its commands are run one at
//     a time on every runtime's private stream (StepExecutor::run_private) and every buffer
//     region each one wrote (copy, upload and zero destinations, dense-linear outputs; coalesced
//     commands inherit their inputs' regions) is read back on every runtime right after it and
//     compared, so the first divergent *command* is found even when the product read back only
//     the logits and even when a later command of the batch overwrites the region. Every region
//     the private runs touch is saved first and written back afterwards, and then the product's
//     batch runs as recorded. A batch that cannot be run command by command (a command of a kind
//     that cannot be encoded again, a region that is not whole elements, a private run the
//     baseline refuses) is counted in batches_after_submit and compared after it ran instead, for
//     the last writer of each region (earlier writers counted as deep_regions_overwritten). A
//     region the baseline cannot read as whole elements is skipped (deep_regions_skipped).
//     All these operations go through the executor's private stream: the counters the product's
//     CounterSnapshot events are compared on are each runtime's minus that traffic, so --deep
//     never turns into a counter difference.
//   - resync (`resync`, implies deep): the batch's commands are run one at a time a second time,
//     each after the baseline's values of its inputs (copy sources, dense-linear inputs and
//     weights) were written into every other runtime's: the answer is the error the command
//     introduced itself (`introduced`), next to the error it carried in (`results`). The state is
//     put back before the product's batch runs, as for deep.
//   - recording: every runtime is also compared with the recording, as `vtrace replay` does
//     (structure under CheckMode::none, readbacks numerically): informational, never the verdict.
// The first divergence is the first command (in execution order) that disagrees under the check,
// or the first structural difference, whichever came first; with resync, first_introduced is the
// first command whose introduced error disagrees.
//
// Ownership: the report owns its values. Thread rules: one thread; the runtimes are opened and
// closed inside compare_trace. Errors: replayer::ReplayFailure (kTrace, kUsage for fewer than two
// runtimes, kRuntimeUnavailable naming the runtime).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vtrace/drift/numeric.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::drift {

struct CompareOptions {
  std::vector<std::string> runtimes;  // at least two; the first is the baseline
  DriftCheck check;
  bool deep = false;
  bool resync = false;  // implies deep
  // How each runtime is opened; device_memory_bytes 0 = the recorded device's capacity.
  runtime::RuntimeOpenOptions open{};
  std::string trace_label;  // for the report; the path when empty
  // What the report calls each runtime (default: its registry name). `vtrace replay --repeat N`
  // names the same runtime N times and labels the runs "cpu#1", "cpu#2", ...
  std::vector<std::string> labels;
};

// One runtime's answer of one command, against the baseline's.
struct PairResult {
  std::string runtime;
  DriftClass cls = DriftClass::kBitwise;
  bool agrees = true;
  ElementStats stats;
  std::string note;  // why it is structural (a read that failed), else empty
};

struct CommandComparison {
  std::uint64_t order = 0;  // its index in CompareReport::commands (their execution order)
  std::uint64_t event = 0;                    // the Readback's event, or the command's encode event
  std::optional<std::uint64_t> command;       // deep: the recorded command ordinal
  std::optional<std::uint64_t> submit_event;  // deep: the SubmitBegin that ran it
  std::string kind;    // "Readback", "EncodeDenseLinear", "EncodeUpload", ...
  std::string call;    // replay's description of the call (step_text.h)
  std::string shapes;  // "1x1024x1024" per launch, "f16 x 2048" for a region
  std::optional<std::uint32_t> node_index;
  std::uint32_t participants = 0;
  std::string region;                    // deep: "buffer#7 [0, 4096)"
  // One per runtime after the baseline: the command's answer as the replay carried it (its
  // inputs those the runtime computed itself; with --resync, the "inherited" error).
  std::vector<PairResult> results;
  // --resync, per-command comparisons: the same command run after its inputs were overwritten
  // with the baseline's, i.e. the error it introduced itself. Empty otherwise.
  std::vector<PairResult> introduced;
  std::vector<PairResult> vs_recording;  // readbacks: every runtime (baseline first) vs recording
  DriftClass worst = DriftClass::kBitwise;
  DriftClass worst_introduced = DriftClass::kBitwise;
  bool agrees = true;  // every `results` entry agrees (the verdict is on these)
};

struct StructuralDifference {
  std::uint64_t order = 0;  // its index in its list (structural, vs_recording)
  std::uint64_t event = 0;
  std::string call;
  std::string runtime;  // the runtime that differs from `against`
  std::string against;  // the baseline's name, or "recording"
  std::string kind;     // replayer's difference kind name ("outcome", "counters", ...)
  std::string expected, actual;
};

struct FirstDivergence {
  std::uint64_t event = 0;
  std::optional<std::uint64_t> command;
  // The CommandComparison that diverged (its `order`): one command may be compared as several
  // regions (a launch per node, a copy's destination ranges) under the same event and command, and
  // only this one diverged first. Nullopt for a structural divergence (no comparison of numbers).
  std::optional<std::uint64_t> order;
  std::string kind;  // the event kind
  std::string call;
  std::string runtime;
  DriftClass cls = DriftClass::kDrift;
};

// An input trace recovered by the reader (no footer: a cut or crashed recording): only its
// recovered events are compared, as `vtrace replay` replays them (replay_plan.h).
struct RecoveredTrace {
  std::string path;
  std::uint64_t events = 0;  // events in its plan (those compared)
  replayer::PlanRecovery recovery;
  // Replay's `recovery` object: note, events_recovered, cut_offset, file_bytes, stopped_at,
  // stop_reason.
  nlohmann::json to_json() const;
};

// How many of a report's `commands` entries are what. An entry is one compared result: a
// product readback, or (deep) one region a command wrote in one batch, so a command that writes
// several regions is several entries, and a command submitted in several batches is compared
// once per batch. "Commands" below are (submit_event, command) pairs: one command in one batch.
struct CompareCounts {
  std::uint64_t results = 0;    // entries of `commands`
  std::uint64_t readbacks = 0;  // entries of a readback (no command)
  std::uint64_t regions = 0;    // entries of a command: one per region it wrote
  std::uint64_t commands = 0;   // distinct commands among those
  std::uint64_t commands_disagreeing = 0;  // a region of theirs disagrees
  // --resync (0 otherwise): commands with a region whose introduced error disagrees, and those
  // that disagree without introducing any (they only carry in an earlier command's error).
  std::uint64_t commands_introducing = 0;
  std::uint64_t commands_carrying_only = 0;
};

struct CompareReport {
  std::string trace;
  std::vector<std::string> runtimes;
  std::string check;
  bool deep = false;
  bool resync = false;
  std::uint64_t events = 0;
  std::vector<CommandComparison> commands;
  std::vector<StructuralDifference> structural;    // between runtimes and the baseline
  std::vector<StructuralDifference> vs_recording;  // between each runtime and the recording
  std::uint64_t deep_regions_skipped = 0;          // the baseline could not read them as elements
  std::uint64_t deep_regions_overwritten = 0;      // a later command of the same batch wrote them
  std::uint64_t batches_after_submit = 0;          // compared after they ran, not per command
  std::optional<FirstDivergence> first_divergence;
  // --resync: the first command whose introduced error disagrees under the check.
  std::optional<FirstDivergence> first_introduced;
  // Per input trace (compare: the trace; diff: a, then b): nullopt when it is complete.
  std::vector<std::optional<RecoveredTrace>> recovered;
  // compare: SubmitBegin events with no SubmitEnd (a recovered trace; re-executed, their
  // outcome not compared).
  std::vector<std::uint64_t> unfinished_submits;

  // Every input trace has its footer.
  bool complete() const;

  // The compared command (region) a FirstDivergence names, or nullptr (a structural one).
  const CommandComparison* command_of(const FirstDivergence& divergence) const;

  // The entries of `commands` counted by what they are (CompareCounts).
  CompareCounts counts() const;

  // "match", "drift" (numbers differ under the check) or "structural".
  std::string verdict() const;
  bool matched() const { return verdict() == "match"; }
  // Stable keys (docs/CLI.md, `vtrace compare --json`).
  nlohmann::json to_json() const;
};

// The order of the "worst commands" lists (compare's text and HTML report): a command with a
// structural answer first, then one where a NaN or infinity appeared or vanished (nan_inf: its
// max ULP, over finite pairs, may be 0), then the largest max ULP over its runtimes. True when
// `a` comes before `b`.
bool worse_command(const CommandComparison& a, const CommandComparison& b);

// `path`'s RecoveredTrace when `plan` is of a recovered trace; nullopt when it is complete.
std::optional<RecoveredTrace> recovered_trace(const std::filesystem::path& path,
                                              const replayer::ReplayPlan& plan);

std::expected<CompareReport, replayer::ReplayFailure> compare_trace(
    const std::filesystem::path& trace, const CompareOptions& options,
    const runtime::RuntimeRegistry& registry);

// `vtrace replay --repeat N`: the same runtime N times in lockstep with --deep, bits, each run
// labelled "<runtime>#<k>": any difference between runs is nondeterminism (the report's first
// divergence is its first event). Errors: those of compare_trace; kUsage for N < 2.
std::expected<CompareReport, replayer::ReplayFailure> repeat_trace(
    const std::filesystem::path& trace, const std::string& runtime, unsigned runs,
    runtime::RuntimeOpenOptions open, const runtime::RuntimeRegistry& registry);

// `vtrace diff A B`: two recorded traces of the same workload (captured on two backends, say)
// aligned event by event. Each pair of events is compared as the recordings answered it: a
// different kind, or (same kind) any difference between their recorded observations under
// CheckMode::none, is structural; a Readback both answered is a compared command (numeric.h,
// under `check`). A trace with more events than the other has a structural difference at the
// first event the other lacks. The report has the shape of compare's, with the two traces as its
// "runtimes", labelled label_a and label_b as given (`vtrace diff` passes "a" and "b"); trace `a`
// is the baseline. Errors: kTrace for an unreadable trace.
std::expected<CompareReport, replayer::ReplayFailure> diff_traces(const std::filesystem::path& a,
                                                                  const std::filesystem::path& b,
                                                                  const DriftCheck& check,
                                                                  const std::string& label_a,
                                                                  const std::string& label_b);

}  // namespace vtrace::drift
