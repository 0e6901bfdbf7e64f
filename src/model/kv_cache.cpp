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
  if (!shape.window_layers.empty() && static_cast<int64_t>(shape.window_layers.size()) != shape.n_layer)
    throw Error("KV cache: window_layers must name every layer");
  const size_t block_elements = static_cast<size_t>(shape.block_size * shape.kv_dim);
  places_.resize(static_cast<size_t>(shape.n_layer));
  const bool windowed = !shape.window_layers.empty() && shape.num_window_blocks > 0;
  size_t n = 0;
  for (int64_t l = 0; l < shape.n_layer; ++l) {  // the main pool's layers first
    if (windowed && shape.window_layers[static_cast<size_t>(l)]) continue;
    places_[static_cast<size_t>(l)] = {n, false};
    n += static_cast<size_t>(shape.num_blocks) * block_elements;
  }
  for (int64_t l = 0; l < shape.n_layer; ++l) {
    if (!windowed || !shape.window_layers[static_cast<size_t>(l)]) continue;
    places_[static_cast<size_t>(l)] = {n, true};
    n += static_cast<size_t>(shape.num_window_blocks) * block_elements;
  }
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
