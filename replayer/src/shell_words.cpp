// Shell words (shell_words.h).
#include "vtrace/replayer/shell_words.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace vtrace::replayer {

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:,=+@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string path_argument(const std::string& path) {
  return path.starts_with('-') ? "./" + path : path;
}

std::string shell_command(std::initializer_list<std::string> words) {
  std::string line;
  for (const auto& word : words) {
    if (!line.empty()) line += ' ';
    line += shell_quote(word);
  }
  return line;
}

std::string open_option_words(const runtime::RuntimeOpenOptions& open) {
  std::string words;
  // Appended word by word: g++ 12 at -O3 warns falsely (-Wrestrict) of `" " + string&&`.
  const auto append = [&words](std::initializer_list<std::string> option) {
    words += ' ';
    words += shell_command(option);
  };
  if (open.threads != 0) append({"--threads", std::to_string(open.threads)});
  if (!open.isa.empty()) append({"--isa", open.isa});
  if (open.device_memory_bytes != 0) {
    append({"--device-memory", std::to_string(open.device_memory_bytes)});
  }
  return words;
}

}  // namespace vtrace::replayer
