// Buffers the kernels read in 512-bit steps start on a cache line (core/aligned_vector.h): an
// AlignedVector of any size, and every KV head's row of a cache whose head width is a multiple of
// 32 elements, in both pools. A std::vector<float> of a few MB from glibc
// starts 16 bytes past a page boundary, which is what this guards against.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/aligned_vector.h"
#include "model/kv_cache.h"

namespace nucleus {
namespace {

bool on_cache_line(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(AlignedVector, StartsOnACacheLineAtEverySize) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{17}, size_t{4096}, size_t{1} << 20, (size_t{3} << 20) + 5}) {
    AlignedVector<float> f(n, 1.0f);
    AlignedVector<uint16_t> h(n);
    EXPECT_TRUE(on_cache_line(f.data())) << n;
    EXPECT_TRUE(on_cache_line(h.data())) << n;
    f.resize(n * 3);  // a reallocation keeps the alignment
    EXPECT_TRUE(on_cache_line(f.data())) << n;
    EXPECT_EQ(f[n - 1], 1.0f);
  }
}

TEST(AlignedVector, KvRowsStartOnCacheLines) {
  for (KvType type : {KvType::f32, KvType::f16}) {
    KvCacheShape shape{3, 40, 16, 256, type};
    shape.window_layers = {false, true, false};
    shape.num_window_blocks = 8;
    KvCache kv(shape);
    for (int64_t layer = 0; layer < shape.n_layer; ++layer) {
      const int64_t blocks = shape.window_layers[static_cast<size_t>(layer)] ? shape.num_window_blocks : shape.num_blocks;
      for (int64_t block : {int64_t{0}, int64_t{1}, blocks - 1})
        for (int64_t slot : {int64_t{0}, int64_t{5}, int64_t{15}})
          for (int64_t head_dim : {int64_t{64}, int64_t{128}})
            for (int64_t head = 0; head < shape.kv_dim / head_dim; ++head) {
              if (type == KvType::f32) {
                EXPECT_TRUE(on_cache_line(kv.key(layer, block, slot, head, head_dim)));
                EXPECT_TRUE(on_cache_line(kv.value(layer, block, slot, head, head_dim)));
              } else {
                EXPECT_TRUE(on_cache_line(kv.key_f16(layer, block, slot, head, head_dim)));
                EXPECT_TRUE(on_cache_line(kv.value_f16(layer, block, slot, head, head_dim)));
              }
            }
    }
  }
}

}  // namespace
}  // namespace nucleus
