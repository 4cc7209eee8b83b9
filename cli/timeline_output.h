// Writing a timeline file for `vtrace export` and `vtrace replay --profile`: plans the trace,
// streams report::write_timeline into `output`, prints one line saying what was written.
#pragma once

#include <string>
#include <vector>

#include "vtrace/report/timeline.h"

namespace vtrace::cli {

// Exit code: 0 written; 2 the trace cannot be planned or the file cannot be written (one
// sentence on stderr naming it).
int write_timeline_file(const std::string& trace, const std::string& output,
                        std::vector<report::StepTime> measured, bool quiet);

}  // namespace vtrace::cli
