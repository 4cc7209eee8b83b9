// vtrace list-runtimes: every runtime this build knows, whether it opens here, and what it is.
#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/runtime/cpu/cpu_runtime.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::cli {

namespace {

// "host, 4.0 GiB, avx2-f16c x 2 threads" for a runtime that opens, else why it does not.
std::string details(const runtime::RuntimeRegistry& registry, const std::string& name) {
  auto opened = registry.open(name);
  if (!opened) return "unavailable here: " + opened.error().message();
  const auto& descriptor = (*opened)->descriptor();
  std::string text = fmt::format("{}, {}", runtime::device_class_name(descriptor.device_class),
                                 human_bytes(descriptor.total_memory_bytes));
  if (const auto* cpu = dynamic_cast<const runtime::cpu::CpuRuntime*>(opened->get())) {
    text += fmt::format(", {} x {} threads", cpu->isa(), cpu->threads());
  }
  return text;
}

}  // namespace

void add_list_runtimes_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto* cmd = app.add_subcommand("list-runtimes", "List the runtimes this build can open");
  cmd->callback([run]() {
    *run = []() {
      const auto& registry = runtime::default_registry();
      for (const auto& name : registry.names()) {
        fmt::print("{:<12} {}\n{:<12} ({})\n", name, registry.summary(name), "",
                   details(registry, name));
      }
      return kExitOk;
    };
  });
}

}  // namespace vtrace::cli
