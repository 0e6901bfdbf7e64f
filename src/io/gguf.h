// GGUF: the model file format of llama.cpp (versions 2 and 3).
//
//   header   magic "GGUF", version u32, n_tensors u64, n_kv u64
//   metadata n_kv × (key string, value type u32, value)
//   tensors  n_tensors × (name string, n_dims u32, dims u64[n_dims], type u32, offset u64)
//   padding  to general.alignment (default 32)
//   data     tensor bytes; each tensor at data_start + offset, offsets aligned
//
// GgufFile owns either an mmap of a file or an in-memory image (e.g. a converted llama2.c
// checkpoint); tensor data is always used in place, never copied.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "io/ggml_type.h"

namespace nucleus {

enum class MetaType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* meta_type_name(MetaType type);

// One metadata value. Scalars of integer/bool type live in `integer` (uint64 keeps its bit
// pattern), floats in `real`, strings in `str`. Arrays keep their element type and the
// elements in the matching vector (nested arrays in `array`).
struct MetaValue {
  MetaType type = MetaType::UINT32;
  int64_t integer = 0;
  double real = 0.0;
  std::string str;
  MetaType elem_type = MetaType::UINT32;
  std::vector<int64_t> ints;          // integer/bool arrays
  std::vector<double> reals;          // float arrays
  std::vector<std::string> strings;   // string arrays
  std::vector<MetaValue> array;       // arrays of arrays

  size_t array_size() const;
  std::string to_display(size_t max_elems = 8) const;  // short human summary

  static MetaValue u32(uint32_t v) { MetaValue m; m.type = MetaType::UINT32; m.integer = v; return m; }
  static MetaValue i32(int32_t v) { MetaValue m; m.type = MetaType::INT32; m.integer = v; return m; }
  static MetaValue f32(float v) { MetaValue m; m.type = MetaType::FLOAT32; m.real = v; return m; }
  static MetaValue boolean(bool v) { MetaValue m; m.type = MetaType::BOOL; m.integer = v; return m; }
  static MetaValue string(std::string v) { MetaValue m; m.type = MetaType::STRING; m.str = std::move(v); return m; }
  static MetaValue string_array(std::vector<std::string> v);
  static MetaValue f32_array(std::vector<float> v);
  static MetaValue i32_array(std::vector<int32_t> v);
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension, as in ggml
  uint64_t offset = 0;           // relative to the data section
  size_t nbytes = 0;
  const uint8_t* data = nullptr; // points into the mapping / image

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

class GgufFile {
 public:
  // Parses and validates; throws Error("<path>: <problem>") on anything malformed.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses an in-memory image (takes ownership); `name` is used in error messages.
  static std::unique_ptr<GgufFile> from_bytes(std::vector<uint8_t> bytes, const std::string& name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  size_t data_offset() const { return data_offset_; }  // where the data section starts in the file

  const std::vector<std::pair<std::string, MetaValue>>& metadata() const { return metadata_; }
  const MetaValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }

  // Typed getters: throw Error naming the file and key when missing or of the wrong kind.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  const MetaValue& get_array(const std::string& key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;

  // For a memory-mapped file: the process stops holding these bytes' pages (see MappedFile::release);
  // a no-op for in-memory images.
  void release_pages(const void* data, size_t n) const {
    if (mapping_) mapping_->release(data, n);
  }
  bool mapped() const { return mapping_ != nullptr; }  // a file mapping, not an in-memory image

 private:
  void parse(const uint8_t* data, size_t size);

  std::string path_;
  std::unique_ptr<MappedFile> mapping_;
  std::vector<uint8_t> image_;
  size_t size_ = 0;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, MetaValue>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Writes GGUF version 3. Tensor data is copied from the given pointers at write time.
class GgufWriter {
 public:
  void set(const std::string& key, MetaValue value);
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                  size_t nbytes);
  void set_alignment(size_t alignment) { alignment_ = alignment; }

  std::vector<uint8_t> to_bytes() const;
  // Streams the file (header, then each tensor's bytes) without building it in memory.
  void write(const std::string& path) const;  // throws Error on I/O failure

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    const void* data;
    size_t nbytes;
  };
  std::vector<std::pair<std::string, MetaValue>> metadata_;
  std::vector<PendingTensor> tensors_;
  size_t alignment_ = 32;
};

}  // namespace nucleus
