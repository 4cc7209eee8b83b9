// Runs the `vtrace` executable under test (VTRACE_CLI_PATH) through the shell, for the CLI suites.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace vtrace::test {

struct Run {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` with `sh -c` (popen), stdout and stderr together; the exit code, or -1 when the
// command did not exit normally.
inline Run run_shell(const std::string& command) {
  Run run;
  std::FILE* pipe = ::popen(fmt::format("{} 2>&1", command).c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// `vtrace ARGUMENTS`; the arguments are shell words.
inline Run run_vtrace(const std::string& arguments) {
  return run_shell(fmt::format("{} {}", VTRACE_CLI_PATH, arguments));
}

inline std::string golden(const char* name) {
  return fmt::format("{}/traces/{}.vtrace", VTRACE_SOURCE_DIR, name);
}

}  // namespace vtrace::test
