// CLI11 through one door. GCC 12's -Wnull-dereference fires inside CLI11's inline string helpers
// once they are inlined at -O2 (a false positive in third-party code); the diagnostic state is
// location-based, so silencing it around the include silences only CLI11's lines.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop
