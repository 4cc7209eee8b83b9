# The link dependencies of the vtrace libraries, found one way for both of this file's users: the
# build (CMakeLists.txt includes it) and find_package(vtrace) (the installed vtraceConfig.cmake
# includes the installed copy), so a consumer finds exactly what the build found, the same way.
# Debian packages only:
#   Threads, fmt 9, nlohmann_json 3, FlatBuffers 2.0.8 (exactly)   their CMake packages
#   zstd    its CMake package when it has one (zstd::libzstd_shared), else pkg-config's libzstd
#   xxhash  xxhash.h and libxxhash (Debian ships no CMake package for it)
#   CUDAToolkit (cudart; cuBLAS is loaded at run time) for a package built with the CUDA runtimes (VTRACE_HAVE_CUDA; the
#           build itself finds it in cmake/VtraceCuda.cmake)
# The libraries link two imported targets defined here, whichever way zstd and xxhash were found,
# so the exported link interface names the same targets on every machine:
#   vtrace_zstd    zstd (VTRACE_ZSTD_TARGET names it, for the callers that use the variable)
#   vtrace_xxhash  xxhash's include directory and library
# Set VTRACE_DEPENDENCY_MODE to FIND_DEPENDENCY before including it from a package config: a
# missing dependency then makes the package not found, as find_dependency does (vtrace_FOUND
# FALSE, vtrace_NOT_FOUND_MESSAGE naming it, and this file returns), instead of a fatal error.
macro(_vtrace_missing_dependency sentence)
  if(VTRACE_DEPENDENCY_MODE STREQUAL "FIND_DEPENDENCY")
    set(vtrace_NOT_FOUND_MESSAGE "${sentence}")
    set(vtrace_FOUND FALSE)
    return()
  endif()
  message(FATAL_ERROR "${sentence}")
endmacro()

# find_package(<args> REQUIRED) in the build, find_dependency(<args>) in a package config.
macro(_vtrace_require_package)
  if(VTRACE_DEPENDENCY_MODE STREQUAL "FIND_DEPENDENCY")
    find_dependency(${ARGV})
  else()
    find_package(${ARGV} REQUIRED)
  endif()
endmacro()

# The versions, also written into vtrace.pc. FlatBuffers exactly: flatc's generated headers are
# installed with the schema headers and must match the library.
set(VTRACE_FMT_VERSION 9)
set(VTRACE_NLOHMANN_JSON_VERSION 3)
set(VTRACE_FLATBUFFERS_VERSION 2.0.8)

_vtrace_require_package(Threads)
_vtrace_require_package(fmt ${VTRACE_FMT_VERSION} CONFIG)
_vtrace_require_package(nlohmann_json ${VTRACE_NLOHMANN_JSON_VERSION} CONFIG)
# Exact case; the targets are flatbuffers::flatbuffers and flatbuffers::flatc.
_vtrace_require_package(FlatBuffers ${VTRACE_FLATBUFFERS_VERSION} EXACT CONFIG)

find_package(zstd CONFIG QUIET)
if(TARGET zstd::libzstd_shared)
  set(_vtrace_zstd zstd::libzstd_shared)
else()
  _vtrace_require_package(PkgConfig)
  pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
  if(NOT TARGET PkgConfig::ZSTD)
    _vtrace_missing_dependency(
      "vtrace needs zstd: neither its CMake package nor pkg-config's libzstd was found (Debian: libzstd-dev)")
  endif()
  set(_vtrace_zstd PkgConfig::ZSTD)
endif()
if(NOT TARGET vtrace_zstd)
  add_library(vtrace_zstd INTERFACE IMPORTED)
  target_link_libraries(vtrace_zstd INTERFACE ${_vtrace_zstd})
endif()
set(VTRACE_ZSTD_TARGET vtrace_zstd)

find_path(XXHASH_INCLUDE_DIR xxhash.h)
find_library(XXHASH_LIBRARY xxhash)
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  _vtrace_missing_dependency("vtrace needs xxhash.h and libxxhash (Debian: libxxhash-dev)")
endif()
if(NOT TARGET vtrace_xxhash)
  add_library(vtrace_xxhash INTERFACE IMPORTED)
  target_include_directories(vtrace_xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})
  target_link_libraries(vtrace_xxhash INTERFACE ${XXHASH_LIBRARY})
endif()

if(VTRACE_HAVE_CUDA AND VTRACE_DEPENDENCY_MODE STREQUAL "FIND_DEPENDENCY")
  find_dependency(CUDAToolkit)
endif()
