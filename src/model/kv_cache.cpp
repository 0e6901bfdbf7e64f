#include "model/kv_cache.h"

#include <new>
#include <string>

#include "core/error.h"

namespace nucleus {

KvType parse_kv_type(const std::string& name, const std::string& flag) {
  if (name == "f32") return KvType::f32;
  if (name == "f16") return KvType::f16;
  throw Error(flag + ": '" + name + "' is not a KV element type (expected f32 or f16)");
}

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  const size_t n = static_cast<size_t>(shape.n_layer * shape.num_blocks * shape.block_size * shape.kv_dim);
  try {
    if (shape.type == KvType::f16) {
      k16_.assign(n, 0);
      v16_.assign(n, 0);
    } else {
      k_.assign(n, 0.0f);
      v_.assign(n, 0.0f);
    }
  } catch (const std::bad_alloc&) {
    throw Error("cannot allocate the KV cache (" + std::to_string(2 * n * static_cast<size_t>(kv_type_bytes(shape.type)) >> 20) +
                " MiB)");
  }
}

}  // namespace nucleus
