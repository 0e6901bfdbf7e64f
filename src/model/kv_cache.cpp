#include "model/kv_cache.h"

#include <algorithm>
#include <new>
#include <string>

#include "core/error.h"
#include "core/weight_memory.h"
#include "model/hparams.h"

namespace nucleus {

KvType parse_kv_type(const std::string& name, const std::string& flag) {
  if (name == "f32") return KvType::f32;
  if (name == "f16") return KvType::f16;
  throw Error(flag + ": '" + name + "' is not a KV element type (expected f32 or f16)");
}

RecurrentStateShape recurrent_state_shape(const HParams& hp, int64_t num_slots) {
  RecurrentStateShape r;
  if (!hp.has_recurrent_layers()) return r;
  r.num_slots = num_slots;
  r.conv_floats = hp.delta_net.conv_state_floats();
  r.ssm_floats = hp.delta_net.ssm_state_floats();
  for (const LayerSpec& l : hp.layers) r.layers.push_back(l.delta_net);
  return r;
}

KvCache::KvCache(const KvCacheShape& shape, size_t memory_budget) : shape_(shape) {
  if (!shape.window_layers.empty() && static_cast<int64_t>(shape.window_layers.size()) != shape.n_layer)
    throw Error("KV cache: window_layers must name every layer");
  const RecurrentStateShape& r = shape.recurrent;
  const bool recurrent = r.num_slots > 0;
  if (recurrent && static_cast<int64_t>(r.layers.size()) != shape.n_layer)
    throw Error("KV cache: recurrent.layers must name every layer");
  auto is_recurrent = [&](int64_t l) { return recurrent && r.layers[static_cast<size_t>(l)]; };
  state_layer_.assign(static_cast<size_t>(shape.n_layer), -1);
  int64_t n_recurrent = 0;
  for (int64_t l = 0; l < shape.n_layer; ++l)
    if (is_recurrent(l)) state_layer_[static_cast<size_t>(l)] = n_recurrent++;
  const size_t block_elements = static_cast<size_t>(shape.block_size * shape.kv_dim);
  places_.resize(static_cast<size_t>(shape.n_layer));
  const bool windowed = !shape.window_layers.empty() && shape.num_window_blocks > 0;
  size_t n = 0;
  for (int64_t l = 0; l < shape.n_layer; ++l) {  // the main pool's layers first
    if (windowed && shape.window_layers[static_cast<size_t>(l)]) continue;
    if (is_recurrent(l)) continue;  // no K/V rows: its state lives in recurrent_
    places_[static_cast<size_t>(l)] = {n, false};
    n += static_cast<size_t>(shape.num_blocks) * block_elements;
  }
  for (int64_t l = 0; l < shape.n_layer; ++l) {
    if (!windowed || !shape.window_layers[static_cast<size_t>(l)]) continue;
    places_[static_cast<size_t>(l)] = {n, true};
    n += static_cast<size_t>(shape.num_window_blocks) * block_elements;
  }
  const size_t state_floats = static_cast<size_t>(n_recurrent * r.num_slots * (r.conv_floats + r.ssm_floats));
  const size_t bytes = 2 * n * static_cast<size_t>(kv_type_bytes(shape.type)) + state_floats * sizeof(float);
  // Zero-filling touches every page: past the memory there is, the OOM killer would answer, not an Error.
  if (memory_budget > 0 && bytes > memory_budget)
    throw Error("the KV cache needs " + gib_text(bytes) + " (" + std::to_string(shape.num_blocks) + " blocks of " +
                std::to_string(shape.block_size) + " tokens" + (state_floats > 0 ? ", and the recurrent state" : "") +
                ") but only " + gib_text(memory_budget) + " of memory is left beside the weights (lower --kv-cache-mem or --num-blocks)");
  try {
    if (shape.type == KvType::f16) {
      k16_.assign(n, 0);
      v16_.assign(n, 0);
    } else {
      k_.assign(n, 0.0f);
      v_.assign(n, 0.0f);
    }
    recurrent_.assign(state_floats, 0.0f);
    state_tokens_.assign(static_cast<size_t>(std::max<int64_t>(0, r.num_slots)), 0);
  } catch (const std::bad_alloc&) {
    throw Error("cannot allocate the KV cache (" + gib_text(bytes) + ")");
  }
}

void KvCache::save_state(int64_t slot, StateSnapshot& out) const {
  const RecurrentStateShape& r = shape_.recurrent;
  const auto per = static_cast<size_t>(r.conv_floats + r.ssm_floats);
  const size_t n_layers = recurrent_.size() / (static_cast<size_t>(r.num_slots) * per);
  out.floats.resize(n_layers * per);
  for (size_t l = 0; l < n_layers; ++l) {
    const float* from = recurrent_.data() + (l * static_cast<size_t>(r.num_slots) + static_cast<size_t>(slot)) * per;
    std::copy_n(from, per, out.floats.data() + l * per);
  }
  out.tokens = state_tokens(slot);
}

void KvCache::restore_state(int64_t slot, const StateSnapshot& in) {
  const RecurrentStateShape& r = shape_.recurrent;
  const auto per = static_cast<size_t>(r.conv_floats + r.ssm_floats);
  const size_t n_layers = recurrent_.size() / (static_cast<size_t>(r.num_slots) * per);
  if (in.tokens < 0 || in.floats.size() != n_layers * per) throw Error("internal: restoring a recurrent state that was not saved");
  for (size_t l = 0; l < n_layers; ++l)
    std::copy_n(in.floats.data() + l * per, per, recurrent_.data() + (l * static_cast<size_t>(r.num_slots) + static_cast<size_t>(slot)) * per);
  set_state_tokens(slot, in.tokens);
}

void KvCache::copy_blocks(const KvCache& source, int64_t layer, int64_t from, int64_t to, int64_t n_blocks) {
  if (source.shape_.block_size != shape_.block_size || source.shape_.kv_dim != shape_.kv_dim || source.type() != type())
    throw Error("KV cache: copying blocks between caches of different shapes");
  const auto block = static_cast<size_t>(block_elements()), n = block * static_cast<size_t>(n_blocks);
  const size_t src = source.places_[static_cast<size_t>(layer)].base + static_cast<size_t>(from) * block;
  const size_t dst = places_[static_cast<size_t>(layer)].base + static_cast<size_t>(to) * block;
  if (type() == KvType::f16) {
    std::copy_n(source.k16_.begin() + src, n, k16_.begin() + dst);
    std::copy_n(source.v16_.begin() + src, n, v16_.begin() + dst);
  } else {
    std::copy_n(source.k_.begin() + src, n, k_.begin() + dst);
    std::copy_n(source.v_.begin() + src, n, v_.begin() + dst);
  }
}

}  // namespace nucleus
