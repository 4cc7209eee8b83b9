#include "vtrace/replayer/replay_target.h"

#include <fmt/format.h>

#include <map>

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

namespace {

std::string capabilities_text(const std::set<rt::CapabilityId>& capabilities) {
  std::string text;
  for (const auto& capability : capabilities) {
    text += text.empty() ? "" : ", ";
    text += capability.str();
  }
  return text.empty() ? "none" : text;
}

std::string mib(std::uint64_t bytes) {
  return fmt::format("{} bytes ({:.1f} MiB)", bytes, static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace

const step::RuntimeOpened* recorded_device(const ReplayPlan& plan) {
  for (const auto& s : plan.steps()) {
    if (const auto* opened = std::get_if<step::RuntimeOpened>(&s.body)) return opened;
  }
  return nullptr;
}

CapacityNeed peak_admitted_bytes(const ReplayPlan& plan) {
  std::map<std::uint64_t, std::uint64_t> permit_bytes;  // generation -> bytes
  std::map<std::uint64_t, std::uint64_t> buffer_bytes;  // buffer ordinal -> bytes
  std::uint64_t held = 0;
  CapacityNeed need;
  for (const auto& s : plan.steps()) {
    if (const auto* admit = std::get_if<step::Admit>(&s.body)) {
      if (admit->outcome || !admit->generation) continue;
      permit_bytes[*admit->generation] = admit->request.size_bytes();
      held += admit->request.size_bytes();
      if (held > need.bytes) need = {held, s.ordinal};
    } else if (const auto* allocate = std::get_if<step::Allocate>(&s.body)) {
      const auto permit = permit_bytes.find(allocate->generation);
      if (permit == permit_bytes.end()) continue;
      if (allocate->buffer) {
        buffer_bytes[*allocate->buffer] = permit->second;
      } else {
        held -= permit->second;  // a refused permit gives its bytes back
      }
      permit_bytes.erase(permit);
    } else if (const auto* released = std::get_if<step::BufferReleased>(&s.body)) {
      const auto buffer = buffer_bytes.find(released->ordinal);
      if (buffer == buffer_bytes.end()) continue;
      held -= buffer->second;
      buffer_bytes.erase(buffer);
    }
  }
  return need;
}

std::vector<std::string> runtime_differences(const step::RuntimeOpened& recorded,
                                             const rt::DeviceRuntime& live,
                                             const std::string& live_name) {
  std::vector<std::string> notes;
  const rt::DeviceDescriptor& was = recorded.descriptor;
  const rt::DeviceDescriptor& is = live.descriptor();
  if (!recorded.registry_name.empty() && recorded.registry_name != live_name) {
    notes.push_back(fmt::format("recorded on runtime `{}`, replayed on `{}`",
                                recorded.registry_name, live_name));
  }
  if (was.device_class != is.device_class) {
    notes.push_back(fmt::format("device class: recorded {}, replayed {}",
                                rt::device_class_name(was.device_class),
                                rt::device_class_name(is.device_class)));
  }
  if (was.runtime_implementation_fingerprint != is.runtime_implementation_fingerprint) {
    notes.push_back(fmt::format("implementation fingerprint: recorded {}, replayed {}",
                                was.runtime_implementation_fingerprint,
                                is.runtime_implementation_fingerprint));
  }
  if (was.total_memory_bytes != is.total_memory_bytes) {
    notes.push_back(fmt::format("device memory: recorded {}, replayed {}",
                                mib(was.total_memory_bytes), mib(is.total_memory_bytes)));
  }
  if (recorded.policy != live.attention_execution_policy()) {
    notes.push_back(fmt::format("attention policy: recorded {}, replayed {}",
                                rt::attention_policy_name(recorded.policy),
                                rt::attention_policy_name(live.attention_execution_policy())));
  }
  if (was.capabilities != is.capabilities) {
    notes.push_back(fmt::format("capabilities: recorded [{}], replayed [{}]",
                                capabilities_text(was.capabilities),
                                capabilities_text(is.capabilities)));
  }
  return notes;
}

std::optional<std::string> check_capacity(const ReplayPlan& plan, const rt::DeviceRuntime& live,
                                          const std::string& live_name) {
  const CapacityNeed need = peak_admitted_bytes(plan);
  const std::uint64_t has = live.descriptor().total_memory_bytes;
  if (need.bytes <= has) return std::nullopt;
  return fmt::format(
      "the trace holds {} of device memory at its peak (event {}) but runtime `{}` has {}; "
      "replay it with --device-memory {} or more",
      mib(need.bytes), need.event, live_name, mib(has), need.bytes);
}

}  // namespace vtrace::replayer
