// How far one answer of a command is from another: the class and the statistics `vtrace compare`
// reports per command and runtime pair.
//
// Check modes (`--check`):
//   bits            agree only when every byte is equal (the default);
//   ulp:N           F16, BF16 and F32 elements agree when their ULP distance is at most N (other
//                   element types: bits);
//   tol:ATOL,RTOL   elements agree when |a - e| <= ATOL + RTOL * |e| (e the baseline's value), the
//                   rule of torch.testing.assert_close; `tol` alone means its f16 defaults,
//                   ATOL 1e-5 and RTOL 1e-3.
// NaN, infinities and signed zero under ulp:N and tol, and for the classes in every mode (the
// rules of replay's `--check ulp:N`, readback_check.h): NaN agrees with NaN only (any payload,
// any sign); +0 and -0 are 0 ULP and 0 apart; an infinity agrees with the same infinity only
// (+inf against the largest finite value is nan_inf, not 1 ULP); subnormals are ordinary values.
// Two NaNs of other payloads, or +0 and -0, are differing elements in every mode (their bits
// differ, ElementStats::differing) with no error, and disagree under bits.
//
// Classes, from the best to the worst (the first that holds):
//   bitwise           every byte equal;
//   within_1_ulp      every element within 1 ULP (floating types only);
//   within_tolerance  every element within the tolerance (the check's, or the defaults of `tol`
//                     under the other modes);
//   nan_inf           a NaN or infinity on one side where the other has a finite value or no NaN
//                     (appeared or vanished): reported before drift, it is usually the story;
//   drift             anything else of the same shape;
//   structural        not comparable: different lengths or element types (set by the caller for
//                     a different outcome, error kind or shape).
// `agrees` says whether the pair passes the check; a class says how close it is regardless.
//
// Statistics over the elements (floating types; integers count differing elements only):
// max and mean absolute error, max relative error (|a - e| / |e| over elements with e != 0), max
// ULP (finite pairs), differing elements, a histogram by ULP distance (0, 1, 2-3, 4-15, 16-255,
// 256+, NaN/Inf) and one of the differing elements by the magnitude of the baseline value, in
// decades, as XLA's literal comparison groups mismatches (< 1e-4, < 1e-3, < 1e-2, < 1e-1, < 1,
// >= 1, non-finite).
//
// Thread rules: pure functions and values. Errors: parse_drift_check returns nullopt.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vtrace/runtime/types.h"

namespace vtrace::drift {

struct DriftCheck {
  enum class Kind : std::uint8_t { kBits, kUlp, kTolerance };
  Kind kind = Kind::kBits;
  std::uint64_t max_ulp = 0;  // kUlp
  double atol = 1e-5;         // kTolerance (and the within_tolerance class of the other modes)
  double rtol = 1e-3;
  std::string to_string() const;  // "bits", "ulp:2", "tol:1e-05,0.001"
};

// "bits", "ulp:N", "tol" or "tol:ATOL,RTOL" (non-negative decimals); nullopt otherwise.
std::optional<DriftCheck> parse_drift_check(std::string_view text);

enum class DriftClass : std::uint8_t {
  kBitwise,
  kWithin1Ulp,
  kWithinTolerance,
  kNanInf,
  kDrift,
  kStructural,
};
std::string_view drift_class_name(DriftClass c);  // "bitwise", "within_1_ulp", ...
// The worse of two classes (the order above).
DriftClass worst(DriftClass a, DriftClass b);

inline constexpr std::array<std::string_view, 7> kUlpBuckets = {"0",      "1",    "2-3",    "4-15",
                                                                "16-255", "256+", "nan_inf"};
inline constexpr std::array<std::string_view, 7> kMagnitudeBuckets = {
    "<1e-4", "<1e-3", "<1e-2", "<1e-1", "<1", ">=1", "non_finite"};

struct ElementStats {
  std::uint64_t elements = 0;
  std::uint64_t differing = 0;  // elements whose bits differ
  double max_abs_error = 0;
  double mean_abs_error = 0;  // over the finite pairs (both values finite), equal ones included
  double max_rel_error = 0;
  std::uint64_t max_ulp = 0;                           // over finite pairs
  std::optional<std::uint64_t> first_differing;        // element index
  std::array<std::uint64_t, 7> ulp_histogram{};        // kUlpBuckets, every element
  // kMagnitudeBuckets, differing elements by the baseline's (expected) value: a finite baseline
  // against a NaN counts in its magnitude's bucket, "non_finite" holds non-finite baselines.
  std::array<std::uint64_t, 7> magnitude_histogram{};
};

struct NumericComparison {
  DriftClass cls = DriftClass::kBitwise;
  bool agrees = true;  // under the check
  ElementStats stats;
};

// Compares `actual` with the baseline `expected`, both `type` elements.
NumericComparison compare_values(std::span<const std::uint8_t> expected,
                                 std::span<const std::uint8_t> actual, runtime::ElementType type,
                                 const DriftCheck& check);

}  // namespace vtrace::drift
