// JSON as text, for every JSON file and line vtrace writes (the `--json` reports, `dump --json`,
// the timelines): a string that is not valid UTF-8 (a path given on the command line, or a trace's
// metadata, may hold any bytes) is written with U+FFFD in place of each invalid byte, where
// nlohmann's own dump() would throw type_error 316 and end the process. Pure function; no errors.
//
// Thread rules: safe from any number of threads at once (it only reads `value` and keeps no
//   state), provided no thread modifies that `value` during the call.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vtrace::replayer {

// `indent` as nlohmann's dump(): -1 is one line, N >= 0 pretty-prints with N spaces.
std::string json_text(const nlohmann::json& value, int indent = -1);

}  // namespace vtrace::replayer
