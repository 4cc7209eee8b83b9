// Text and JSON renderings of one event, or of a trace's footer summary, by FlatBuffers' text
// generator over the embedded schema/vtrace.fbs: every field, named as in the schema.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace vtrace::cli {

class EventText {
 public:
  // Fails only if the embedded schema does not parse (a build error).
  static std::expected<EventText, std::string> create();
  EventText(EventText&&) noexcept;
  ~EventText();

  // The whole `vtrace.fb.Event` as JSON, or the error. Every payload id (a `BlobRef` struct,
  // wherever the schema puts one) gets a member `hex` beside its `low` and `high`: the 32 hex
  // digits of BlobId::hex, which JSON tools keep exact (they round integers above 2^53) and which
  // are the keys of dump's `payloads`.
  std::expected<nlohmann::json, std::string> json(std::span<const std::uint8_t> event) const;
  // The same, in FlatBuffers' compact text form (unquoted keys), for people.
  std::expected<std::string, std::string> text(std::span<const std::uint8_t> event) const;
  // A `vtrace.fb.TraceSummary` (TraceReader::summary()), as JSON and as text. The bytes must have
  // passed schema::read_trace_summary (the verifier); the generator trusts its input.
  std::expected<nlohmann::json, std::string> summary_json(
      std::span<const std::uint8_t> summary) const;
  std::expected<std::string, std::string> summary_text(std::span<const std::uint8_t> summary) const;

 private:
  struct Impl;
  explicit EventText(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtrace::cli
