// Runs the `vtrace` executable under test (VTRACE_CLI_PATH) through the shell, for the CLI suites;
// or starts it without waiting (Spawned), for the tests that signal it while it records.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

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

// `vtrace ARGUMENTS...` started with posix_spawn and not waited for: stdout and stderr go to
// `log`; `environment` entries ("TMPDIR=/x") are added to this process's environment. The
// destructor kills (SIGKILL) and reaps a process still running, so a failing test leaves none.
class Spawned {
 public:
  Spawned(const std::vector<std::string>& arguments, std::filesystem::path log,
          const std::vector<std::string>& environment = {})
      : log_(std::move(log)) {
    std::vector<std::string> words{VTRACE_CLI_PATH};
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_words(environment);
    for (char** e = environ; *e != nullptr; ++e) env_words.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : env_words) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    REQUIRE(posix_spawn_file_actions_init(&actions) == 0);
    REQUIRE(posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                             O_WRONLY | O_CREAT | O_TRUNC, 0644) == 0);
    REQUIRE(posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO) == 0);
    const int spawned =
        ::posix_spawn(&pid_, VTRACE_CLI_PATH, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
  }
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;
  ~Spawned() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int number) const { REQUIRE(::kill(pid_, number) == 0); }
  // Whether the process still runs (reaps it when it ended).
  bool running() {
    if (status_) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    REQUIRE(r >= 0);
    if (r == 0) return true;
    status_ = status;
    return false;
  }
  // Waits for the end; the wait status (WIFEXITED, WIFSIGNALED...).
  int wait() {
    if (!status_) {
      int status = 0;
      REQUIRE(::waitpid(pid_, &status, 0) == pid_);
      status_ = status;
    }
    return *status_;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The process's thread ids (/proc/PID/task).
  std::vector<pid_t> threads() const {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid_), ec)) {
      out.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
    }
    return out;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Polls `file` (every millisecond) until it holds at least `bytes` bytes: true; false when the
// process ended first. Not a timing assertion: a guard of ten minutes only stops a hung test.
inline bool wait_for_size(const std::filesystem::path& file, std::uint64_t bytes,
                          Spawned& process) {
  const auto guard = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (std::chrono::steady_clock::now() < guard) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec && size >= bytes) return true;
    if (!process.running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  FAIL("waited ten minutes for " << file << " to reach " << bytes << " bytes");
  return false;
}

inline std::string golden(const char* name) {
  return fmt::format("{}/traces/{}.vtrace", VTRACE_SOURCE_DIR, name);
}

}  // namespace vtrace::test
