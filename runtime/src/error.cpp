#include "vtrace/runtime/error.h"

#include <algorithm>
#include <array>
#include <string>

#include "white_space.h"

namespace vtrace::runtime {

VNextError VNextError::invalid_identity(std::string_view kind, std::string_view value,
                                        std::string_view reason) {
  std::string display = "invalid ";
  display.append(kind).append(" identity `").append(value).append("`: ").append(reason);
  return VNextError(VNextErrorKind::kInvalidIdentity, std::string(reason), std::move(display));
}

VNextError VNextError::invalid_execution_plan(std::string_view reason) {
  std::string display = "invalid execution plan: ";
  display.append(reason);
  return VNextError(VNextErrorKind::kInvalidExecutionPlan, std::string(reason),
                    std::move(display));
}

VNextError VNextError::serialization(std::string_view context, std::string_view message) {
  std::string display = "failed to ";
  display.append(context).append(": ").append(message);
  return VNextError(VNextErrorKind::kSerialization, std::string(message), std::move(display));
}

namespace {

struct KindName {
  ErrorKind kind;
  std::string_view name;
};

constexpr std::array kKindNames = {
#define VTRACE_X(id, text) KindName{ErrorKind::id, text},
    VTRACE_RUNTIME_ERROR_KINDS(VTRACE_X)
#undef VTRACE_X
};

bool is_code_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Blank after Rust's str::trim (Unicode White_Space, not only ASCII).
bool is_blank(std::string_view text) { return text::trim_white_space(text).empty(); }

// ASCII control bytes other than '\n' and '\t' (DEL included, as Rust's is_ascii_control).
bool has_forbidden_control(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 || byte == 0x7F) && c != '\n' && c != '\t';
  });
}

}  // namespace

std::string_view error_kind_name(ErrorKind kind) {
  for (const auto& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "internal";
}

std::optional<ErrorKind> parse_error_kind(std::string_view name) {
  for (const auto& entry : kKindNames) {
    if (entry.name == name) return entry.kind;
  }
  return std::nullopt;
}

std::string_view failure_domain_name(FailureDomain domain) {
  switch (domain) {
    case FailureDomain::kDevice: return "device";
    case FailureDomain::kOperation: return "operation";
    case FailureDomain::kResource: return "resource";
    case FailureDomain::kPlanning: return "planning";
    case FailureDomain::kModelResolution: return "model_resolution";
    case FailureDomain::kProduct: return "product";
    case FailureDomain::kEvent: return "event";
  }
  return "device";
}

VNextResult<FailureEnvelope> FailureEnvelope::create(FailureDomain domain, std::string code,
                                                     std::string message, bool retryable) {
  const bool code_ok = !code.empty() && code.size() <= 64 &&
                       std::all_of(code.begin(), code.end(), is_code_byte);
  const bool message_ok =
      !is_blank(message) && message.size() <= 4096 && !has_forbidden_control(message);
  if (!code_ok || !message_ok) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "failure code or message is empty, oversized, or non-portable"));
  }
  FailureEnvelope envelope;
  envelope.domain_ = domain;
  envelope.code_ = std::move(code);
  envelope.message_ = std::move(message);
  envelope.retryable_ = retryable;
  return envelope;
}

VNextResult<DeviceErrorReport> DeviceErrorReport::create(std::string code, std::string message,
                                                         bool retryable) {
  auto envelope =
      FailureEnvelope::create(FailureDomain::kDevice, std::move(code), std::move(message), retryable);
  if (!envelope) return std::unexpected(envelope.error());
  return DeviceErrorReport(std::move(*envelope));
}

}  // namespace vtrace::runtime
