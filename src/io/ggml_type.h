// Tensor element types with GGUF's numbering and block layouts.
// A "block" is the unit of storage: block_size elements packed into type_size bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace nucleus {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct GgmlTypeTraits {
  const char* name;
  int64_t block_size;  // elements per block
  size_t type_size;    // bytes per block
};

// Traits of the types nucleus can load; std::nullopt for any other id.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
const char* ggml_type_name(GgmlType type);
std::optional<GgmlType> ggml_type_from_name(const std::string& name);  // "Q8_0", "f16", ...

// Bytes of a row of n elements; n must be a multiple of the block size.
size_t ggml_row_size(GgmlType type, int64_t n);
int64_t ggml_block_size(GgmlType type);

}  // namespace nucleus
