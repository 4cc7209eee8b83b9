// The one error type of the workloads layer.
#pragma once

#include <expected>
#include <string>

namespace vtrace::workloads {

// One sentence naming the workload step and the call that went wrong.
struct WorkloadError {
  std::string message;
};

template <typename T>
using WorkloadResult = std::expected<T, WorkloadError>;

}  // namespace vtrace::workloads
