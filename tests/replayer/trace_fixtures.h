// Test fixtures shared by tests/replayer, tests/drift and tests/cli: record a workload (or a
// function's calls) into a file, and rewrite a trace with one readback's bytes altered (through
// the public reader and writer APIs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_writer.h"
#include "vtrace/workloads/workload.h"

namespace vtrace::test {

// A fresh empty directory under the system temp dir, removed at destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& stem);
  ~ScratchDir();
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Records `spec` on the registry runtime `runtime_name` into `path`; REQUIREs success and returns
// the report.
workloads::WorkloadReport record_workload(const workloads::WorkloadSpec& spec,
                                          const std::filesystem::path& path,
                                          const std::string& runtime_name = "reference");

// Records `calls` on the registry runtime `runtime` (opened as device.vtrace.0) into `path`,
// under that name; REQUIREs that it opens and closes.
void record_calls(const runtime::RuntimeRegistry& registry, const char* runtime,
                  const std::filesystem::path& path,
                  const std::function<void(runtime::DeviceRuntime&)>& calls);

// A `bytes`-long f16 weight buffer named `id`, admitted and allocated on `r`; REQUIREs success.
runtime::BufferPtr f16_buffer(runtime::DeviceRuntime& r, const char* id, std::uint64_t bytes);

// Small decode options that record in well under a second.
workloads::WorkloadSpec small_decode_spec();

struct AlteredTrace {
  std::uint64_t event = 0;         // ordinal of the altered Readback
  std::uint64_t element_index = 0; // which 16-bit element was changed
};

// Copies `source` to `destination`, replacing the payload of the last successful Readback event by
// a copy whose 16-bit element `element_index` went through `alter`. REQUIREs success.
AlteredTrace rewrite_with_altered_readback(const std::filesystem::path& source,
                                           const std::filesystem::path& destination,
                                           const std::function<std::uint16_t(std::uint16_t)>& alter,
                                           std::uint64_t element_index = 0);

// What a recording that died after `events` events leaves behind: copies the first `events` events
// of `source` and the payloads they name to `destination`, then cuts the file where its data frames
// end, so it has no footer and the reader recovers exactly those events. The payload named by event
// `drop_payload_of` (when set) is left out, as if the cut had lost it. keep_footer: do not cut (a
// complete trace that lacks that payload). Returns the file's event count. REQUIREs success.
struct CutCopyOptions {
  std::uint64_t events = 0;
  std::optional<std::uint64_t> drop_payload_of;
  bool keep_footer = false;
};
void write_cut_copy(const std::filesystem::path& source, const std::filesystem::path& destination,
                    const CutCopyOptions& options);

// The ordinal of the first event of `kind` ("SubmitBegin", "EncodeUpload", ...) in `trace`.
// REQUIREs that there is one.
std::uint64_t first_event_of_kind(const std::filesystem::path& trace, std::string_view kind);

// One past the last EventBody value this build knows.
extern const fb::EventBody kUnknownBody;

// Finishes `b` as one Event record and returns its bytes.
std::vector<std::uint8_t> finish_event(flatbuffers::FlatBufferBuilder& b, std::uint64_t seq,
                                       fb::EventBody type, flatbuffers::Offset<void> body,
                                       bool required);

// Copies traces/tiny.vtrace to `destination` (re-putting its payloads), then lets `append` add
// events (it gets the writer and the ordinal of the first event it adds), and closes the file.
// Returns tiny's event count. REQUIREs success.
std::uint64_t write_tiny_plus(
    const std::filesystem::path& destination,
    const std::function<void(schema::TraceWriter&, std::uint64_t)>& append);

// Copies traces/tiny.vtrace to `destination` (re-putting its payloads), then appends an event of
// a kind this build does not know (one past EventBody::MAX, `required` as given) and after it a
// supports_guarded_submission call, so that consumers have something to handle after the unknown
// event. Returns the unknown event's ordinal. REQUIREs success.
std::uint64_t write_tiny_with_unknown_event(const std::filesystem::path& destination,
                                            bool required);

}  // namespace vtrace::test
