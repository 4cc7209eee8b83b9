# The CUDA runtimes (runtime/cuda/, docs/CUDA.md): found here, once.
#   VTRACE_CUDA=AUTO (default)  build them when a CUDA compiler is found, else say so once
#   VTRACE_CUDA=ON              a missing CUDA compiler or toolkit is a configure error
#   VTRACE_CUDA=OFF             never build them
# The compiler: CMAKE_CUDA_COMPILER, CUDACXX or nvcc on PATH as CMake looks for them, else
# /usr/local/cuda/bin/nvcc (the toolkit's default place, often not on PATH).
# Architectures: CMAKE_CUDA_ARCHITECTURES, default 90 (H100/H200), 80 at least (cp.async); `all`
# and below 80 are refused. `native` is refused: it needs
# a GPU at configure time, and the build must configure the same on a machine without one.
# Sets VTRACE_HAVE_CUDA (ON/OFF) and VTRACE_PC_CUDA_LIBS (vtrace.pc's CUDA libraries, or empty). The toolkit's targets CUDA::cudart_static and CUDA::cublas
# come from find_package(CUDAToolkit).
set(VTRACE_CUDA AUTO CACHE STRING "Build the CUDA runtimes: AUTO, ON or OFF")
set_property(CACHE VTRACE_CUDA PROPERTY STRINGS AUTO ON OFF)
if(NOT VTRACE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "VTRACE_CUDA is `${VTRACE_CUDA}`: use AUTO, ON or OFF")
endif()

set(VTRACE_HAVE_CUDA OFF)
set(VTRACE_PC_CUDA_LIBS "")
if(NOT VTRACE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_vtrace_nvcc_on_path nvcc)
    if(NOT _vtrace_nvcc_on_path)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures (default 90: H100/H200)")
    endif()
    if(CMAKE_CUDA_ARCHITECTURES MATCHES "native")
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES is `${CMAKE_CUDA_ARCHITECTURES}`: `native` "
                          "needs a GPU at configure time; name the architectures (e.g. 90)")
    endif()
    # The strict decode kernel copies with cp.async (sm_80 and newer): an older architecture, or
    # `all`, would stop the build in ptxas instead.
    foreach(_vtrace_arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
      string(REGEX MATCH "^[0-9]+" _vtrace_arch_number "${_vtrace_arch}")
      if(_vtrace_arch_number STREQUAL "" OR _vtrace_arch_number LESS 80)
        message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES has `${_vtrace_arch}`: the strict kernels "
                            "copy with cp.async, which needs sm_80 or newer; name architectures "
                            "of 80 and up (e.g. 90)")
      endif()
    endforeach()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND TARGET CUDA::cudart_static)
      set(VTRACE_HAVE_CUDA ON)
      # vtrace.pc's Libs after -lvtrace_runtime (cmake/vtrace.pc.in).
      set(VTRACE_PC_CUDA_LIBS "-lvtrace_runtime_cuda -l:libvtrace_runtime.a -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt ")
    endif()
  endif()
  if(NOT VTRACE_HAVE_CUDA)
    if(VTRACE_CUDA STREQUAL "ON")
      message(FATAL_ERROR "VTRACE_CUDA=ON but no CUDA compiler with its toolkit (cudart, cuBLAS) "
                          "was found: set CMAKE_CUDA_COMPILER or CUDACXX, or use VTRACE_CUDA=AUTO")
    endif()
    message(STATUS "vtrace: no CUDA compiler found: this build has no CUDA runtime (cuda, "
                   "cuda-cublas); set CMAKE_CUDA_COMPILER or CUDACXX to build them")
  else()
    message(STATUS "vtrace: CUDA runtimes cuda and cuda-cublas built with "
                   "${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION} for architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}")
  endif()
endif()
