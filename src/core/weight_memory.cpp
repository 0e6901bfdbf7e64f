#include "core/weight_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "core/error.h"

namespace nucleus {

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
