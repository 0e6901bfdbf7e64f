// Shared by the libFuzzer targets in fuzz/ (one parser each, see docs/RELIABILITY.md).
//
// The contract every target checks: input from outside gets a clear error (nucleus::Error, or
// server::ApiError for request bodies) or a result — never a crash, a sanitizer report, an
// exception of any other type, or a broken invariant the library documents (checked with
// FUZZ_CHECK, which aborts so libFuzzer keeps the input).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "core/error.h"

#ifndef NUCLEUS_SHARED_DIR
#define NUCLEUS_SHARED_DIR "../shared"
#endif

namespace nucleus::fuzz {

#define FUZZ_CHECK(condition, what)                                                        \
  do {                                                                                     \
    if (!(condition)) {                                                                    \
      std::fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

// The shared assets: $NUCLEUS_SHARED_DIR when set (as the tests do), else the configured path.
inline std::string shared_dir() {
  const char* env = std::getenv("NUCLEUS_SHARED_DIR");
  return env && *env ? std::string(env) : std::string(NUCLEUS_SHARED_DIR);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot read %s (set NUCLEUS_SHARED_DIR)\n", path.c_str());
    std::abort();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A private temporary file, rewritten for each input (for readers that take a path).
class TempFile {
 public:
  explicit TempFile(const char* tag) {
    path_ = "/tmp/nucleus-fuzz-" + std::string(tag) + "-" + std::to_string(::getpid());
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& write(const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Reads an input front to back: a few control bytes, then the rest as text.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(byte() | (byte() << 8)); }
  size_t remaining() const { return size_ - pos_; }
  std::string_view rest() {
    std::string_view out(reinterpret_cast<const char*>(data_) + pos_, size_ - pos_);
    pos_ = size_;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Whether `text` is valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF).
inline bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= text.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const uint8_t d = static_cast<uint8_t>(text[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

}  // namespace nucleus::fuzz
