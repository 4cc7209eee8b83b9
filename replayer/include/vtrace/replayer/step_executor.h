// StepExecutor: runs one replay step on one runtime and returns what it observed.
//
// execute(step) re-executes the step's recorded call on the runtime with the recorded arguments,
// the recorded ordinals mapped to live objects through the executor's ObjectTable (own objects of
// `runtime`, foreign ones made on `auxiliary`), and returns an Observation (observation.h): the
// outcome and the answer, nothing compared. A live object is kept under the ordinal the recording
// gave it when the live call succeeded and the recording says that call created it (it succeeded
// there too); otherwise later uses of the ordinal find nothing and are reported as problems.
// Steps must be executed in plan order; a step may be skipped only if no later step needs what it
// creates (replay never skips one).
//
// Private stream (for --deep / --resync): read_buffer and write_buffer read and write any live own
// buffer through the runtime's own readback and upload, and run_private runs a recorded command
// again, on a stream the executor creates and owns (never one of the product's). This traffic
// moves the runtime's counters (readback_bytes; submissions, commands, uploaded_bytes and
// dense_linear_launches), so the rule is: every private operation measures the runtime's counters
// before and after itself and adds the difference to private_traffic(); the counters a
// CounterSnapshot step observes are the runtime's minus private_traffic(), i.e. what the
// product's own calls moved. (Modular u64 arithmetic: exact for every counter, gauges too.) A
// runtime without counters has nothing to subtract. A write must keep the buffer's element type
// (the upload layout is the buffer's element type); the bytes written are the caller's business
// (--resync writes the baseline's), the counters stay those of the product. A flight window
// (ReplayPlan::counter_baseline) starts after synthesized allocations and uploads the recording's
// counters never saw: at its baseline snapshot everything the runtime counted so far is taken as
// traffic to subtract less the recorded baseline, so later snapshots compare changes since it.
//
// Ownership: borrows the plan and both runtimes, which must outlive the executor; owns every live
//   object it made (released at destruction, a submit left running waited for by settle_submit).
// Thread rules: one thread; nobody else may use the runtimes while the executor lives.
// Errors: execute() never fails (what could not run is in Observation::problems); read_buffer,
//   write_buffer and run_private return BufferAccessError.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "vtrace/replayer/object_table.h"
#include "vtrace/replayer/observation.h"
#include "vtrace/replayer/replay_plan.h"

namespace vtrace::replayer {

struct ByteRange {
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
};

struct BufferAccessError {
  enum class Kind : std::uint8_t {
    kNoSuchBuffer,  // no live own buffer has that ordinal
    kInvalidRange,  // empty, or not whole elements of the buffer's element type
    kRuntime,       // the runtime refused (its error kind and message in `message`)
    kUnsupported,   // run_private: the step is not a command that can be encoded again
  };
  Kind kind = Kind::kNoSuchBuffer;
  std::string message;
};

class StepExecutor {
 public:
  StepExecutor(const ReplayPlan& plan, runtime::DeviceRuntime& runtime,
               runtime::DeviceRuntime& auxiliary);
  StepExecutor(const StepExecutor&) = delete;
  StepExecutor& operator=(const StepExecutor&) = delete;
  ~StepExecutor();

  Observation execute(const ReplayStep& step);

  // A SubmitBegin executed without its SubmitEnd (a recovered trace): waits for its fence, so the
  // submit finishes before the objects it uses are released. Nothing if there is none.
  void settle_submit(std::uint64_t begin_ordinal);

  // Reads `range` of own buffer `ordinal` on the private stream.
  std::expected<std::vector<std::uint8_t>, BufferAccessError> read_buffer(std::uint64_t ordinal,
                                                                          ByteRange range);
  // Writes `bytes` into own buffer `ordinal` at `offset_bytes` on the private stream (an upload
  // submitted and waited for).
  std::expected<void, BufferAccessError> write_buffer(std::uint64_t ordinal,
                                                      std::uint64_t offset_bytes,
                                                      std::span<const std::uint8_t> bytes);
  // Encodes the command of `encode` (an EncodeCopy, EncodeUpload, EncodeZero or EncodeDenseLinear
  // step of the plan) again with its recorded arguments and runs it alone on the private stream
  // (a singleton Compute batch, submitted and waited for): the buffers change as the product's
  // command would change them, the counters it moves are private traffic. --deep and --resync run
  // a batch's commands one at a time this way. kUnsupported for any other step; kNoSuchBuffer when
  // a buffer it names is not live; kRuntime when the encode, submit or wait failed.
  std::expected<void, BufferAccessError> run_private(const ReplayStep& encode);
  // What the private operations moved on the runtime's counters so far (zero without counters).
  const runtime::CounterSnapshot& private_traffic() const { return private_traffic_; }

  runtime::DeviceRuntime& live_runtime() { return rt_; }
  const ObjectTable& objects() const { return objects_; }

 private:
  struct Pending {
    bool ran = false;
    runtime::FencePtr fence;
    Outcome error;
    bool rejected = false;
  };
  class Visitor;
  friend class Visitor;

  std::expected<runtime::Stream*, BufferAccessError> private_stream();
  void add_private_traffic(const std::optional<runtime::CounterSnapshot>& before);
  std::expected<void, BufferAccessError> submit_private(runtime::Stream& stream,
                                                        runtime::CommandPtr command);

  const ReplayPlan& plan_;
  runtime::DeviceRuntime& rt_;
  runtime::StreamPtr private_stream_;  // destroyed after every object of the table
  runtime::CounterSnapshot private_traffic_;
  ObjectTable objects_;
  std::map<std::uint64_t, Pending> pending_;  // destroyed first
};

}  // namespace vtrace::replayer
