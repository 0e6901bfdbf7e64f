// The pieces of Prometheus' text exposition format (0.0.4) that metrics.cpp and vllm_metrics.cpp
// both write: sample values and the "# HELP" / "# TYPE" lines of a metric family.
#pragma once
#include <cstdio>
#include <string>

namespace nucleus::server {

inline std::string prometheus_number(double x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", x);
  return buffer;
}

inline void prometheus_header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace nucleus::server
