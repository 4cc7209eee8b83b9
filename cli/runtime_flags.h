// The options that say how a runtime is opened, shared by the commands that open one:
// --threads N, --isa NAME, --device-memory SIZE (runtime::RuntimeOpenOptions), and what to exit
// with when it cannot be opened (--exit-skip N).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli11.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::cli {

struct RuntimeFlags {
  unsigned threads = 0;
  std::string isa;
  std::string device_memory;  // "" = the runtime's default (replay: the recorded capacity)
};

// Registers the three options on `cmd`; `device_memory_default` is said in --help.
void add_runtime_flags(CLI::App& cmd, RuntimeFlags& flags, std::string_view device_memory_default);

// --exit-skip N (replay, compare, extract): exit N instead of 3 when `what` cannot be opened (125
// makes ctest report a skip). N is an exit status, so 0 to 255: a larger one would wrap (256 would
// read as success) and is refused.
void add_exit_skip_option(CLI::App& cmd, std::optional<int>& exit_skip, std::string_view what);

// "4096", "64MiB", "1.5GiB", "512M", "2G", "16k" (K/M/G are binary, as the Ki/Mi/Gi forms).
std::expected<std::uint64_t, std::string> parse_byte_size(std::string_view text);

// The open options the flags give for opening `runtimes`, or the sentence that says which flag
// is wrong: a malformed --device-memory, or --threads or --isa when no runtime of `runtimes`
// takes it (registry.h OpenOptionsTaken: `--isa avx2-f16c` on reference would change nothing and
// say otherwise). A name the registry does not know is left to the open, which names it.
std::expected<runtime::RuntimeOpenOptions, std::string> open_options(
    const RuntimeFlags& flags, const std::vector<std::string>& runtimes);

// `open` as the registry runtime `runtime` takes it: threads and isa cleared when it ignores them
// (so a command line for that runtime alone, `extract --runtime reference`, is not refused).
runtime::RuntimeOpenOptions taken_by(runtime::RuntimeOpenOptions open, const std::string& runtime);

}  // namespace vtrace::cli
