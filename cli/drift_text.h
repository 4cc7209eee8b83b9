// The text `vtrace compare` and `vtrace diff` print for a drift::CompareReport: the header, the
// first divergence with its statistics and a reproduce line, the structural differences, the worst
// commands, and the verdict (docs/CLI.md shows it).
#pragma once

#include <string>
#include <string_view>

#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

// Prints `report`; `reproduce` is the command line shown under the first divergence, and
// `extract`, when not empty, the one that extracts its command (drift::extract_command_line).
void print_drift_report(const drift::CompareReport& report, const std::string& reproduce,
                        const std::string& extract = {});

// The warnings `vtrace replay` gives for a recovered trace (stderr, even with --quiet: they
// qualify the result), each naming the file: what the reader recovered and how many events
// `command` ("compare", "diff", "extract") uses, and where the plan stopped for a lost payload.
void warn_recovered(const drift::RecoveredTrace& trace, std::string_view command);
// Those of every recovered input of `report`, and one per SubmitBegin with no SubmitEnd.
void warn_incomplete(const drift::CompareReport& report, std::string_view command);

}  // namespace vtrace::cli
