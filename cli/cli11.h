// CLI11 through one door, so every subcommand includes the same way.
#pragma once

#include <CLI/CLI.hpp>
