#include "test_helpers.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace nucleus::test {

std::vector<float> normal_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::string shared_dir() {
  if (const char* env = std::getenv("NUCLEUS_SHARED_DIR"); env && *env) return env;
#ifdef NUCLEUS_SHARED_DIR
  return NUCLEUS_SHARED_DIR;
#else
  return "../shared";
#endif
}

bool shared_available() {
  struct stat st {};
  return ::stat((shared_dir() + "/models/stories260K.gguf").c_str(), &st) == 0;
}

std::string shared_path(const std::string& relative) { return shared_dir() + "/" + relative; }

std::string nucleus_binary() {
  if (const char* env = std::getenv("NUCLEUS_BINARY"); env && *env) return env;
#ifdef NUCLEUS_BINARY
  return NUCLEUS_BINARY;
#else
  return "build/nucleus";
#endif
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

CommandResult run_nucleus(const std::string& args) {
  char err_template[] = "/tmp/nucleus-test-stderr-XXXXXX";
  int fd = ::mkstemp(err_template);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  CommandResult result = run_shell(nucleus_binary() + " " + args + " 2>" + err_template);
  result.err = read_file(err_template);
  std::remove(err_template);
  return result;
}

}  // namespace nucleus::test
