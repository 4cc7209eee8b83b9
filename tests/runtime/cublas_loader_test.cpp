// load_cublas (runtime/cuda/src/cublas_linear.h), the real one: cuBLAS is not linked into vtrace
// but loaded when cuda-cublas opens. A build with the CUDA runtimes found the toolkit, so the
// library is there to load (by the loader's paths or the build's toolkit folder), and the host-only
// cublasGetStatusString answers without a GPU.
#include <catch2/catch.hpp>
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
