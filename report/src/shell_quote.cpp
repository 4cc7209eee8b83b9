// Shell quoting (shell_quote.h).
#include "vtrace/report/shell_quote.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace vtrace::report {

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:,=+@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace vtrace::report
