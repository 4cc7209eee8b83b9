// The recorder's call bracket (recorder/src/call_bracket.h) resolves every object reference of an
// event before it builds the event: the foreign objects one call names are introduced by their
// ForeignObjectSeen events, in argument order, right before the event that names them, and the
// event itself is whole (it verifies and carries the foreign ordinals).
#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "recorder_test_support.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/workloads/workload.h"

using namespace vtrace::recorder::testing;
namespace schema = vtrace::schema;

namespace {

std::vector<fb::EventBody> kinds(const ReadTrace& trace) {
  std::vector<fb::EventBody> out;
  for (const auto& r : trace.records) out.push_back(schema::event_of(r)->body_type());
  return out;
}

}  // namespace

TEST_CASE("the foreign objects an event names are introduced right before it, in argument order") {
  auto sink = std::make_shared<MemorySink::State>();
  auto other = make_reference("device.recorder.other");
  auto in = allocate(*other, 16, rt::ElementType::kF16, "resource.in");
  auto weight = allocate(*other, 32, rt::ElementType::kF16, "resource.weight");
  auto out = allocate(*other, 16, rt::ElementType::kF16, "resource.out");
  {
    auto rec = record_to_memory(make_reference(), sink);
    // Three foreign buffers in one event. What the wrapped runtime answers does not matter here;
    // the handles it returns are kept to the end of the recording (they die unrecorded after
    // close()), so the trace holds only the events under test.
    const rt::DenseLinearLaunch launch{
        {in.get(), 0, 8}, {weight.get(), 0, 16}, {out.get(), 0, 4}, 1, 4, 2};
    auto linear = rec->encode_dense_linear(rt::DenseLinearRequest{{&launch, 1}, 1, 1});
    // The output again (already seen) and the weight: no new introduction for either.
    auto copy = rec->encode_copy(*out, *weight, region(0, 0, 4));
    // A foreign command, resolved before the wrapped call consumes it.
    auto foreign_zero = other->encode_zero(*out, 0, 2);
    REQUIRE(foreign_zero.has_value());
    std::vector<rt::CommandPtr> commands;
    commands.push_back(std::move(*foreign_zero));
    auto coalesced = rec->coalesce_program_bindings(std::move(commands));
    REQUIRE(rec->close().has_value());
  }
  auto trace = read_trace(sink->copy());
  REQUIRE(trace.reader->complete());
  const std::vector<fb::EventBody> expected = {
      fb::EventBody::RuntimeOpened,     fb::EventBody::ForeignObjectSeen,
      fb::EventBody::ForeignObjectSeen, fb::EventBody::ForeignObjectSeen,
      fb::EventBody::EncodeDenseLinear, fb::EventBody::EncodeCopy,
      fb::EventBody::ForeignObjectSeen, fb::EventBody::CoalesceProgramBindings};
  CHECK(kinds(trace) == expected);

  auto foreign = trace.all<fb::ForeignObjectSeen>(fb::EventBody::ForeignObjectSeen);
  REQUIRE(foreign.size() == 4);
  const std::vector<std::string> names = {"resource.in", "resource.weight", "resource.out"};
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(foreign[i]->object() == fb::ObjectKind::Buffer);
    CHECK(foreign[i]->ordinal() == i);
    CHECK(foreign[i]->buffer_descriptor()->resource_id()->str() == names[i]);
  }
  CHECK(foreign[3]->object() == fb::ObjectKind::Command);
  CHECK(foreign[3]->ordinal() == 0);

  auto linear = trace.all<fb::EncodeDenseLinear>(fb::EventBody::EncodeDenseLinear);
  REQUIRE(linear.size() == 1);
  REQUIRE(linear[0]->launches()->size() == 1);
  const auto* l = linear[0]->launches()->Get(0);
  CHECK(l->input().buffer().space() == fb::RefSpace::Foreign);
  CHECK(l->input().buffer().ordinal() == 0);
  CHECK(l->weight().buffer().ordinal() == 1);
  CHECK(l->output().buffer().ordinal() == 2);

  auto copy = trace.all<fb::EncodeCopy>(fb::EventBody::EncodeCopy);
  REQUIRE(copy.size() == 1);
  CHECK(copy[0]->source()->ordinal() == 2);
  CHECK(copy[0]->destination()->ordinal() == 1);

  auto optional = trace.all<fb::CoalesceProgramBindings>(fb::EventBody::CoalesceProgramBindings);
  REQUIRE(optional.size() == 1);
  REQUIRE(optional[0]->commands_in()->size() == 1);
  CHECK(optional[0]->commands_in()->Get(0)->space() == fb::RefSpace::Foreign);
}

TEST_CASE("every object a recorded event names was created or introduced before it, and is live") {
  // The recorder's whole-trace check, over schema::event_links (the links the replay plan's rules
  // read too): the contract workload, which names foreign streams, buffers, fences and commands
  // and calls every optional method, recorded and then walked event by event.
  auto sink = std::make_shared<MemorySink::State>();
  auto foreign = make_reference("device.recorder.foreign");
  {
    auto rec = record_to_memory(make_reference(), sink);
    vtrace::workloads::WorkloadSpec spec;
    spec.kind = vtrace::workloads::WorkloadKind::kContract;
    spec.seed = 3;
    auto report = vtrace::workloads::run_workload(spec, *rec, foreign.get());
    INFO((report ? std::string() : report.error().message));
    REQUIRE(report.has_value());
    REQUIRE(rec->close().has_value());
  }
  auto trace = read_trace(sink->copy());
  REQUIRE(trace.reader->complete());
  using Space = schema::ObjectRef::Space;
  std::array<std::set<std::uint64_t>, schema::kObjectKindCount> own, foreign_seen, released;
  std::uint64_t uses = 0;
  std::uint64_t foreign_uses = 0;
  std::uint64_t payloads = 0;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const auto links = schema::event_links(trace.event(i));
    INFO(fmt::format("event {} ({})", i, schema::event_kind_name(trace.event(i))));
    for (const auto& use : links.uses) {
      const auto k = schema::index_of(use.kind);
      INFO(use.ref.to_string(use.kind));
      if (use.ref.space == Space::kOwn) {
        CHECK(own[k].contains(use.ref.ordinal));
        CHECK_FALSE(released[k].contains(use.ref.ordinal));
      } else {
        CHECK(foreign_seen[k].contains(use.ref.ordinal));
        ++foreign_uses;
      }
      ++uses;
    }
    for (const auto& c : links.creates) {
      auto& set = c.ref.space == Space::kOwn ? own : foreign_seen;
      // Ordinals are never reused, in either namespace.
      CHECK(set[schema::index_of(c.kind)].insert(c.ref.ordinal).second);
    }
    for (const auto& r : links.releases) {
      CHECK(own[schema::index_of(r.kind)].contains(r.ref.ordinal));
      CHECK(released[schema::index_of(r.kind)].insert(r.ref.ordinal).second);
    }
    for (const auto& id : links.payloads) {
      CHECK(trace.reader->blob(id).has_value());
      ++payloads;
    }
  }
  CHECK(uses > 300);
  CHECK(foreign_uses >= 4);
  CHECK(payloads > 20);
  // Every buffer, stream and fence the workload made was released before it returned (a command
  // ends in the submit or coalesce that consumes it, or in a CommandReleased when it was dropped).
  for (const auto kind :
       {schema::ObjectKind::kBuffer, schema::ObjectKind::kStream, schema::ObjectKind::kFence}) {
    INFO(schema::object_kind_name(kind));
    CHECK(released[schema::index_of(kind)] == own[schema::index_of(kind)]);
    CHECK_FALSE(own[schema::index_of(kind)].empty());
  }
}
