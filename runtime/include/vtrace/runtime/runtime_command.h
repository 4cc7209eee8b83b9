// The four kinds of command every runtime executes, written once over a runtime's own region type,
// and the counters every runtime keeps (RuntimeCounters).
//
// A runtime's command is contract::RuntimeCommand<Region, Upload>: a copy, an upload, a zero or a
// dense-linear dispatch, each holding the regions it touches. What differs between runtimes is
// only where their bytes live (`Region`: a host storage or a device allocation) and how an
// upload holds its host bytes (`Upload`: pooled host memory, a plain vector); the kinds, the
// region-ownership walk of spec 7.4 step 6 and the submit ownership probes are the same and
// are here.
//
// Requirements: `Region` has a `std::uint64_t runtime_instance` (the runtime that made it) and
//   is movable; `Upload` has a `Region destination` and is movable.
// Ownership: a command owns its regions, and so keeps every storage it touches alive (a region
//   holds its storage by shared pointer in both runtimes).
// Thread rules: a command is not shared between threads while it is encoded; after submit it is
//   only read.
// Errors: none; everything here runs after the contract's checks accepted the request.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "vtrace/runtime/contract.h"

namespace vtrace::runtime::contract {

// The seven counters of spec 7.6 as a runtime keeps them, moved at the reference's triggers and
// read as a CounterSnapshot. Shared (by shared pointer) by the runtime and its storages, whose
// last holder decrements live_allocations. Thread rules: relaxed atomics; the counters are
// statistics, ordered by the calls that move them.
struct RuntimeCounters {
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> live_allocations{0};
  std::atomic<std::uint64_t> submissions{0};
  std::atomic<std::uint64_t> commands{0};
  std::atomic<std::uint64_t> uploaded_bytes{0};
  std::atomic<std::uint64_t> dense_linear_launches{0};
  std::atomic<std::uint64_t> readback_bytes{0};

  CounterSnapshot snapshot() const {
    constexpr auto relaxed = std::memory_order_relaxed;
    return CounterSnapshot{allocations.load(relaxed),    live_allocations.load(relaxed),
                           submissions.load(relaxed),    commands.load(relaxed),
                           uploaded_bytes.load(relaxed), dense_linear_launches.load(relaxed),
                           readback_bytes.load(relaxed)};
  }
};

// Moves one counter of a RuntimeCounters up by `amount`.
inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t amount = 1) {
  counter.fetch_add(amount, std::memory_order_relaxed);
}

template <class Region>
struct CopyKind {
  Region source;
  Region destination;
};

template <class Region>
struct ZeroKind {
  Region destination;
};

// One launch of a dense-linear command: its three regions and its validated shape.
template <class Region>
struct DenseLaunch {
  Region input;
  Region weight;
  Region output;
  DenseLinearLaunchShape shape;
};

template <class Region>
struct DenseLinearKind {
  std::vector<DenseLaunch<Region>> launches;
};

template <class Region, class Upload>
class RuntimeCommand final : public ContractCommand {
 public:
  using Copy = CopyKind<Region>;
  using Zero = ZeroKind<Region>;
  using Launch = DenseLaunch<Region>;
  using DenseLinear = DenseLinearKind<Region>;
  using Kind = std::variant<Copy, Upload, Zero, DenseLinear>;

  explicit RuntimeCommand(Kind k) : kind(std::move(k)) {}

  // A transfer command (copy, upload, zero) labelled `operation` (spec 7.1).
  static CommandPtr transfer(std::string_view operation, Kind k) {
    auto command = std::make_unique<RuntimeCommand>(std::move(k));
    command->set_transfer(operation);
    return command;
  }

  // A dense-linear command from its plan and the regions check_dense_linear resolved, three a
  // launch in the plan's order (input, weight, output).
  static CommandPtr dense_linear(const DenseLinearPlan& plan, std::vector<Region> regions) {
    DenseLinear k;
    k.launches.reserve(plan.launches.size());
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      k.launches.push_back(Launch{std::move(regions[3 * i]), std::move(regions[3 * i + 1]),
                                  std::move(regions[3 * i + 2]), plan.launches[i]});
    }
    auto command = std::make_unique<RuntimeCommand>(Kind(std::move(k)));
    command->set_dense_linear(plan);
    return command;
  }

  // What check_submit needs from a runtime whose commands are this class and whose regions carry
  // `instance`.
  static SubmitOwnership ownership(bool stream_is_own, std::uint64_t instance) {
    return SubmitOwnership{
        stream_is_own,
        [](Command& command) -> ContractCommand* {
          return dynamic_cast<RuntimeCommand*>(&command);
        },
        [instance](const ContractCommand& command) {
          return static_cast<const RuntimeCommand&>(command).regions_belong_to(instance);
        }};
  }

  // Whether every region the command touches belongs to runtime `instance` (spec 7.4 step 6).
  bool regions_belong_to(std::uint64_t instance) const {
    const auto own = [instance](const Region& region) {
      return region.runtime_instance == instance;
    };
    return std::visit(
        [&own](const auto& k) {
          using K = std::decay_t<decltype(k)>;
          if constexpr (std::is_same_v<K, Copy>) {
            return own(k.source) && own(k.destination);
          } else if constexpr (std::is_same_v<K, DenseLinear>) {
            return std::all_of(k.launches.begin(), k.launches.end(), [&own](const Launch& launch) {
              return own(launch.input) && own(launch.weight) && own(launch.output);
            });
          } else {
            return own(k.destination);
          }
        },
        kind);
  }

  Kind kind;
};

}  // namespace vtrace::runtime::contract
