// The replay engine (replay_engine.h). One handler per step kind: re-execute, then compare.
#include "vtrace/replayer/replay_engine.h"

#include "vtrace/replayer/replay_target.h"

#include <fmt/format.h>

#include <map>

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

namespace {

std::string show(const Outcome& outcome) {
  if (!outcome) return "success";
  return fmt::format("error {} ({})", rt::error_kind_name(outcome->kind()), outcome->message());
}

std::string show(const rt::BufferDescriptor& d) {
  return fmt::format("{{{} {} bytes align {} {} {}}}", d.resource_id.str(), d.size_bytes,
                     d.alignment_bytes, rt::buffer_usage_name(d.usage),
                     rt::element_type_name(d.element_type));
}

std::string show(const rt::FenceQuery& q) {
  if (rt::is_pending(q)) return "pending";
  if (const auto* e = std::get_if<rt::RuntimeError>(&q)) {
    return fmt::format("indeterminate {} ({})", rt::error_kind_name(e->kind()), e->message());
  }
  const auto& receipt = std::get<rt::TerminalReceipt>(q);
  if (receipt.terminal.is_succeeded()) return "terminal succeeded";
  return fmt::format("terminal failed {}",
                     rt::error_kind_name(receipt.terminal.failure->kind()));
}

std::string show(const rt::NativeWorkAttribution& r) {
  return fmt::format(
      "{{command {} node {} {} {} {} {} participants {}+{} tokens {} dispatches {} transfers {}}}",
      r.command_index(), r.node_index() ? fmt::format("{}", *r.node_index()) : "none",
      rt::command_phase_name(r.command_phase()), r.native_op_id(),
      rt::execution_path_name(r.execution_path()), rt::batching_form_name(r.batching_form()),
      r.participant_start(), r.participant_count(), r.token_count(), r.compute_dispatch_count(),
      r.transfer_command_count());
}

std::string show(const rt::CounterSnapshot& c) {
  return fmt::format(
      "{{allocations {}, live_allocations {}, submissions {}, commands {}, uploaded_bytes {}, "
      "dense_linear_launches {}, readback_bytes {}}}",
      c.allocations, c.live_allocations, c.submissions, c.commands, c.uploaded_bytes,
      c.dense_linear_launches, c.readback_bytes);
}

std::string show(const rt::ReusableExecutionPreparation& p) {
  return fmt::format("{{state {} max {} resident {}}}", static_cast<int>(p.state),
                     p.maximum_executables, p.resident_executables);
}

std::string show(const std::vector<rt::ReusableExecutionProgram>& catalog) {
  std::string out = fmt::format("{} programs [", catalog.size());
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    out += fmt::format("{}{} ({} nodes)", i == 0 ? "" : ", ", catalog[i].program_id,
                       catalog[i].node_count);
  }
  return out + "]";
}

// A one-line description of the call a step re-executes, for mismatch reports.
std::string describe_call(const ReplayStep& s) {
  using K = ObjectKind;
  return std::visit(
      [&](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, step::Admit>) {
          return fmt::format("admit({}, {} bytes)", b.request.resource_id().str(),
                             b.request.size_bytes());
        } else if constexpr (std::is_same_v<T, step::Allocate>) {
          return fmt::format("allocate(permit {})", b.generation);
        } else if constexpr (std::is_same_v<T, step::DescriptorQueried>) {
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
        } else if constexpr (std::is_same_v<T, step::Attribution>) {
          return fmt::format("submission_attribution({})", b.fence.to_string(K::kFence));
        } else if constexpr (std::is_same_v<T, step::Fence>) {
          return fmt::format("{}({})", b.wait ? "wait_fence" : "query_fence",
                             b.fence.to_string(K::kFence));
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
        } else if constexpr (std::is_same_v<T, step::OptionalCall>) {
          if (b.method == "encode_reusable_execution") {
            return fmt::format("encode_reusable_execution({}, node {})", b.text, b.node_index);
          }
          if (b.method == "encode_static_weight_transform") {
            return fmt::format("encode_static_weight_transform({}, {}, {})",
                               b.buffer.to_string(K::kBuffer), b.destination.to_string(K::kBuffer),
                               b.text);
          }
          if (b.method == "coalesce_program_bindings") {
            return fmt::format("coalesce_program_bindings({} commands)", b.commands_in.size());
          }
          if (b.stream.space != ObjectRef::Space::kNull) {
            return fmt::format("{}({})", b.method, b.stream.to_string(K::kStream));
          }
          return b.method;
        } else if constexpr (std::is_same_v<T, step::Counters>) {
          return fmt::format("counter_snapshot (after event {})", b.after_seq);
        } else {
          return s.kind;
        }
      },
      s.body);
}

class Engine {
 public:
  Engine(const ReplayPlan& plan, rt::DeviceRuntime& runtime, rt::DeviceRuntime& aux,
         const ReplayOptions& options, ReplayObserver* observer)
      : plan_(plan), rt_(runtime), aux_(aux), options_(options), observer_(observer) {
    report_.trace = options.trace_label;
    report_.runtime = options.runtime_name;
    report_.check = options.check.to_string();
  }

  ReplayReport run() {
    const auto& steps = plan_.steps();
    const std::uint64_t end = std::min<std::uint64_t>(options_.end_event, steps.size());
    report_.first_event = std::min(options_.first_event, end);
    report_.end_event = end;
    for (std::uint64_t i = 0; i < end; ++i) {
      const ReplayStep& s = steps[i];
      if (observer_) observer_->on_step(s, i, end);
      checking_ = s.ordinal >= options_.first_event;
      if (checking_) ++report_.events;
      ++report_.executed;
      current_ = &s;
      std::visit([&](const auto& body) { exec(body); }, s.body);
    }
    report_.complete = plan_.trace_complete();
    if (!report_.complete) {
      report_.recovery_note = plan_.recovery().note;
      report_.events_recovered = plan_.recovery().events_recovered;
      report_.cut_offset = plan_.recovery().cut_offset;
      report_.file_bytes = plan_.recovery().file_bytes;
      report_.stopped_at = plan_.recovery().stopped_at;
      report_.stop_reason = plan_.recovery().stop_reason;
    }
    // A submit the recording never saw end was re-executed; nothing recorded to compare it with.
    // Let it finish before the objects it uses are released.
    for (const std::uint64_t begin : plan_.unfinished_submits()) {
      if (begin >= end) break;
      report_.unfinished_submits.push_back(begin);
      auto it = pending_.find(begin);
      if (it != pending_.end() && it->second.fence) (void)rt_.wait_fence(*it->second.fence);
    }
    return std::move(report_);
  }

 private:
  // ---- bookkeeping -----------------------------------------------------------------------
  void mismatch(std::string expected, std::string actual) {
    if (!checking_) return;
    ++report_.mismatch_count;
    Mismatch m{current_->ordinal, describe_call(*current_), std::move(expected), std::move(actual),
               fmt::format("vtrace replay {} --events {}:{} --runtime {} --check {}",
                           options_.trace_label, current_->ordinal, current_->ordinal + 1,
                           options_.runtime_name, options_.check.to_string())};
    if (observer_) observer_->on_mismatch(m);
    if (report_.mismatches.size() < options_.max_mismatches) {
      report_.mismatches.push_back(std::move(m));
    }
  }
  void missing(const ObjectRef& r, ObjectKind kind) {
    mismatch(fmt::format("{} to exist", r.to_string(kind)),
             "it was never created in this replay (see the earlier mismatch)");
  }
  // Compares a call's outcome; returns true when both succeeded.
  bool outcome(const Outcome& recorded, const Outcome& live) {
    if (checking_) {
      ++report_.checked.calls;
      if (recorded) ++report_.checked.error_outcomes;
    }
    if (recorded.has_value() != live.has_value() ||
        (recorded && recorded->kind() != live->kind())) {
      mismatch(show(recorded), show(live));
    }
    return !recorded && !live;
  }
  template <typename T>
  static Outcome outcome_of(const rt::Result<T>& r) {
    return r ? Outcome{} : Outcome{r.error()};
  }

  template <typename H>
  using Table = std::map<std::uint64_t, H>;

  const rt::Buffer* buffer(const ObjectRef& r, bool& ok) {
    ok = true;
    if (r.space == ObjectRef::Space::kNull) return nullptr;
    auto& table = r.space == ObjectRef::Space::kOwn ? buffers_ : foreign_buffers_;
    auto it = table.find(r.ordinal);
    if (it == table.end() || !it->second) {
      ok = false;
      missing(r, ObjectKind::kBuffer);
      return nullptr;
    }
    return it->second.get();
  }
  rt::Stream* stream(const ObjectRef& r) {
    auto& table = r.space == ObjectRef::Space::kOwn ? streams_ : foreign_streams_;
    auto it = table.find(r.ordinal);
    if (r.space == ObjectRef::Space::kNull || it == table.end() || !it->second) {
      missing(r, ObjectKind::kStream);
      return nullptr;
    }
    return it->second.get();
  }
  const rt::Fence* fence(const ObjectRef& r) {
    auto& table = r.space == ObjectRef::Space::kOwn ? fences_ : foreign_fences_;
    auto it = table.find(r.ordinal);
    if (r.space == ObjectRef::Space::kNull || it == table.end() || !it->second) {
      missing(r, ObjectKind::kFence);
      return nullptr;
    }
    return it->second.get();
  }
  void keep_command(std::optional<std::uint64_t> ordinal, rt::Result<rt::CommandPtr>& live) {
    if (ordinal && live) commands_[*ordinal] = std::move(*live);
  }

  // Foreign objects: made on the auxiliary runtime, shaped like the recorded ones where it matters.
  rt::Buffer* aux_scratch() {
    if (!aux_scratch_) {
      auto request = rt::BufferRequest::create(
          *rt::ResourceId::create("resource.replay.foreign-scratch"), 64, 16,
          rt::BufferUsage::kScratch, rt::ElementType::kU8);
      if (!request) return nullptr;
      auto permit = aux_.admit(*request);
      if (!permit) return nullptr;
      auto buffer = aux_.allocate(std::move(*permit));
      if (buffer) aux_scratch_ = std::move(*buffer);
    }
    return aux_scratch_.get();
  }
  rt::Stream* aux_stream() {
    if (!aux_stream_) {
      if (auto s = aux_.create_stream()) aux_stream_ = std::move(*s);
    }
    return aux_stream_.get();
  }
  rt::CommandPtr foreign_command() {
    rt::Buffer* scratch = aux_scratch();
    if (scratch == nullptr) return nullptr;
    auto command = aux_.encode_zero(*scratch, 0, 1);
    return command ? std::move(*command) : nullptr;
  }

  // ---- steps ---------------------------------------------------------------------------------
  void exec(const step::RuntimeOpened& s) {
    report_.runtime_differences = runtime_differences(s, rt_, options_.runtime_name);
  }
  void exec(const step::Skipped&) {}

  void exec(const step::ForeignObjectSeen& s) {
    switch (s.kind) {
      case ObjectKind::kBuffer: {
        if (!s.descriptor) return;
        const auto& d = *s.descriptor;
        auto request = rt::BufferRequest::create(d.resource_id, d.size_bytes, d.alignment_bytes,
                                                 d.usage, d.element_type);
        if (!request) return;
        auto permit = aux_.admit(*request);
        if (!permit) return;
        if (auto b = aux_.allocate(std::move(*permit))) foreign_buffers_[s.ordinal] = std::move(*b);
        return;
      }
      case ObjectKind::kStream:
        if (auto st = aux_.create_stream()) foreign_streams_[s.ordinal] = std::move(*st);
        return;
      case ObjectKind::kFence: {
        rt::Stream* st = aux_stream();
        rt::CommandPtr command = foreign_command();
        if (st == nullptr || !command) return;
        if (auto f = aux_.submit(*st, rt::CommandBatch::singleton(std::move(command)))) {
          foreign_fences_[s.ordinal] = std::move(*f);
        }
        return;
      }
      case ObjectKind::kCommand:        // made fresh at each use: submit consumes it
      case ObjectKind::kImportSession:  // never handed across runtimes by this version
        return;
    }
  }

  void exec(const step::Admit& s) {
    auto live = rt_.admit(s.request);
    if (outcome(s.outcome, outcome_of(live)) && s.generation) {
      permits_.insert_or_assign(*s.generation, std::move(*live));
    }
  }

  void exec(const step::Allocate& s) {
    auto it = permits_.find(s.generation);
    if (it == permits_.end()) {
      mismatch(fmt::format("permit {} to exist", s.generation),
               "its admit did not succeed in this replay");
      return;
    }
    // The moved-from permit stays in the table: allocating with it again is the recorded
    // "consumed permit" error, reproduced.
    auto live = rt_.allocate(std::move(it->second));
    if (!outcome(s.outcome, outcome_of(live)) || !s.buffer) return;
    if (s.descriptor) {
      const auto actual = rt_.buffer_descriptor(**live);
      if (actual != *s.descriptor) mismatch(show(*s.descriptor), show(actual));
    }
    buffers_[*s.buffer] = std::move(*live);
  }

  void exec(const step::DescriptorQueried& s) {
    bool ok = false;
    const rt::Buffer* b = buffer(s.buffer, ok);
    if (!ok || b == nullptr) return;
    if (checking_) ++report_.checked.calls;
    const auto actual = rt_.buffer_descriptor(*b);
    if (actual != s.descriptor) mismatch(show(s.descriptor), show(actual));
  }

  void exec(const step::Released& s) {
    switch (s.kind) {
      case ObjectKind::kBuffer:
        buffers_.erase(s.ordinal);
        return;
      case ObjectKind::kStream:
        streams_.erase(s.ordinal);
        return;
      case ObjectKind::kCommand:
        commands_.erase(s.ordinal);
        return;
      case ObjectKind::kFence:
        fences_.erase(s.ordinal);
        return;
      case ObjectKind::kImportSession:
        return;
    }
  }

  void exec(const step::StreamCreated& s) {
    auto live = rt_.create_stream();
    if (outcome(s.outcome, outcome_of(live)) && s.stream) streams_[*s.stream] = std::move(*live);
  }

  void exec(const step::StreamStateQueried& s) {
    rt::Stream* st = stream(s.stream);
    if (st == nullptr) return;
    if (checking_) ++report_.checked.calls;
    const auto actual = rt_.stream_state(*st);
    if (actual != s.state) {
      mismatch(std::string(rt::stream_state_name(s.state)),
               std::string(rt::stream_state_name(actual)));
    }
  }

  void exec(const step::EncodeCopy& s) {
    bool ok_src = false;
    bool ok_dst = false;
    const rt::Buffer* src = buffer(s.source, ok_src);
    const rt::Buffer* dst = buffer(s.destination, ok_dst);
    if (src == nullptr || dst == nullptr) return;
    auto live = rt_.encode_copy(*src, *dst, s.region);
    if (outcome(s.outcome, outcome_of(live))) keep_command(s.command, live);
  }

  void exec(const step::EncodeUpload& s) {
    bool ok = false;
    const rt::Buffer* dst = buffer(s.destination, ok);
    if (dst == nullptr) return;
    const auto* bytes = plan_.payload(s.payload);
    auto live = rt_.encode_upload(*bytes, s.layout, *dst, s.offset_bytes);
    if (outcome(s.outcome, outcome_of(live))) keep_command(s.command, live);
  }

  void exec(const step::EncodeZero& s) {
    bool ok = false;
    const rt::Buffer* dst = buffer(s.destination, ok);
    if (dst == nullptr) return;
    auto live = rt_.encode_zero(*dst, s.offset_bytes, s.length_bytes);
    if (outcome(s.outcome, outcome_of(live))) keep_command(s.command, live);
  }

  void exec(const step::EncodeDenseLinear& s) {
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
    if (!all_ok) return;
    auto live = rt_.encode_dense_linear({launches, s.participant_count, s.token_count});
    if (outcome(s.outcome, outcome_of(live))) keep_command(s.command, live);
  }

  void exec(const step::SubmitBegin& s) {
    Pending pending;
    rt::Stream* st = stream(s.stream);
    rt::CommandBatch batch(s.timing, s.path);
    if (!s.declared_eager.empty()) (void)batch.set_declared_eager_compute_node_indices(s.declared_eager);
    if (s.attribution == rt::AttributionRequirement::kLogicalExecutionPath) {
      batch.require_logical_execution_path_attribution();
    }
    if (s.capture) (void)batch.set_reusable_execution_capture(*s.capture);
    bool all_ok = st != nullptr;
    for (const auto& e : s.entries) {
      rt::CommandPtr command;
      if (e.command.space == ObjectRef::Space::kOwn) {
        auto it = commands_.find(e.command.ordinal);
        if (it == commands_.end()) {
          missing(e.command, ObjectKind::kCommand);
          all_ok = false;
        } else {
          command = std::move(it->second);
          commands_.erase(it);
        }
      } else if (e.command.space == ObjectRef::Space::kForeign) {
        command = foreign_command();
      }
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
    pending_[current_->ordinal] = std::move(pending);
  }

  void exec(const step::SubmitEnd& s) {
    auto it = pending_.find(s.begin_seq);
    if (it == pending_.end() || !it->second.ran) {
      mismatch("the submit to run", "its SubmitBegin could not be re-executed");
      if (it != pending_.end()) pending_.erase(it);
      return;
    }
    Pending p = std::move(it->second);
    pending_.erase(it);
    if (s.rejected || p.rejected) {
      if (checking_) ++report_.checked.calls;
      if (s.rejected != p.rejected) {
        mismatch(s.rejected ? "rejected (attribution unavailable)" : "submitted",
                 p.rejected ? "rejected (attribution unavailable)" : show(p.error));
      }
      return;
    }
    if (outcome(s.not_submitted, p.error) && s.fence) fences_[*s.fence] = std::move(p.fence);
  }

  void exec(const step::Attribution& s) {
    const rt::Fence* f = fence(s.fence);
    if (f == nullptr) return;
    const auto live = rt_.submission_attribution(*f);
    if (checking_) {
      ++report_.checked.calls;
      report_.checked.attribution_rows += s.rows ? s.rows->commands().size() : 0;
    }
    if (s.rows.has_value() != live.has_value()) {
      mismatch(s.rows ? fmt::format("{} attribution rows", s.rows->commands().size())
                      : "no attribution",
               live ? fmt::format("{} attribution rows", live->commands().size())
                    : "no attribution");
      return;
    }
    if (!s.rows) return;
    const auto& want = s.rows->commands();
    const auto& got = live->commands();
    for (std::size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
      if (i >= want.size() || i >= got.size() || !(want[i] == got[i])) {
        mismatch(i < want.size() ? fmt::format("row {} {}", i, show(want[i]))
                                 : fmt::format("{} rows", want.size()),
                 i < got.size() ? fmt::format("row {} {}", i, show(got[i]))
                                : fmt::format("{} rows", got.size()));
        return;
      }
    }
  }

  void exec(const step::Fence& s) {
    const rt::Fence* f = fence(s.fence);
    if (f == nullptr) return;
    rt::FenceQuery live;
    if (s.wait) {
      auto w = rt_.wait_fence(*f);
      live = w ? rt::FenceQuery(std::move(*w)) : rt::FenceQuery(std::move(w.error()).into_error());
    } else {
      live = rt_.query_fence(*f);
      // Pending depends on timing, not on the contract: not compared.
      if (rt::is_pending(live) || rt::is_pending(s.result)) return;
    }
    if (checking_) {
      ++report_.checked.calls;
      ++report_.checked.fences;
    }
    if (!same_fence_answer(s.result, live)) mismatch(show(s.result), show(live));
  }

  static bool same_fence_answer(const rt::FenceQuery& a, const rt::FenceQuery& b) {
    if (a.index() != b.index()) return false;
    if (const auto* e = std::get_if<rt::RuntimeError>(&a)) {
      return e->kind() == std::get<rt::RuntimeError>(b).kind();
    }
    if (const auto* r = std::get_if<rt::TerminalReceipt>(&a)) {
      const auto& other = std::get<rt::TerminalReceipt>(b);
      // Timing measurements are host- and run-dependent; the terminal is the contract.
      if (r->terminal.is_succeeded() != other.terminal.is_succeeded()) return false;
      return r->terminal.is_succeeded() ||
             r->terminal.failure->kind() == other.terminal.failure->kind();
    }
    return true;
  }

  void exec(const step::Synchronize& s) {
    rt::Stream* st = stream(s.stream);
    if (st == nullptr) return;
    auto live = rt_.synchronize(*st);
    outcome(s.outcome, outcome_of(live));
  }

  void exec(const step::Readback& s) {
    rt::Stream* st = stream(s.stream);
    bool ok = false;
    const rt::Buffer* src = buffer(s.source, ok);
    if (st == nullptr || src == nullptr) return;
    auto live = rt_.readback(*st, *src, s.region, s.layout);
    if (!outcome(s.outcome, outcome_of(live)) || !s.payload) return;
    if (options_.check.kind == CheckMode::Kind::kNone) return;
    const auto* expected = plan_.payload(*s.payload);
    if (checking_) {
      ++report_.checked.readbacks;
      report_.checked.readback_bytes += expected->size();
    }
    if (auto d = compare_readback(*expected, *live, s.layout.element_type(), options_.check)) {
      mismatch(fmt::format("{} bytes as recorded", expected->size()), d->summary());
    }
  }

  void exec(const step::DescribeError& s) {
    auto live = rt_.describe_error(s.input);
    if (checking_) ++report_.checked.calls;
    // The code names the runtime; success and retryability are the contract.
    if (s.report.has_value() != live.has_value() ||
        (s.report && s.report->retryable() != live->retryable())) {
      mismatch(s.report ? fmt::format("a report (retryable {})", s.report->retryable())
                        : "describe_error to fail",
               live ? fmt::format("a report (retryable {})", live->retryable())
                    : "describe_error failed: " + live.error().display());
    }
  }

  // Compares "supported or not" of a method that may answer nullopt; true when both supported.
  bool supported(const step::OptionalCall& s, bool live) {
    if (s.supported == live) return s.supported;
    if (checking_) ++report_.checked.calls;
    mismatch(s.supported ? "supported" : "not supported (nullopt)",
             live ? "supported" : "not supported (nullopt)");
    return false;
  }

  // A command an optional method returned: kept under its recorded ordinal, or a mismatch when
  // exactly one of the recording and the replay returned one.
  void returned_command(const step::OptionalCall& s, rt::CommandPtr live) {
    if (s.command.has_value() != (live != nullptr)) {
      mismatch(s.command ? "a command" : "Ok(None)", live ? "a command" : "Ok(None)");
      return;
    }
    if (s.command) commands_[*s.command] = std::move(live);
  }

  void exec(const step::OptionalCall& s) {
    const std::string& m = s.method;
    // Methods without an error channel are counted here; the others by outcome().
    if (m == "supports_guarded_submission") {
      if (checking_) ++report_.checked.calls;
      const bool live = rt_.supports_guarded_submission();
      if (live != s.flag) mismatch(fmt::format("{}", s.flag), fmt::format("{}", live));
      return;
    }
    if (m == "begin_static_weight_import") {
      auto live = rt_.begin_static_weight_import();
      if (!supported(s, live.has_value())) {
        if (checking_ && !s.supported && !live) ++report_.checked.calls;
        return;
      }
      if (outcome(s.outcome, outcome_of(*live)) && s.session) {
        sessions_[*s.session] = std::move(**live);
      }
      return;
    }
    if (m == "static_weight_import.import_component" || m == "static_weight_import.seal") {
      auto it = sessions_.find(*s.session);
      if (it == sessions_.end() || !it->second) {
        mismatch(fmt::format("import session#{} to exist", *s.session),
                 "it was never created in this replay (see the earlier mismatch)");
        return;
      }
      if (m == "static_weight_import.seal") {
        outcome(s.outcome, outcome_of(it->second->seal()));
        return;
      }
      bool ok = false;
      const rt::Buffer* dst = buffer(s.buffer, ok);
      if (dst == nullptr) return;
      auto live = it->second->import_component(*plan_.payload(*s.payload), *dst, s.offset_bytes);
      outcome(s.outcome, outcome_of(live));
      return;
    }
    if (m == "encode_static_weight_transform") {
      bool ok_src = false;
      bool ok_dst = false;
      const rt::Buffer* src = buffer(s.buffer, ok_src);
      const rt::Buffer* dst = buffer(s.destination, ok_dst);
      if (src == nullptr || dst == nullptr) return;
      auto live = rt_.encode_static_weight_transform({src, dst, s.text});
      if (!supported(s, live.has_value())) {
        if (checking_ && !s.supported && !live) ++report_.checked.calls;
        return;
      }
      if (outcome(s.outcome, outcome_of(*live))) returned_command(s, std::move(**live));
      return;
    }
    if (m == "encode_reusable_execution") {
      auto live = rt_.encode_reusable_execution({s.text, s.node_index});
      if (!outcome(s.outcome, outcome_of(live))) return;
      returned_command(s, live->has_value() ? std::move(**live) : rt::CommandPtr{});
      return;
    }
    if (m == "coalesce_program_bindings") {
      exec_coalesce(s);
      return;
    }
    rt::Stream* st = stream(s.stream);
    if (st == nullptr) return;
    if (m == "trim_reusable_executables") {
      auto trim = rt_.trim_reusable_executables(*st);
      if (outcome(s.outcome, outcome_of(trim)) && s.trim && !(*trim == *s.trim)) {
        mismatch(fmt::format("released {} executables, {} rejections",
                             s.trim->released_executables, s.trim->released_rejections),
                 fmt::format("released {} executables, {} rejections",
                             trim->released_executables, trim->released_rejections));
      }
      return;
    }
    if (m == "reusable_execution_catalog") {
      auto live = rt_.reusable_execution_catalog(*st);
      if (outcome(s.outcome, outcome_of(live)) && s.catalog && *live != *s.catalog) {
        mismatch(show(*s.catalog), show(*live));
      }
      return;
    }
    rt::Result<rt::ReusableExecutionPreparation> live = rt::ReusableExecutionPreparation{};
    if (m == "configure_reusable_executables") {
      auto plan = rt::ReusableExecutionPlan::create(s.plan_maximum_executables, s.plan_lifetime);
      if (!plan) {
        mismatch("a valid reusable execution plan", plan.error().display());
        return;
      }
      live = rt_.configure_reusable_executables(*st, *plan);
    } else if (m == "seal_reusable_executables") {
      live = rt_.seal_reusable_executables(*st);
    } else {
      live = rt_.reusable_executable_preparation(*st);
    }
    if (outcome(s.outcome, outcome_of(live)) && s.preparation && !(*live == *s.preparation)) {
      mismatch(show(*s.preparation), show(*live));
    }
  }

  // The input commands are consumed (like a submit's); the outputs take the ordinals the recorder
  // assigned, in order, so later submits find them.
  void exec_coalesce(const step::OptionalCall& s) {
    std::vector<rt::CommandPtr> input;
    input.reserve(s.commands_in.size());
    bool all_ok = true;
    for (const auto& ref : s.commands_in) {
      rt::CommandPtr command;
      if (ref.space == ObjectRef::Space::kOwn) {
        auto it = commands_.find(ref.ordinal);
        if (it == commands_.end() || !it->second) {
          missing(ref, ObjectKind::kCommand);
          all_ok = false;
        } else {
          command = std::move(it->second);
          commands_.erase(it);
        }
      } else if (ref.space == ObjectRef::Space::kForeign) {
        command = foreign_command();
      }
      input.push_back(std::move(command));
    }
    if (!all_ok) return;
    auto live = rt_.coalesce_program_bindings(std::move(input));
    if (!outcome(s.outcome, outcome_of(live))) return;
    if (live->size() != s.commands_out.size()) {
      mismatch(fmt::format("{} commands", s.commands_out.size()),
               fmt::format("{} commands", live->size()));
    }
    for (std::size_t i = 0; i < std::min(live->size(), s.commands_out.size()); ++i) {
      commands_[s.commands_out[i]] = std::move((*live)[i]);
    }
  }

  void exec(const step::Counters& s) {
    const auto live = rt_.counter_snapshot();
    if (!live) return;  // a runtime without counters: nothing to compare
    if (checking_) ++report_.checked.counter_snapshots;
    if (*live != s.counters) mismatch(show(s.counters), show(*live));
  }

  struct Pending {
    bool ran = false;
    rt::FencePtr fence;
    Outcome error;
    bool rejected = false;
  };

  const ReplayPlan& plan_;
  rt::DeviceRuntime& rt_;
  rt::DeviceRuntime& aux_;
  const ReplayOptions& options_;
  ReplayObserver* observer_;
  ReplayReport report_;
  const ReplayStep* current_ = nullptr;
  bool checking_ = false;

  // Declared so that destruction releases streams last, buffers after the commands using them.
  Table<rt::StreamPtr> streams_;
  Table<rt::StreamPtr> foreign_streams_;
  rt::StreamPtr aux_stream_;
  Table<rt::BufferPtr> buffers_;
  Table<rt::BufferPtr> foreign_buffers_;
  rt::BufferPtr aux_scratch_;
  std::map<std::uint64_t, rt::AllocationPermit> permits_;
  Table<rt::FencePtr> fences_;
  Table<rt::FencePtr> foreign_fences_;
  Table<rt::CommandPtr> commands_;
  // After the buffers: a session is released before the buffers it imports into.
  Table<std::unique_ptr<rt::StaticWeightImportSession>> sessions_;
  std::map<std::uint64_t, Pending> pending_;
};

}  // namespace

ReplayReport replay_plan(const ReplayPlan& plan, rt::DeviceRuntime& runtime,
                         rt::DeviceRuntime& auxiliary, const ReplayOptions& options,
                         ReplayObserver* observer) {
  Engine engine(plan, runtime, auxiliary, options, observer);
  return engine.run();
}

}  // namespace vtrace::replayer
