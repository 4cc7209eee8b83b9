// libFuzzer entry point of the event_record target; the body is fuzz_bodies.h's, shared with
// tests/fuzz.
#include <cstddef>
#include <cstdint>

#include "fuzz_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return vtrace::fuzz::fuzz_event_record(data, size);
}
