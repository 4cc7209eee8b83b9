// load_cublas (runtime/cuda/src/cublas_linear.h), the real one: cuBLAS is not linked into vtrace
// but loaded when cuda-cublas opens. A build with the CUDA runtimes found the toolkit, so the
// library is there to load (by the loader's paths or the build's toolkit folder), and the host-only
// cublasGetStatusString answers without a GPU. load_cublas_from's other answers: the folder it
// falls back to, a library that cannot be found, one that lacks a function.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cublas_linear.h"

namespace cu = vtrace::runtime::cuda;

TEST_CASE("cuBLAS is loaded at run time, once, with every function cuda-cublas calls",
          "[cublas-loader]") {
  const auto loaded = cu::load_cublas();
  INFO((loaded ? std::string() : loaded.error()));
  REQUIRE(loaded.has_value());
  const cu::CublasApi& api = **loaded;
  CHECK(api.create != nullptr);
  CHECK(api.destroy != nullptr);
  CHECK(api.set_stream != nullptr);
  CHECK(api.gemm_ex != nullptr);
  REQUIRE(api.status_string != nullptr);
  CHECK(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized") !=
        std::string::npos);
  const auto again = cu::load_cublas();
  REQUIRE(again.has_value());
  CHECK(*again == *loaded);  // the same table: loaded once
}

TEST_CASE("cuBLAS is loaded from the fallback folder when the loader's paths lack it",
          "[cublas-loader]") {
  // A name no loader path has, in a folder of its own beside the toolkit's library.
  std::string folder = (std::filesystem::temp_directory_path() / "vtrace-cublas-XXXXXX").string();
  REQUIRE(mkdtemp(folder.data()) != nullptr);
  const std::string name = "libvtrace-test-cublas.so";
  std::filesystem::create_symlink(std::string(VTRACE_CUBLAS_LIBRARY_DIR) + "/libcublas.so." +
                                      std::to_string(CUBLAS_VER_MAJOR),
                                  folder + "/" + name);
  const auto loaded = cu::load_cublas_from(name, folder);
  std::filesystem::remove_all(folder);
  INFO((loaded ? std::string() : loaded.error()));
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->status_string != nullptr);
  CHECK(std::string(loaded->status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized") !=
        std::string::npos);
}

TEST_CASE("a cuBLAS that cannot be found is named with both places looked in",
          "[cublas-loader]") {
  const auto loaded = cu::load_cublas_from("libvtrace-no-such-cublas.so.1", "/nonexistent/lib");
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error() ==
        "cuBLAS cannot be loaded (libvtrace-no-such-cublas.so.1: cannot open shared object file: "
        "No such file or directory; nor from /nonexistent/lib/libvtrace-no-such-cublas.so.1)");
}

TEST_CASE("a library lacking a cuBLAS function is refused naming the function",
          "[cublas-loader]") {
  // libm is on every glibc system and has none of cuBLAS's functions.
  const auto loaded = cu::load_cublas_from("libm.so.6", "/nonexistent/lib");
  REQUIRE_FALSE(loaded.has_value());
  INFO(loaded.error());
  CHECK(loaded.error().starts_with("cuBLAS cannot be loaded (libm.so.6 lacks cublasCreate_v2: "));
  CHECK(loaded.error().ends_with(")"));
}
