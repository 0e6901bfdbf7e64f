// A std::vector whose storage starts on a 64-byte boundary: one cache line, one 512-bit register.
//
// A large std::vector<float> from glibc sits 16 bytes past a page boundary, so every 64-byte row
// slice of it straddles two cache lines: a 512-bit load of activations touches two lines, and a
// 256-byte KV head row five instead of four. Buffers the kernels read in vector-width steps
// (activation rows, the KV cache, attention scratch) use this instead.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace nucleus {

constexpr std::size_t kCacheLineBytes = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLineBytes}); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace nucleus
