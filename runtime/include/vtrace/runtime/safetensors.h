// A reader for safetensors files: 8-byte little-endian header length, a JSON header, then the
// tensor data. Used for the static weights of spec 10 (portable zero-then-upload path).
//
// The parser validates everything before handing out a byte: the header length against the file
// size and a 100 MiB bound, the JSON syntax, every entry's dtype, shape and data_offsets, that
// offsets lie inside the data section, that byte length == product(shape) * dtype size, and that
// tensors do not overlap. Only the dtypes of the contract's element types are accepted (F16,
// BF16, F32, U8, I8, I32, U32, BOOL); callers that need F16 check dtype themselves
// (SafetensorsFile::f16_tensor does).
//
// Ownership: SafetensorsFile owns the whole file's bytes; TensorView spans point into it.
// Thread rules: immutable after open; share freely.
// Errors: every function returns std::expected with a SafetensorsError naming the file and what is
//   wrong ("model.safetensors: tensor `w` has data_offsets [0, 9) but shape [2, 2] of F16 needs 8
//   bytes").
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "vtrace/runtime/types.h"

namespace vtrace::runtime {

struct SafetensorsError {
  std::string message;
};

struct TensorView {
  std::string name;
  ElementType dtype = ElementType::kF16;
  std::vector<std::uint64_t> shape;
  std::span<const std::uint8_t> bytes;  // little-endian, row-major
};

class SafetensorsFile {
 public:
  static std::expected<SafetensorsFile, SafetensorsError> open(const std::filesystem::path& path);
  // `origin` names the bytes in error messages.
  static std::expected<SafetensorsFile, SafetensorsError> parse(std::vector<std::uint8_t> bytes,
                                                                std::string origin);

  // Tensor names in file order of their data offsets.
  std::vector<std::string> names() const;
  std::expected<TensorView, SafetensorsError> tensor(const std::string& name) const;
  // The tensor, required to be F16 of the given shape.
  std::expected<TensorView, SafetensorsError> f16_tensor(const std::string& name,
                                                         std::span<const std::uint64_t> shape) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& origin() const { return origin_; }

 private:
  struct Entry {
    ElementType dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin;
    std::uint64_t end;
  };
  std::string origin_;
  std::vector<std::uint8_t> bytes_;
  std::uint64_t data_start_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (name, dtype, shape, bytes) as a safetensors file, entries sorted by name, data
// packed in that order. Used by workloads to generate seeded weights and by tests.
struct TensorToWrite {
  std::string name;
  ElementType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> bytes;
};
std::expected<void, SafetensorsError> write_safetensors(const std::filesystem::path& path,
                                                        const std::vector<TensorToWrite>& tensors);

}  // namespace vtrace::runtime
