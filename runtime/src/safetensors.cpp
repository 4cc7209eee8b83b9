#include "vtrace/runtime/safetensors.h"

#include <algorithm>
#include <fstream>
#include <string_view>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace vtrace::runtime {

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

constexpr std::pair<ElementType, std::string_view> kDtypeNames[] = {
    {ElementType::kBool, "BOOL"}, {ElementType::kU8, "U8"},   {ElementType::kU32, "U32"},
    {ElementType::kI8, "I8"},     {ElementType::kI32, "I32"}, {ElementType::kF16, "F16"},
    {ElementType::kBf16, "BF16"}, {ElementType::kF32, "F32"},
};

std::optional<ElementType> parse_dtype(std::string_view text) {
  for (const auto& [type, name] : kDtypeNames) {
    if (name == text) return type;
  }
  return std::nullopt;
}

std::string_view dtype_name(ElementType type) {
  for (const auto& [candidate, name] : kDtypeNames) {
    if (candidate == type) return name;
  }
  return "?";
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// product(shape) * element size, or nullopt on overflow.
std::optional<std::uint64_t> byte_size(const std::vector<std::uint64_t>& shape, ElementType type) {
  std::uint64_t bytes = element_size_bytes(type);
  for (std::uint64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, dim, &bytes)) return std::nullopt;
  }
  return bytes;
}

std::unexpected<SafetensorsError> fail(const std::string& origin, const std::string& what) {
  return std::unexpected(SafetensorsError{origin + ": " + what});
}

}  // namespace

std::expected<SafetensorsFile, SafetensorsError> SafetensorsFile::open(
    const std::filesystem::path& path) {
  const std::string origin = path.string();
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return fail(origin, "cannot read file size: " + ec.message());
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(origin, "cannot open file");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::uintmax_t>(file.gcount()) != size) return fail(origin, "short read");
  return parse(std::move(bytes), path.filename().string());
}

std::expected<SafetensorsFile, SafetensorsError> SafetensorsFile::parse(
    std::vector<std::uint8_t> bytes, std::string origin) {
  if (bytes.size() < 8) {
    return fail(origin, "file has " + std::to_string(bytes.size()) +
                            " bytes, fewer than the 8-byte header length");
  }
  std::uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) {
    header_length = header_length << 8 | bytes[static_cast<std::size_t>(i)];
  }
  // Bound before touching the header, so a hostile length allocates nothing.
  const std::uint64_t available = bytes.size() - 8;
  if (header_length > kMaxHeaderBytes || header_length > available) {
    return fail(origin, "header length " + std::to_string(header_length) +
                            " exceeds the file's remaining " + std::to_string(available) +
                            " bytes or the 100 MiB limit");
  }
  const auto header_begin = bytes.begin() + 8;
  const auto header_end = header_begin + static_cast<std::ptrdiff_t>(header_length);
  // nlohmann keeps the last of two equal keys silently; a safetensors header with a repeated key
  // is ambiguous, so the callback notes the first repeat and the file is refused naming it.
  std::vector<std::set<std::string>> keys_per_object;
  std::optional<std::string> repeated_key;
  const nlohmann::json::parser_callback_t note_repeats =
      [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start) keys_per_object.emplace_back();
        if (event == Event::object_end && !keys_per_object.empty()) keys_per_object.pop_back();
        if (event == Event::key && !keys_per_object.empty() && parsed.is_string() &&
            !keys_per_object.back().insert(parsed.get<std::string>()).second && !repeated_key) {
          repeated_key = parsed.get<std::string>();
        }
        return true;
      };
  const nlohmann::json header =
      nlohmann::json::parse(header_begin, header_end, note_repeats, /*allow_exceptions=*/false);
  if (header.is_discarded()) return fail(origin, "header is not valid JSON");
  if (repeated_key) return fail(origin, "header names `" + *repeated_key + "` twice");
  if (!header.is_object()) return fail(origin, "header is not a JSON object");

  SafetensorsFile file;
  file.origin_ = std::move(origin);
  file.data_start_ = 8 + header_length;
  const std::uint64_t data_size = bytes.size() - file.data_start_;

  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return fail(file.origin_, "__metadata__ is not an object");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) {
          return fail(file.origin_, "__metadata__ value `" + key + "` is not a string");
        }
        file.metadata_.emplace(key, text.get<std::string>());
      }
      continue;
    }
    const std::string where = "tensor `" + name + "`";
    if (!value.is_object() || value.size() != 3 || !value.contains("dtype") ||
        !value.contains("shape") || !value.contains("data_offsets")) {
      return fail(file.origin_,
                  where + " must be an object with exactly dtype, shape and data_offsets");
    }
    const auto& dtype_json = value["dtype"];
    if (!dtype_json.is_string()) return fail(file.origin_, where + " has a non-string dtype");
    const auto dtype = parse_dtype(dtype_json.get<std::string>());
    if (!dtype) {
      return fail(file.origin_,
                  where + " has unsupported dtype `" + dtype_json.get<std::string>() + "`");
    }
    const auto& shape_json = value["shape"];
    if (!shape_json.is_array()) return fail(file.origin_, where + " has a non-array shape");
    std::vector<std::uint64_t> shape;
    for (const auto& dim : shape_json) {
      if (!dim.is_number_unsigned()) {
        return fail(file.origin_, where + " has a shape entry that is not a non-negative integer");
      }
      shape.push_back(dim.get<std::uint64_t>());
    }
    const auto& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      return fail(file.origin_, where + " needs data_offsets [begin, end] of two integers");
    }
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
    if (begin > end || end > data_size) {
      return fail(file.origin_, where + " has data_offsets " + range +
                                    " outside the data section of " + std::to_string(data_size) +
                                    " bytes");
    }
    const auto needed = byte_size(shape, *dtype);
    if (!needed || *needed != end - begin) {
      return fail(file.origin_,
                  where + " has data_offsets " + range + " but shape " + shape_text(shape) +
                      " of " + std::string(dtype_name(*dtype)) + " needs " +
                      (needed ? std::to_string(*needed) + " bytes" : "more than 2^64 bytes"));
    }
    file.entries_.emplace(name, Entry{*dtype, std::move(shape), begin, end});
  }

  // As the format requires: tensors tile the data section exactly, without overlap or holes.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : file.entries_) ranges.emplace_back(entry.begin, entry.end);
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin < covered) {
      return fail(file.origin_, "tensors overlap at byte " + std::to_string(begin));
    }
    if (begin > covered) {
      return fail(file.origin_, "data section has a gap at byte " + std::to_string(covered));
    }
    covered = end;
  }
  if (covered != data_size) {
    return fail(file.origin_, "data section has " + std::to_string(data_size - covered) +
                                  " trailing bytes no tensor describes");
  }
  file.bytes_ = std::move(bytes);
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::pair<std::uint64_t, std::string>> ordered;
  for (const auto& [name, entry] : entries_) ordered.emplace_back(entry.begin, name);
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> result;
  for (auto& [begin, name] : ordered) result.push_back(std::move(name));
  return result;
}

std::expected<TensorView, SafetensorsError> SafetensorsFile::tensor(const std::string& name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) return fail(origin_, "no tensor `" + name + "`");
  const Entry& entry = found->second;
  const std::span<const std::uint8_t> all(bytes_);
  return TensorView{name, entry.dtype, entry.shape,
                    all.subspan(static_cast<std::size_t>(data_start_ + entry.begin),
                                static_cast<std::size_t>(entry.end - entry.begin))};
}

std::expected<TensorView, SafetensorsError> SafetensorsFile::f16_tensor(
    const std::string& name, std::span<const std::uint64_t> shape) const {
  auto view = tensor(name);
  if (!view) return view;
  if (view->dtype != ElementType::kF16) {
    return fail(origin_, "tensor `" + name + "` is " + std::string(dtype_name(view->dtype)) +
                             ", expected F16");
  }
  if (!std::equal(view->shape.begin(), view->shape.end(), shape.begin(), shape.end())) {
    return fail(origin_, "tensor `" + name + "` has shape " + shape_text(view->shape) +
                             ", expected " +
                             shape_text(std::vector<std::uint64_t>(shape.begin(), shape.end())));
  }
  return view;
}

std::expected<void, SafetensorsError> write_safetensors(const std::filesystem::path& path,
                                                        const std::vector<TensorToWrite>& tensors) {
  const std::string origin = path.string();
  std::vector<const TensorToWrite*> sorted;
  for (const auto& tensor : tensors) sorted.push_back(&tensor);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const TensorToWrite& tensor = *sorted[i];
    if (i > 0 && sorted[i - 1]->name == tensor.name) {
      return fail(origin, "tensor `" + tensor.name + "` is listed twice");
    }
    if (tensor.name == "__metadata__") return fail(origin, "`__metadata__` is not a tensor name");
    const auto needed = byte_size(tensor.shape, tensor.dtype);
    if (!needed || *needed != tensor.bytes.size()) {
      return fail(origin, "tensor `" + tensor.name + "` has " +
                              std::to_string(tensor.bytes.size()) + " bytes but shape " +
                              shape_text(tensor.shape) + " of " +
                              std::string(dtype_name(tensor.dtype)) + " needs a different count");
    }
    header[tensor.name] = {{"dtype", dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + *needed}}};
    offset += *needed;
  }
  std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return fail(origin, "cannot create file");
  const std::uint64_t length = text.size();
  for (int shift = 0; shift < 64; shift += 8) {
    file.put(static_cast<char>(static_cast<std::uint8_t>(length >> shift)));
  }
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto* tensor : sorted) {
    file.write(reinterpret_cast<const char*>(tensor->bytes.data()),
               static_cast<std::streamsize>(tensor->bytes.size()));
  }
  file.close();
  if (!file) return fail(origin, "write failed");
  return {};
}

}  // namespace vtrace::runtime
