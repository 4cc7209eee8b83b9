// Test-suite conventions shared by every test executable.
//
// Skipping: a test whose prerequisite is missing (a CPU feature, a tool, a device file, a GPU)
//   calls VTRACE_SKIP("why"). The reason is printed, the test returns, and the process exits
//   with kSkipExitCode unless some test failed; ctest maps that code to "Skipped"
//   (SKIP_RETURN_CODE, set in tests/CMakeLists.txt). A skipped test never reports as passed.
// Fixtures: files under tests/data are opened with open_fixture(), which fails the test with a
//   sentence naming the missing path instead of a bare REQUIRE.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace vtrace::testing {

// ctest's SKIP_RETURN_CODE for every test of this suite (77, the automake convention).
inline constexpr int kSkipExitCode = 77;

// Records that the running test was skipped and prints why. Use VTRACE_SKIP, which also returns.
void mark_skipped(std::string_view reason);
// True once any test of this process called mark_skipped.
bool any_skipped();

// The file at `path` opened for reading; fails the running test naming the path if it is absent.
std::ifstream open_fixture(const std::filesystem::path& path);

}  // namespace vtrace::testing

#define VTRACE_SKIP(reason)                      \
  do {                                           \
    ::vtrace::testing::mark_skipped(reason);     \
    return;                                      \
  } while (false)

// Skips the running test under ThreadSanitizer (scripts/sanitize.sh thread), saying why; does
// nothing elsewhere. For a long test whose every step after its setup runs on the calling thread
// (a loop of reads over thousands of damaged traces): TSan has no race to find in it, and it would
// cost minutes of CI's budget there. The plain and the ASan + UBSan runs still run it.
#if defined(__SANITIZE_THREAD__)
#define VTRACE_SKIP_UNDER_TSAN(reason) VTRACE_SKIP(reason)
#else
#define VTRACE_SKIP_UNDER_TSAN(reason) static_cast<void>(0)
#endif
