// Shared helpers for the test suite: where the shared assets live, and running the CLI.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nucleus::test {

// n values drawn from N(0, 1) by a std::mt19937 seeded with `seed`: random weights and
// activations for the kernel tests.
std::vector<float> normal_values(size_t n, uint32_t seed);

// Directory of the read-only shared assets (models/, reference/, vocab/). Taken from the
// NUCLEUS_SHARED_DIR environment variable when set, else from the CMake cache variable.
std::string shared_dir();
bool shared_available();
std::string shared_path(const std::string& relative);  // shared_dir() + "/" + relative
std::string nucleus_binary();                           // path of the built CLI

// Reads a whole file into a string (throws std::runtime_error when it cannot).
std::string read_file(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs a shell command and captures its stdout (err stays empty; exit_code -1 when it did not exit).
CommandResult run_shell(const std::string& command);
// Runs `nucleus_binary() + " " + args` through the shell and captures both streams.
CommandResult run_nucleus(const std::string& args);

}  // namespace nucleus::test

// Skips the current test, with the reason, when the shared assets are not present.
#define NUCLEUS_REQUIRE_SHARED()                                                          \
  do {                                                                                    \
    if (!::nucleus::test::shared_available())                                             \
      GTEST_SKIP() << "shared assets not found at " << ::nucleus::test::shared_dir()      \
                   << " (set NUCLEUS_SHARED_DIR)";                                        \
  } while (0)
