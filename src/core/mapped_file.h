// A read-only memory map of a whole file. Model weights are used in place through this map,
// so a model costs page cache, not heap.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nucleus {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Tells the kernel this process no longer needs the whole pages inside [p, p + n) (they leave
  // the process's resident set; reading them again faults them back in from the file).
  void release(const void* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nucleus
