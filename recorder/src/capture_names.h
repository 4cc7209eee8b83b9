// Private to vtrace_recorder: the one process-wide allocator of the file names that captures
// opened through open_runtime and flight windows and journals take, so no two recordings or
// windows of one process ever write the same path (open.h, docs/FLIGHT.md "Triggers and files").
//
// A family is a base path (`w.vtrace`): its members are the base itself, then "<stem>.<N><ext>"
// (`w.2.vtrace`, `w.3.vtrace`, ...), handed out in that order to whichever recording of the
// process asks next (a full capture at open, a flight window when it is written). Journals take
// "<stem>.journal-<2k-1><ext>" and "<stem>.journal-<2k><ext>" (k = 1, 2, ...) as a pair. Paths
// are compared after std::filesystem::absolute and lexically_normal, so `w.vtrace` and
// `./w.vtrace` are one family. A name once taken stays taken for the life of the process.
//
// Thread rules: safe from any thread (one mutex). The crash window takes its name in the forked
//   child of a dying process, where the mutex may be held by a thread that no longer exists:
//   take_capture_name_in_crash_child does not wait for it there.
// Errors: the allocators cannot fail (short of std::bad_alloc); check_capture_path below.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "vtrace/schema/trace_error.h"

namespace vtrace::recorder::detail {

// The first member of `base`'s family no recording of this process has taken; takes it.
std::filesystem::path take_capture_name(const std::filesystem::path& base);
// A full recording to an explicit path (RecordingRuntime::create/wrap with a path) holds its
// name while it writes: claiming takes the name (no later window or capture takes it) and marks
// it in use; nullopt when another recording of this process holds it now. A name taken earlier
// and not in use (a window written, a recording closed) can be claimed: that file is replaced,
// as any file is. The returned claim releases the name (it stays taken) when destroyed.
class CapturePathClaim {
 public:
  CapturePathClaim() = default;
  explicit CapturePathClaim(std::string key) : key_(std::move(key)) {}
  CapturePathClaim(CapturePathClaim&& other) noexcept : key_(std::exchange(other.key_, {})) {}
  CapturePathClaim& operator=(CapturePathClaim&& other) noexcept;
  CapturePathClaim(const CapturePathClaim&) = delete;
  CapturePathClaim& operator=(const CapturePathClaim&) = delete;
  ~CapturePathClaim();

 private:
  std::string key_;  // empty: holds nothing
};
std::optional<CapturePathClaim> claim_capture_path(const std::filesystem::path& path);

// take_capture_name for the crash child (signal_flag.h), which has one thread: when the lock is
// held (by a parent thread the fork did not copy, which will never release it), the first member
// of the family that is not on disk, neither as itself nor as its .partial, without reading or
// changing the taken set (it may be half updated).
std::filesystem::path take_capture_name_in_crash_child(const std::filesystem::path& base);
// Holds the allocator's lock while the returned lock lives: for the test of the crash child
// (a thread holding it while another thread crashes).
std::unique_lock<std::mutex> hold_capture_names();
// The first free journal pair of `base`; takes both names.
std::pair<std::filesystem::path, std::filesystem::path> take_journal_names(
    const std::filesystem::path& base);

// Whether a trace could be written to `path` now, checked without writing anything that stays:
// `path` is not an existing directory, device or other non-regular file (as open_file_sink
// refuses), and "<path>.partial" can be created in its folder (created with O_EXCL and removed at
// once; a leftover .partial is left alone and only checked to be a writable regular file). For
// the paths that write nothing until later (flight windows, a mid-run capture), so a path that
// cannot work is refused when recording starts. Errors: kIo, one sentence naming the file.
schema::TraceResult<void> check_capture_path(const std::filesystem::path& path);

}  // namespace vtrace::recorder::detail
