// WeightArena (core/weight_memory.h): many weight arrays from a few huge-page chunks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/weight_memory.h"

namespace nucleus {
namespace {

TEST(WeightArena, ArraysAreAlignedDisjointAndOutliveTheArena) {
  std::vector<std::shared_ptr<uint8_t>> arrays;
  std::vector<size_t> sizes = {1, 100, 4096, 3 << 20, 77, 5 << 20};
  {
    WeightArena arena(6 << 20);  // room for the first few; the 5 MiB one needs a second chunk
    for (size_t i = 0; i < sizes.size(); ++i) {
      arrays.push_back(arena.allocate(sizes[i]));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(arrays.back().get()) % 64, 0u) << "array " << i;
      std::memset(arrays.back().get(), static_cast<int>(i + 1), sizes[i]);
    }
  }  // the arena is gone; every array still holds its chunk
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t b : {size_t{0}, sizes[i] - 1}) EXPECT_EQ(arrays[i].get()[b], static_cast<uint8_t>(i + 1)) << "array " << i;
    for (size_t j = 0; j < i; ++j) {
      const uint8_t* a = arrays[i].get();
      const uint8_t* c = arrays[j].get();
      EXPECT_TRUE(a + sizes[i] <= c || c + sizes[j] <= a) << "arrays " << i << " and " << j << " overlap";
    }
  }
  // Arrays that fit are carved one after the other (64-byte rounding), not allocated one by one.
  EXPECT_EQ(arrays[1].get(), arrays[0].get() + 64);
  EXPECT_EQ(arrays[2].get(), arrays[1].get() + 128);
}

}  // namespace
}  // namespace nucleus
