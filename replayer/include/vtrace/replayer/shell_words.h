// Command lines as a POSIX shell reads them back: every `reproduce:` line of every report (replay's
// mismatches, compare, diff, extract, the HTML report) is built from these, so it runs as printed,
// spaces and quotes in paths included. Pure functions; no errors.
#pragma once

#include <initializer_list>
#include <string>

#include "vtrace/runtime/registry.h"

namespace vtrace::replayer {

// `word` unchanged when it holds only characters no shell treats specially (letters, digits and
// -_./:,=+@%), else in single quotes (a ' inside as '\'').
std::string shell_quote(const std::string& word);
// A file path as one argument of a command: "./" before it when it starts with '-', so no
// option parser (vtrace's included) takes `-x.vtrace` for an option; unchanged otherwise. Not
// quoted: pass it to shell_command or shell_quote.
std::string path_argument(const std::string& path);
// The words shell_quote'd, joined by single spaces.
std::string shell_command(std::initializer_list<std::string> words);
// How a runtime was opened, as the options a reproduce line appends so its runtime is opened the
// same way: " --threads N", " --isa NAME" and " --device-memory BYTES" for the fields that are
// set (non-zero, non-empty), quoted; "" when none is. device_id is not an option (a replay
// numbers its devices itself).
std::string open_option_words(const runtime::RuntimeOpenOptions& open);

}  // namespace vtrace::replayer
