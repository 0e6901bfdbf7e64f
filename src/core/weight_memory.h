// Anonymous memory for large weight arrays, on transparent huge pages where the kernel allows.
//
// Decode streams every weight once per token. Through 4 KiB pages (a file mapping) that is one
// TLB miss per 4 KiB — 500,000 per token for a 2 GB F16 model — and the page walks eat into the
// memory bandwidth decode lives on. 2 MiB pages take that to ~1,000. Measured on TinyLlama-shape
// F16, 2 threads: one-token decode ~16% faster, a 5-token pass ~30% faster (docs/BENCHMARKS.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace nucleus {

using WeightBuffer = std::unique_ptr<uint8_t, decltype(&std::free)>;

// Arrays at least this large are 2 MiB-aligned and advised as huge pages; smaller ones would
// waste most of the rounding, so they get plain 64-byte-aligned memory.
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kMinHugeWeightBytes = 4 * kHugePageBytes;

// `bytes` of uninitialized memory, 64-byte aligned (2 MiB for large arrays). Throws Error naming
// the size when the allocation fails.
WeightBuffer allocate_weight_memory(size_t bytes);

// Many weight arrays carved out of a few huge-page allocations. A 1B-parameter model's matrices are
// 0.3–7 MB each, below kMinHugeWeightBytes, so allocated one by one they sat on 4 KiB pages, where
// the CPU's stream prefetchers stop at every page boundary: packed Q4_0 decode read memory at about
// half the rate of the same model's file-mapped K-quant matrices (docs/BENCHMARKS.md). From one
// arena they share 2 MiB pages with no rounding per array. Each array is 64-byte aligned and holds
// its chunk alive (a shared_ptr aliasing the chunk), so arrays outlive the arena that made them.
class WeightArena {
 public:
  // expected_bytes: the total the caller means to allocate (the first chunk's size, so a model's
  // weights take one allocation); later chunks are at least kMinHugeWeightBytes.
  explicit WeightArena(size_t expected_bytes);
  std::shared_ptr<uint8_t> allocate(size_t bytes);

 private:
  size_t next_chunk_bytes_;
  std::shared_ptr<uint8_t> chunk_;
  size_t used_ = 0, capacity_ = 0;
};

// Memory the process can still use without swapping or being OOM-killed: the kernel's estimate
// (MemAvailable in /proc/meminfo, free memory plus reclaimable page cache), lowered to what the
// memory cgroup's limit still allows inside a container; 0 when neither can be read.
size_t available_memory_bytes();

// "3.25 GiB": sizes in memory errors.
std::string gib_text(size_t bytes);

// Whether copies of `bytes` of weights (packing, huge pages) fit in `available` with room to
// spare (kWeightMemoryHeadroom for KV caches, scratch and everything else). Allocations succeed
// under Linux's overcommit and the OOM killer strikes later, so this is checked up front; weights
// that do not fit are run from the file mapping, slower but within memory. available == 0
// (unknown) allows the copies.
constexpr size_t kWeightMemoryHeadroom = size_t{1} << 30;
bool weight_copies_fit(size_t bytes, size_t available);

}  // namespace nucleus
