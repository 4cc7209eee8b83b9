// RecordingRuntime: a DeviceRuntime decorator that forwards every call to the runtime it wraps and,
// but for the calls listed under "Not recorded" below, records the call, its inputs and its
// outcome as events of a .vtrace trace (schema/vtrace.fbs).
//
// What the product sees does not change: every result, byte and error comes from the wrapped
// runtime unchanged (flight mode's counter_snapshot() aside: see "Not recorded"). Handles handed
// out are wrappers (they own the wrapped runtime's handles); a wrapper of another
// RecordingRuntime is unwrapped before forwarding, so a product that mixes runtimes gets the same
// foreign-object answers with or without recorders.
//
// What is recorded:
//  - one total order that is the execution order: every recorded call holds one lock from its
//    first event through the wrapped call to its last event (a submit's SubmitBegin, flush,
//    wrapped submit, SubmitEnd and CounterSnapshot are one unit; handle releases too), so
//    concurrent calls from many threads are all recorded, none lost, in the order the wrapped
//    runtime ran them, and a multi-threaded recording replays like a single-threaded one.
//    The price: recording serializes calls to the wrapped runtime (a wait_fence, or a flush that
//    waits on the trace compressor, holds up the other threads' calls until it returns).
//    Single-threaded runs are deterministic (same calls -> byte-identical trace, with
//    writer.flush_interval_ms = 0);
//  - submit: a SubmitBegin intent event BEFORE the wrapped submit runs, a SubmitEnd after;
//  - a CounterSnapshot after every submit and readback when the wrapped runtime has counters;
//  - upload and readback bytes as content-addressed blobs (TraceWriter::put_blob);
//  - handle destruction (BufferReleased, StreamReleased, CommandReleased for a command never
//    submitted, FenceReleased): storage lifetime moves counters;
//  - objects are named by ordinals the recorder assigns; a handle it did not create is "foreign"
//    and is introduced once by a ForeignObjectSeen event (identified by address, so a foreign
//    object freed and another created at the same address share an ordinal: the recorder never
//    sees a foreign object die, and the runtime interface gives handles no identity beyond their
//    address, so it cannot tell the two apart; a product that mixes runtimes replays faithfully
//    only if it keeps the foreign objects it passes alive for the whole recording).
// Not recorded (forwarded, or answered, without an event):
//  - descriptor() and attention_execution_policy(): their values are recorded once, at create()
//    (the RuntimeOpened event and the trace metadata);
//  - counter_snapshot() called by the product (the recorder's own CounterSnapshot events are
//    taken after submits and readbacks). It does not take the order lock, so it is not ordered
//    with the recorded calls. In flight mode it returns the wrapped runtime's counters less what
//    the recorder's own checkpoint reads moved (what the product's calls moved);
//  - the recorder's own methods: inner() (calls made through it bypass the recorder),
//    recording_failed(), events_recorded(), flight_stats(), and dump_window() and close(), which
//    write a window or the footer but no event;
//  - dropping a StaticWeightImportSession (the format has no release event for it; its
//    import_component() and seal() are recorded);
//  - every call once recording has ended: after close(), a trace failure, or a mid-run
//    capture's stop point.
// The trace is flushed to the sink before every wait_fence and, unless
// RecorderOptions::flush_before_submit is turned off, right after every SubmitBegin (before the
// wrapped submit runs), so a run that dies in either leaves a recoverable file holding the call.
//
// Failure of the trace (disk full, I/O error): the product keeps running unchanged, the recorder
// stops recording (recording_failed() turns true), close() returns the first write error, and
// what was written before stays recoverable by TraceReader.
//
// Ownership: the recorder owns the wrapped runtime. As for any runtime, it must outlive every
//   handle it returned; handles that die after close() are not recorded.
// Thread rules: as DeviceRuntime, with every recorded call serialized (see above); close() may be
//   called from any thread (it waits for a call in flight). Calls from inside the wrapped runtime
//   back into the same recorder (or a wrapper of it dying there) would deadlock; none is made.
// Errors: create() returns RuntimeError kInternal carrying the trace error's text; every other
//   method returns exactly what the wrapped runtime returned.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "vtrace/recorder/flight.h"
#include "vtrace/runtime/device_runtime.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/trace_error.h"
#include "vtrace/schema/trace_writer.h"

namespace vtrace::recorder {

struct RecorderOptions {
  schema::TraceWriterOptions writer;
  // Free text stored in the trace metadata (shown by `vtrace info`).
  std::string workload_description;
  // Flush the trace to the sink right after each SubmitBegin (submit and submit_guarded), before
  // the wrapped submit runs: a run that dies inside a submit still leaves in the trace the batch
  // it died on (the SubmitBegin and every upload payload it references). On by default; the
  // flush at the following wait_fence then finds almost nothing left, so the cost is one zstd
  // block flush and one hand-over to the writer's thread per submit (bench/bench_recorder.cpp,
  // docs/FORMAT.md "Events"). Off: the intent reaches the sink at the next wait_fence, so a crash
  // inside a submit loses the events recorded since the previous wait.
  bool flush_before_submit = true;
  // kFlight: keep a bounded window in memory and write it only when a trigger fires (flight.h,
  // docs/FLIGHT.md). Needs the path form of create() or wrap(): windows are files beside it.
  CaptureMode mode = CaptureMode::kFull;
  FlightOptions flight;
  // Failures the product cannot see, reported on stderr: when non-empty, one sentence starting
  // "vtrace: <failure_notice>: " is written when close() fails (it names the .partial file left
  // and the `vtrace repair` command that finishes it, or says that nothing reached the file and
  // none is left), when the first flight window of the
  // recording cannot be written, and when its first journal cannot be written (later window and
  // journal failures are only counted, FlightStats). open_runtime sets it to
  // "VTRACE_CAPTURE=<path>"; empty (the default) writes nothing: close() and flight_stats()
  // report every failure.
  std::string failure_notice;
};

// close(): the writer's statistics, or the first trace error (the one that stopped recording).
using RecorderCloseResult = schema::TraceResult<schema::TraceWriteStats>;

// Why a recording ends, stored in the footer's summary (TraceSummary.interrupted_by, shown by
// `vtrace info`). The default: the product ran to its end.
struct CloseReason {
  // Non-empty when the product was stopped early at a call boundary: the signal's name
  // ("SIGINT", "SIGTERM"). The trace is still a complete, valid file.
  std::string interrupted_by;
};

class RecordingRuntime final : public runtime::DeviceRuntime {
 public:
  // Records to `trace_path` (written as "<path>.partial", renamed at close()). runtime_name is
  // the registry name of the wrapped runtime, stored in the trace metadata. While the recording
  // lives its path is held in the process-wide name allocator (capture_names: flight windows and
  // open_runtime captures take other names), and a second create() to the same path is refused
  // (kInternal, "… is being written by another recording of this process"); once it is closed
  // successfully (or destroyed) the path may be recorded to again (the file is replaced, as any
  // file is).
  static runtime::Result<std::unique_ptr<RecordingRuntime>> create(
      std::unique_ptr<runtime::DeviceRuntime> inner, std::string runtime_name,
      const std::filesystem::path& trace_path, RecorderOptions options = {});
  // Records to any sink (tests: memory sinks, /dev/full through open_raw_file_sink).
  static runtime::Result<std::unique_ptr<RecordingRuntime>> create(
      std::unique_ptr<runtime::DeviceRuntime> inner, std::string runtime_name,
      std::unique_ptr<schema::ByteSink> sink, RecorderOptions options = {});
  // As create() with a sink, but takes the runtime out of `inner` only on success: when it fails
  // (no runtime, no sink, the trace header cannot be written) `inner` still holds the runtime, so
  // the caller can run it unrecorded instead of opening the device a second time (open_runtime).
  static runtime::Result<std::unique_ptr<RecordingRuntime>> wrap(
      std::unique_ptr<runtime::DeviceRuntime>& inner, std::string runtime_name,
      std::unique_ptr<schema::ByteSink> sink, RecorderOptions options = {});
  // As wrap() with a sink, recording to `trace_path` (flight mode: the windows' base path, no
  // file is created until a trigger fires).
  static runtime::Result<std::unique_ptr<RecordingRuntime>> wrap(
      std::unique_ptr<runtime::DeviceRuntime>& inner, std::string runtime_name,
      const std::filesystem::path& trace_path, RecorderOptions options = {});

  // Closes the trace if close() was not called (the result is then lost; call close() to see it).
  ~RecordingRuntime() override;

  // Writes the summary and footer and commits the file. Idempotent: later calls return the first
  // call's result. Calls made after close() are forwarded but not recorded.
  RecorderCloseResult close();
  // close() that also records why the recording ended (only the first close() stores a reason).
  RecorderCloseResult close(const CloseReason& reason);

  const runtime::DeviceRuntime& inner() const;
  runtime::DeviceRuntime& inner();
  // True once a trace write failed; the product is unaffected.
  bool recording_failed() const;
  // Events recorded so far.
  std::uint64_t events_recorded() const;

  // Flight mode: writes the current window now (trigger kind `kind`, `detail` stored in its
  // metadata) and returns the file it went to. Errors: not in flight mode, closed, max_windows
  // already written, or the file could not be written (kIo...); the recording goes on either way.
  // Thread rules: as any recorded call (it waits for a call in flight).
  schema::TraceResult<std::filesystem::path> dump_window(
      FlightTriggerKind kind = FlightTriggerKind::kApi, std::string detail = {});
  // Flight mode: what the ring holds and what was written; nullopt in full mode.
  std::optional<FlightStats> flight_stats() const;

  // ---- DeviceRuntime ----
  const runtime::DeviceDescriptor& descriptor() const override;
  runtime::AttentionExecutionPolicy attention_execution_policy() const override;
  runtime::Result<runtime::AllocationPermit> admit(const runtime::BufferRequest& request) override;
  runtime::Result<runtime::BufferPtr> allocate(runtime::AllocationPermit permit) override;
  runtime::BufferDescriptor buffer_descriptor(const runtime::Buffer& buffer) const override;
  runtime::Result<runtime::StreamPtr> create_stream() override;
  runtime::StreamState stream_state(const runtime::Stream& stream) const override;
  runtime::Result<runtime::CommandPtr> encode_copy(const runtime::Buffer& source,
                                                   const runtime::Buffer& destination,
                                                   const runtime::CopyRegion& region) override;
  runtime::Result<runtime::CommandPtr> encode_upload(
      std::span<const std::uint8_t> source, const runtime::HostTransferLayout& layout,
      const runtime::Buffer& destination, std::uint64_t destination_offset_bytes) override;
  runtime::Result<runtime::CommandPtr> encode_zero(const runtime::Buffer& destination,
                                                   std::uint64_t destination_offset_bytes,
                                                   std::uint64_t length_bytes) override;
  runtime::Result<runtime::CommandPtr> encode_dense_linear(
      const runtime::DenseLinearRequest& request) override;
  std::expected<runtime::FencePtr, runtime::DefinitelyNotSubmitted> submit(
      runtime::Stream& stream, runtime::CommandBatch batch) override;
  runtime::FenceQuery query_fence(const runtime::Fence& fence) const override;
  std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate> wait_fence(
      const runtime::Fence& fence) override;
  runtime::Result<void> synchronize(runtime::Stream& stream) override;
  runtime::Result<std::vector<std::uint8_t>> readback(
      runtime::Stream& stream, const runtime::Buffer& source, const runtime::CopyRegion& region,
      const runtime::HostTransferLayout& output_layout) override;
  runtime::VNextResult<runtime::DeviceErrorReport> describe_error(
      const runtime::RuntimeError& error) const override;
  std::optional<runtime::CounterSnapshot> counter_snapshot() const override;

  std::optional<runtime::Result<std::unique_ptr<runtime::StaticWeightImportSession>>>
  begin_static_weight_import() override;
  std::optional<runtime::Result<runtime::CommandPtr>> encode_static_weight_transform(
      const runtime::StaticWeightTransformRequest& request) override;
  runtime::Result<runtime::ReusableExecutionPreparation> configure_reusable_executables(
      runtime::Stream& stream, const runtime::ReusableExecutionPlan& plan) override;
  runtime::Result<runtime::ReusableExecutionPreparation> seal_reusable_executables(
      runtime::Stream& stream) override;
  runtime::Result<runtime::ReusableExecutionPreparation> reusable_executable_preparation(
      const runtime::Stream& stream) const override;
  runtime::Result<std::vector<runtime::ReusableExecutionProgram>> reusable_execution_catalog(
      const runtime::Stream& stream) const override;
  runtime::Result<std::optional<runtime::CommandPtr>> encode_reusable_execution(
      const runtime::ReusableExecutionInvocation& invocation) override;
  runtime::Result<runtime::ReusableExecutionTrim> trim_reusable_executables(
      runtime::Stream& stream) override;
  runtime::Result<std::vector<runtime::CommandPtr>> coalesce_program_bindings(
      std::vector<runtime::CommandPtr> commands) override;
  bool supports_guarded_submission() const override;
  std::expected<runtime::FencePtr, runtime::GuardedSubmissionError> submit_guarded(
      runtime::Stream& stream, runtime::CommandBatch batch,
      const runtime::SubmissionGuard& guard) override;
  std::optional<runtime::SubmissionAttribution> submission_attribution(
      const runtime::Fence& fence) const override;

  struct State;  // shared with the handle wrappers (recorder/src/recorder_state.h)

 private:
  explicit RecordingRuntime(std::unique_ptr<State> state);
  // wrap()'s work: to `sink`, or in flight mode (sink null) to windows beside `*flight_path`.
  static runtime::Result<std::unique_ptr<RecordingRuntime>> wrap_recording(
      std::unique_ptr<runtime::DeviceRuntime>& inner, std::string runtime_name,
      std::unique_ptr<schema::ByteSink> sink, const std::filesystem::path* flight_path,
      RecorderOptions options);
  std::unique_ptr<State> state_;
};

}  // namespace vtrace::recorder
