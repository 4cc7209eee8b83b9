// Options of the `decode` workload: an f16 transformer-shaped decode loop.
//
// Weights: per layer an up projection [ffn][hidden] and a down projection [hidden][ffn], plus a
// head [hidden][hidden], read from a safetensors file ("layers.{i}.up.weight",
// "layers.{i}.down.weight", "head.weight"; F16, row-major [out][in]) and uploaded once through
// initialize_static_buffer. Without `weights`, the file is generated from the seed in a temporary
// directory (uniform in +-sqrt(3/in), so activations keep unit variance through the chain) and
// removed afterwards.
//
// Each step: participant p holds 1 + (p % 2) tokens (tokens = sum). One batch uploads fresh
// activations [tokens][hidden] and runs up, down for every layer, then the head; even steps use one
// packed launch per linear, odd steps one launch per participant (a participant loop); with one
// participant every launch is Scalar. Every other batch attaches LogicalWork to its upload
// (push_node_initialization) and every third batch requires logical execution-path attribution
// (whose row count is checked). The step waits on its fence, reads back the logits [tokens][hidden]
// and checks the seven counters against the expected deltas.
//
// Defaults fit the reference runtime's 64 MiB with room (about 16.5 MiB of weights).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "vtrace/workloads/workload_error.h"

namespace vtrace::workloads {

struct DecodeOptions {
  std::uint32_t hidden = 512;
  std::uint32_t ffn = 2048;
  std::uint32_t layers = 4;
  std::uint32_t participants = 2;  // 1 to 8
  std::uint32_t steps = 8;
  std::filesystem::path weights;   // empty: generate seeded weights
  // An injected fault (vtrace record --nan-at-step K, docs/FLIGHT.md): the first activation
  // uploaded at step K (0-based) is a NaN, so that step's logits are not finite. The workload
  // expects exactly that: its finiteness check skips step K and fails on any other step.
  std::optional<std::uint32_t> nan_at_step;
};

// Fails, naming the value and its range, unless 1 <= hidden, ffn <= 65536, 1 <= layers <= 64,
// 1 <= participants <= 8, steps >= 1 and nan_at_step < steps. Pure; run_decode checks it before any
// call.
WorkloadResult<void> check_decode_shape(const DecodeOptions& options);
// Fails, naming the file and what is wrong, unless `options.weights` opens as a safetensors file
// holding every tensor the shape needs as F16 of its shape (extra tensors are ignored). Reads the
// whole file. run_decode finds the same faults when it loads the weights, after its first calls.
WorkloadResult<void> check_decode_weights(const DecodeOptions& options);

// Device memory the decode workload admits for `options` (weights plus activations).
std::uint64_t decode_device_bytes(const DecodeOptions& options);
// Fails, naming what the shape needs, what the device has and the flag to pass, when the device
// cannot hold it. run_decode checks it before any weight is generated; `vtrace record` before
// the trace is created.
WorkloadResult<void> check_decode_fits(const DecodeOptions& options,
                                       std::uint64_t device_memory_bytes);

}  // namespace vtrace::workloads
