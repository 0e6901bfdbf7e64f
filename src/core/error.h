// Errors: every failure the user can cause (bad file, bad flag, bad request) is reported by
// throwing nucleus::Error with a one-line message that names the thing and the problem.
#pragma once
#include <stdexcept>
#include <string>

namespace nucleus {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace nucleus
