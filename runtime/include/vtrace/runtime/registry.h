// Opening runtimes by name.
//
// The registry maps a name ("reference", later "cpu", "cuda", ...) to a factory. Built-in runtimes
// are registered by default_registry(); tests and products may add their own.
// This is the raw open: capture through VTRACE_CAPTURE lives one layer up, in
// vtrace/recorder/open.h (the recorder depends on the runtime, not the other way round).
//
// Thread rules: a RuntimeRegistry has no lock. Its const members (open, contains, names,
//   summary, takes) may run concurrently with each other; add() may not run concurrently with
//   any other call on the same registry, so add everything before sharing it. open() runs the
//   factory on the calling thread, so a registry opened from several threads needs factories
//   safe to call concurrently (the built-in ones are). default_registry() is safe to call from
//   several threads; it returns a const registry that is filled before it is first returned.
// Errors: open() fails with kUnknownRuntime (naming the known runtimes) or with whatever the
//   factory returns (kRuntimeUnavailable for a backend whose device is missing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime {

// Options every factory understands. device_id is the DeviceId given to the runtime.
struct RuntimeOpenOptions {
  std::string device_id = "device.vtrace.0";
  // Device capacity (descriptor total_memory_bytes, what admission hands out) for the host
  // runtimes; 0 keeps the runtime's default (reference 64 MiB, cpu and cpu-splitk 4 GiB).
  std::uint64_t device_memory_bytes = 0;
  // Worker threads of the cpu runtimes; 0 = std::thread::hardware_concurrency().
  unsigned threads = 0;
  // Instruction path of the cpu runtimes ("portable", "avx2-f16c", "avx512"); empty = the best
  // this CPU supports. A path the CPU lacks fails with kRuntimeUnavailable.
  std::string isa{};
};

using RuntimeFactory =
    std::function<Result<std::unique_ptr<DeviceRuntime>>(const RuntimeOpenOptions&)>;

// Which of RuntimeOpenOptions' runtime-specific fields a runtime acts on (every runtime takes
// device_id and device_memory_bytes): a factory ignores the others, so a caller can say that an
// option given for runtimes that all ignore it does nothing (the CLI refuses it).
struct OpenOptionsTaken {
  bool threads = false;
  bool isa = false;
};

class RuntimeRegistry {
 public:
  // Adds or replaces `name`; `takes`: the options its factory acts on.
  void add(std::string name, std::string summary, RuntimeFactory factory,
           OpenOptionsTaken takes = {});
  Result<std::unique_ptr<DeviceRuntime>> open(std::string_view name,
                                              const RuntimeOpenOptions& options = {}) const;
  bool contains(std::string_view name) const;
  // Sorted names.
  std::vector<std::string> names() const;
  // One-line description of a registered runtime, or empty.
  std::string summary(std::string_view name) const;
  // The options `name` acts on; none for a name not registered.
  OpenOptionsTaken takes(std::string_view name) const;

 private:
  struct Entry {
    std::string summary;
    RuntimeFactory factory;
    OpenOptionsTaken takes;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// Whether this build has the CUDA runtimes (CMake found the CUDA toolkit: docs/CUDA.md).
bool built_with_cuda();

// The registry of the runtimes built into this library: "reference", "cpu", "cpu-splitk", and
// in a CUDA build "cuda" and "cuda-cublas" (runtime/cuda/). In a build without CUDA, opening
// "cuda" or "cuda-cublas" fails with kUnknownRuntime saying the build has no CUDA runtime.
const RuntimeRegistry& default_registry();

}  // namespace vtrace::runtime
