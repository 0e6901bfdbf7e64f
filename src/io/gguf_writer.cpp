// GGUF v3 writer: metadata, tensor infos, aligned data section.
#include <cstdio>
#include <cstring>
#include <tuple>
#include <algorithm>

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

namespace {

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(size_t alignment) {
    while (out_.size() % alignment) out_.push_back(0);
  }

 private:
  std::vector<uint8_t>& out_;
};

void put_integer(ByteSink& s, MetaType t, int64_t v) {
  switch (t) {
    case MetaType::UINT8: case MetaType::BOOL: s.put<uint8_t>(static_cast<uint8_t>(v)); break;
    case MetaType::INT8: s.put<int8_t>(static_cast<int8_t>(v)); break;
    case MetaType::UINT16: s.put<uint16_t>(static_cast<uint16_t>(v)); break;
    case MetaType::INT16: s.put<int16_t>(static_cast<int16_t>(v)); break;
    case MetaType::UINT32: s.put<uint32_t>(static_cast<uint32_t>(v)); break;
    case MetaType::INT32: s.put<int32_t>(static_cast<int32_t>(v)); break;
    case MetaType::UINT64: s.put<uint64_t>(static_cast<uint64_t>(v)); break;
    case MetaType::INT64: s.put<int64_t>(v); break;
    default: throw Error("internal: not an integer metadata type");
  }
}

void put_value(ByteSink& s, const MetaValue& v) {
  switch (v.type) {
    case MetaType::FLOAT32: s.put<float>(static_cast<float>(v.real)); break;
    case MetaType::FLOAT64: s.put<double>(v.real); break;
    case MetaType::STRING: s.put_string(v.str); break;
    case MetaType::ARRAY: {
      s.put<uint32_t>(static_cast<uint32_t>(v.elem_type));
      s.put<uint64_t>(v.array_size());
      for (int64_t x : v.ints) put_integer(s, v.elem_type, x);
      for (double x : v.reals) {
        if (v.elem_type == MetaType::FLOAT32) s.put<float>(static_cast<float>(x));
        else s.put<double>(x);
      }
      for (const std::string& x : v.strings) s.put_string(x);
      for (const MetaValue& x : v.array) put_value(s, x);
      break;
    }
    default: put_integer(s, v.type, v.integer);
  }
}

}  // namespace

void GgufWriter::set(const std::string& key, MetaValue value) {
  if (key == "general.alignment") alignment_ = static_cast<size_t>(value.integer);
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                            size_t nbytes) {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  if (ne.empty() || ne.size() > 4) throw Error("tensor '" + name + "': 1 to 4 dimensions allowed");
  if (ne[0] % ggml_block_size(type) != 0 ||
      ggml_row_size(type, ne[0]) * static_cast<size_t>(n / ne[0]) != nbytes)
    throw Error("tensor '" + name + "': byte size does not match its shape and type");
  tensors_.push_back({name, type, std::move(ne), data, nbytes});
}

namespace {
// Everything before the data section: header, metadata, tensor infos, padding.
std::vector<uint8_t> header_bytes(const std::vector<std::pair<std::string, MetaValue>>& metadata,
                                  const std::vector<std::tuple<std::string, GgmlType, std::vector<int64_t>, size_t>>& tensors,
                                  size_t alignment) {
  std::vector<uint8_t> out;
  ByteSink s(out);
  s.put<uint32_t>(0x46554747);
  s.put<uint32_t>(3);
  s.put<uint64_t>(tensors.size());
  s.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata) {
    s.put_string(key);
    s.put<uint32_t>(static_cast<uint32_t>(value.type));
    put_value(s, value);
  }
  uint64_t offset = 0;
  for (const auto& [name, type, ne, nbytes] : tensors) {
    s.put_string(name);
    s.put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) s.put<uint64_t>(static_cast<uint64_t>(d));
    s.put<uint32_t>(static_cast<uint32_t>(type));
    s.put<uint64_t>(offset);
    offset += (nbytes + alignment - 1) / alignment * alignment;
  }
  s.pad_to(alignment);
  return out;
}
}  // namespace

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<std::tuple<std::string, GgmlType, std::vector<int64_t>, size_t>> infos;
  for (const PendingTensor& t : tensors_) infos.emplace_back(t.name, t.type, t.ne, t.nbytes);
  std::vector<uint8_t> out = header_bytes(metadata_, infos, alignment_);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto* p = static_cast<const uint8_t*>(tensors_[i].data);
    out.insert(out.end(), p, p + tensors_[i].nbytes);
    // The file ends where the last tensor ends.
    if (i + 1 < tensors_.size()) out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::vector<std::tuple<std::string, GgmlType, std::vector<int64_t>, size_t>> infos;
  for (const PendingTensor& t : tensors_) infos.emplace_back(t.name, t.type, t.ne, t.nbytes);
  const std::vector<uint8_t> header = header_bytes(metadata_, infos, alignment_);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  size_t position = header.size();
  static const uint8_t zeros[64] = {};
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    ok = std::fwrite(tensors_[i].data, 1, tensors_[i].nbytes, f) == tensors_[i].nbytes;
    position += tensors_[i].nbytes;
    if (i + 1 < tensors_.size()) {
      const size_t padding = (alignment_ - position % alignment_) % alignment_;
      for (size_t left = padding; ok && left > 0;) {
        const size_t n = std::min(left, sizeof zeros);
        ok = std::fwrite(zeros, 1, n, f) == n;
        left -= n;
      }
      position += padding;
    }
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw Error(path + ": write failed");
}

}  // namespace nucleus
