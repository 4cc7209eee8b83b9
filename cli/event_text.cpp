#include "event_text.h"

#include <flatbuffers/idl.h>

#include "embedded_schema.h"

namespace vtrace::cli {

struct EventText::Impl {
  flatbuffers::Parser json;
  flatbuffers::Parser text;
};

EventText::EventText(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EventText::EventText(EventText&&) noexcept = default;
EventText::~EventText() = default;

std::expected<EventText, std::string> EventText::create() {
  auto impl = std::make_unique<Impl>();
  const std::string schema(kEmbeddedVtraceFbs);
  for (auto* parser : {&impl->json, &impl->text}) {
    parser->opts.output_default_scalars_in_json = true;  // every field, even at its default
    parser->opts.output_enum_identifiers = true;
    parser->opts.indent_step = -1;                       // one line
    parser->opts.strict_json = parser == &impl->json;
    if (!parser->Parse(schema.c_str())) {
      return std::unexpected("the embedded event schema does not parse: " + parser->error_);
    }
  }
  return EventText(std::move(impl));
}

namespace {
std::expected<std::string, std::string> render(const flatbuffers::Parser& parser,
                                               std::span<const std::uint8_t> event) {
  std::string out;
  if (!flatbuffers::GenerateText(parser, event.data(), &out)) {
    return std::unexpected("the event could not be rendered as text");
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

std::expected<std::string, std::string> EventText::json(std::span<const std::uint8_t> event) const {
  return render(impl_->json, event);
}

std::expected<std::string, std::string> EventText::text(std::span<const std::uint8_t> event) const {
  return render(impl_->text, event);
}

}  // namespace vtrace::cli
