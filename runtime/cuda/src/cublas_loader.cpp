// load_cublas (cublas_linear.h): libcublas.so.<major> through dlopen, once per process. Not part
// of the emulated build: the cuda emulator defines load_cublas with its own cuBLAS.
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "cublas_linear.h"

namespace vtrace::runtime::cuda {

namespace {

std::string loader_words() {
  const char* words = dlerror();
  return words != nullptr ? words : "no reason given";
}

std::expected<const CublasApi*, std::string> load() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  // The loader's paths first (LD_LIBRARY_PATH, ld.so.cache), then where the build found it.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const std::string first = loader_words();
    const std::string built = std::string(VTRACE_CUBLAS_LIBRARY_DIR) + "/" + soname;
    library = dlopen(built.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return std::unexpected("cuBLAS cannot be loaded (" + first + "; nor from " + built + ")");
    }
  }
  static CublasApi api;
  std::string missing;
  const auto resolve = [&](auto& slot, const char* symbol) {
    if (!missing.empty()) return;
    dlerror();
    void* found = dlsym(library, symbol);
    if (found == nullptr) {
      missing = std::string(symbol) + ": " + loader_words();
      return;
    }
    // POSIX: dlsym's answer for a function is the function's address.
    static_assert(sizeof slot == sizeof found);
    std::memcpy(&slot, &found, sizeof found);
  };
  resolve(api.create, "cublasCreate_v2");
  resolve(api.destroy, "cublasDestroy_v2");
  resolve(api.set_stream, "cublasSetStream_v2");
  resolve(api.gemm_ex, "cublasGemmEx");
  resolve(api.status_string, "cublasGetStatusString");
  if (!missing.empty()) {
    return std::unexpected("cuBLAS cannot be loaded (" + soname + " lacks " + missing + ")");
  }
  return &api;
}

}  // namespace

std::expected<const CublasApi*, std::string> load_cublas() {
  static const std::expected<const CublasApi*, std::string> loaded = load();
  return loaded;
}

}  // namespace vtrace::runtime::cuda
