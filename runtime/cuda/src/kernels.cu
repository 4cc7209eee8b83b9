// The strict dense-linear kernels' launches (kernels.h). The device code is kernels_device.h's,
// which the host test also runs (through a shim), and so are the launches' choices (vector
// loads, the decode grid, the row chunks); this file is only what nvcc alone compiles: the launch
// syntax, the shared-memory attribute and the choice of kernel.
#include <cuda_runtime.h>

#include "kernels.h"
#include "kernels_device.h"

namespace vtrace::runtime::cuda::kernels {

namespace {

using namespace vtrace::runtime::cuda::kernels::device;

template <int Rows>
cudaError_t launch_decode(const std::uint8_t* input, const std::uint8_t* weight,
                          std::uint8_t* output, long long k, long long out_features, bool vec,
                          cudaStream_t stream) {
  using Config = DecodeConfig<Rows>;
  using Shape = DecodeShape<Rows, Config::kRowsPerThread, Config::kTileK, Config::kStages,
                            Config::kWarps>;
  // The stages are dynamic shared memory, more than the 48 KiB a launch may take unasked: ask
  // once per instantiation (per process; the runtime uses one device).
  static const cudaError_t configured =
      cudaFuncSetAttribute(decode_kernel<Rows>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(Shape::kSharedBytes));
  if (configured != cudaSuccess) return configured;
  const dim3 grid(decode_blocks(out_features));
  const dim3 block(kDecodeTileOut, Config::kWarps);
  decode_kernel<Rows><<<grid, block, Shape::kSharedBytes, stream>>>(input, weight, output, k,
                                                                    out_features, vec);
  return cudaGetLastError();
}

// A configuration C (strict_arith.h, ConvertedConfig) of the converted decode kernel
// (kernels_device.h), a candidate for launch_decode's place.
template <int Rows, typename C>
cudaError_t launch_converted(const std::uint8_t* input, const std::uint8_t* weight,
                             std::uint8_t* output, long long k, long long out_features, bool vec,
                             cudaStream_t stream) {
  using Shape = ConvertedShapeOf<Rows, C>;
  const auto kernel = converted_decode_kernel<Rows, Shape::kRowLanes, C::kOutsPerLane, C::kTileK,
                                              C::kStages, C::kConvertWarps>;
  static const cudaError_t configured = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Shape::kSharedBytes));
  if (configured != cudaSuccess) return configured;
  const dim3 grid(decode_blocks(out_features));
  const dim3 block(32, Shape::kWarps);
  kernel<<<grid, block, Shape::kSharedBytes, stream>>>(input, weight, output, k, out_features, vec);
  return cudaGetLastError();
}

// Launches the row blocks of a kernel with tiles of tile_rows x tile_out outputs in chunks
// (for_each_row_chunk): launch(grid, row_base) makes one <<<>>> launch of the chunk whose first
// row is row_base. Answers the first launch's error, or cudaSuccess.
template <typename Launch>
cudaError_t launch_row_blocks(long long rows, long long out_features, int tile_rows,
                              int tile_out, Launch&& launch) {
  cudaError_t status = cudaSuccess;
  for_each_row_chunk(rows, out_features, tile_rows, tile_out, kMaxRowBlocks,
                     [&](unsigned blocks_x, unsigned blocks_y, long long row_base) {
                       launch(dim3(blocks_x, blocks_y), row_base);
                       status = cudaGetLastError();
                       return status == cudaSuccess;
                     });
  return status;
}

}  // namespace

cudaError_t launch_strict_dense_linear(const std::uint8_t* input, const std::uint8_t* weight,
                                       std::uint8_t* output, std::uint64_t rows,
                                       std::uint64_t in_features, std::uint64_t out_features,
                                       cudaStream_t stream, strict::KernelChoice choice) {
  // A <<<>>> launch reports through the thread's last error, which any earlier runtime call on
  // this thread may have set and left (cudaEventQuery's cudaErrorNotReady for a pending fence, a
  // cudaMalloc that ran out of memory): clear it, so that the status read after each launch is
  // that launch's own. An error that broke the context is sticky and still comes back.
  (void)cudaGetLastError();
  const auto k = static_cast<long long>(in_features);
  const auto outs = static_cast<long long>(out_features);
  const auto row_count = static_cast<long long>(rows);
  const bool vec = vector_loads(input, weight, k);
  cudaError_t decode_launched = cudaSuccess;
  const auto decode = [&](auto rows_constant) {
    constexpr int kRows = decltype(rows_constant)::value;
    const auto converted = [&](auto config) {
      decode_launched =
          launch_converted<kRows, decltype(config)>(input, weight, output, k, outs, vec, stream);
    };
    if (!with_converted_config(choice.decode, converted)) {
      decode_launched = launch_decode<kRows>(input, weight, output, k, outs, vec, stream);
    }
  };
  if (with_decode_rows(row_count, decode)) return decode_launched;
  cudaError_t prefill_launched = cudaSuccess;
  const auto pipelined = [&](auto config) {
    using C = decltype(config);
    using Shape = PipelinedShape<C::kTileRows, C::kTileOut, C::kMicroRows, C::kMicroOut,
                                 C::kTileK>;
    prefill_launched = launch_row_blocks(
        row_count, outs, C::kTileRows, C::kTileOut, [&](dim3 grid, long long row_base) {
          pipelined_kernel<C::kTileRows, C::kTileOut, C::kMicroRows, C::kMicroOut, C::kTileK>
              <<<grid, Shape::kThreads, 0, stream>>>(input, weight, output,
                                                     row_count, row_base, k,
                                                     outs, vec);
        });
  };
  if (with_pipelined_config(choice.prefill, pipelined)) return prefill_launched;
  return launch_row_blocks(row_count, outs, kTiledTileRows, kTiledTileOut,
                           [&](dim3 grid, long long row_base) {
                             tiled_kernel<<<grid, kTiledThreads, 0, stream>>>(
                                 input, weight, output, row_count, row_base, k,
                                 outs, vec);
                           });
}

cudaError_t check_kernel_image() {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, decode_kernel<1>);
  (void)cudaGetLastError();  // the failure is answered here, not left for a later launch
  return status;
}

}  // namespace vtrace::runtime::cuda::kernels
