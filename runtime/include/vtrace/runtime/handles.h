// Opaque handles a DeviceRuntime hands out: buffers, streams, commands and fences.
//
// Each runtime derives its own concrete handle types from these bases; a runtime recognises its
// own handles (dynamic_cast plus an instance check) and treats any other handle as foreign,
// answering with the contract's foreign-object error rather than undefined behaviour. A
// decorator (the recorder) derives wrappers that own the inner runtime's handles.
//
// Ownership: the caller owns every handle through std::unique_ptr. Dropping a BufferPtr releases
// the caller's hold on the storage; commands that reference the storage keep it alive (spec 7.1).
// Commands are consumed by submit (moved into a CommandBatch).
//
// Thread rules: Buffer and Fence may be used from several threads at once (const use only);
// a Stream is used by one thread at a time (the contract's &mut); a Command is moved, not shared.
#pragma once

#include <memory>

namespace vtrace::runtime {

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

 protected:
  Buffer() = default;
};

class Stream {
 public:
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

 protected:
  Stream() = default;
};

class Command {
 public:
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

 protected:
  Command() = default;
};

class Fence {
 public:
  virtual ~Fence() = default;
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;

 protected:
  Fence() = default;
};

using BufferPtr = std::unique_ptr<Buffer>;
using StreamPtr = std::unique_ptr<Stream>;
using CommandPtr = std::unique_ptr<Command>;
using FencePtr = std::unique_ptr<Fence>;

}  // namespace vtrace::runtime
