#include "cli/bench_profile.h"

#include <algorithm>
#include <cstdio>

namespace nucleus::cli {

nlohmann::json profile_json(const StepProfile& p) {
  const double steps = static_cast<double>(std::max<int64_t>(1, p.steps));
  const double step_ms = 1e3 * p.step_seconds / steps;
  auto share = [&](double seconds) { return p.step_seconds > 0 ? seconds / p.step_seconds : 0.0; };
  nlohmann::json matmuls = nlohmann::json::array();
  double matmul_seconds = 0, idle_seconds = 0;
  for (const auto& [type, m] : p.matmul) {
    matmul_seconds += m.seconds;
    idle_seconds += m.idle_thread_seconds / p.n_threads;
    matmuls.push_back({{"type", ggml_type_name(type)},
                       {"ms_per_step", 1e3 * m.seconds / steps},
                       {"share", share(m.seconds)},
                       {"calls_per_step", static_cast<double>(m.calls) / steps},
                       {"matrices_per_step", static_cast<double>(m.matrices) / steps},
                       {"gb_per_s", m.seconds > 0 ? m.weight_bytes / m.seconds / 1e9 : 0.0},
                       {"quantize_ms_per_step", 1e3 * m.quantize_seconds / steps},
                       {"idle_ms_per_step", 1e3 * m.idle_thread_seconds / p.n_threads / steps}});
  }
  const double other = std::max(0.0, p.step_seconds - matmul_seconds - p.attention_seconds);
  return {{"steps", p.steps},
          {"ms_per_step", step_ms},
          {"matmul", matmuls},
          {"attention_ms_per_step", 1e3 * p.attention_seconds / steps},
          {"attention_share", share(p.attention_seconds)},
          {"other_ms_per_step", 1e3 * other / steps},
          {"other_share", share(other)},
          {"sync_ms_per_step", 1e3 * idle_seconds / steps},
          {"sync_share", share(idle_seconds)}};
}

void print_profile(const std::string& test, const nlohmann::json& p) {
  std::printf("  profile %s: %lld steps, %.3f ms per step\n", test.c_str(), static_cast<long long>(p["steps"].get<int64_t>()),
              p["ms_per_step"].get<double>());
  for (const auto& m : p["matmul"])
    std::printf("    matmul %-6s %9.3f ms %6.1f%% %8.1f GB/s   (activation quantization %.3f ms, threads idle %.3f ms)\n",
                m["type"].get<std::string>().c_str(), m["ms_per_step"].get<double>(), 100 * m["share"].get<double>(),
                m["gb_per_s"].get<double>(), m["quantize_ms_per_step"].get<double>(), m["idle_ms_per_step"].get<double>());
  std::printf("    attention     %9.3f ms %6.1f%%\n", p["attention_ms_per_step"].get<double>(), 100 * p["attention_share"].get<double>());
  std::printf("    other ops     %9.3f ms %6.1f%%   (norms, rope, KV stores, activations, residuals)\n",
              p["other_ms_per_step"].get<double>(), 100 * p["other_share"].get<double>());
  std::printf("    of the matmuls, threads idle (synchronization and imbalance): %.3f ms %.1f%%\n",
              p["sync_ms_per_step"].get<double>(), 100 * p["sync_share"].get<double>());
}

}  // namespace nucleus::cli
