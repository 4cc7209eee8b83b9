// The error vocabulary of the vNext device-runtime contract (spec 1.4, 1.5, 7.7).
//
// Two error types exist, as upstream:
//  - VNextError: failures of contract-level value validation (identities, descriptors, regions,
//    layouts, batches). Its display() text is the upstream Display text.
//  - RuntimeError: what a DeviceRuntime method returns. It carries a stable ErrorKind (what tests,
//    traces and replays compare) and the human message (upstream's text, kept for people).
//
// Thread rules: plain values; copy freely.
// Errors: none of these functions fail, except the validating constructors, which return
// std::expected.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace vtrace::runtime {

// VNextError variants used by this port. Upstream has more (model resolution, plans); the port
// keeps the two that runtime-level code raises plus Serialization for decoding.
enum class VNextErrorKind : std::uint8_t {
  kInvalidIdentity,
  kInvalidExecutionPlan,
  kSerialization,
};

class VNextError {
 public:
  // InvalidIdentity{kind, value, reason}: "invalid {kind} identity `{value}`: {reason}".
  static VNextError invalid_identity(std::string_view kind, std::string_view value,
                                     std::string_view reason);
  // InvalidExecutionPlan{reason}: "invalid execution plan: {reason}".
  static VNextError invalid_execution_plan(std::string_view reason);
  // Serialization{context, message}: "failed to {context}: {message}".
  static VNextError serialization(std::string_view context, std::string_view message);

  VNextErrorKind kind() const { return kind_; }
  // The variant's own reason (for InvalidExecutionPlan, the text after the prefix).
  const std::string& reason() const { return reason_; }
  // Upstream's Display text.
  const std::string& display() const { return display_; }

  friend bool operator==(const VNextError&, const VNextError&) = default;

 private:
  VNextError(VNextErrorKind kind, std::string reason, std::string display)
      : kind_(kind), reason_(std::move(reason)), display_(std::move(display)) {}
  VNextErrorKind kind_;
  std::string reason_;
  std::string display_;
};

template <typename T>
using VNextResult = std::expected<T, VNextError>;

// Stable kinds of runtime failure. One value per distinguishable row of spec 7.7 plus the
// vtrace-level conditions (admission, registry, availability). Values are append-only: traces
// store the name (error_kind_name), never the number, but keep the numbers stable anyway.
#define VTRACE_RUNTIME_ERROR_KINDS(X)                                                   \
  X(kContractValue, "contract_value")         /* a VNextError surfaced by a runtime */  \
  X(kDescriptorInvalid, "descriptor_invalid")                                           \
  X(kDescriptorOverclaims, "descriptor_overclaims")                                     \
  X(kIdentityExhausted, "identity_exhausted")                                           \
  X(kAllocationInvalid, "allocation_invalid")                                           \
  X(kAdmissionOverCapacity, "admission_over_capacity")                                  \
  X(kAdmissionInvalidRequest, "admission_invalid_request")                              \
  X(kRegionOutOfBounds, "region_out_of_bounds")                                         \
  X(kCopyOutOfBounds, "copy_out_of_bounds")                                             \
  X(kCopyElementTypeMismatch, "copy_element_type_mismatch")                             \
  X(kUploadByteCountMismatch, "upload_byte_count_mismatch")                             \
  X(kUploadElementTypeMismatch, "upload_element_type_mismatch")                         \
  X(kUploadRangeOverflow, "upload_range_overflow")                                      \
  X(kZeroRangeOverflow, "zero_range_overflow")                                          \
  X(kForeignStream, "foreign_stream")                                                   \
  X(kEmptyBatch, "empty_batch")                                                         \
  X(kTimingUnsupported, "timing_unsupported")                                           \
  X(kReplayRequiredUnsupported, "replay_required_unsupported")                          \
  X(kReusableCaptureUnsupported, "reusable_capture_unsupported")                        \
  X(kLogicalWorkConflict, "logical_work_conflict")                                      \
  X(kForeignBufferInCommand, "foreign_buffer_in_command")                               \
  X(kForeignCommand, "foreign_command")                                                 \
  X(kAttributionIndexOverflow, "attribution_index_overflow")                            \
  X(kAttributionNonPortableOperation, "attribution_non_portable_operation")             \
  X(kAttributionInvalidMetadata, "attribution_invalid_metadata")                        \
  X(kAttributionEmptyOrUnordered, "attribution_empty_or_unordered")                     \
  X(kForeignFence, "foreign_fence")                                                     \
  X(kReadbackForeign, "readback_foreign")                                               \
  X(kReadbackElementTypeMismatch, "readback_element_type_mismatch")                     \
  X(kReadbackSourceOutOfBounds, "readback_source_out_of_bounds")                        \
  X(kReadbackDestinationOutOfBounds, "readback_destination_out_of_bounds")              \
  X(kReadbackInternal, "readback_internal")                                             \
  X(kDenseLinearRangesDiffer, "dense_linear_ranges_differ")                             \
  X(kDenseLinearNoWork, "dense_linear_no_work")                                         \
  X(kDenseLinearWeightNotShared, "dense_linear_weight_not_shared")                      \
  X(kDenseLinearLaunchCount, "dense_linear_launch_count")                               \
  X(kUnsupportedOperation, "unsupported_operation")                                     \
  X(kRuntimeUnavailable, "runtime_unavailable")                                         \
  X(kUnknownRuntime, "unknown_runtime")                                                 \
  X(kInternal, "internal")                                                              \
  X(kAdmissionForeignPermit, "admission_foreign_permit")                                \
  X(kDenseLinearAttributesDisagree, "dense_linear_attributes_disagree")                 \
  X(kDenseLinearTokenCount, "dense_linear_token_count")

enum class ErrorKind : std::uint16_t {
#define VTRACE_X(name, text) name,
  VTRACE_RUNTIME_ERROR_KINDS(VTRACE_X)
#undef VTRACE_X
};

// The stable snake_case name of a kind ("foreign_stream").
std::string_view error_kind_name(ErrorKind kind);
// Inverse of error_kind_name; nullopt for an unknown name.
std::optional<ErrorKind> parse_error_kind(std::string_view name);

// What every DeviceRuntime method returns on failure (upstream ReferenceDeviceRuntimeError, plus a
// stable kind).
class RuntimeError {
 public:
  RuntimeError(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  // A VNextError surfaced by a runtime keeps its Display text as the message (spec 7.1).
  RuntimeError(ErrorKind kind, const VNextError& cause) : kind_(kind), message_(cause.display()) {}

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }

  friend bool operator==(const RuntimeError&, const RuntimeError&) = default;

 private:
  ErrorKind kind_;
  std::string message_;
};

template <typename T>
using Result = std::expected<T, RuntimeError>;

// --- spec 1.5: failure envelopes -------------------------------------------------------------

enum class FailureDomain : std::uint8_t {
  kDevice,
  kOperation,
  kResource,
  kPlanning,
  kModelResolution,
  kProduct,
  kEvent,
};
std::string_view failure_domain_name(FailureDomain domain);  // snake_case, as serde

inline constexpr std::size_t kMaxFailureEnvelopeWireBytes = 8 * 1024;

class FailureEnvelope {
 public:
  // Fails with InvalidExecutionPlan "failure code or message is empty, oversized, or
  // non-portable" when the code is empty, over 64 bytes, or has a byte outside [A-Za-z0-9._-];
  // or the message is blank after trimming, over 4096 bytes, or has a control byte other than
  // '\n' and '\t'. Trimming strips Unicode White_Space (U+00A0, U+3000, ...), as Rust's str::trim.
  static VNextResult<FailureEnvelope> create(FailureDomain domain, std::string code,
                                             std::string message, bool retryable);

  FailureDomain domain() const { return domain_; }
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  bool retryable() const { return retryable_; }
  friend bool operator==(const FailureEnvelope&, const FailureEnvelope&) = default;

 private:
  FailureEnvelope() = default;
  FailureDomain domain_ = FailureDomain::kDevice;
  std::string code_;
  std::string message_;
  bool retryable_ = false;
};

// A FailureEnvelope with domain Device (spec 1.5).
class DeviceErrorReport {
 public:
  static VNextResult<DeviceErrorReport> create(std::string code, std::string message,
                                               bool retryable);
  const std::string& code() const { return envelope_.code(); }
  const std::string& message() const { return envelope_.message(); }
  bool retryable() const { return envelope_.retryable(); }
  const FailureEnvelope& envelope() const { return envelope_; }
  friend bool operator==(const DeviceErrorReport&, const DeviceErrorReport&) = default;

 private:
  explicit DeviceErrorReport(FailureEnvelope envelope) : envelope_(std::move(envelope)) {}
  FailureEnvelope envelope_;
};

}  // namespace vtrace::runtime
