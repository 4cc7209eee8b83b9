// The contract's checks, once, for every runtime (spec 7.3, 7.4, 8.5).
//
// What is allowed is decided here; what a runtime does with an allowed request (storage,
// execution, kernels) is its own business. Every runtime (reference, cpu, cpu-splitk, later
// cuda) calls these functions from its encoders, submit and readback, so their error kinds and
// their precedence cannot drift apart. Each check is a pure function of descriptors, byte
// ranges and the few facts a runtime supplies about its own objects (does it own this stream,
// which storage does this region live in); none touches memory.
//
// Messages are upstream's, with "reference" replaced by the runtime's label (`rt`), so the
// reference runtime keeps upstream's exact text. Replay compares ErrorKinds, never messages.
//
// Ownership: nothing here owns device memory. ContractCommand is the base of every runtime's
//   command and carries the attribution metadata of spec 7.1; a runtime derives from it and adds
//   what it executes.
// Thread rules: pure functions; check_submit mutates only the commands of the batch it consumes.
// Errors: Result / DefinitelyNotSubmitted with the ErrorKind of the spec 7.7 row; the first
//   failing check in the spec's order wins.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/runtime/error.h"
#include "vtrace/runtime/submission.h"
#include "vtrace/runtime/types.h"

namespace vtrace::runtime::contract {

// `rt` + " " + `rest`: "reference stream belongs to another runtime".
RuntimeError error(ErrorKind kind, std::string_view rt, std::string_view rest);

// Gives `output` the capacity for a readback's host layout of `output_bytes`, so that filling
// it allocates no more. A valid layout this host cannot hold fails with kReadbackInternal
// ("cannot allocate the N bytes of the readback's host layout"), never std::bad_alloc.
Result<void> reserve_readback(std::string_view rt, std::vector<std::uint8_t>& output,
                              std::uint64_t output_bytes);

// Makes `copy` an exact copy of an upload's `source` (encoders copy at encode time). Host memory
// that cannot be had fails with kInternal ("cannot allocate N bytes to hold the upload's copy"),
// never std::bad_alloc.
Result<void> copy_upload(std::string_view rt, std::vector<std::uint8_t>& copy,
                         std::span<const std::uint8_t> source);

// A logical byte range [offset_bytes, offset_bytes + length_bytes) of one buffer, validated
// against its descriptor (so it is non-empty and inside the admitted size).
struct ByteRange {
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
  std::uint64_t end() const { return offset_bytes + length_bytes; }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

// --- encoders (spec 7.3) -------------------------------------------------------------------------

// The region rule: [start, end) must be non-empty and end <= size_bytes (kRegionOutOfBounds).
Result<ByteRange> check_region(std::string_view rt, const BufferDescriptor& buffer,
                               std::uint64_t start, std::uint64_t end);

struct CopyRanges {
  ByteRange source;
  ByteRange destination;
};
// In order: CopyRegion::validate_bounds (kCopyOutOfBounds), equal element types
// (kCopyElementTypeMismatch), then the region rule on both sides.
Result<CopyRanges> check_copy(std::string_view rt, const BufferDescriptor& source,
                              const BufferDescriptor& destination, const CopyRegion& region);

// In order: the layout matches the byte count (kUploadByteCountMismatch), the layout's element
// type is the destination's (kUploadElementTypeMismatch), offset + length does not overflow
// (kUploadRangeOverflow), the region rule.
Result<ByteRange> check_upload(std::string_view rt, std::size_t source_bytes,
                               const HostTransferLayout& layout,
                               const BufferDescriptor& destination, std::uint64_t offset_bytes);

// In order: offset + length does not overflow (kZeroRangeOverflow), the region rule (so a zero
// length fails). No element-type constraint.
Result<ByteRange> check_zero(std::string_view rt, const BufferDescriptor& destination,
                             std::uint64_t offset_bytes, std::uint64_t length_bytes);

// --- dense linear (spec 8.3, 8.5) ------------------------------------------------------------------

// What a runtime tells check_dense_linear about one resolved region of a launch: the identity of
// the allocation it lives in (compared for weight sharing, never dereferenced), the range and
// the buffer's element type.
struct ResolvedRegion {
  const void* storage = nullptr;
  ByteRange range;
  ElementType element_type = ElementType::kU8;
  bool same_physical_region(const ResolvedRegion& other) const {
    return storage == other.storage && range == other.range && element_type == other.element_type;
  }
};

// Resolves one BufferRegionRef of a launch: fails with kForeignBufferInCommand for a buffer of
// another runtime class and with the region rule (kRegionOutOfBounds, also for an overflowing
// end). The runtime keeps whatever it needs (its storage handle) on the side.
using RegionResolver = std::function<Result<ResolvedRegion>(const BufferRegionRef&)>;

struct DenseLinearLaunchShape {
  std::uint64_t rows = 0;
  std::uint64_t in_features = 0;
  std::uint64_t out_features = 0;
};

struct DenseLinearPlan {
  BatchingForm batching_form = BatchingForm::kScalar;
  std::uint32_t participant_count = 0;
  std::uint64_t token_count = 0;
  std::vector<DenseLinearLaunchShape> launches;  // in request order
};

// Validates a dense-linear request, in order:
//  1. at least one launch, participant_count > 0 and token_count > 0 (kDenseLinearNoWork);
//  2. one launch (Packed/Scalar) or one per participant (kDenseLinearLaunchCount);
//  3. per launch, in order: resolve input, weight, output (`resolve`); byte sizes rows*in*2,
//     out*in*2, rows*out*2 without overflow, equal to the regions, all F16
//     (kDenseLinearRangesDiffer); the same in_features and out_features as launch 0
//     (kDenseLinearAttributesDisagree: upstream's "participant attributes disagree"); the weight
//     region physically equal to launch 0's (kDenseLinearWeightNotShared);
//  4. token_count equal to the sum of the launches' rows (kDenseLinearTokenCount: attribution
//     reports the tokens the kernels really process).
// Batching form: 1 participant Scalar, else one launch Packed, else ParticipantLoop.
Result<DenseLinearPlan> check_dense_linear(std::string_view rt, const DenseLinearRequest& request,
                                           const RegionResolver& resolve);

// --- commands and submit (spec 7.1, 7.4) -----------------------------------------------------------

// The base of every runtime's command: the attribution metadata of spec 7.1. Transfer commands
// are Scalar with one transfer and no participants; dense-linear commands carry the request's
// participants, tokens and one compute dispatch per launch.
class ContractCommand : public Command {
 public:
  std::string_view operation;
  BatchingForm batching_form = BatchingForm::kScalar;
  std::uint32_t participant_start = 0;
  std::uint32_t participant_count = 0;
  std::uint64_t token_count = 0;
  std::uint64_t compute_dispatch_count = 0;
  std::uint64_t transfer_command_count = 0;

  // Labels a transfer command (device.copy, host.upload, device.zero).
  void set_transfer(std::string_view operation_id);
  // Labels a dense-linear command from its plan.
  void set_dense_linear(const DenseLinearPlan& plan);

 protected:
  ContractCommand() = default;
};

// What check_submit needs to know about the runtime's own objects.
struct SubmitOwnership {
  // Step 1: the stream belongs to this runtime.
  bool stream_is_own = false;
  // Step 5: `command` as this runtime's command class, or nullptr for a command of another class.
  std::function<ContractCommand*(Command&)> own_command;
  // Step 6: every region `command` touches belongs to this runtime instance.
  std::function<bool(const ContractCommand&)> regions_are_own;
};

// A batch that passed every check: its entries (which own the commands), the commands in entry
// order, and the attribution rows when the batch required them.
struct SubmitPlan {
  std::vector<CommandEntry> entries;
  std::vector<ContractCommand*> commands;
  std::optional<SubmissionAttribution> attribution;
};

// Steps 1-7 of spec 7.4 in the spec's order (stream ownership, empty batch, timing, compute
// path, reusable capture, logical-work binding and command class walking entries in order,
// region ownership, attribution rows). Logical work is bound to the commands (step 5) as it is
// checked; on failure the batch is dropped unexecuted.
std::expected<SubmitPlan, DefinitelyNotSubmitted> check_submit(std::string_view rt,
                                                               CommandBatch batch,
                                                               const SubmitOwnership& ownership);

// --- readback (spec 7.3) -------------------------------------------------------------------------

struct ReadbackPlan {
  ByteRange source;                  // the source range to read
  std::uint64_t output_bytes = 0;    // size of the returned host vector (zero filled)
  std::uint64_t output_offset = 0;   // where the source bytes go in it
};

// Steps 1-5, in order: stream and source belong to this runtime (kReadbackForeign), layout type
// equals the source's (kReadbackElementTypeMismatch), the source range fits
// (kReadbackSourceOutOfBounds), the destination range fits the layout
// (kReadbackDestinationOutOfBounds). The runtime then synchronizes the stream (step 6) and reads.
Result<ReadbackPlan> check_readback(std::string_view rt, bool stream_and_source_are_own,
                                    const BufferDescriptor& source, const CopyRegion& region,
                                    const HostTransferLayout& output_layout);

// --- construction (spec 7.2) ---------------------------------------------------------------------

// descriptor.validate() (kDescriptorInvalid), then the class and the exact capability set
// (kDescriptorOverclaims: extra and missing capabilities both fail).
Result<void> check_descriptor(std::string_view rt, const DeviceDescriptor& descriptor,
                              DeviceClass expected_class,
                              const std::set<CapabilityId>& supported_capabilities);

}  // namespace vtrace::runtime::contract
