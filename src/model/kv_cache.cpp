#include "model/kv_cache.h"

#include <new>
#include <string>

#include "core/error.h"

namespace nucleus {

KvCache::KvCache(const KvCacheShape& shape) : shape_(shape) {
  const size_t n = static_cast<size_t>(shape.n_layer * shape.num_blocks * shape.block_size * shape.kv_dim);
  try {
    k_.assign(n, 0.0f);
    v_.assign(n, 0.0f);
  } catch (const std::bad_alloc&) {
    throw Error("cannot allocate the KV cache (" + std::to_string(2 * n * sizeof(float) >> 20) + " MiB)");
  }
}

}  // namespace nucleus
