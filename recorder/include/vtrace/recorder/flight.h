// The flight recorder's options and answers (RecorderOptions::mode = CaptureMode::kFlight;
// docs/FLIGHT.md).
//
// In flight mode the recorder writes nothing while the product runs: it keeps in memory a bounded
// window of the most recent events and payloads, plus what makes that window standalone (the live
// objects created before it and a checkpoint of the contents of the buffers it uses). A trigger
// writes the window as an ordinary .vtrace trace that replays on its own:
//   - a readback that returns a NaN or an Inf (f16, bf16 and f32 layouts),
//   - a counter reaching a threshold (at a CounterSnapshot),
//   - a call that fails with one of the chosen error kinds,
//   - SIGUSR1 (the handler only sets a flag; the window is written at the next recorded call),
//   - RecordingRuntime::dump_window() (an API call; `vtrace record` also uses it, named
//     kWorkloadFailed, when a workload fails),
//   - the process dying of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT (window_on_crash: a forked
//     copy of the dying process writes the window, which ends with the SubmitBegin of a submit
//     the crash interrupted).
// Windows go to the next free name of the trace path's family: the path itself, then
// "<stem>.<N><ext>" (N = 2, 3, ...), at most max_windows files; each names its trigger in its
// metadata (CaptureWindowRecord). The names come from one process-wide allocator shared by every
// recorder, every capture of open_runtime (open.h) and every full recording to a path (held
// while it writes), so a window never overwrites another recording's file: a recorder alone on
// its path writes path, stem.2, stem.3; a second recorder on the same path (or a later one in the
// same process) takes the names the first left free.
//
// Ownership: everything here is a plain value. The recorder copies RecorderOptions::flight at
//   create(), so later changes to the caller's copy do nothing. flight_stats() returns a copy
//   (FlightStats owns its strings and paths). The window files are the caller's: the recorder
//   never deletes one (only its journals, at close()). flight_trigger_name() returns a view of a
//   static string, valid for the whole program.
// Thread rules: the types have no locking of their own; flight_trigger_name() is pure. A window
//   is written with the recorder's locks held, on the thread that gets to it: the recorded call
//   that fired the trigger (at its end), the next recorded call on any thread (SIGUSR1, a
//   capture's stop point), the caller of dump_window() or close(). Meanwhile the other threads'
//   recorded calls and flight_stats() wait. The signal handlers are process-wide: one SIGUSR1
//   counts for every flight recorder of the process that listens for it. The crash window is
//   written in a forked child, without taking the locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/runtime/error.h"

namespace vtrace::recorder {

enum class CaptureMode : std::uint8_t {
  kFull,    // every event to the trace file (the default)
  kFlight,  // a bounded window in memory, written by a trigger
};

enum class FlightTriggerKind : std::uint8_t {
  kNonFiniteReadback,  // "non_finite_readback"
  kCounterThreshold,   // "counter_threshold"
  kCallError,          // "call_error"
  kSignal,             // "signal" (SIGUSR1)
  kApi,                // "api" (dump_window())
  kWorkloadFailed,     // "workload_failed" (vtrace record, a workload that failed)
  kCaptureRange,       // "capture_range" (a capture started mid-run: FlightOptions::start)
  kJournal,            // "journal" (FlightOptions::journal: the window as recorded, on disk)
  kCrash,              // "crash" (window_on_crash: a fatal signal; the detail names it)
};
// The stable snake_case name stored in the window's metadata.
std::string_view flight_trigger_name(FlightTriggerKind kind);

// A point of a run: after `count` events, or after `count` submits, have been recorded; or
// (kSignal) after `count` SIGUSR1 deliveries, counted for a start point from the recorder's
// creation and for a stop point from the capture's start. A signal is acted on at the next
// recorded call, like every point.
struct CapturePoint {
  enum class Unit : std::uint8_t { kEvent, kSubmit, kSignal };
  Unit unit = Unit::kSubmit;
  std::uint64_t count = 0;
};

// A counter of spec 7.6 by its name ("submissions", "uploaded_bytes", ...).
struct CounterThreshold {
  std::string counter;
  std::uint64_t at_least = 0;  // fires once, at the first snapshot where counter >= at_least
};

struct FlightOptions {
  // The window: the last `window_batches` submitted batches or the last `window_bytes` of events
  // and payloads held, whichever is smaller (a window never drops its newest batch).
  std::uint64_t window_batches = 16;
  std::uint64_t window_bytes = 256ull << 20;
  // At most this many window files per recording; later triggers are counted, not written.
  std::uint32_t max_windows = 4;
  bool trigger_on_non_finite_readback = true;
  std::optional<CounterThreshold> counter_threshold;
  // Failed calls whose error kind is in the set trigger a window (empty: none do).
  std::set<runtime::ErrorKind> trigger_on_errors;
  // Install a SIGUSR1 handler for the recorder's lifetime (the previous one is restored at
  // close(), unless the product installed its own meanwhile: that one stays). The handler only
  // sets a flag.
  bool trigger_on_signal = false;
  // Crash safety at no cost while the product runs: handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE
  // and SIGABRT, installed for the recorder's lifetime (the previous ones are restored at
  // close(), except where the product installed its own meanwhile: those stay). On such a signal the handler forks; the child (a one-thread copy of the dying
  // process) writes the window as it is, without taking the recorder's locks, and exits; the
  // parent waits for it, restores the previous handlers and lets the signal take its course. A
  // crash inside a submit leaves a window ending with that submit's SubmitBegin (recorded before
  // the wrapped submit runs), which replay re-executes as an unfinished submit. Best effort: a
  // crash that corrupted the recorder's memory, or happened while another thread held a lock
  // the writer needs, gives no window (the child is killed after 20 s); `journal` is the
  // guarantee. Counts against max_windows like any trigger. In a mid-run capture it writes what
  // the capture holds once it has started. At most 32 recordings of a process hold a crash
  // window at once (FlightStats::crash_window_armed says whether this one does).
  bool window_on_crash = true;
  // Crash safety that does not depend on the dying process: keep the window on disk as it is
  // recorded, in "<stem>.journal-1<ext>" and
  // "<stem>.journal-2<ext>" (written as .partial files, so a crash leaves them recoverable like a
  // cut trace; a second recorder journaling beside the same path in the process takes
  // journal-3 and journal-4, and so on). A journal starts at a checkpoint with the same prologue as a window and streams
  // every event after it; each SubmitBegin is flushed before the wrapped submit runs (as
  // flush_before_submit in full mode). A new journal starts when the current one holds
  // 2 * window_batches batches; the older one is deleted once the newer holds window_batches,
  // so after a crash the journal with more events holds at least the last window_batches
  // batches. Both are deleted at close(). Off by default: it costs a full capture's writing.
  bool journal = false;
  // A capture that starts mid-run (VTRACE_CAPTURE_START/STOP): nothing before `start` is held
  // (only the live objects); at the first quiescent call boundary at or after it a checkpoint
  // starts the capture, which holds everything from then on (no window bound) until `stop`
  // (or close()), where it is written as one trace (trigger kCaptureRange) and recording ends.
  // The other triggers are off in this form. A point in kSignal units installs the SIGUSR1
  // handler for the recorder's lifetime (as trigger_on_signal does).
  std::optional<CapturePoint> start;
  std::optional<CapturePoint> stop;
};

// One window file written (FlightStats::windows).
struct WrittenWindow {
  std::filesystem::path path;  // where it went (open.h, docs/FLIGHT.md "Triggers and files")
  std::uint64_t events = 0;    // the events it holds, its prologue included
  std::string trigger;         // flight_trigger_name() of what wrote it
};

// What the flight recorder holds and wrote (RecordingRuntime::flight_stats()).
struct FlightStats {
  std::uint64_t held_bytes = 0;             // events and distinct payloads held now
  std::uint64_t peak_held_bytes = 0;        // the most held at any time
  std::uint64_t held_batches = 0;           // batches in the current window
  std::uint64_t checkpoints = 0;            // checkpoints taken
  std::uint64_t checkpoint_bytes_read = 0;  // bytes read back by them (incremental)
  std::uint32_t windows_written = 0;
  std::uint32_t windows_not_written = 0;  // triggers past max_windows, or a failed write
  std::string last_error;  // why the last window (or checkpoint) was not written; empty if none
  std::vector<WrittenWindow> windows;  // the windows written, in order
  // Whether a fatal signal writes this recording's window: window_on_crash, and one of the 32
  // crash slots of the process was free when the recording started (a recording past them gets
  // none, says so once through RecorderOptions::failure_notice, and keeps its other triggers).
  bool crash_window_armed = false;
};

}  // namespace vtrace::recorder
