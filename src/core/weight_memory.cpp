#include "core/weight_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <optional>
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

namespace {

// The first number on the line of `path` that starts with `key` ("" → the file's first line).
// nullopt when the file or the line is missing or not a number ("max").
std::optional<uint64_t> read_number(const std::string& path, const std::string& key = "") {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    try {
      return std::stoull(line.substr(key.size()));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// What the process's memory cgroup (a container's limit) still allows: its limit less what it has
// charged, plus the page cache it could reclaim. nullopt without a limit.
std::optional<uint64_t> cgroup_available_bytes() {
  constexpr uint64_t kNoLimit = uint64_t{1} << 60;  // cgroup v1 writes "no limit" as ~2^63
  if (auto limit = read_number("/sys/fs/cgroup/memory.max")) {  // v2 ("max" without a limit)
    const uint64_t used = read_number("/sys/fs/cgroup/memory.current").value_or(0);
    const uint64_t cache = read_number("/sys/fs/cgroup/memory.stat", "file ").value_or(0);
    if (*limit < kNoLimit) return *limit - std::min(*limit, used > cache ? used - cache : 0);
  }
  if (auto limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {  // v1
    const uint64_t used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes").value_or(0);
    const uint64_t cache = read_number("/sys/fs/cgroup/memory/memory.stat", "total_cache ").value_or(0);
    if (*limit < kNoLimit) return *limit - std::min(*limit, used > cache ? used - cache : 0);
  }
  return std::nullopt;
}

}  // namespace

size_t available_memory_bytes() {
  // "MemAvailable:   20757012 kB": free memory plus the page cache and slabs the kernel can reclaim.
  const std::optional<uint64_t> kib = read_number("/proc/meminfo", "MemAvailable:");
  uint64_t available = kib ? *kib << 10 : 0;
  if (const auto cgroup = cgroup_available_bytes()) available = available == 0 ? *cgroup : std::min(available, *cgroup);
  return static_cast<size_t>(available);
}

std::string gib_text(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(size_t{1} << 30));
  return text;
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
