// The step executor (step_executor.h): one handler per step type, each re-executing the recorded
// call and recording what the runtime answered. Nothing here compares.
#include "vtrace/replayer/step_executor.h"

#include <fmt/format.h>

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

namespace {
template <typename T>
Outcome outcome_of(const rt::Result<T>& r) {
  return r ? Outcome{} : Outcome{r.error()};
}

ExecutionProblem missing_object(const ObjectRef& ref, ObjectKind kind) {
  return {ExecutionProblem::Kind::kMissingObject, ref, kind, 0, {}};
}

// a - b, field by field, modulo 2^64.
rt::CounterSnapshot minus(const rt::CounterSnapshot& a, const rt::CounterSnapshot& b) {
  return {a.allocations - b.allocations,
          a.live_allocations - b.live_allocations,
          a.submissions - b.submissions,
          a.commands - b.commands,
          a.uploaded_bytes - b.uploaded_bytes,
          a.dense_linear_launches - b.dense_linear_launches,
          a.readback_bytes - b.readback_bytes};
}
rt::CounterSnapshot plus(const rt::CounterSnapshot& a, const rt::CounterSnapshot& b) {
  return {a.allocations + b.allocations,
          a.live_allocations + b.live_allocations,
          a.submissions + b.submissions,
          a.commands + b.commands,
          a.uploaded_bytes + b.uploaded_bytes,
          a.dense_linear_launches + b.dense_linear_launches,
          a.readback_bytes + b.readback_bytes};
}
}  // namespace

class StepExecutor::Visitor {
 public:
  Visitor(StepExecutor& executor, const ReplayStep& step, Observation& out)
      : ex_(executor), rt_(executor.rt_), objects_(executor.objects_), step_(step), out_(out) {}

  // ---- lookups: a missing object is a problem; a null buffer ref is nullptr without one ----
  // `ok` is false when the ref names an object that is not live.
  const rt::Buffer* buffer(const ObjectRef& r, bool& ok) {
    ok = true;
    if (r.space == ObjectRef::Space::kNull) return nullptr;
    const rt::Buffer* b = objects_.buffer(r);
    if (b == nullptr) {
      ok = false;
      out_.problems.push_back(missing_object(r, ObjectKind::kBuffer));
    }
    return b;
  }
  rt::Stream* stream(const ObjectRef& r) {
    rt::Stream* s = objects_.stream(r);
    if (s == nullptr) out_.problems.push_back(missing_object(r, ObjectKind::kStream));
    return s;
  }
  const rt::Fence* fence(const ObjectRef& r) {
    const rt::Fence* f = objects_.fence(r);
    if (f == nullptr) out_.problems.push_back(missing_object(r, ObjectKind::kFence));
    return f;
  }
  // A command for a submit or coalesce; false (and a problem) when an own one is missing.
  bool take_command(const ObjectRef& r, bool null_is_missing, rt::CommandPtr& command) {
    auto taken = objects_.take_command(r, null_is_missing);
    if (!taken) {
      out_.problems.push_back(missing_object(r, ObjectKind::kCommand));
      return false;
    }
    command = std::move(*taken);
    return true;
  }
  // Records the outcome; true when the live call succeeded.
  template <typename T>
  bool outcome(const rt::Result<T>& live) {
    out_.outcome = outcome_of(live);
    return live.has_value();
  }
  // The answer of a preparation-returning method.
  void preparation(const rt::Result<rt::ReusableExecutionPreparation>& live) {
    if (outcome(live)) out_.preparation = *live;
  }
  // A live import session; nullptr (and a problem) when it is missing.
  rt::StaticWeightImportSession* session(std::uint64_t ordinal);
  // A created object is kept when the live call and the recorded one both succeeded.
  static bool recorded_ok(const Outcome& recorded) { return !recorded.has_value(); }

  // ---- steps -------------------------------------------------------------------------------
  void exec(const step::RuntimeOpened&) {}
  void exec(const step::Skipped&) {}
  void exec(const step::ForeignObjectSeen& s) { objects_.make_foreign(s); }

  void exec(const step::Admit& s) {
    auto live = rt_.admit(s.request);
    if (outcome(live) && recorded_ok(s.outcome) && s.generation) {
      objects_.keep_permit(*s.generation, std::move(*live));
    }
  }

  void exec(const step::Allocate& s) {
    rt::AllocationPermit* permit = objects_.permit(s.generation);
    if (permit == nullptr) {
      out_.problems.push_back(
          {ExecutionProblem::Kind::kMissingPermit, {}, ObjectKind::kBuffer, s.generation, {}});
      return;
    }
    // The moved-from permit stays in the table: allocating with it again is the recorded
    // "consumed permit" error, reproduced.
    auto live = rt_.allocate(std::move(*permit));
    if (!outcome(live)) return;
    out_.descriptor = rt_.buffer_descriptor(**live);
    if (recorded_ok(s.outcome) && s.buffer) objects_.keep_buffer(*s.buffer, std::move(*live));
  }

  void exec(const step::BufferDescriptorQueried& s) {
    bool ok = false;
    const rt::Buffer* b = buffer(s.buffer, ok);
    if (b == nullptr) return;
    out_.descriptor = rt_.buffer_descriptor(*b);
  }

  template <ObjectKind K>
  void exec(const step::Released<K>& s) {
    objects_.release(K, s.ordinal);
  }

  void exec(const step::StreamCreated& s) {
    auto live = rt_.create_stream();
    if (outcome(live) && recorded_ok(s.outcome) && s.stream) {
      objects_.keep_stream(*s.stream, std::move(*live));
    }
  }

  void exec(const step::StreamStateQueried& s) {
    rt::Stream* st = stream(s.stream);
    if (st != nullptr) out_.stream_state = rt_.stream_state(*st);
  }

  void keep_command(const Outcome& recorded, std::optional<std::uint64_t> ordinal,
                    rt::Result<rt::CommandPtr>& live) {
    if (outcome(live) && recorded_ok(recorded) && ordinal) {
      objects_.keep_command(*ordinal, std::move(*live));
    }
  }

  // The four re-encodable commands: the live encode of the recorded call, nullopt when a buffer
  // it names is not live (a problem). exec keeps the command; run_private submits it privately.
  std::optional<rt::Result<rt::CommandPtr>> encode(const step::EncodeCopy& s) {
    bool ok_src = false;
    bool ok_dst = false;
    const rt::Buffer* src = buffer(s.source, ok_src);
    const rt::Buffer* dst = buffer(s.destination, ok_dst);
    if (src == nullptr || dst == nullptr) return std::nullopt;
    return rt_.encode_copy(*src, *dst, s.region);
  }
  std::optional<rt::Result<rt::CommandPtr>> encode(const step::EncodeUpload& s) {
    bool ok = false;
    const rt::Buffer* dst = buffer(s.destination, ok);
    if (dst == nullptr) return std::nullopt;
    return rt_.encode_upload(*ex_.plan_.payload(s.payload), s.layout, *dst, s.offset_bytes);
  }
  std::optional<rt::Result<rt::CommandPtr>> encode(const step::EncodeZero& s) {
    bool ok = false;
    const rt::Buffer* dst = buffer(s.destination, ok);
    if (dst == nullptr) return std::nullopt;
    return rt_.encode_zero(*dst, s.offset_bytes, s.length_bytes);
  }
  std::optional<rt::Result<rt::CommandPtr>> encode(const step::EncodeDenseLinear& s) {
    std::vector<rt::DenseLinearLaunch> launches;
    launches.reserve(s.launches.size());
    bool all_ok = true;
    auto region = [&](const step::Region& r) {
      bool ok = false;
      const rt::Buffer* b = buffer(r.buffer, ok);
      all_ok = all_ok && ok;
      return rt::BufferRegionRef{b, r.offset_bytes, r.length_bytes};
    };
    for (const auto& l : s.launches) {
      launches.push_back({region(l.input), region(l.weight), region(l.output), l.rows,
                          l.in_features, l.out_features});
    }
    if (!all_ok) return std::nullopt;
    return rt_.encode_dense_linear({launches, s.participant_count, s.token_count});
  }
  // V is Visitor; as a template parameter it defers the check until Visitor is complete (clang
  // refuses a member access into the class being defined).
  template <typename S, typename V = Visitor>
  requires requires(V& v, const S& s) { v.encode(s); }
  void exec(const S& s) {
    if (auto live = encode(s)) keep_command(s.outcome, s.command, *live);
  }

  void exec(const step::SubmitBegin& s) {
    Pending pending;
    rt::Stream* st = stream(s.stream);
    rt::CommandBatch batch(s.timing, s.path);
    if (!s.declared_eager.empty()) {
      (void)batch.set_declared_eager_compute_node_indices(s.declared_eager);
    }
    if (s.attribution == rt::AttributionRequirement::kLogicalExecutionPath) {
      batch.require_logical_execution_path_attribution();
    }
    if (s.capture) (void)batch.set_reusable_execution_capture(*s.capture);
    bool all_ok = st != nullptr;
    for (const auto& e : s.entries) {
      rt::CommandPtr command;
      all_ok = take_command(e.command, false, command) && all_ok;
      batch.push_entry({e.phase, e.node_index, e.logical_work, std::move(command)});
    }
    if (all_ok) {
      pending.ran = true;
      if (s.guarded) {
        auto live = rt_.submit_guarded(*st, std::move(batch), {s.guard_maximum_commands});
        if (live) {
          pending.fence = std::move(*live);
        } else if (live.error().rejected) {
          pending.rejected = true;
        } else if (live.error().not_submitted) {
          pending.error = live.error().not_submitted->error();
        }
      } else {
        auto live = rt_.submit(*st, std::move(batch));
        if (live) {
          pending.fence = std::move(*live);
        } else {
          pending.error = live.error().error();
        }
      }
    }
    ex_.pending_[step_.ordinal] = std::move(pending);
  }

  void exec(const step::SubmitEnd& s) {
    auto it = ex_.pending_.find(s.begin_seq);
    if (it == ex_.pending_.end() || !it->second.ran) {
      out_.problems.push_back(
          {ExecutionProblem::Kind::kSubmitNotRun, {}, ObjectKind::kFence, s.begin_seq, {}});
      if (it != ex_.pending_.end()) ex_.pending_.erase(it);
      return;
    }
    Pending p = std::move(it->second);
    ex_.pending_.erase(it);
    out_.outcome = p.error;
    out_.rejected = p.rejected;
    if (!s.rejected && !p.rejected && !p.error && recorded_ok(s.not_submitted) && s.fence) {
      objects_.keep_fence(*s.fence, std::move(p.fence));
    }
  }

  void exec(const step::SubmissionAttribution& s) {
    const rt::Fence* f = fence(s.fence);
    if (f != nullptr) out_.attribution = AttributionAnswer{rt_.submission_attribution(*f)};
  }

  void exec(const step::QueryFence& s) {
    const rt::Fence* f = fence(s.fence);
    if (f != nullptr) out_.fence = rt_.query_fence(*f);
  }

  void exec(const step::WaitFence& s) {
    const rt::Fence* f = fence(s.fence);
    if (f == nullptr) return;
    auto w = rt_.wait_fence(*f);
    out_.fence = w ? rt::FenceQuery(std::move(*w)) : rt::FenceQuery(std::move(w.error()).into_error());
  }

  void exec(const step::Synchronize& s) {
    rt::Stream* st = stream(s.stream);
    if (st != nullptr) outcome(rt_.synchronize(*st));
  }

  void exec(const step::Readback& s) {
    rt::Stream* st = stream(s.stream);
    bool ok = false;
    const rt::Buffer* src = buffer(s.source, ok);
    if (st == nullptr || src == nullptr) return;
    auto live = rt_.readback(*st, *src, s.region, s.layout);
    if (!outcome(live)) return;
    out_.readback = ReadbackAnswer{s.layout.element_type(), std::move(*live), nullptr};
  }

  void exec(const step::DescribeError& s) {
    auto live = rt_.describe_error(s.input);
    out_.described = live ? DescribeAnswer{live->retryable(), {}}
                          : DescribeAnswer{std::nullopt, live.error().display()};
  }

  // ---- the optional methods (spec 5.2) ----
  void exec(const step::GuardedSubmissionQueried&) {
    out_.flag = rt_.supports_guarded_submission();
  }
  void exec(const step::BeginStaticWeightImport& s);
  void exec(const step::ImportComponent& s);
  void exec(const step::SealStaticWeightImport& s);
  void exec(const step::EncodeStaticWeightTransform& s);
  void exec(const step::ConfigureReusableExecutables& s);
  void exec(const step::SealReusableExecutables& s) {
    if (rt::Stream* st = stream(s.stream)) preparation(rt_.seal_reusable_executables(*st));
  }
  void exec(const step::ReusablePreparationQueried& s) {
    if (rt::Stream* st = stream(s.stream)) preparation(rt_.reusable_executable_preparation(*st));
  }
  void exec(const step::ReusableCatalogQueried& s) {
    rt::Stream* st = stream(s.stream);
    if (st == nullptr) return;
    auto live = rt_.reusable_execution_catalog(*st);
    if (outcome(live)) out_.catalog = std::move(*live);
  }
  void exec(const step::EncodeReusableExecution& s);
  void exec(const step::TrimReusableExecutables& s) {
    rt::Stream* st = stream(s.stream);
    if (st == nullptr) return;
    auto live = rt_.trim_reusable_executables(*st);
    if (outcome(live)) out_.trim = *live;
  }
  void exec(const step::CoalesceProgramBindings& s);

  void exec(const step::CounterSnapshot& s) {
    auto live = rt_.counter_snapshot();
    if (!live) return;
    // A window's start (ReplayPlan::counter_baseline): what the runtime counted before it is not
    // the recording's, so it joins the subtracted traffic; later snapshots are checked as
    // changes since this one.
    if (ex_.plan_.counter_baseline() == step_.ordinal) {
      ex_.private_traffic_ = minus(*live, s.counters);
    }
    out_.counters = minus(*live, ex_.private_traffic_);
  }

 private:
  StepExecutor& ex_;
  rt::DeviceRuntime& rt_;
  ObjectTable& objects_;
  const ReplayStep& step_;
  Observation& out_;
};

void StepExecutor::Visitor::exec(const step::BeginStaticWeightImport& s) {
  auto live = rt_.begin_static_weight_import();
  out_.supported = live.has_value();
  if (!live || !outcome(*live)) return;
  if (s.supported && recorded_ok(s.outcome) && s.session) {
    objects_.keep_session(*s.session, std::move(**live));
  }
}

rt::StaticWeightImportSession* StepExecutor::Visitor::session(std::uint64_t ordinal) {
  rt::StaticWeightImportSession* found = objects_.session(ordinal);
  if (found == nullptr) {
    out_.problems.push_back(
        {ExecutionProblem::Kind::kMissingSession, {}, ObjectKind::kImportSession, ordinal, {}});
  }
  return found;
}

void StepExecutor::Visitor::exec(const step::ImportComponent& s) {
  rt::StaticWeightImportSession* live = session(s.session);
  bool ok = false;
  const rt::Buffer* dst = buffer(s.destination, ok);
  if (live == nullptr || dst == nullptr) return;
  outcome(live->import_component(*ex_.plan_.payload(s.payload), *dst, s.offset_bytes));
}

void StepExecutor::Visitor::exec(const step::SealStaticWeightImport& s) {
  if (rt::StaticWeightImportSession* live = session(s.session)) outcome(live->seal());
}

void StepExecutor::Visitor::exec(const step::EncodeStaticWeightTransform& s) {
  bool ok_src = false;
  bool ok_dst = false;
  const rt::Buffer* src = buffer(s.source, ok_src);
  const rt::Buffer* dst = buffer(s.destination, ok_dst);
  if (src == nullptr || dst == nullptr) return;
  auto live = rt_.encode_static_weight_transform({src, dst, s.transform_id});
  out_.supported = live.has_value();
  if (!live || !outcome(*live)) return;
  rt::CommandPtr command = std::move(**live);
  out_.returned_command = command != nullptr;
  if (s.supported && recorded_ok(s.outcome) && s.command && command) {
    objects_.keep_command(*s.command, std::move(command));
  }
}

void StepExecutor::Visitor::exec(const step::ConfigureReusableExecutables& s) {
  rt::Stream* st = stream(s.stream);
  if (st == nullptr) return;
  auto plan = rt::ReusableExecutionPlan::create(s.maximum_executables, s.catalog_lifetime);
  if (!plan) {
    out_.problems.push_back({ExecutionProblem::Kind::kInvalidArgument,
                             {},
                             ObjectKind::kStream,
                             0,
                             plan.error().display()});
    return;
  }
  preparation(rt_.configure_reusable_executables(*st, *plan));
}

void StepExecutor::Visitor::exec(const step::EncodeReusableExecution& s) {
  auto live = rt_.encode_reusable_execution({s.program_id, s.node_index});
  if (!outcome(live)) return;
  rt::CommandPtr command = live->has_value() ? std::move(**live) : rt::CommandPtr{};
  out_.returned_command = command != nullptr;
  if (recorded_ok(s.outcome) && s.command && command) {
    objects_.keep_command(*s.command, std::move(command));
  }
}

// The input commands are consumed (like a submit's); the outputs take the ordinals the recorder
// assigned, in order, so later submits find them.
void StepExecutor::Visitor::exec(const step::CoalesceProgramBindings& s) {
  std::vector<rt::CommandPtr> input;
  input.reserve(s.commands_in.size());
  bool all_ok = true;
  for (const auto& ref : s.commands_in) {
    rt::CommandPtr command;
    all_ok = take_command(ref, true, command) && all_ok;
    input.push_back(std::move(command));
  }
  if (!all_ok) return;
  auto live = rt_.coalesce_program_bindings(std::move(input));
  if (!outcome(live)) return;
  out_.returned_commands = live->size();
  if (!recorded_ok(s.outcome)) return;
  for (std::size_t i = 0; i < std::min(live->size(), s.commands_out.size()); ++i) {
    objects_.keep_command(s.commands_out[i], std::move((*live)[i]));
  }
}

StepExecutor::StepExecutor(const ReplayPlan& plan, rt::DeviceRuntime& runtime,
                           rt::DeviceRuntime& auxiliary)
    : plan_(plan), rt_(runtime), objects_(auxiliary) {}

StepExecutor::~StepExecutor() = default;

Observation StepExecutor::execute(const ReplayStep& step) {
  Observation out;
  Visitor visitor(*this, step, out);
  std::visit([&](const auto& body) { visitor.exec(body); }, step.body);
  return out;
}

void StepExecutor::settle_submit(std::uint64_t begin_ordinal) {
  auto it = pending_.find(begin_ordinal);
  if (it != pending_.end() && it->second.fence) (void)rt_.wait_fence(*it->second.fence);
}

void StepExecutor::add_private_traffic(const std::optional<rt::CounterSnapshot>& before) {
  const auto after = rt_.counter_snapshot();
  if (before && after) private_traffic_ = plus(private_traffic_, minus(*after, *before));
}

std::expected<rt::Stream*, BufferAccessError> StepExecutor::private_stream() {
  if (!private_stream_) {
    const auto before = rt_.counter_snapshot();
    auto created = rt_.create_stream();
    add_private_traffic(before);
    if (!created) {
      return std::unexpected(BufferAccessError{BufferAccessError::Kind::kRuntime,
                                               created.error().message()});
    }
    private_stream_ = std::move(*created);
  }
  return private_stream_.get();
}

namespace {
// The layout of `length` bytes of `buffer`'s element type, or why there is none.
std::expected<rt::HostTransferLayout, BufferAccessError> layout_for(
    const rt::BufferDescriptor& d, std::uint64_t length) {
  const std::uint64_t width = rt::element_size_bytes(d.element_type);
  if (length == 0 || width == 0 || length % width != 0) {
    return std::unexpected(BufferAccessError{
        BufferAccessError::Kind::kInvalidRange,
        fmt::format("{} bytes are not whole {} elements", length,
                    rt::element_type_name(d.element_type))});
  }
  auto layout = rt::HostTransferLayout::create(d.element_type, length / width);
  if (!layout) {
    return std::unexpected(
        BufferAccessError{BufferAccessError::Kind::kInvalidRange, layout.error().display()});
  }
  return *layout;
}

BufferAccessError runtime_error(const rt::RuntimeError& e) {
  return {BufferAccessError::Kind::kRuntime,
          fmt::format("{}: {}", rt::error_kind_name(e.kind()), e.message())};
}
}  // namespace

std::expected<std::vector<std::uint8_t>, BufferAccessError> StepExecutor::read_buffer(
    std::uint64_t ordinal, ByteRange range) {
  const rt::Buffer* buffer = objects_.buffer({ordinal, ObjectRef::Space::kOwn});
  if (buffer == nullptr) {
    return std::unexpected(BufferAccessError{BufferAccessError::Kind::kNoSuchBuffer,
                                             fmt::format("no live buffer#{}", ordinal)});
  }
  auto layout = layout_for(rt_.buffer_descriptor(*buffer), range.length_bytes);
  if (!layout) return std::unexpected(layout.error());
  auto region = rt::CopyRegion::create(range.offset_bytes, 0, range.length_bytes);
  if (!region) {
    return std::unexpected(
        BufferAccessError{BufferAccessError::Kind::kInvalidRange, region.error().display()});
  }
  auto stream = private_stream();
  if (!stream) return std::unexpected(stream.error());
  const auto before = rt_.counter_snapshot();
  auto bytes = rt_.readback(**stream, *buffer, *region, *layout);
  add_private_traffic(before);
  if (!bytes) return std::unexpected(runtime_error(bytes.error()));
  return std::move(*bytes);
}

std::expected<void, BufferAccessError> StepExecutor::write_buffer(
    std::uint64_t ordinal, std::uint64_t offset_bytes, std::span<const std::uint8_t> bytes) {
  const rt::Buffer* buffer = objects_.buffer({ordinal, ObjectRef::Space::kOwn});
  if (buffer == nullptr) {
    return std::unexpected(BufferAccessError{BufferAccessError::Kind::kNoSuchBuffer,
                                             fmt::format("no live buffer#{}", ordinal)});
  }
  auto layout = layout_for(rt_.buffer_descriptor(*buffer), bytes.size());
  if (!layout) return std::unexpected(layout.error());
  auto stream = private_stream();
  if (!stream) return std::unexpected(stream.error());
  const auto before = rt_.counter_snapshot();
  auto command = rt_.encode_upload(bytes, *layout, *buffer, offset_bytes);
  auto result = command ? submit_private(**stream, std::move(*command))
                        : std::unexpected(runtime_error(command.error()));
  add_private_traffic(before);
  return result;
}

std::expected<void, BufferAccessError> StepExecutor::submit_private(rt::Stream& stream,
                                                                    rt::CommandPtr command) {
  auto fence = rt_.submit(stream, rt::CommandBatch::singleton(std::move(command)));
  if (!fence) return std::unexpected(runtime_error(fence.error().error()));
  auto done = rt_.wait_fence(**fence);
  if (!done) return std::unexpected(runtime_error(std::move(done.error()).into_error()));
  if (done->terminal.failure) return std::unexpected(runtime_error(*done->terminal.failure));
  return {};
}

std::expected<void, BufferAccessError> StepExecutor::run_private(const ReplayStep& encode) {
  auto stream = private_stream();
  if (!stream) return std::unexpected(stream.error());
  const auto before = rt_.counter_snapshot();
  Observation scratch;
  Visitor visitor(*this, encode, scratch);
  auto live = std::visit(
      [&](const auto& body) -> std::expected<rt::CommandPtr, BufferAccessError> {
        if constexpr (requires { visitor.encode(body); }) {
          auto encoded = visitor.encode(body);
          if (!encoded) {
            return std::unexpected(BufferAccessError{
                BufferAccessError::Kind::kNoSuchBuffer,
                fmt::format("event {} names a buffer that is not live", encode.ordinal)});
          }
          if (!*encoded) return std::unexpected(runtime_error(encoded->error()));
          return std::move(**encoded);
        } else {
          return std::unexpected(BufferAccessError{
              BufferAccessError::Kind::kUnsupported,
              fmt::format("event {} ({}) is not a command vtrace can encode again", encode.ordinal,
                          encode.kind)});
        }
      },
      encode.body);
  auto result = live ? submit_private(**stream, std::move(*live))
                     : std::expected<void, BufferAccessError>(std::unexpected(live.error()));
  add_private_traffic(before);
  return result;
}

}  // namespace vtrace::replayer
