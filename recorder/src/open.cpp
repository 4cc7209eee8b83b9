#include "vtrace/recorder/open.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "capture_names.h"
#include "flight_recorder.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::recorder {

namespace {

namespace rt = vtrace::runtime;

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
  const bool whole = end == value.data() + value.size();
  if ((ec != std::errc() && ec != std::errc::result_out_of_range) || !whole) {
    return std::unexpected(env_error(variable, value, "expected an integer"));
  }
  if (ec == std::errc::result_out_of_range || parsed < min || parsed > max) {
    return std::unexpected(
        env_error(variable, value, fmt::format("expected a value in [{}, {}]", min, max)));
  }
  return parsed;
}

// VTRACE_CAPTURE_START / STOP: "submit:N", "event:N", "signal:N" (N >= 1) or "signal" (=
// signal:1); nullopt when unset.
rt::Result<std::optional<CapturePoint>> capture_point(const char* variable) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string_view t(text);
  if (t == "signal") return CapturePoint{CapturePoint::Unit::kSignal, 1};
  const auto colon = t.find(':');
  const auto unit = t.substr(0, colon);
  const auto number = colon == std::string_view::npos ? std::string_view{} : t.substr(colon + 1);
  std::uint64_t count = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), count);
  const bool signal = unit == "signal";
  if ((unit != "submit" && unit != "event" && !signal) || number.empty() || ec != std::errc() ||
      end != number.data() + number.size() || (signal && count == 0)) {
    return std::unexpected(env_error(variable, t,
                                     "expected submit:N (after N submits), event:N (after N "
                                     "events) or signal[:N] (at the Nth SIGUSR1, N >= 1)"));
  }
  return CapturePoint{signal            ? CapturePoint::Unit::kSignal
                      : unit == "event" ? CapturePoint::Unit::kEvent
                                        : CapturePoint::Unit::kSubmit,
                      count};
}

// VTRACE_CAPTURE_MODE, the flight window's variables and VTRACE_CAPTURE_START/STOP (open.h).
rt::Result<void> flight_from_env(RecorderOptions& recorder) {
  const char* mode = std::getenv("VTRACE_CAPTURE_MODE");
  const std::string_view m = mode == nullptr ? "" : mode;
  auto start = capture_point("VTRACE_CAPTURE_START");
  if (!start) return std::unexpected(start.error());
  auto stop = capture_point("VTRACE_CAPTURE_STOP");
  if (!stop) return std::unexpected(stop.error());
  if (*stop && !*start) {
    return std::unexpected(env_error("VTRACE_CAPTURE_STOP", std::getenv("VTRACE_CAPTURE_STOP"),
                                     "it needs VTRACE_CAPTURE_START"));
  }
  // Submits and events count from the run's start for both points (signals at the stop count
  // from the capture's start, so any stop signal comes after the start).
  if (*stop && *start && (*stop)->unit == (*start)->unit &&
      (*stop)->unit != CapturePoint::Unit::kSignal && (*stop)->count <= (*start)->count) {
    return std::unexpected(env_error(
        "VTRACE_CAPTURE_STOP", std::getenv("VTRACE_CAPTURE_STOP"),
        fmt::format("it must come after VTRACE_CAPTURE_START=`{}` (a capture that stops where "
                    "or before it starts holds nothing)",
                    std::getenv("VTRACE_CAPTURE_START"))));
  }
  if (*start) {
    if (m == "flight") {
      return std::unexpected(env_error("VTRACE_CAPTURE_MODE", m,
                                       "a capture started mid-run (VTRACE_CAPTURE_START) is "
                                       "not a flight window: leave the mode unset"));
    }
    // The window's own variables mean nothing here: one set is a mistake, said as one. The
    // crash window does apply (it writes what the capture holds once it has started).
    for (const char* flight_only :
         {"VTRACE_CAPTURE_WINDOW_BATCHES", "VTRACE_CAPTURE_WINDOW_MIB",
          "VTRACE_CAPTURE_MAX_WINDOWS", "VTRACE_CAPTURE_SIGNAL", "VTRACE_CAPTURE_JOURNAL",
          "VTRACE_CAPTURE_TRIGGER_ERRORS", "VTRACE_CAPTURE_TRIGGER_COUNTER"}) {
      if (const char* value = std::getenv(flight_only); value != nullptr && *value != '\0') {
        return std::unexpected(
            env_error(flight_only, value,
                      "it applies to flight mode (VTRACE_CAPTURE_MODE=flight), not to a capture "
                      "started mid-run (VTRACE_CAPTURE_START)"));
      }
    }
    auto crash = env_number<int>("VTRACE_CAPTURE_CRASH", 1, 0, 1);
    if (!crash) return std::unexpected(crash.error());
    recorder.mode = CaptureMode::kFlight;
    recorder.flight.start = *start;
    recorder.flight.stop = *stop;
    recorder.flight.window_on_crash = *crash == 1;
    return {};
  }
  if (m.empty() || m == "full") return {};
  if (m != "flight") {
    return std::unexpected(env_error("VTRACE_CAPTURE_MODE", m, "expected full or flight"));
  }
  recorder.mode = CaptureMode::kFlight;
  auto& f = recorder.flight;
  auto batches =
      env_number<std::uint64_t>("VTRACE_CAPTURE_WINDOW_BATCHES", f.window_batches, 1, 1ull << 32);
  if (!batches) return std::unexpected(batches.error());
  auto mib =
      env_number<std::uint64_t>("VTRACE_CAPTURE_WINDOW_MIB", f.window_bytes >> 20, 1, 1ull << 20);
  if (!mib) return std::unexpected(mib.error());
  auto windows = env_number<std::uint32_t>("VTRACE_CAPTURE_MAX_WINDOWS", f.max_windows, 1, 1000);
  if (!windows) return std::unexpected(windows.error());
  auto signal = env_number<int>("VTRACE_CAPTURE_SIGNAL", 1, 0, 1);
  if (!signal) return std::unexpected(signal.error());
  f.window_batches = *batches;
  f.window_bytes = *mib << 20;
  f.max_windows = *windows;
  f.trigger_on_signal = *signal == 1;
  auto crash = env_number<int>("VTRACE_CAPTURE_CRASH", 1, 0, 1);
  if (!crash) return std::unexpected(crash.error());
  f.window_on_crash = *crash == 1;
  auto journal = env_number<int>("VTRACE_CAPTURE_JOURNAL", 0, 0, 1);
  if (!journal) return std::unexpected(journal.error());
  f.journal = *journal == 1;
  if (const char* errors = std::getenv("VTRACE_CAPTURE_TRIGGER_ERRORS");
      errors != nullptr && *errors != '\0') {
    std::string_view rest(errors);
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const auto word = rest.substr(0, comma);
      auto kind = rt::parse_error_kind(word);
      if (!kind) {
        return std::unexpected(env_error("VTRACE_CAPTURE_TRIGGER_ERRORS", errors,
                                         fmt::format("`{}` is no error kind name", word)));
      }
      f.trigger_on_errors.insert(*kind);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  if (const char* threshold = std::getenv("VTRACE_CAPTURE_TRIGGER_COUNTER");
      threshold != nullptr && *threshold != '\0') {
    // counter>=N
    const std::string_view t(threshold);
    const auto at = t.find(">=");
    std::uint64_t value = 0;
    const auto number = at == std::string_view::npos ? std::string_view{} : t.substr(at + 2);
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    rt::CounterSnapshot probe;
    if (at == std::string_view::npos || number.empty() || ec != std::errc() ||
        end != number.data() + number.size() || !detail::counter_value(probe, t.substr(0, at))) {
      return std::unexpected(env_error("VTRACE_CAPTURE_TRIGGER_COUNTER", t,
                                       "expected COUNTER>=N with a counter of spec 7.6 "
                                       "(submissions, commands, uploaded_bytes, ...)"));
    }
    f.counter_threshold = CounterThreshold{std::string(t.substr(0, at)), value};
  }
  return {};
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
  if (auto flight = flight_from_env(recorder); !flight) return without_capture(flight.error());

  // Failures after this point (a trace that cannot be finished, a window or journal not
  // written) are said on stderr too: the product has no other way to learn of them.
  recorder.failure_notice = fmt::format("VTRACE_CAPTURE={}", capture);
  // The recorder through wrap(), which checks the path (full mode: creates "<path>.partial";
  // flight mode and a mid-run capture: checks that it could) and leaves the runtime in place
  // when it fails: the product runs on the one runtime the registry opened (a device is never
  // opened twice). Full mode takes the next free name of the path's family now; flight mode
  // takes one per window, when it is written (capture_names.h): no two recordings or windows of
  // the process share a file.
  const std::filesystem::path path = recorder.mode == CaptureMode::kFlight
                                         ? std::filesystem::path(capture)
                                         : detail::take_capture_name(capture);
  auto recording = RecordingRuntime::wrap(*runtime, std::string(name), path, std::move(recorder));
  if (recording) return std::unique_ptr<rt::DeviceRuntime>(std::move(*recording));
  return without_capture(recording.error());
}

}  // namespace vtrace::recorder
