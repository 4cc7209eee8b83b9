#include "event_text.h"

#include <flatbuffers/idl.h>

#include "embedded_schema.h"
#include "vtrace/schema/format.h"

namespace vtrace::cli {

struct EventText::Impl {
  flatbuffers::Parser json;
  flatbuffers::Parser text;
  flatbuffers::Parser summary_json;  // root TraceSummary
  flatbuffers::Parser summary_text;
};

EventText::EventText(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EventText::EventText(EventText&&) noexcept = default;
EventText::~EventText() = default;

std::expected<EventText, std::string> EventText::create() {
  auto impl = std::make_unique<Impl>();
  const std::string schema(kEmbeddedVtraceFbs);
  for (auto* parser : {&impl->json, &impl->text, &impl->summary_json, &impl->summary_text}) {
    parser->opts.output_default_scalars_in_json = true;  // every field, even at its default
    parser->opts.output_enum_identifiers = true;
    parser->opts.indent_step = -1;                       // one line
    parser->opts.strict_json = parser == &impl->json || parser == &impl->summary_json;
    if (!parser->Parse(schema.c_str())) {
      return std::unexpected("the embedded event schema does not parse: " + parser->error_);
    }
  }
  for (auto* parser : {&impl->summary_json, &impl->summary_text}) {
    if (!parser->SetRootType("TraceSummary")) {
      return std::unexpected("the embedded event schema has no TraceSummary table");
    }
  }
  return EventText(std::move(impl));
}

namespace {
std::expected<std::string, std::string> render(const flatbuffers::Parser& parser,
                                               std::span<const std::uint8_t> event) {
  std::string out;
  if (!flatbuffers::GenerateText(parser, event.data(), &out)) {
    return std::unexpected("the bytes could not be rendered as text");
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

namespace {
// Adds `hex` to every BlobRef in `value`, a JSON rendering of a table or struct of type `def`,
// following the schema: nested tables and structs, vectors of them, and unions (by the
// identifier in their `<name>_type` field).
void add_payload_hex(nlohmann::json& value, const flatbuffers::StructDef& def) {
  if (!value.is_object()) return;
  if (def.fixed && def.name == "BlobRef") {
    const schema::BlobId id{value.value("low", std::uint64_t{0}),
                            value.value("high", std::uint64_t{0})};
    value["hex"] = id.hex();
    return;
  }
  for (const flatbuffers::FieldDef* field : def.fields.vec) {
    const auto member = value.find(field->name);
    if (member == value.end()) continue;
    const flatbuffers::Type& type = field->value.type;
    if (type.base_type == flatbuffers::BASE_TYPE_STRUCT && type.struct_def != nullptr) {
      add_payload_hex(*member, *type.struct_def);
    } else if (type.base_type == flatbuffers::BASE_TYPE_VECTOR &&
               type.element == flatbuffers::BASE_TYPE_STRUCT && type.struct_def != nullptr &&
               member->is_array()) {
      for (auto& element : *member) add_payload_hex(element, *type.struct_def);
    } else if (type.base_type == flatbuffers::BASE_TYPE_UNION && type.enum_def != nullptr) {
      const auto tag = value.find(field->name + "_type");
      if (tag == value.end() || !tag->is_string()) continue;
      const flatbuffers::EnumVal* kind = type.enum_def->Lookup(tag->get<std::string>());
      if (kind != nullptr && kind->union_type.struct_def != nullptr) {
        add_payload_hex(*member, *kind->union_type.struct_def);
      }
    }
  }
}
}  // namespace

namespace {
// `bytes` rendered by `parser` as JSON, with `hex` added to every payload id (add_payload_hex,
// from the parser's root table).
std::expected<nlohmann::json, std::string> render_json(const flatbuffers::Parser& parser,
                                                       std::span<const std::uint8_t> bytes) {
  auto text = render(parser, bytes);
  if (!text) return std::unexpected(text.error());
  auto value = nlohmann::json::parse(*text, nullptr, false);
  if (value.is_discarded()) return std::unexpected("the JSON rendering does not parse");
  if (const auto* root = parser.root_struct_def_; root != nullptr) add_payload_hex(value, *root);
  return value;
}
}  // namespace

std::expected<nlohmann::json, std::string> EventText::json(
    std::span<const std::uint8_t> event) const {
  return render_json(impl_->json, event);
}

std::expected<std::string, std::string> EventText::text(std::span<const std::uint8_t> event) const {
  return render(impl_->text, event);
}

std::expected<nlohmann::json, std::string> EventText::summary_json(
    std::span<const std::uint8_t> summary) const {
  return render_json(impl_->summary_json, summary);
}

std::expected<std::string, std::string> EventText::summary_text(
    std::span<const std::uint8_t> summary) const {
  return render(impl_->summary_text, summary);
}

}  // namespace vtrace::cli
