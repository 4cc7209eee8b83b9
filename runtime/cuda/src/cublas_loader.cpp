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

}  // namespace

std::expected<CublasApi, std::string> load_cublas_from(const std::string& soname,
                                                       const std::string& fallback_dir) {
  // The loader's paths first (LD_LIBRARY_PATH, ld.so.cache), then the fallback folder.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const std::string first = loader_words();
    const std::string fallback = fallback_dir + "/" + soname;
    library = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return std::unexpected("cuBLAS cannot be loaded (" + first + "; nor from " + fallback + ")");
    }
  }
  CublasApi api;
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
    dlclose(library);
    return std::unexpected("cuBLAS cannot be loaded (" + soname + " lacks " + missing + ")");
  }
  return api;
}

std::expected<const CublasApi*, std::string> load_cublas() {
  static const std::expected<CublasApi, std::string> loaded = load_cublas_from(
      "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), VTRACE_CUBLAS_LIBRARY_DIR);
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

}  // namespace vtrace::runtime::cuda
