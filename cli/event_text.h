// Text and JSON renderings of one event, by FlatBuffers' text generator over the embedded
// schema/vtrace.fbs: every field of every event, named as in the schema.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>

namespace vtrace::cli {

class EventText {
 public:
  // Fails only if the embedded schema does not parse (a build error).
  static std::expected<EventText, std::string> create();
  EventText(EventText&&) noexcept;
  ~EventText();

  // Strict JSON of the whole `vtrace.fb.Event` (one line), or the error.
  std::expected<std::string, std::string> json(std::span<const std::uint8_t> event) const;
  // The same, in FlatBuffers' compact text form (unquoted keys), for people.
  std::expected<std::string, std::string> text(std::span<const std::uint8_t> event) const;

 private:
  struct Impl;
  explicit EventText(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtrace::cli
