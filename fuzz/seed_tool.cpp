// fuzz_seeds: writes seed inputs for the fuzz targets (scripts/fuzz.sh).
//   fuzz_seeds events OUT TRACE...   every event record of each trace, one file each
//   fuzz_seeds safetensors OUT       fuzz_bodies.h's hand-made safetensors inputs
// Exit status 0, or 2 with one sentence on stderr for a bad argument or an unwritable file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_bodies.h"

namespace {

bool write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::fprintf(stderr, "fuzz_seeds: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2 || (args[0] != "events" && args[0] != "safetensors")) {
    std::fprintf(stderr, "usage: fuzz_seeds events OUT TRACE... | fuzz_seeds safetensors OUT\n");
    return 2;
  }
  const std::filesystem::path out_dir = args[1];
  std::filesystem::create_directories(out_dir);
  if (args[0] == "safetensors") {
    for (const auto& [name, bytes] : vtrace::fuzz::safetensors_seeds()) {
      if (!write_file(out_dir / (name + ".safetensors"), bytes)) return 2;
    }
    return 0;
  }
  for (std::size_t i = 2; i < args.size(); ++i) {
    std::ifstream in(args[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz_seeds: cannot read %s\n", args[i].c_str());
      return 2;
    }
    const std::vector<std::uint8_t> trace((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    const auto records = vtrace::fuzz::event_records_of(trace);
    const std::string stem = std::filesystem::path(args[i]).stem().string();
    for (std::size_t n = 0; n < records.size(); ++n) {
      if (!write_file(out_dir / (stem + "-event-" + std::to_string(n)), records[n])) return 2;
    }
  }
  return 0;
}
