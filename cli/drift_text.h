// The text `vtrace compare` and `vtrace diff` print for a drift::CompareReport: the header, the
// first divergence with its statistics and a reproduce line, the structural differences, the worst
// commands, and the verdict (docs/CLI.md shows it).
#pragma once

#include <string>

#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

// A word as the shell reads it back: unchanged when it is plain, else in single quotes.
std::string shell_quote(const std::string& word);

// Prints `report`; `reproduce` is the command line shown under the first divergence.
void print_drift_report(const drift::CompareReport& report, const std::string& reproduce);

}  // namespace vtrace::cli
