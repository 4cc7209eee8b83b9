#include "vtrace/recorder/open.h"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::recorder {

namespace {

namespace rt = vtrace::runtime;

std::atomic<std::uint64_t> g_captures{0};

rt::RuntimeError env_error(std::string_view variable, std::string_view value, std::string_view why) {
  return rt::RuntimeError(rt::ErrorKind::kInternal,
                          fmt::format("{}=`{}` is not valid: {}", variable, value, why));
}

template <typename T>
rt::Result<T> env_number(const char* variable, T fallback, T min, T max) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string_view value(text);
  T parsed{};
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return std::unexpected(env_error(variable, value, "expected an integer"));
  }
  if (parsed < min || parsed > max) {
    return std::unexpected(
        env_error(variable, value, fmt::format("expected a value in [{}, {}]", min, max)));
  }
  return parsed;
}

// The first capture of the process uses `path`; later ones get a numbered sibling.
std::filesystem::path capture_path(const std::filesystem::path& path) {
  const std::uint64_t n = g_captures.fetch_add(1) + 1;
  if (n == 1) return path;
  auto numbered = path;
  numbered.replace_filename(
      fmt::format("{}.{}{}", path.stem().string(), n, path.extension().string()));
  return numbered;
}

}  // namespace

// Capture must never change what the product sees: when capture cannot start (a bad variable,
// an unwritable path), the product gets its runtime unwrapped and one sentence on stderr says why
// nothing is recorded.
rt::Result<std::unique_ptr<rt::DeviceRuntime>> open_runtime(std::string_view name,
                                                            const rt::RuntimeOpenOptions& options,
                                                            const rt::RuntimeRegistry& registry) {
  const char* capture = std::getenv("VTRACE_CAPTURE");
  auto runtime = registry.open(name, options);
  if (!runtime || capture == nullptr || *capture == '\0') return runtime;

  auto without_capture = [&](const rt::RuntimeError& why) {
    std::fputs(fmt::format("vtrace: VTRACE_CAPTURE={}: {}; runtime `{}` runs without capture\n",
                           capture, why.message(), name)
                   .c_str(),
               stderr);
    return std::move(runtime);
  };
  // RecorderOptions' defaults, flush_before_submit included: a captured product that dies inside
  // a submit leaves that submit's batch in the trace.
  RecorderOptions recorder;
  auto level = env_number<int>("VTRACE_CAPTURE_LEVEL", recorder.writer.zstd_level, 1, 19);
  if (!level) return without_capture(level.error());
  auto flush_ms = env_number<std::uint32_t>("VTRACE_CAPTURE_FLUSH_MS", 0, 0, 3'600'000);
  if (!flush_ms) return without_capture(flush_ms.error());
  recorder.writer.zstd_level = *level;
  recorder.writer.flush_interval_ms = *flush_ms;
  if (const char* workload = std::getenv("VTRACE_CAPTURE_WORKLOAD")) {
    recorder.workload_description = workload;
  }

  // The trace file first, then the recorder through wrap(), which leaves the runtime in place
  // when it fails: the product runs on the one runtime the registry opened (a device is never
  // opened twice).
  const auto path = capture_path(capture);
  auto sink = schema::open_file_sink(path);
  if (!sink) {
    return without_capture(rt::RuntimeError(
        rt::ErrorKind::kInternal,
        fmt::format("cannot record a trace: {}: {}", schema::trace_error_kind_name(sink.error().kind),
                    sink.error().message)));
  }
  auto recording = RecordingRuntime::wrap(*runtime, std::string(name), std::move(*sink),
                                          std::move(recorder));
  if (recording) return std::unique_ptr<rt::DeviceRuntime>(std::move(*recording));
  return without_capture(recording.error());
}

}  // namespace vtrace::recorder
