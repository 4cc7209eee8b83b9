// vtrace list-runtimes
#include <fmt/format.h>

#include "commands.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::cli {

void add_list_runtimes_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto* cmd = app.add_subcommand("list-runtimes", "List the runtimes this build can open");
  cmd->callback([run]() {
    *run = []() {
      const auto& registry = runtime::default_registry();
      for (const auto& name : registry.names()) {
        fmt::print("{:<12} {}\n", name, registry.summary(name));
      }
      return kExitOk;
    };
  });
}

}  // namespace vtrace::cli
