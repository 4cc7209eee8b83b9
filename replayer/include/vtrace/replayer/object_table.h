// ObjectTable: the recorded ordinals of a trace mapped to ONE runtime's live objects.
//
// Own objects (buffers, streams, commands, fences, permits, import sessions) are those the replay
// runtime created for the recorded events; the step executor puts them under the ordinal the
// recording gave them and takes them out again when the recording released (or consumed) them.
// Foreign objects (ObjectRef::Space::kForeign: the recording handed the product's runtime an
// object of another runtime) are made on the auxiliary runtime, a second runtime of the same kind:
// foreign buffers are allocated with the recorded descriptor, foreign streams are fresh streams,
// foreign fences come from a trivial submit and foreign commands from a trivial encode (a fresh
// one at each use, since a submit consumes it).
//
// Ownership: owns every live object it holds; borrows the auxiliary runtime, which must outlive
//   the table. Destruction releases sessions first, then commands, fences, permits, buffers and
//   streams last (a command before the buffers it names, a session before the buffers it imports
//   into).
// Thread rules: one thread at a time; not copyable.
// Errors: none. A lookup of an object that is not live answers nullptr (or nullopt); making a
//   foreign object the auxiliary runtime refuses leaves it absent (its uses then report it
//   missing).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "vtrace/replayer/replay_plan.h"
#include "vtrace/runtime/device_runtime.h"

namespace vtrace::replayer {

class ObjectTable {
 public:
  explicit ObjectTable(runtime::DeviceRuntime& auxiliary) : aux_(auxiliary) {}
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;

  // nullptr when `ref` is null or names no live object.
  const runtime::Buffer* buffer(const ObjectRef& ref) const;
  runtime::Stream* stream(const ObjectRef& ref) const;
  const runtime::Fence* fence(const ObjectRef& ref) const;
  // The permit an Admit returned under `generation`; it stays in the table after allocate()
  // consumed it, so allocating with it again reproduces the "consumed permit" error.
  runtime::AllocationPermit* permit(std::uint64_t generation);
  runtime::StaticWeightImportSession* session(std::uint64_t ordinal) const;

  // Takes a command out for a submit or a coalesce: an own command leaves the table (nullopt when
  // it is not there, or is null and `null_is_missing`); a foreign ref gets a fresh command of the
  // auxiliary runtime (nullptr if it cannot make one); a null ref gets nullptr.
  std::optional<runtime::CommandPtr> take_command(const ObjectRef& ref, bool null_is_missing);

  void keep_buffer(std::uint64_t ordinal, runtime::BufferPtr buffer);
  void keep_stream(std::uint64_t ordinal, runtime::StreamPtr stream);
  void keep_fence(std::uint64_t ordinal, runtime::FencePtr fence);
  void keep_command(std::uint64_t ordinal, runtime::CommandPtr command);
  void keep_permit(std::uint64_t generation, runtime::AllocationPermit permit);
  void keep_session(std::uint64_t ordinal,
                    std::unique_ptr<runtime::StaticWeightImportSession> session);
  // The recording released own object `ordinal` of `kind` (import sessions are not released).
  void release(ObjectKind kind, std::uint64_t ordinal);

  // Makes the foreign object the recording saw, on the auxiliary runtime.
  void make_foreign(const step::ForeignObjectSeen& seen);

 private:
  template <typename H>
  using Table = std::map<std::uint64_t, H>;
  runtime::Buffer* aux_scratch();
  runtime::Stream* aux_stream();
  runtime::CommandPtr foreign_command();

  runtime::DeviceRuntime& aux_;
  // Declared so that destruction releases streams last, buffers after the commands using them.
  Table<runtime::StreamPtr> streams_;
  Table<runtime::StreamPtr> foreign_streams_;
  runtime::StreamPtr aux_stream_;
  Table<runtime::BufferPtr> buffers_;
  Table<runtime::BufferPtr> foreign_buffers_;
  runtime::BufferPtr aux_scratch_;
  std::map<std::uint64_t, runtime::AllocationPermit> permits_;
  Table<runtime::FencePtr> fences_;
  Table<runtime::FencePtr> foreign_fences_;
  Table<runtime::CommandPtr> commands_;
  // After the buffers: a session is released before the buffers it imports into.
  Table<std::unique_ptr<runtime::StaticWeightImportSession>> sessions_;
};

}  // namespace vtrace::replayer
