// What each command reads and writes (command_effects.h).
#include "vtrace/drift/command_effects.h"

#include <fmt/format.h>

#include "vtrace/replayer/step_text.h"

namespace vtrace::drift {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;

namespace {

void add_region(CommandEffects& e, std::vector<Region>& into, const rp::ObjectRef& buffer,
                std::uint64_t offset, std::uint64_t length) {
  if (buffer.space == rp::ObjectRef::Space::kForeign) e.foreign = true;
  if (buffer.space == rp::ObjectRef::Space::kOwn && length > 0) {
    into.push_back({buffer.ordinal, offset, length});
  }
}

void read(CommandEffects& e, const rp::step::Region& r) {
  add_region(e, e.reads, r.buffer, r.offset_bytes, r.length_bytes);
}

CommandEffects effects(const rp::ReplayStep& s, std::uint64_t command, std::string shapes) {
  return {s.ordinal, s.kind, rp::describe_step(s), std::move(shapes), &s, command, {}, {}, false};
}

// The effects of one encode step; nullopt for a step that encodes nothing re-encodable.
std::optional<CommandEffects> of(const rp::ReplayStep& s, const rp::step::EncodeCopy& b) {
  if (!b.command) return std::nullopt;
  auto e = effects(s, *b.command, fmt::format("{} bytes", b.region.length_bytes()));
  add_region(e, e.writes, b.destination, b.region.destination_offset_bytes(),
             b.region.length_bytes());
  add_region(e, e.reads, b.source, b.region.source_offset_bytes(), b.region.length_bytes());
  return e;
}
std::optional<CommandEffects> of(const rp::ReplayStep& s, const rp::step::EncodeUpload& b) {
  if (!b.command) return std::nullopt;
  auto e = effects(s, *b.command,
                   fmt::format("{} x {}", rt::element_type_name(b.layout.element_type()),
                               b.layout.element_count()));
  add_region(e, e.writes, b.destination, b.offset_bytes, b.payload_bytes);
  return e;
}
std::optional<CommandEffects> of(const rp::ReplayStep& s, const rp::step::EncodeZero& b) {
  if (!b.command) return std::nullopt;
  auto e = effects(s, *b.command, fmt::format("{} bytes", b.length_bytes));
  add_region(e, e.writes, b.destination, b.offset_bytes, b.length_bytes);
  return e;
}
std::optional<CommandEffects> of(const rp::ReplayStep& s, const rp::step::EncodeDenseLinear& b) {
  if (!b.command) return std::nullopt;
  auto e = effects(s, *b.command, launch_shapes(b));
  for (const auto& l : b.launches) {
    add_region(e, e.writes, l.output.buffer, l.output.offset_bytes, l.output.length_bytes);
    read(e, l.input);
    read(e, l.weight);
  }
  return e;
}
std::optional<CommandEffects> of(const rp::ReplayStep&, const auto&) { return std::nullopt; }

}  // namespace

std::string launch_shapes(const rp::step::EncodeDenseLinear& s) {
  std::string out;
  for (const auto& l : s.launches) {
    out += fmt::format("{}{}x{}x{}", out.empty() ? "" : " ", l.rows, l.in_features, l.out_features);
  }
  return out;
}

void CommandEffectsMap::visit(const rp::ReplayStep& s) {
  if (const auto* c = std::get_if<rp::step::CoalesceProgramBindings>(&s.body)) {
    // The outputs take the inputs' effects, in order, when the counts agree.
    if (c->commands_in.size() != c->commands_out.size()) return;
    for (std::size_t k = 0; k < c->commands_in.size(); ++k) {
      if (const auto* in = find(c->commands_in[k])) commands_[c->commands_out[k]] = *in;
    }
    return;
  }
  auto e = std::visit([&](const auto& b) { return of(s, b); }, s.body);
  if (e) {
    const std::uint64_t ordinal = e->encoded_as;
    commands_[ordinal] = std::move(*e);
  }
}

const CommandEffects* CommandEffectsMap::find(const rp::ObjectRef& command) const {
  if (command.space != rp::ObjectRef::Space::kOwn) return nullptr;
  auto it = commands_.find(command.ordinal);
  return it == commands_.end() ? nullptr : &it->second;
}

}  // namespace vtrace::drift
