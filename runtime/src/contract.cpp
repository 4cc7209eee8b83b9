#include "vtrace/runtime/contract.h"

#include <limits>
#include <new>
#include <string>

namespace vtrace::runtime::contract {

RuntimeError error(ErrorKind kind, std::string_view rt, std::string_view rest) {
  std::string message;
  message.reserve(rt.size() + 1 + rest.size());
  message.append(rt).append(" ").append(rest);
  return RuntimeError(kind, std::move(message));
}

Result<void> reserve_readback(std::string_view rt, std::vector<std::uint8_t>& output,
                              std::uint64_t output_bytes) {
  bool reserved = output_bytes <= output.max_size();
  if (reserved) {
    try {
      output.reserve(static_cast<std::size_t>(output_bytes));
    } catch (const std::bad_alloc&) {
      reserved = false;
    }
  }
  if (reserved) return {};
  return std::unexpected(error(ErrorKind::kReadbackInternal, rt,
                               "cannot allocate the " + std::to_string(output_bytes) +
                                   " bytes of the readback's host layout"));
}

Result<void> copy_upload(std::string_view rt, std::vector<std::uint8_t>& copy,
                         std::span<const std::uint8_t> source) {
  try {
    copy.assign(source.begin(), source.end());
    return {};
  } catch (const std::bad_alloc&) {
    return std::unexpected(error(ErrorKind::kInternal, rt,
                                 "cannot allocate " + std::to_string(source.size()) +
                                     " bytes to hold the upload's copy"));
  }
}

namespace {

std::unexpected<RuntimeError> fail(ErrorKind kind, std::string_view rt, std::string_view rest) {
  return std::unexpected(error(kind, rt, rest));
}

bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* sum) {
  return __builtin_add_overflow(a, b, sum);
}

// rows*cols*2 bytes of f16, or nullopt on overflow.
std::optional<std::uint64_t> f16_bytes(std::uint64_t rows, std::uint64_t cols) {
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, cols, &elements) ||
      __builtin_mul_overflow(elements, std::uint64_t{2}, &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace

Result<ByteRange> check_region(std::string_view rt, const BufferDescriptor& buffer,
                               std::uint64_t start, std::uint64_t end) {
  if (start >= end || end > buffer.size_bytes) {
    return fail(ErrorKind::kRegionOutOfBounds, rt,
                "buffer region is empty or exceeds its admitted allocation");
  }
  return ByteRange{start, end - start};
}

Result<CopyRanges> check_copy(std::string_view rt, const BufferDescriptor& source,
                              const BufferDescriptor& destination, const CopyRegion& region) {
  if (auto bounds = region.validate_bounds(source, destination); !bounds) {
    return std::unexpected(RuntimeError(ErrorKind::kCopyOutOfBounds, bounds.error()));
  }
  if (source.element_type != destination.element_type) {
    return fail(ErrorKind::kCopyElementTypeMismatch, rt,
                "copy requires matching source and destination element types");
  }
  // validate_bounds proved that neither end overflows.
  const std::uint64_t length = region.length_bytes();
  auto src = check_region(rt, source, region.source_offset_bytes(),
                          region.source_offset_bytes() + length);
  if (!src) return std::unexpected(src.error());
  auto dst = check_region(rt, destination, region.destination_offset_bytes(),
                          region.destination_offset_bytes() + length);
  if (!dst) return std::unexpected(dst.error());
  return CopyRanges{*src, *dst};
}

Result<ByteRange> check_upload(std::string_view rt, std::size_t source_bytes,
                               const HostTransferLayout& layout,
                               const BufferDescriptor& destination, std::uint64_t offset_bytes) {
  if (auto matches = layout.validate_bytes(source_bytes); !matches) {
    return std::unexpected(RuntimeError(ErrorKind::kUploadByteCountMismatch, matches.error()));
  }
  if (layout.element_type() != destination.element_type) {
    return fail(ErrorKind::kUploadElementTypeMismatch, rt,
                "upload layout differs from destination element type");
  }
  std::uint64_t end = 0;
  if (add_overflows(offset_bytes, layout.byte_len(), &end)) {
    return fail(ErrorKind::kUploadRangeOverflow, rt, "upload range overflows");
  }
  return check_region(rt, destination, offset_bytes, end);
}

Result<ByteRange> check_zero(std::string_view rt, const BufferDescriptor& destination,
                             std::uint64_t offset_bytes, std::uint64_t length_bytes) {
  std::uint64_t end = 0;
  if (add_overflows(offset_bytes, length_bytes, &end)) {
    return fail(ErrorKind::kZeroRangeOverflow, rt, "zero range overflows");
  }
  return check_region(rt, destination, offset_bytes, end);
}

Result<DenseLinearPlan> check_dense_linear(std::string_view rt, const DenseLinearRequest& request,
                                           const RegionResolver& resolve) {
  if (request.launches.empty() || request.participant_count == 0 || request.token_count == 0) {
    return fail(ErrorKind::kDenseLinearNoWork, rt,
                "dense-linear attribution has no participants or work");
  }
  if (request.launches.size() != 1 && request.launches.size() != request.participant_count) {
    return fail(ErrorKind::kDenseLinearLaunchCount, rt,
                "dense-linear launches are neither one packed launch nor one per participant");
  }
  DenseLinearPlan plan;
  plan.participant_count = request.participant_count;
  plan.token_count = request.token_count;
  plan.batching_form = request.participant_count == 1 ? BatchingForm::kScalar
                       : request.launches.size() == 1 ? BatchingForm::kPacked
                                                      : BatchingForm::kParticipantLoop;
  plan.launches.reserve(request.launches.size());
  std::optional<ResolvedRegion> shared_weight;
  std::uint64_t total_rows = 0;
  for (const DenseLinearLaunch& launch : request.launches) {
    auto input = resolve(launch.input);
    if (!input) return std::unexpected(input.error());
    auto weight = resolve(launch.weight);
    if (!weight) return std::unexpected(weight.error());
    auto output = resolve(launch.output);
    if (!output) return std::unexpected(output.error());

    const auto input_bytes = f16_bytes(launch.rows, launch.in_features);
    if (!input_bytes) {
      return fail(ErrorKind::kDenseLinearRangesDiffer, rt, "dense-linear input size overflows");
    }
    const auto weight_bytes = f16_bytes(launch.out_features, launch.in_features);
    if (!weight_bytes) {
      return fail(ErrorKind::kDenseLinearRangesDiffer, rt, "dense-linear weight size overflows");
    }
    const auto output_bytes = f16_bytes(launch.rows, launch.out_features);
    if (!output_bytes) {
      return fail(ErrorKind::kDenseLinearRangesDiffer, rt, "dense-linear output size overflows");
    }
    if (input->range.length_bytes != *input_bytes || weight->range.length_bytes != *weight_bytes ||
        output->range.length_bytes != *output_bytes || input->element_type != ElementType::kF16 ||
        weight->element_type != ElementType::kF16 || output->element_type != ElementType::kF16) {
      return fail(ErrorKind::kDenseLinearRangesDiffer, rt,
                  "dense-linear physical ranges differ from runtime work");
    }
    if (!plan.launches.empty() && (launch.in_features != plan.launches.front().in_features ||
                                   launch.out_features != plan.launches.front().out_features)) {
      return fail(ErrorKind::kDenseLinearAttributesDisagree, rt,
                  "dense-linear participant attributes disagree");
    }
    if (shared_weight && !weight->same_physical_region(*shared_weight)) {
      return fail(ErrorKind::kDenseLinearWeightNotShared, rt,
                  "dense-linear participants do not share one weight");
    }
    if (!shared_weight) shared_weight = *weight;
    if (add_overflows(total_rows, launch.rows, &total_rows)) {
      return fail(ErrorKind::kDenseLinearTokenCount, rt, "dense-linear launch rows overflow u64");
    }
    plan.launches.push_back({launch.rows, launch.in_features, launch.out_features});
  }
  if (total_rows != request.token_count) {
    return fail(ErrorKind::kDenseLinearTokenCount, rt,
                "dense-linear token count differs from the rows of its launches");
  }
  // Spec 8.3: every participant's token range is non-empty (a packed launch could otherwise
  // claim more participants than it has rows).
  if (request.token_count < request.participant_count) {
    return fail(ErrorKind::kDenseLinearTokenCount, rt,
                "dense-linear token count is below its participant count");
  }
  return plan;
}

void ContractCommand::set_transfer(std::string_view operation_id) {
  operation = operation_id;
  batching_form = BatchingForm::kScalar;
  participant_start = 0;
  participant_count = 0;
  token_count = 0;
  compute_dispatch_count = 0;
  transfer_command_count = 1;
}

void ContractCommand::set_dense_linear(const DenseLinearPlan& plan) {
  operation = kDenseLinearNativeOperationLabel;
  batching_form = plan.batching_form;
  participant_start = 0;
  participant_count = plan.participant_count;
  token_count = plan.token_count;
  compute_dispatch_count = static_cast<std::uint64_t>(plan.launches.size());
  transfer_command_count = 0;
}

std::expected<SubmitPlan, DefinitelyNotSubmitted> check_submit(std::string_view rt,
                                                               CommandBatch batch,
                                                               const SubmitOwnership& ownership) {
  const auto not_submitted = [rt](ErrorKind kind, std::string_view rest) {
    return std::unexpected(DefinitelyNotSubmitted(error(kind, rt, rest)));
  };
  // 1. stream ownership
  if (!ownership.stream_is_own) {
    return not_submitted(ErrorKind::kForeignStream, "stream belongs to another runtime");
  }
  // 2. empty batch
  if (batch.empty()) {
    return not_submitted(ErrorKind::kEmptyBatch, "runtime cannot submit an empty batch");
  }
  // 3. submission requirements
  if (batch.timing_mode() != TimingMode::kOff) {
    return not_submitted(ErrorKind::kTimingUnsupported,
                         "runtime does not provide device timing evidence");
  }
  if (batch.compute_path_requirement() == ComputePathRequirement::kReplayedOnly ||
      batch.compute_path_requirement() ==
          ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries) {
    return not_submitted(ErrorKind::kReplayRequiredUnsupported,
                         "runtime cannot satisfy a replay-required compute submission");
  }
  if (batch.reusable_execution_capture().has_value()) {
    return not_submitted(ErrorKind::kReusableCaptureUnsupported,
                         "runtime cannot consume reusable execution capture metadata");
  }
  // 4.
  const bool attribution_required =
      batch.attribution_requirement() == AttributionRequirement::kLogicalExecutionPath;
  SubmitPlan plan;
  plan.entries = std::move(batch).into_entries();

  // 5. command class and logical work, entry by entry (the first failing entry wins).
  plan.commands.reserve(plan.entries.size());
  for (auto& entry : plan.entries) {
    // A null command (only C++ can make one) is not a command this runtime encoded.
    ContractCommand* command = entry.command ? ownership.own_command(*entry.command) : nullptr;
    if (command == nullptr) {
      return not_submitted(ErrorKind::kForeignCommand,
                           entry.command ? "runtime cannot submit a command it did not encode"
                                         : "runtime cannot submit a null command");
    }
    if (entry.logical_work.has_value()) {
      // Spec 3.9: push_node_initialization, (Initialization, node, work), is the only way
      // logical work is attached; push_entry could put it anywhere.
      if (entry.phase != CommandPhase::kInitialization || !entry.node_index.has_value()) {
        return not_submitted(ErrorKind::kLogicalWorkConflict,
                             "logical work is attached only to a node's initialization entry");
      }
      if (command->participant_count != 0 || command->token_count != 0) {
        return not_submitted(ErrorKind::kLogicalWorkConflict,
                             "core logical work cannot replace provider command attribution");
      }
      command->batching_form = entry.logical_work->batching_form();
      command->participant_start = entry.logical_work->participant_start();
      command->participant_count = entry.logical_work->participant_count();
      command->token_count = entry.logical_work->token_count();
    }
    plan.commands.push_back(command);
  }
  // 6. every region belongs to this runtime
  for (const ContractCommand* command : plan.commands) {
    if (!ownership.regions_are_own(*command)) {
      return not_submitted(ErrorKind::kForeignBufferInCommand,
                           "command contains a buffer from another runtime");
    }
  }
  // 7. attribution rows
  if (attribution_required) {
    std::vector<NativeWorkAttribution> rows;
    rows.reserve(plan.entries.size());
    for (std::size_t index = 0; index < plan.entries.size(); ++index) {
      if (index > std::numeric_limits<std::uint32_t>::max()) {
        return not_submitted(ErrorKind::kAttributionIndexOverflow, "command index exceeds u32");
      }
      const ContractCommand& command = *plan.commands[index];
      auto op_id = DeviceNativeOperationId::create(command.operation);
      if (!op_id) {
        return not_submitted(ErrorKind::kAttributionNonPortableOperation,
                             "command attribution has a non-portable native operation identity");
      }
      auto row = NativeWorkAttribution::with_participant_range(
          static_cast<std::uint32_t>(index), plan.entries[index].node_index,
          plan.entries[index].phase, std::move(*op_id), ExecutionPath::kEager,
          command.batching_form, command.participant_start, command.participant_count,
          command.token_count, command.compute_dispatch_count, command.transfer_command_count,
          std::nullopt);
      if (!row) {
        return not_submitted(ErrorKind::kAttributionInvalidMetadata,
                             "command attribution has invalid native work metadata");
      }
      rows.push_back(std::move(*row));
    }
    plan.attribution = SubmissionAttribution::create(std::move(rows));
    if (!plan.attribution) {
      return not_submitted(ErrorKind::kAttributionEmptyOrUnordered,
                           "submission attribution is empty or unordered");
    }
  }
  return plan;
}

Result<ReadbackPlan> check_readback(std::string_view rt, bool stream_and_source_are_own,
                                    const BufferDescriptor& source, const CopyRegion& region,
                                    const HostTransferLayout& output_layout) {
  if (!stream_and_source_are_own) {
    return fail(ErrorKind::kReadbackForeign, rt, "readback belongs to another runtime");
  }
  if (output_layout.element_type() != source.element_type) {
    return fail(ErrorKind::kReadbackElementTypeMismatch, rt,
                "readback layout differs from source element type");
  }
  const std::uint64_t out_bytes = output_layout.byte_len();
  const std::uint64_t length = region.length_bytes();
  std::uint64_t src_end = 0;
  if (add_overflows(region.source_offset_bytes(), length, &src_end) ||
      src_end > source.size_bytes) {
    return fail(ErrorKind::kReadbackSourceOutOfBounds, rt,
                "readback source exceeds its admitted allocation");
  }
  std::uint64_t out_end = 0;
  if (add_overflows(region.destination_offset_bytes(), length, &out_end) || out_end > out_bytes) {
    return fail(ErrorKind::kReadbackDestinationOutOfBounds, rt,
                "readback destination exceeds its host layout");
  }
  return ReadbackPlan{{region.source_offset_bytes(), length}, out_bytes,
                      region.destination_offset_bytes()};
}

Result<void> check_descriptor(std::string_view rt, const DeviceDescriptor& descriptor,
                              DeviceClass expected_class,
                              const std::set<CapabilityId>& supported_capabilities) {
  if (auto valid = descriptor.validate(); !valid) {
    return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, valid.error()));
  }
  if (descriptor.device_class != expected_class ||
      descriptor.capabilities != supported_capabilities) {
    return fail(ErrorKind::kDescriptorOverclaims, rt,
                "runtime descriptor overclaims its fixed device class or capabilities");
  }
  return {};
}

}  // namespace vtrace::runtime::contract
