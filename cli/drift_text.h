// The text `vtrace compare` and `vtrace diff` print for a drift::CompareReport: the header, the
// first divergence with its statistics and a reproduce line, the structural differences, the worst
// commands, and the verdict (docs/CLI.md shows it).
#pragma once

#include <string>

#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

// Prints `report`; `reproduce` is the command line shown under the first divergence.
void print_drift_report(const drift::CompareReport& report, const std::string& reproduce);

}  // namespace vtrace::cli
