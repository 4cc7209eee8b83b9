// Opening a runtime by name, with capture controlled by the environment.
//
// open_runtime() is what a product calls instead of RuntimeRegistry::open: without VTRACE_CAPTURE
// it returns exactly the registry's runtime; with it, the same runtime wrapped in a
// RecordingRuntime, so any product can be recorded without a code change.
//
// Environment:
//   VTRACE_CAPTURE=path         record to `path` (written as "<path>.partial", renamed when the
//                               recording is closed). File names: `path` and "<stem>.<N><ext>"
//                               (N = 2, 3...) form one family, and one process-wide allocator
//                               hands each member out once, in that order, to whichever recording
//                               asks next: a full capture takes its name when the runtime is
//                               opened, a flight window when it is written. So recordings and
//                               windows of one process never overwrite each other: two flight
//                               runtimes writing windows A, B, A get w.vtrace, w.2.vtrace,
//                               w.3.vtrace (docs/FLIGHT.md "Triggers and files").
//   VTRACE_CAPTURE_LEVEL=N      zstd level of the trace's data frames (default 1, 1..19).
//   VTRACE_CAPTURE_FLUSH_MS=N   timer flush every N ms (default 0 = off): bounds what a crash can
//                               lose at the cost of byte-identical files.
//   VTRACE_CAPTURE_WORKLOAD=txt free text stored in the trace metadata (`vtrace info`).
//   VTRACE_CAPTURE_MODE=flight  the flight recorder (docs/FLIGHT.md): nothing is written until a
//                               trigger fires; then the window goes to the next free name of
//                               `path`'s family. `full` (the default) records everything.
//   With VTRACE_CAPTURE_MODE=flight:
//   VTRACE_CAPTURE_WINDOW_BATCHES=N  the last N batches (default 16)
//   VTRACE_CAPTURE_WINDOW_MIB=M      at most M MiB of events and payloads held (default 256)
//   VTRACE_CAPTURE_MAX_WINDOWS=K     at most K window files (default 4)
//   VTRACE_CAPTURE_SIGNAL=0|1        SIGUSR1 writes a window (default 1)
//   VTRACE_CAPTURE_CRASH=0|1         a fatal signal writes the window (default 1)
//   VTRACE_CAPTURE_JOURNAL=0|1       keep the window on disk as it is recorded (crash safety;
//                                    default 0)
//   VTRACE_CAPTURE_TRIGGER_ERRORS=kind,kind  calls failing with these error kinds (error_kind_name)
//                                    write a window (default none)
//   VTRACE_CAPTURE_TRIGGER_COUNTER=counter>=N  the first snapshot with counter >= N writes one
//   A readback holding a NaN or an Inf always writes a window.
//   VTRACE_CAPTURE_START=submit:N|event:N|signal[:N]  a capture that starts mid-run, after N
//                               submits (or events, or SIGUSR1 deliveries; `signal` = signal:1),
//                               with the same checkpoint as a flight window, so the trace
//                               replays on its own; it is held in memory and written to `path`
//                               at VTRACE_CAPTURE_STOP (same syntax; signals counted from the
//                               capture's start, so START=signal STOP=signal is "from one
//                               SIGUSR1 to the next") or when the runtime is dropped. Without
//                               VTRACE_CAPTURE_MODE. A STOP in the START's unit (submit or
//                               event) at or before the START is refused (it would hold nothing).
//                               It takes VTRACE_CAPTURE_CRASH; a flight window's own variable
//                               (WINDOW_*, MAX_WINDOWS, SIGNAL, JOURNAL, TRIGGER_*) set beside it
//                               is refused. A START the run never reaches writes nothing and
//                               says so on stderr when the runtime is closed ("the capture from
//                               submit 1000 to close never started: the run ended after ...").
// Everything else keeps RecorderOptions' defaults (flush_before_submit on: a product that dies
// inside a submit leaves that batch in the trace).
// A recording opened this way is finalised by the recorder's destructor (when the product drops
// the runtime); a product that wants the close status can dynamic_cast to RecordingRuntime.
//
// Ownership: the caller owns the returned runtime. With capture on it is a RecordingRuntime that
//   owns the registry's runtime and the trace it writes ("<path>.partial", renamed by a
//   successful close, at the latest when the runtime is dropped; flight windows are files the
//   recorder never deletes). `options` and `registry` are borrowed for the call only.
// Thread rules: safe to call from several threads (the registry is only read: nobody may add()
//   to it meanwhile; the file name allocator is locked). Reads the environment at every call.
// Errors: the registry's errors unchanged. Capture itself never fails the call: when a variable
//   does not parse or the trace file cannot be created, the runtime is returned unwrapped and one
//   sentence on stderr names the variable or the file and says that nothing is recorded. The
//   flight and mid-run forms, which create nothing until later, check the same up front (the
//   path is not a directory or other non-regular file, "<path>.partial" can be created in its
//   folder). Failures after that never reach the product either; each is said in one sentence
//   on stderr starting "vtrace: VTRACE_CAPTURE=<path>: " (RecorderOptions::failure_notice):
//   a trace that cannot be written or finished (at close: it names the .partial file that holds
//   the events recorded so far and the `vtrace repair` command that finishes it, or says that
//   nothing reached the file and none is left), the first
//   flight window that cannot be written, the first journal that cannot be written.
#pragma once

#include <memory>
#include <string_view>

#include "vtrace/runtime/registry.h"

namespace vtrace::recorder {

runtime::Result<std::unique_ptr<runtime::DeviceRuntime>> open_runtime(
    std::string_view name, const runtime::RuntimeOpenOptions& options = {},
    const runtime::RuntimeRegistry& registry = runtime::default_registry());

}  // namespace vtrace::recorder
