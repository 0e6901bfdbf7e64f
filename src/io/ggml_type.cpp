#include "io/ggml_type.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace nucleus {

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::F32: return GgmlTypeTraits{"F32", 1, 4};
    case GgmlType::F16: return GgmlTypeTraits{"F16", 1, 2};
    case GgmlType::BF16: return GgmlTypeTraits{"BF16", 1, 2};
    case GgmlType::Q4_0: return GgmlTypeTraits{"Q4_0", 32, 18};
    case GgmlType::Q8_0: return GgmlTypeTraits{"Q8_0", 32, 34};
    case GgmlType::Q4_K: return GgmlTypeTraits{"Q4_K", 256, 144};
    case GgmlType::Q5_K: return GgmlTypeTraits{"Q5_K", 256, 176};
    case GgmlType::Q6_K: return GgmlTypeTraits{"Q6_K", 256, 210};
    case GgmlType::Q8_K: return GgmlTypeTraits{"Q8_K", 256, 292};
    default: return std::nullopt;
  }
}

const char* ggml_type_name(GgmlType type) {
  auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  return traits ? traits->name : "unknown";
}

std::optional<GgmlType> ggml_type_from_name(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (uint32_t id = 0; id <= 40; ++id) {
    auto traits = ggml_type_traits(id);
    if (traits && upper == traits->name) return static_cast<GgmlType>(id);
  }
  return std::nullopt;
}

int64_t ggml_block_size(GgmlType type) {
  auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits) throw Error("unsupported tensor type id " + std::to_string(static_cast<uint32_t>(type)));
  return traits->block_size;
}

size_t ggml_row_size(GgmlType type, int64_t n) {
  auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits) throw Error("unsupported tensor type id " + std::to_string(static_cast<uint32_t>(type)));
  return static_cast<size_t>(n / traits->block_size) * traits->type_size;
}

}  // namespace nucleus
