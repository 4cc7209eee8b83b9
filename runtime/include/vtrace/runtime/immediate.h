// Immediate operations: the common path of a product, one call each. Allocate a buffer of N
// elements, upload host bytes into it, run one dense linear, read a buffer back, without building
// requests, permits, batches and fences by hand.
//
// Nothing is hidden: each function is the fixed sequence of public DeviceRuntime calls named at
// its declaration, and nothing else. No state, no stream of its own, no cache, so a product mixes
// these functions freely with raw calls on the same runtime, stream and buffers, and a
// RecordingRuntime records exactly those calls (a product's trace replays like any other).
//
// Every operation that runs on the device submits ONE batch on the caller's stream and waits on
// its fence (submit_and_wait), so it has completed when the call returns. That is the price: one
// submit and one wait per operation. A product that wants several commands under one fence (the
// decode loop of workloads/ puts a whole step in one batch) encodes them and calls
// submit_and_wait once, or builds the batch with its own phases, node indices and attribution.
// Weights that stay for the whole run go through initialize_static_buffer (static_weights.h).
//
//   auto stream = runtime.create_stream();                                  // a raw call
//   auto x = immediate::allocate_buffer(runtime, "resource.x", ElementType::kF16, rows * in,
//                                       BufferUsage::kActivations);
//   immediate::upload(runtime, **stream, **x, to_f16_bytes(values));
//   immediate::dense_linear(runtime, **stream, **x, **w, **y, {rows, in, out});
//   auto bytes = immediate::readback(runtime, **stream, **y);               // rows * out f16
//
// Ownership: allocate_buffer returns a buffer the caller owns (BufferPtr) and submit_and_wait the
//   batch's fence; every other function borrows its runtime, stream and buffers for the duration
//   of the call and keeps nothing. The runtime must outlive what it returned (device_runtime.h).
// Thread rules: those of DeviceRuntime. A call uses `stream` exclusively while it runs (one thread
//   per stream at a time); calls on different streams may run concurrently.
// Errors: std::expected, never an exception, never an abort: the RuntimeError of the first call
//   that failed, unchanged, and nothing after it is attempted. So wrong sizes give the contract's
//   ErrorKind (kRegionOutOfBounds, kUploadByteCountMismatch, kDenseLinearRangesDiffer, ...), as
//   the raw calls would. A contract value that cannot be built (an invalid resource id, a zero
//   size, a byte size that overflows u64, an empty transfer layout) is kContractValue carrying the
//   VNextError's text, as a runtime reports one; a batch that ran and failed is its terminal
//   failure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime::immediate {

// The alignment allocate_buffer asks for unless told otherwise (a cache line).
inline constexpr std::uint64_t kDefaultAlignmentBytes = 64;

// BufferRequest::create then admit() then allocate(): a zero-filled buffer of `element_count`
// elements of `element_type` (element_count * element_size_bytes(element_type) bytes) named
// `resource_id` (an identity: 1 to 160 bytes of [A-Za-z0-9._:/-]), for `usage`, aligned to
// `alignment_bytes` (a power of two). Its capacity returns to admission when the buffer and every
// command that references it are gone.
// Errors: kContractValue (an invalid id, a zero count, a byte size that overflows, an alignment
// that is not a power of two), admit()'s (kAdmissionOverCapacity) and allocate()'s.
Result<BufferPtr> allocate_buffer(DeviceRuntime& runtime, std::string_view resource_id,
                                  ElementType element_type, std::uint64_t element_count,
                                  BufferUsage usage,
                                  std::uint64_t alignment_bytes = kDefaultAlignmentBytes);

// submit(stream, batch) then wait_fence(): the batch has run when this returns. Returns the
// batch's fence (terminal), for the product's own queries (submission_attribution, query_fence).
// Errors: submit()'s DefinitelyNotSubmitted error (nothing ran), wait_fence()'s
// FenceIndeterminate error, or the batch's terminal failure (it ran and failed).
Result<FencePtr> submit_and_wait(DeviceRuntime& runtime, Stream& stream, CommandBatch batch);

// encode_upload(bytes, layout, destination, destination_offset_bytes) with the layout of
// destination's own element type (bytes.size() / element size elements), submitted as one
// DynamicBinding entry, then waited on. `bytes` are little-endian elements of that type
// (to_f16_bytes for f16, f16.h); they are copied at encode time.
// Errors: kContractValue for fewer bytes than one element; encode_upload()'s (a byte count that is
// not whole elements: kUploadByteCountMismatch; past the end: kRegionOutOfBounds);
// submit_and_wait's.
Result<void> upload(DeviceRuntime& runtime, Stream& stream, const Buffer& destination,
                    std::span<const std::uint8_t> bytes,
                    std::uint64_t destination_offset_bytes = 0);

// The shape of one dense linear: output[rows][out_features] = input[rows][in_features] x
// weight[out_features][in_features]^T, all dense row-major little-endian f16 (spec 8.5).
struct DenseLinearShape {
  std::uint64_t rows = 0;
  std::uint64_t in_features = 0;
  std::uint64_t out_features = 0;
};

// encode_dense_linear of one Scalar launch (one participant, token count = rows) over the first
// rows*in, out*in and rows*out f16 elements of input, weight and output (a buffer may be larger),
// submitted as one Compute entry, then waited on. Output may be the input (the runtime stages it).
// Errors: encode_dense_linear()'s, which are the contract's for the shape: zero rows
// (kDenseLinearNoWork); zero features, a buffer too small or a byte size that overflows u64 (an
// empty or too long region: kRegionOutOfBounds); a buffer that is not f16
// (kDenseLinearRangesDiffer); then submit_and_wait's (a buffer of another runtime instance:
// kForeignBufferInCommand, nothing ran).
Result<void> dense_linear(DeviceRuntime& runtime, Stream& stream, const Buffer& input,
                          const Buffer& weight, const Buffer& output,
                          const DenseLinearShape& shape);

// readback(stream, source, the whole buffer, layout of its own element type): every byte of
// `source` (size_bytes / element size elements), after the stream's earlier work completed.
// Errors: kContractValue for a buffer smaller than one element; readback()'s (a buffer whose size
// is not whole elements: kReadbackDestinationOutOfBounds; another runtime's: kReadbackForeign).
Result<std::vector<std::uint8_t>> readback(DeviceRuntime& runtime, Stream& stream,
                                           const Buffer& source);

}  // namespace vtrace::runtime::immediate
