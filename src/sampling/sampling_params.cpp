#include "sampling/sampling_params.h"

#include <algorithm>

#include "core/error.h"

namespace nucleus {

namespace {
constexpr SamplerStageKind kAllKinds[] = {SamplerStageKind::logit_bias, SamplerStageKind::penalties,
                                          SamplerStageKind::temperature, SamplerStageKind::top_k,
                                          SamplerStageKind::top_p, SamplerStageKind::min_p,
                                          SamplerStageKind::typical_p};

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}
}  // namespace

const char* sampler_stage_name(SamplerStageKind kind) {
  switch (kind) {
    case SamplerStageKind::logit_bias: return "logit_bias";
    case SamplerStageKind::penalties: return "penalties";
    case SamplerStageKind::temperature: return "temperature";
    case SamplerStageKind::top_k: return "top_k";
    case SamplerStageKind::top_p: return "top_p";
    case SamplerStageKind::min_p: return "min_p";
    case SamplerStageKind::typical_p: return "typical_p";
  }
  return "?";
}

std::vector<SamplerStageKind> default_sampler_order() { return {std::begin(kAllKinds), std::end(kAllKinds)}; }

std::vector<SamplerStageKind> parse_sampler_order(const std::string& text) {
  std::vector<SamplerStageKind> order;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string name = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (name.empty()) continue;
    std::replace(name.begin(), name.end(), '-', '_');
    if (name == "typical") name = "typical_p";
    if (name == "temp") name = "temperature";
    const auto* found = std::find_if(std::begin(kAllKinds), std::end(kAllKinds),
                                     [&](SamplerStageKind k) { return name == sampler_stage_name(k); });
    if (found == std::end(kAllKinds))
      throw Error("--samplers: unknown stage '" + name + "' (known: " + format_sampler_order(default_sampler_order()) + ")");
    if (std::find(order.begin(), order.end(), *found) != order.end())
      throw Error("--samplers: stage '" + name + "' is listed twice");
    order.push_back(*found);
  }
  return order;
}

std::string format_sampler_order(const std::vector<SamplerStageKind>& order) {
  std::string text;
  for (SamplerStageKind kind : order) {
    if (!text.empty()) text += ',';
    text += sampler_stage_name(kind);
  }
  return text;
}

}  // namespace nucleus
