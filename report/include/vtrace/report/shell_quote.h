// A word as a POSIX shell reads it back: unchanged when it holds only characters no shell treats
// specially (letters, digits and -_./:,=+@%), else in single quotes (a ' inside as '\'').
// For the `reproduce:` lines of every report. Pure; no errors.
#pragma once

#include <string>

namespace vtrace::report {

std::string shell_quote(const std::string& word);

}  // namespace vtrace::report
