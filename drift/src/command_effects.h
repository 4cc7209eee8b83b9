// What each encoded command of a plan reads and writes (internal to vtrace_drift): the regions
// --deep compares and --resync overwrites, and the buffers `vtrace extract` carries. Only the
// four kinds a StepExecutor can encode again (copy, upload, zero, dense linear) have effects;
// coalesced commands take their inputs' effects, in order.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/step_text.h"

namespace vtrace::drift::detail {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;

// A region a command writes, and what to say about the command.
struct Written {
  std::uint64_t buffer = 0;  // own ordinal
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
};
struct CommandInfo {
  std::uint64_t event = 0;
  std::string kind;
  std::string call;
  std::string shapes;
  const rp::ReplayStep* step = nullptr;  // the encode step (run again by run_private)
  std::uint64_t encoded_as = 0;           // the ordinal `step` creates (a coalesce renames it)
  std::vector<Written> writes;
  std::vector<Written> reads;  // the inputs --resync overwrites with the baseline's
  bool foreign = false;        // it names a foreign buffer (not in writes or reads)
};

inline std::string launch_shapes(const rp::step::EncodeDenseLinear& s) {
  std::string out;
  for (const auto& l : s.launches) {
    out += fmt::format("{}{}x{}x{}", out.empty() ? "" : " ", l.rows, l.in_features, l.out_features);
  }
  return out;
}

// What each encoded command writes, keyed by its recorded ordinal (own buffers only).
class WriteMap {
 public:
  // Takes the effects of the command `s` encodes (nothing for other steps). Steps in plan order.
  void visit(const rp::ReplayStep& s) {
    std::visit([&](const auto& b) { add(s, b); }, s.body);
  }
  // The effects of an own command visited so far; nullptr when unknown (not encoded by one of
  // the four kinds, or not own).
  const CommandInfo* find(const rp::ObjectRef& command) const {
    if (command.space != rp::ObjectRef::Space::kOwn) return nullptr;
    auto it = commands_.find(command.ordinal);
    return it == commands_.end() ? nullptr : &it->second;
  }

 private:
  static void add_region(CommandInfo& info, std::vector<Written>& into,
                         const rp::ObjectRef& buffer, std::uint64_t offset, std::uint64_t length) {
    if (buffer.space == rp::ObjectRef::Space::kForeign) info.foreign = true;
    if (buffer.space == rp::ObjectRef::Space::kOwn && length > 0) {
      into.push_back({buffer.ordinal, offset, length});
    }
  }
  static void write(CommandInfo& info, const rp::ObjectRef& buffer, std::uint64_t offset,
                    std::uint64_t length) {
    add_region(info, info.writes, buffer, offset, length);
  }
  static void read(CommandInfo& info, const rp::step::Region& r) {
    add_region(info, info.reads, r.buffer, r.offset_bytes, r.length_bytes);
  }
  CommandInfo info(const rp::ReplayStep& s, std::uint64_t command, std::string shapes) {
    return {s.ordinal, s.kind, rp::describe_step(s), std::move(shapes), &s, command, {}, {}, false};
  }
  void add(const rp::ReplayStep& s, const rp::step::EncodeCopy& b) {
    if (!b.command) return;
    auto i = info(s, *b.command, fmt::format("{} bytes", b.region.length_bytes()));
    write(i, b.destination, b.region.destination_offset_bytes(), b.region.length_bytes());
    add_region(i, i.reads, b.source, b.region.source_offset_bytes(), b.region.length_bytes());
    commands_[*b.command] = std::move(i);
  }
  void add(const rp::ReplayStep& s, const rp::step::EncodeUpload& b) {
    if (!b.command) return;
    auto i = info(s, *b.command, fmt::format("{} x {}", rt::element_type_name(b.layout.element_type()),
                                 b.layout.element_count()));
    write(i, b.destination, b.offset_bytes, b.payload_bytes);
    commands_[*b.command] = std::move(i);
  }
  void add(const rp::ReplayStep& s, const rp::step::EncodeZero& b) {
    if (!b.command) return;
    auto i = info(s, *b.command, fmt::format("{} bytes", b.length_bytes));
    write(i, b.destination, b.offset_bytes, b.length_bytes);
    commands_[*b.command] = std::move(i);
  }
  void add(const rp::ReplayStep& s, const rp::step::EncodeDenseLinear& b) {
    if (!b.command) return;
    auto i = info(s, *b.command, launch_shapes(b));
    for (const auto& l : b.launches) {
      write(i, l.output.buffer, l.output.offset_bytes, l.output.length_bytes);
      read(i, l.input);
      read(i, l.weight);
    }
    commands_[*b.command] = std::move(i);
  }
  void add(const rp::ReplayStep&, const rp::step::CoalesceProgramBindings& b) {
    // The outputs take the inputs' effects, in order, when the counts agree.
    if (b.commands_in.size() != b.commands_out.size()) return;
    for (std::size_t k = 0; k < b.commands_in.size(); ++k) {
      if (const auto* in = find(b.commands_in[k])) commands_[b.commands_out[k]] = *in;
    }
  }
  void add(const rp::ReplayStep&, const auto&) {}

  std::map<std::uint64_t, CommandInfo> commands_;
};

}  // namespace vtrace::drift::detail
