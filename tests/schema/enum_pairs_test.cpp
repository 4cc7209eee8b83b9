// The FlatBuffers enums of vtrace.fbs and the runtime enums they carry are converted by a cast
// (schema/src/events.cpp, which also ties every enumerator at compile time). This test ties them
// by name as well, over every value: value v has the same name on both sides (ignoring case, '_'
// and '-'), and the runtime enum has no value beyond fb's MAX (its name function says "unknown").
#include <catch2/catch.hpp>

#include <cctype>
#include <string>
#include <string_view>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/runtime/submission.h"
#include "vtrace/runtime/types.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/objects.h"

namespace {

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;

std::string normalized(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

template <typename Rt, typename Fb, typename RtName, typename FbName>
void check_pair(const char* what, RtName rt_name, FbName fb_name) {
  INFO(what);
  const int max = static_cast<int>(Fb::MAX);
  for (int v = 0; v <= max; ++v) {
    INFO("value " << v);
    const std::string_view runtime_name = rt_name(static_cast<Rt>(v));
    CHECK(runtime_name != "unknown");
    CHECK(normalized(runtime_name) == normalized(fb_name(static_cast<Fb>(v))));
  }
  CHECK(rt_name(static_cast<Rt>(max + 1)) == "unknown");
}

}  // namespace

TEST_CASE("every runtime enum value has the same number and name in vtrace.fbs, and no more values",
          "[schema][enums]") {
  check_pair<rt::DeviceClass, fb::DeviceClass>("DeviceClass", rt::device_class_name,
                                               fb::EnumNameDeviceClass);
  check_pair<rt::ElementType, fb::ElementType>("ElementType", rt::element_type_name,
                                               fb::EnumNameElementType);
  check_pair<rt::BufferUsage, fb::BufferUsage>("BufferUsage", rt::buffer_usage_name,
                                               fb::EnumNameBufferUsage);
  check_pair<rt::StreamState, fb::StreamState>("StreamState", rt::stream_state_name,
                                               fb::EnumNameStreamState);
  check_pair<rt::AttentionExecutionPolicy, fb::AttentionExecutionPolicy>(
      "AttentionExecutionPolicy", rt::attention_policy_name, fb::EnumNameAttentionExecutionPolicy);
  check_pair<rt::CommandPhase, fb::CommandPhase>("CommandPhase", rt::command_phase_name,
                                                 fb::EnumNameCommandPhase);
  check_pair<rt::BatchingForm, fb::BatchingForm>("BatchingForm", rt::batching_form_name,
                                                 fb::EnumNameBatchingForm);
  check_pair<rt::ExecutionPath, fb::ExecutionPath>("ExecutionPath", rt::execution_path_name,
                                                   fb::EnumNameExecutionPath);
  check_pair<rt::TimingMode, fb::TimingMode>("TimingMode", rt::timing_mode_name,
                                             fb::EnumNameTimingMode);
  check_pair<rt::ComputePathRequirement, fb::ComputePathRequirement>(
      "ComputePathRequirement", rt::compute_path_requirement_name,
      fb::EnumNameComputePathRequirement);
  check_pair<rt::AttributionRequirement, fb::AttributionRequirement>(
      "AttributionRequirement", rt::attribution_requirement_name,
      fb::EnumNameAttributionRequirement);
}

template <typename Rt, typename Fb>
void check_round_trip(const char* what) {
  INFO(what);
  for (int v = 0; v <= static_cast<int>(Fb::MAX); ++v) {
    const auto value = static_cast<Rt>(v);
    CHECK(vtrace::schema::from_fb(vtrace::schema::to_fb(value)) == value);
  }
  // A value this build does not know is refused on the way in.
  CHECK_FALSE(vtrace::schema::from_fb(static_cast<Fb>(static_cast<int>(Fb::MAX) + 1)).has_value());
}

TEST_CASE("events convert every enum value to vtrace.fbs and back unchanged", "[schema][enums]") {
  check_round_trip<rt::DeviceClass, fb::DeviceClass>("DeviceClass");
  check_round_trip<rt::ElementType, fb::ElementType>("ElementType");
  check_round_trip<rt::BufferUsage, fb::BufferUsage>("BufferUsage");
  check_round_trip<rt::StreamState, fb::StreamState>("StreamState");
  check_round_trip<rt::AttentionExecutionPolicy, fb::AttentionExecutionPolicy>("AttentionExecutionPolicy");
  check_round_trip<rt::CommandPhase, fb::CommandPhase>("CommandPhase");
  check_round_trip<rt::BatchingForm, fb::BatchingForm>("BatchingForm");
  check_round_trip<rt::ExecutionPath, fb::ExecutionPath>("ExecutionPath");
  check_round_trip<rt::TimingMode, fb::TimingMode>("TimingMode");
  check_round_trip<rt::ComputePathRequirement, fb::ComputePathRequirement>("ComputePathRequirement");
  check_round_trip<rt::AttributionRequirement, fb::AttributionRequirement>("AttributionRequirement");
}

TEST_CASE("object kinds and references convert to vtrace.fbs and back, null included",
          "[schema][enums]") {
  namespace vs = vtrace::schema;
  for (std::size_t k = 0; k < vs::kObjectKindCount; ++k) {
    const auto kind = static_cast<vs::ObjectKind>(k);
    INFO(vs::object_kind_name(kind));
    CHECK(vs::from_fb(vs::to_fb(kind)) == kind);
    CHECK(normalized(vs::object_kind_name(kind)) == normalized(fb::EnumNameObjectKind(vs::to_fb(kind))));
  }
  CHECK_FALSE(vs::from_fb(static_cast<fb::ObjectKind>(vs::kObjectKindCount)).has_value());
  for (const auto space : {vs::ObjectRef::Space::kOwn, vs::ObjectRef::Space::kForeign}) {
    const vs::ObjectRef ref{7, space};
    const fb::ObjectRef wire = vs::to_fb(ref);
    CHECK(vs::from_fb(&wire) == ref);
  }
  const fb::ObjectRef null_wire = vs::to_fb(vs::ObjectRef{});
  CHECK(vs::from_fb(&null_wire) == vs::ObjectRef{});
  CHECK(vs::from_fb(nullptr) == vs::ObjectRef{});
  CHECK(vs::ObjectRef{3, vs::ObjectRef::Space::kForeign}.to_string(vs::ObjectKind::kStream) ==
        "foreign stream#3");
  CHECK(vs::ObjectRef{}.to_string(vs::ObjectKind::kBuffer) == "null");
}
