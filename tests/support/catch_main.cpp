// The main of every test executable: Catch2's session, plus the skip convention of
// test_support.h (exit kSkipExitCode when a test skipped and none failed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <atomic>
#include <iostream>

#include "support/test_support.h"

namespace vtrace::testing {

namespace {
std::atomic<bool> g_skipped{false};
}  // namespace

void mark_skipped(std::string_view reason) {
  g_skipped.store(true);
  std::cerr << "SKIPPED: " << reason << '\n';
}

bool any_skipped() { return g_skipped.load(); }

std::ifstream open_fixture(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file.good()) {
    FAIL("test fixture " << path.string()
                         << " is missing or unreadable (fixtures live in tests/data/)");
  }
  return file;
}

}  // namespace vtrace::testing

int main(int argc, char* argv[]) {
  // Session::run returns the number of failed assertions (capped at 255): 77 of them must not
  // read as the skip code, so any failure is 1.
  const int failed = Catch::Session().run(argc, argv);
  if (failed != 0) return 1;
  return vtrace::testing::any_skipped() ? vtrace::testing::kSkipExitCode : 0;
}
