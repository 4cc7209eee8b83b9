// Safetensors parsing and writing, static weight upload, and the end-to-end 2x2 example.
#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>
#include <fstream>

#include "runtime_test_support.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/runtime/static_weights.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;

namespace {

const std::filesystem::path kTinyLinear = VTRACE_TEST_DATA_DIR "/tiny_linear.safetensors";

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// A file image with the given header text and data bytes.
std::vector<std::uint8_t> image(const std::string& header, std::vector<std::uint8_t> data,
                                std::optional<std::uint64_t> declared_length = std::nullopt) {
  const std::uint64_t length = declared_length.value_or(header.size());
  std::vector<std::uint8_t> bytes;
  for (int shift = 0; shift < 64; shift += 8) bytes.push_back(static_cast<std::uint8_t>(length >> shift));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string parse_error(std::vector<std::uint8_t> bytes) {
  auto result = SafetensorsFile::parse(std::move(bytes), "bad.safetensors");
  REQUIRE_FALSE(result.has_value());
  return result.error().message;
}

}  // namespace

TEST_CASE("the shipped tiny linear file holds the spec's 2x2 F16 weight", "[runtime][safetensors]") {
  auto file = SafetensorsFile::open(kTinyLinear);
  REQUIRE(file.has_value());
  CHECK(file->names() == std::vector<std::string>{"linear.weight"});
  CHECK(file->origin() == "tiny_linear.safetensors");
  const std::uint64_t shape[] = {2, 2};
  auto tensor = file->f16_tensor("linear.weight", shape);
  REQUIRE(tensor.has_value());
  CHECK(tensor->dtype == ElementType::kF16);
  CHECK(tensor->shape == std::vector<std::uint64_t>{2, 2});
  CHECK(f16_values({tensor->bytes.begin(), tensor->bytes.end()}) ==
        std::vector<float>{2.0f, 1.0f, -1.0f, 3.0f});

  const std::uint64_t wrong_shape[] = {4};
  const auto mismatch = file->f16_tensor("linear.weight", wrong_shape);
  REQUIRE_FALSE(mismatch.has_value());
  CHECK(mismatch.error().message ==
        "tiny_linear.safetensors: tensor `linear.weight` has shape [2, 2], expected [4]");
  CHECK(file->tensor("missing").error().message == "tiny_linear.safetensors: no tensor `missing`");
}

TEST_CASE("the writer reproduces the shipped fixture byte for byte and reads back",
          "[runtime][safetensors]") {
  // Per process (two build trees testing at once must not share it), removed however the test
  // ends.
  const auto path = std::filesystem::temp_directory_path() /
                    ("vtrace_runtime_writer_test_" + std::to_string(::getpid()) + ".safetensors");
  struct Remover {
    std::filesystem::path path;
    ~Remover() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } const remover{path};
  REQUIRE(write_safetensors(path, {{"linear.weight", ElementType::kF16, {2, 2},
                                    f16_bytes({2.0f, 1.0f, -1.0f, 3.0f})}}));
  CHECK(read_file(path) == read_file(kTinyLinear));

  // Several tensors of several dtypes: sorted by name, packed in that order, 8-byte aligned data.
  REQUIRE(write_safetensors(path, {{"z.bias", ElementType::kF32, {3}, pattern(12)},
                                    {"a.mask", ElementType::kBool, {5}, pattern(5, 1)},
                                    {"m.scalar", ElementType::kI32, {}, pattern(4, 9)}}));
  const auto bytes = read_file(path);
  std::uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = header_length << 8 | bytes[static_cast<std::size_t>(i)];
  CHECK((8 + header_length) % 8 == 0);
  auto file = SafetensorsFile::open(path);
  REQUIRE(file.has_value());
  CHECK(file->names() == std::vector<std::string>{"a.mask", "m.scalar", "z.bias"});
  CHECK(std::ranges::equal(file->tensor("z.bias")->bytes, pattern(12)));
  CHECK(file->tensor("m.scalar")->shape.empty());
  CHECK(file->tensor("a.mask")->dtype == ElementType::kBool);

  const auto bad = write_safetensors(path, {{"w", ElementType::kF16, {2, 2}, pattern(9)}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("tensor `w` has 9 bytes") != std::string::npos);
  CHECK_FALSE(write_safetensors(path, {{"w", ElementType::kU8, {1}, {1}},
                                       {"w", ElementType::kU8, {1}, {2}}}));
}

TEST_CASE("metadata entries are exposed and must be string to string", "[runtime][safetensors]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  auto file = SafetensorsFile::parse(image(header, {7, 8}), "meta.safetensors");
  REQUIRE(file.has_value());
  CHECK(file->metadata().at("format") == "pt");
  CHECK(parse_error(image(R"({"__metadata__":{"n":1}})", {})).find("__metadata__ value `n`") !=
        std::string::npos);
}

TEST_CASE("malformed safetensors files fail with errors that name the problem",
          "[runtime][safetensors]") {
  const auto entry = [](const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
    return R"({"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
  };
  const std::vector<std::uint8_t> four(4, 0);

  SECTION("too short for the header length") {
    CHECK(parse_error({1, 2, 3}) ==
          "bad.safetensors: file has 3 bytes, fewer than the 8-byte header length");
  }
  SECTION("header length beyond the file or the 100 MiB bound") {
    CHECK(parse_error(image("{}", {}, 3)).find("header length 3 exceeds") != std::string::npos);
    CHECK(parse_error(image("{}", {}, 0xFFFFFFFFFFFFFFFFull)).find("100 MiB") != std::string::npos);
  }
  SECTION("bad JSON and a non-object header") {
    CHECK(parse_error(image("{\"w\":", {})) == "bad.safetensors: header is not valid JSON");
    CHECK(parse_error(image("[1,2]", {})) == "bad.safetensors: header is not a JSON object");
  }
  SECTION("a tensor or field named twice") {
    const std::string w = entry("U8", "[4]", "[0,4]");
    CHECK(parse_error(image(R"({"w":)" + w + R"(,"w":)" + w + "}", pattern(4))) ==
          "bad.safetensors: header names `w` twice");
    CHECK(parse_error(image(R"({"w":{"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                            pattern(4))) == "bad.safetensors: header names `dtype` twice");
  }
  SECTION("wrong or unsupported dtype") {
    CHECK(parse_error(image(R"({"w":)" + entry("F64", "[1]", "[0,8]") + "}", pattern(8))) ==
          "bad.safetensors: tensor `w` has unsupported dtype `F64`");
    CHECK(parse_error(image(R"({"w":)" + entry("f16", "[2]", "[0,4]") + "}", four)) ==
          "bad.safetensors: tensor `w` has unsupported dtype `f16`");
  }
  SECTION("entries with missing, extra or mistyped fields") {
    CHECK(parse_error(image(R"({"w":{"dtype":"F16","shape":[2]}})", four))
              .find("exactly dtype, shape and data_offsets") != std::string::npos);
    CHECK(parse_error(image(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4],"x":1}})", four))
              .find("exactly dtype, shape and data_offsets") != std::string::npos);
    CHECK(parse_error(image(R"({"w":)" + entry("F16", "[-2]", "[0,4]") + "}", four))
              .find("not a non-negative integer") != std::string::npos);
    CHECK(parse_error(image(R"({"w":)" + entry("F16", "[2]", "[0]") + "}", four))
              .find("needs data_offsets [begin, end]") != std::string::npos);
  }
  SECTION("offsets outside the data section or reversed") {
    CHECK(parse_error(image(R"({"w":)" + entry("F16", "[2]", "[0,6]") + "}", four)) ==
          "bad.safetensors: tensor `w` has data_offsets [0, 6) outside the data section of 4 bytes");
    CHECK(parse_error(image(R"({"w":)" + entry("F16", "[0]", "[4,2]") + "}", four))
              .find("outside the data section") != std::string::npos);
  }
  SECTION("shape and size disagree") {
    CHECK(parse_error(image(R"({"w":)" + entry("F16", "[2,2]", "[0,4]") + "}", four)) ==
          "bad.safetensors: tensor `w` has data_offsets [0, 4) but shape [2, 2] of F16 needs 8 "
          "bytes");
    CHECK(parse_error(image(R"({"w":)" + entry("U8", "[4294967296,4294967296]", "[0,4]") + "}",
                            four))
              .find("more than 2^64 bytes") != std::string::npos);
  }
  SECTION("overlapping tensors, gaps and trailing bytes") {
    CHECK(parse_error(image(R"({"a":)" + entry("U8", "[3]", "[0,3]") + R"(,"b":)" +
                                entry("U8", "[2]", "[2,4]") + "}",
                            four)) == "bad.safetensors: tensors overlap at byte 2");
    CHECK(parse_error(image(R"({"a":)" + entry("U8", "[1]", "[0,1]") + R"(,"b":)" +
                                entry("U8", "[2]", "[2,4]") + "}",
                            four)) == "bad.safetensors: data section has a gap at byte 1");
    CHECK(parse_error(image(R"({"a":)" + entry("U8", "[2]", "[0,2]") + "}", four)) ==
          "bad.safetensors: data section has 2 trailing bytes no tensor describes");
  }
  SECTION("f16_tensor rejects another dtype") {
    auto file = SafetensorsFile::parse(image(R"({"w":)" + entry("U8", "[4]", "[0,4]") + "}", four),
                                       "u8.safetensors");
    REQUIRE(file.has_value());
    const std::uint64_t shape[] = {4};
    CHECK(file->f16_tensor("w", shape).error().message ==
          "u8.safetensors: tensor `w` is U8, expected F16");
  }
  SECTION("a missing file") {
    const auto missing = SafetensorsFile::open("/nonexistent/vtrace/none.safetensors");
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().message.rfind("/nonexistent/vtrace/none.safetensors: ", 0) == 0);
  }
}

TEST_CASE("the 2x2 example runs end to end from the safetensors file", "[runtime][safetensors][e2e]") {
  auto runtime = make_reference("device.reference.l1.0");
  auto stream = std::move(*runtime->create_stream());
  auto file = SafetensorsFile::open(kTinyLinear);
  REQUIRE(file.has_value());
  const std::uint64_t shape[] = {2, 2};
  auto weight_tensor = file->f16_tensor("linear.weight", shape);
  REQUIRE(weight_tensor.has_value());

  auto weight = allocate(*runtime, 8, ElementType::kF16, 16, "resource.reference.linear.weight");
  auto input = allocate(*runtime, 4, ElementType::kF16);
  auto output = allocate(*runtime, 4, ElementType::kF16);
  const auto before = runtime->snapshot();
  const auto receipt =
      initialize_static_buffer(*runtime, *stream, *weight, weight_tensor->bytes, ElementType::kF16);
  REQUIRE(receipt.has_value());
  CHECK(receipt->uploaded_component_count == 1);
  CHECK(receipt->uploaded_bytes == 8);
  const auto initialized = runtime->snapshot();
  CHECK(initialized.uploaded_bytes == before.uploaded_bytes + 8);
  CHECK(initialized.submissions == before.submissions + 1);
  CHECK(initialized.commands == before.commands + 2);  // zero, then upload

  fill(*runtime, *stream, *input, f16_bytes({1.5f, -2.0f}));
  const DenseLinearLaunch launch{{input.get(), 0, 4}, {weight.get(), 0, 8}, {output.get(), 0, 4},
                                 1, 2, 2};
  submit_ok(*runtime, *stream,
            CommandBatch::singleton(std::move(*runtime->encode_dense_linear({{&launch, 1}, 1, 1}))));
  const auto readback = runtime->readback(*stream, *output, *CopyRegion::create(0, 0, 4),
                                          *HostTransferLayout::create(ElementType::kF16, 2));
  REQUIRE(readback.has_value());
  CHECK(f16_values(*readback) == std::vector<float>{1.0f, -7.5f});
  const auto after = runtime->snapshot();
  CHECK(after.dense_linear_launches == 1);
  CHECK(after.readback_bytes == 4);
  CHECK(after.live_allocations == 3);
  weight.reset();
  input.reset();
  output.reset();
  CHECK(runtime->snapshot().live_allocations == 0);
}

TEST_CASE("static initialisation zeroes the whole buffer before uploading at an offset",
          "[runtime][static_weights]") {
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  auto buffer = allocate(*runtime, 8, ElementType::kU8);
  fill(*runtime, *stream, *buffer, pattern(8));
  const std::vector<std::uint8_t> component = {1, 2, 3};
  const auto receipt = initialize_static_buffer(*runtime, *stream, *buffer, component,
                                                ElementType::kU8, 4);
  REQUIRE(receipt.has_value());
  CHECK(receipt->uploaded_bytes == 3);
  CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>{0, 0, 0, 0, 1, 2, 3, 0});

  // The first failing runtime call's error, unchanged, and nothing submitted.
  const auto before = runtime->snapshot();
  const auto past_end = initialize_static_buffer(*runtime, *stream, *buffer, component,
                                                 ElementType::kU8, 6);
  REQUIRE_FALSE(past_end.has_value());
  CHECK(past_end.error().kind() == ErrorKind::kRegionOutOfBounds);
  const auto odd = initialize_static_buffer(*runtime, *stream, *buffer, component,
                                            ElementType::kF16, 0);
  REQUIRE_FALSE(odd.has_value());
  CHECK(odd.error().kind() == ErrorKind::kUploadByteCountMismatch);
  CHECK(runtime->snapshot() == before);
}
