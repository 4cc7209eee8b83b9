// Step and value texts (step_text.h), moved here unchanged from the replay engine.
#include "vtrace/replayer/step_text.h"

#include <fmt/format.h>

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

std::string outcome_text(const Outcome& outcome) {
  if (!outcome) return "success";
  return fmt::format("error {} ({})", rt::error_kind_name(outcome->kind()), outcome->message());
}

std::string descriptor_text(const rt::BufferDescriptor& d) {
  return fmt::format("{{{} {} bytes align {} {} {}}}", d.resource_id.str(), d.size_bytes,
                     d.alignment_bytes, rt::buffer_usage_name(d.usage),
                     rt::element_type_name(d.element_type));
}

std::string fence_text(const rt::FenceQuery& q) {
  if (rt::is_pending(q)) return "pending";
  if (const auto* e = std::get_if<rt::RuntimeError>(&q)) {
    return fmt::format("indeterminate {} ({})", rt::error_kind_name(e->kind()), e->message());
  }
  const auto& receipt = std::get<rt::TerminalReceipt>(q);
  if (receipt.terminal.is_succeeded()) return "terminal succeeded";
  return fmt::format("terminal failed {}",
                     rt::error_kind_name(receipt.terminal.failure->kind()));
}

std::string attribution_row_text(const rt::NativeWorkAttribution& r) {
  return fmt::format(
      "{{command {} node {} {} {} {} {} participants {}+{} tokens {} dispatches {} transfers {}}}",
      r.command_index(), r.node_index() ? fmt::format("{}", *r.node_index()) : "none",
      rt::command_phase_name(r.command_phase()), r.native_op_id(),
      rt::execution_path_name(r.execution_path()), rt::batching_form_name(r.batching_form()),
      r.participant_start(), r.participant_count(), r.token_count(), r.compute_dispatch_count(),
      r.transfer_command_count());
}

std::string counters_text(const rt::CounterSnapshot& c) {
  return fmt::format(
      "{{allocations {}, live_allocations {}, submissions {}, commands {}, uploaded_bytes {}, "
      "dense_linear_launches {}, readback_bytes {}}}",
      c.allocations, c.live_allocations, c.submissions, c.commands, c.uploaded_bytes,
      c.dense_linear_launches, c.readback_bytes);
}

std::string preparation_text(const rt::ReusableExecutionPreparation& p) {
  return fmt::format("{{state {} max {} resident {}}}", static_cast<int>(p.state),
                     p.maximum_executables, p.resident_executables);
}

std::string catalog_text(const std::vector<rt::ReusableExecutionProgram>& catalog) {
  std::string out = fmt::format("{} programs [", catalog.size());
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    out += fmt::format("{}{} ({} nodes)", i == 0 ? "" : ", ", catalog[i].program_id,
                       catalog[i].node_count);
  }
  return out + "]";
}

std::string describe_step(const ReplayStep& s) {
  using K = ObjectKind;
  return std::visit(
      [&](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, step::Admit>) {
          return fmt::format("admit({}, {} bytes)", b.request.resource_id().str(),
                             b.request.size_bytes());
        } else if constexpr (std::is_same_v<T, step::Allocate>) {
          return fmt::format("allocate(permit {})", b.generation);
        } else if constexpr (std::is_same_v<T, step::BufferDescriptorQueried>) {
          return fmt::format("buffer_descriptor({})", b.buffer.to_string(K::kBuffer));
        } else if constexpr (std::is_same_v<T, step::StreamStateQueried>) {
          return fmt::format("stream_state({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::EncodeCopy>) {
          return fmt::format("encode_copy({}, {}, src {} dst {} len {})",
                             b.source.to_string(K::kBuffer), b.destination.to_string(K::kBuffer),
                             b.region.source_offset_bytes(), b.region.destination_offset_bytes(),
                             b.region.length_bytes());
        } else if constexpr (std::is_same_v<T, step::EncodeUpload>) {
          return fmt::format("encode_upload({} bytes as {} x {}, {}, offset {})", b.payload_bytes,
                             rt::element_type_name(b.layout.element_type()),
                             b.layout.element_count(), b.destination.to_string(K::kBuffer),
                             b.offset_bytes);
        } else if constexpr (std::is_same_v<T, step::EncodeZero>) {
          return fmt::format("encode_zero({}, offset {}, length {})",
                             b.destination.to_string(K::kBuffer), b.offset_bytes, b.length_bytes);
        } else if constexpr (std::is_same_v<T, step::EncodeDenseLinear>) {
          return fmt::format("encode_dense_linear({} launches, {} participants, {} tokens)",
                             b.launches.size(), b.participant_count, b.token_count);
        } else if constexpr (std::is_same_v<T, step::SubmitEnd>) {
          return fmt::format("submit (SubmitBegin event {})", b.begin_seq);
        } else if constexpr (std::is_same_v<T, step::SubmissionAttribution>) {
          return fmt::format("submission_attribution({})", b.fence.to_string(K::kFence));
        } else if constexpr (std::is_same_v<T, step::QueryFence>) {
          return fmt::format("query_fence({})", b.fence.to_string(K::kFence));
        } else if constexpr (std::is_same_v<T, step::WaitFence>) {
          return fmt::format("wait_fence({})", b.fence.to_string(K::kFence));
        } else if constexpr (std::is_same_v<T, step::Synchronize>) {
          return fmt::format("synchronize({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::Readback>) {
          return fmt::format("readback({}, {}, src {} dst {} len {}, {} x {})",
                             b.stream.to_string(K::kStream), b.source.to_string(K::kBuffer),
                             b.region.source_offset_bytes(), b.region.destination_offset_bytes(),
                             b.region.length_bytes(), rt::element_type_name(b.layout.element_type()),
                             b.layout.element_count());
        } else if constexpr (std::is_same_v<T, step::DescribeError>) {
          return fmt::format("describe_error({})", rt::error_kind_name(b.input.kind()));
        } else if constexpr (std::is_same_v<T, step::GuardedSubmissionQueried>) {
          return "supports_guarded_submission";
        } else if constexpr (std::is_same_v<T, step::BeginStaticWeightImport>) {
          return "begin_static_weight_import";
        } else if constexpr (std::is_same_v<T, step::ImportComponent>) {
          return fmt::format("import_component(session {}, {} bytes, {}, offset {})", b.session,
                             b.payload_bytes, b.destination.to_string(K::kBuffer), b.offset_bytes);
        } else if constexpr (std::is_same_v<T, step::SealStaticWeightImport>) {
          return fmt::format("seal_static_weight_import(session {})", b.session);
        } else if constexpr (std::is_same_v<T, step::EncodeStaticWeightTransform>) {
          return fmt::format("encode_static_weight_transform({}, {}, {})",
                             b.source.to_string(K::kBuffer), b.destination.to_string(K::kBuffer),
                             b.transform_id);
        } else if constexpr (std::is_same_v<T, step::ConfigureReusableExecutables>) {
          return fmt::format("configure_reusable_executables({}, max {})",
                             b.stream.to_string(K::kStream), b.maximum_executables);
        } else if constexpr (std::is_same_v<T, step::SealReusableExecutables>) {
          return fmt::format("seal_reusable_executables({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::ReusablePreparationQueried>) {
          return fmt::format("reusable_executable_preparation({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::ReusableCatalogQueried>) {
          return fmt::format("reusable_execution_catalog({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::EncodeReusableExecution>) {
          return fmt::format("encode_reusable_execution({}, node {})", b.program_id, b.node_index);
        } else if constexpr (std::is_same_v<T, step::TrimReusableExecutables>) {
          return fmt::format("trim_reusable_executables({})", b.stream.to_string(K::kStream));
        } else if constexpr (std::is_same_v<T, step::CoalesceProgramBindings>) {
          return fmt::format("coalesce_program_bindings({} commands)", b.commands_in.size());
        } else if constexpr (std::is_same_v<T, step::CounterSnapshot>) {
          return fmt::format("counter_snapshot (after event {})", b.after_seq);
        } else {
          return s.kind;
        }
      },
      s.body);
}

std::string stream_state_text(rt::StreamState state) { return std::string(rt::stream_state_name(state)); }

}  // namespace vtrace::replayer
