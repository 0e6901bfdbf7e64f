#include "core/weight_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "core/error.h"

namespace nucleus {

WeightArena::WeightArena(size_t expected_bytes) : next_chunk_bytes_(std::max(expected_bytes, kMinHugeWeightBytes)) {}

std::shared_ptr<uint8_t> WeightArena::allocate(size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (!chunk_ || capacity_ - used_ < rounded) {
    // The rest of the old chunk is left unused: at most one array's worth per chunk.
    const size_t size = std::max(next_chunk_bytes_, rounded);
    WeightBuffer buffer = allocate_weight_memory(size);
    chunk_ = std::shared_ptr<uint8_t>(buffer.release(), &std::free);
    capacity_ = size;
    used_ = 0;
    next_chunk_bytes_ = kMinHugeWeightBytes;
  }
  std::shared_ptr<uint8_t> array(chunk_, chunk_.get() + used_);
  used_ += rounded;
  return array;
}

size_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {  // "MemAvailable:   20757012 kB"
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    try {
      return static_cast<size_t>(std::stoull(line.substr(13))) << 10;
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

bool weight_copies_fit(size_t bytes, size_t available) { return available == 0 || bytes + kWeightMemoryHeadroom <= available; }

WeightBuffer allocate_weight_memory(size_t bytes) {
  const bool huge = bytes >= kMinHugeWeightBytes;
  const size_t align = huge ? kHugePageBytes : 64;
  const size_t total = (std::max<size_t>(bytes, 1) + align - 1) / align * align;  // aligned_alloc wants a multiple
  WeightBuffer buffer(static_cast<uint8_t*>(std::aligned_alloc(align, total)), &std::free);
  if (!buffer) throw Error("out of memory for " + std::to_string(bytes) + " bytes of weights");
  if (huge) ::madvise(buffer.get(), total, MADV_HUGEPAGE);  // advisory: ignored where unsupported
  return buffer;
}

}  // namespace nucleus
