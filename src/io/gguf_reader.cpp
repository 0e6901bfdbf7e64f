// GGUF parsing with a bounds-checked cursor: every length read from the file is checked
// against the bytes that remain before it is used, so a malformed file is an Error, never
// an out-of-bounds read.
#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxDims = 4;
constexpr int kMaxArrayNesting = 8;

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ": " + what + " (at byte " + std::to_string(pos_) + " of " + std::to_string(size_) + ")");
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(size_t n, const char* what) const {
    if (n > remaining()) fail(std::string("truncated file: ") + what + " runs past the end");
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining()) fail(std::string("string length ") + std::to_string(len) + " of " + what + " runs past the end");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

size_t scalar_size(MetaType t) {
  switch (t) {
    case MetaType::UINT8: case MetaType::INT8: case MetaType::BOOL: return 1;
    case MetaType::UINT16: case MetaType::INT16: return 2;
    case MetaType::UINT32: case MetaType::INT32: case MetaType::FLOAT32: return 4;
    case MetaType::UINT64: case MetaType::INT64: case MetaType::FLOAT64: return 8;
    case MetaType::STRING: return 8;  // at least the length prefix
    case MetaType::ARRAY: return 12;  // at least type + count
  }
  return 0;
}

bool valid_meta_type(uint32_t t) { return t <= static_cast<uint32_t>(MetaType::FLOAT64); }

bool is_integer_type(MetaType t) {
  return t == MetaType::UINT8 || t == MetaType::INT8 || t == MetaType::UINT16 || t == MetaType::INT16 ||
         t == MetaType::UINT32 || t == MetaType::INT32 || t == MetaType::UINT64 || t == MetaType::INT64 ||
         t == MetaType::BOOL;
}

int64_t read_integer(Cursor& c, MetaType t) {
  switch (t) {
    case MetaType::UINT8: return c.read<uint8_t>("u8 value");
    case MetaType::INT8: return c.read<int8_t>("i8 value");
    case MetaType::UINT16: return c.read<uint16_t>("u16 value");
    case MetaType::INT16: return c.read<int16_t>("i16 value");
    case MetaType::UINT32: return c.read<uint32_t>("u32 value");
    case MetaType::INT32: return c.read<int32_t>("i32 value");
    case MetaType::UINT64: return static_cast<int64_t>(c.read<uint64_t>("u64 value"));
    case MetaType::INT64: return c.read<int64_t>("i64 value");
    case MetaType::BOOL: {
      uint8_t b = c.read<uint8_t>("bool value");
      if (b > 1) c.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
      return b;
    }
    default: c.fail("internal: not an integer type");
  }
}

MetaValue read_value(Cursor& c, MetaType type, int depth, const std::string& key) {
  MetaValue v;
  v.type = type;
  if (is_integer_type(type)) {
    v.integer = read_integer(c, type);
  } else if (type == MetaType::FLOAT32) {
    v.real = c.read<float>("f32 value");
  } else if (type == MetaType::FLOAT64) {
    v.real = c.read<double>("f64 value");
  } else if (type == MetaType::STRING) {
    v.str = c.read_string("string value");
  } else {  // ARRAY
    if (depth >= kMaxArrayNesting) c.fail("arrays nested too deeply in key '" + key + "'");
    const uint32_t elem = c.read<uint32_t>("array element type");
    if (!valid_meta_type(elem)) c.fail("unknown array element type " + std::to_string(elem) + " in key '" + key + "'");
    v.elem_type = static_cast<MetaType>(elem);
    const uint64_t n = c.read<uint64_t>("array length");
    const size_t min_size = scalar_size(v.elem_type);
    if (n > c.remaining() / min_size)
      c.fail("array length " + std::to_string(n) + " of key '" + key + "' runs past the end");
    if (is_integer_type(v.elem_type)) {
      v.ints.resize(n);
      for (uint64_t i = 0; i < n; ++i) v.ints[i] = read_integer(c, v.elem_type);
    } else if (v.elem_type == MetaType::FLOAT32) {
      v.reals.resize(n);
      for (uint64_t i = 0; i < n; ++i) v.reals[i] = c.read<float>("f32 element");
    } else if (v.elem_type == MetaType::FLOAT64) {
      v.reals.resize(n);
      for (uint64_t i = 0; i < n; ++i) v.reals[i] = c.read<double>("f64 element");
    } else if (v.elem_type == MetaType::STRING) {
      v.strings.resize(n);
      for (uint64_t i = 0; i < n; ++i) v.strings[i] = c.read_string("string element");
    } else {
      v.array.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v.array.push_back(read_value(c, MetaType::ARRAY, depth + 1, key));
    }
  }
  return v;
}

}  // namespace

const char* meta_type_name(MetaType type) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(type);
  return i < 13 ? names[i] : "unknown";
}

size_t MetaValue::array_size() const {
  if (type != MetaType::ARRAY) return 0;
  return ints.size() + reals.size() + strings.size() + array.size();
}

std::string MetaValue::to_display(size_t max_elems) const {
  std::ostringstream out;
  if (is_integer_type(type)) {
    if (type == MetaType::BOOL) out << (integer ? "true" : "false");
    else if (type == MetaType::UINT64) out << static_cast<uint64_t>(integer);
    else out << integer;
  } else if (type == MetaType::FLOAT32 || type == MetaType::FLOAT64) {
    out << real;
  } else if (type == MetaType::STRING) {
    std::string s = str.size() > 60 ? str.substr(0, 60) + "…" : str;
    for (char& ch : s) if (ch == '\n') ch = ' ';
    out << '"' << s << '"';
  } else {
    out << "[" << meta_type_name(elem_type) << " × " << array_size() << "]";
    if (max_elems > 0) {
      out << " ";
      size_t n = std::min(max_elems, array_size());
      for (size_t i = 0; i < n; ++i) {
        if (i) out << ", ";
        if (!ints.empty()) out << ints[i];
        else if (!reals.empty()) out << reals[i];
        else if (!strings.empty()) out << '"' << strings[i] << '"';
        else out << "[…]";
      }
      if (array_size() > n) out << ", …";
    }
  }
  return out.str();
}

MetaValue MetaValue::string_array(std::vector<std::string> v) {
  MetaValue m;
  m.type = MetaType::ARRAY;
  m.elem_type = MetaType::STRING;
  m.strings = std::move(v);
  return m;
}
MetaValue MetaValue::f32_array(std::vector<float> v) {
  MetaValue m;
  m.type = MetaType::ARRAY;
  m.elem_type = MetaType::FLOAT32;
  m.reals.assign(v.begin(), v.end());
  return m;
}
MetaValue MetaValue::i32_array(std::vector<int32_t> v) {
  MetaValue m;
  m.type = MetaType::ARRAY;
  m.elem_type = MetaType::INT32;
  m.ints.assign(v.begin(), v.end());
  return m;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  file->path_ = path;
  file->mapping_ = std::make_unique<MappedFile>(path);
  file->parse(file->mapping_->data(), file->mapping_->size());
  return file;
}

std::unique_ptr<GgufFile> GgufFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  file->path_ = name;
  file->image_ = std::move(bytes);
  file->parse(file->image_.data(), file->image_.size());
  return file;
}

void GgufFile::parse(const uint8_t* data, size_t size) {
  size_ = size;
  Cursor c(data, size, path_);
  const uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kGgufMagic) c.fail("not a GGUF file (bad magic)");
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) c.fail("unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Each entry needs at least a key length (8) + type (4); each tensor at least 8+4+4+8 bytes.
  if (n_kv > c.remaining() / 12) c.fail("metadata count " + std::to_string(n_kv) + " runs past the end");
  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key");
    const uint32_t type = c.read<uint32_t>("metadata value type");
    if (!valid_meta_type(type)) c.fail("unknown metadata value type " + std::to_string(type) + " for key '" + key + "'");
    MetaValue value = read_value(c, static_cast<MetaType>(type), 0, key);
    if (metadata_index_.count(key)) c.fail("duplicate metadata key '" + key + "'");
    metadata_index_[key] = metadata_.size();
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  if (const MetaValue* a = find("general.alignment")) {
    if (a->type != MetaType::UINT32 || a->integer == 0 || (a->integer & (a->integer - 1)) != 0)
      c.fail("general.alignment must be a u32 power of two");
    alignment_ = static_cast<size_t>(a->integer);
  }
  if (n_tensors > c.remaining() / 24) c.fail("tensor count " + std::to_string(n_tensors) + " runs past the end");
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = c.read_string("tensor name");
    const uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims < 1 || n_dims > kMaxDims)
      c.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    t.n_dims = static_cast<int>(n_dims);
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>("tensor dimension");
      if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c.fail("tensor '" + t.name + "' has invalid dimension " + std::to_string(ne));
      if (static_cast<uint64_t>(n_elements) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne)
        c.fail("tensor '" + t.name + "' dimensions overflow (product too large)");
      t.ne[d] = static_cast<int64_t>(ne);
      n_elements *= static_cast<int64_t>(ne);
    }
    const uint32_t type = c.read<uint32_t>("tensor type");
    auto traits = ggml_type_traits(type);
    if (!traits) c.fail("tensor '" + t.name + "' has unknown or unsupported type id " + std::to_string(type));
    t.type = static_cast<GgmlType>(type);
    if (t.ne[0] % traits->block_size != 0)
      c.fail("tensor '" + t.name + "' row length " + std::to_string(t.ne[0]) + " is not a multiple of the " +
             traits->name + " block size " + std::to_string(traits->block_size));
    const uint64_t n_blocks = static_cast<uint64_t>(n_elements / traits->block_size);
    if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->type_size)
      c.fail("tensor '" + t.name + "' byte size overflows");
    t.nbytes = n_blocks * traits->type_size;
    t.offset = c.read<uint64_t>("tensor offset");
    if (t.offset % alignment_ != 0) c.fail("tensor '" + t.name + "' offset is not aligned to " + std::to_string(alignment_));
    if (tensor_index_.count(t.name)) c.fail("duplicate tensor name '" + t.name + "'");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  size_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_start > size) c.fail("truncated file: data section is missing");
  const size_t data_size = data_start <= size ? size - data_start : 0;
  data_offset_ = data_start;
  for (TensorInfo& t : tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      c.fail("tensor '" + t.name + "' data (" + std::to_string(t.nbytes) + " bytes at offset " + std::to_string(t.offset) +
             ") runs past the end of the file");
    t.data = data + data_start + t.offset;
  }
}

const MetaValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

int64_t GgufFile::get_int(const std::string& key) const {
  const MetaValue* v = find(key);
  if (!v) throw Error(path_ + ": missing required key '" + key + "'");
  if (!is_integer_type(v->type)) throw Error(path_ + ": key '" + key + "' is " + meta_type_name(v->type) + ", expected an integer");
  return v->integer;
}
int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const { return has(key) ? get_int(key) : fallback; }

double GgufFile::get_float(const std::string& key) const {
  const MetaValue* v = find(key);
  if (!v) throw Error(path_ + ": missing required key '" + key + "'");
  if (v->type == MetaType::FLOAT32 || v->type == MetaType::FLOAT64) return v->real;
  if (is_integer_type(v->type)) return static_cast<double>(v->integer);
  throw Error(path_ + ": key '" + key + "' is " + meta_type_name(v->type) + ", expected a number");
}
double GgufFile::get_float(const std::string& key, double fallback) const { return has(key) ? get_float(key) : fallback; }

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
  const MetaValue* v = find(key);
  if (!v) return fallback;
  if (!is_integer_type(v->type)) throw Error(path_ + ": key '" + key + "' is " + meta_type_name(v->type) + ", expected a bool");
  return v->integer != 0;
}

std::string GgufFile::get_string(const std::string& key) const {
  const MetaValue* v = find(key);
  if (!v) throw Error(path_ + ": missing required key '" + key + "'");
  if (v->type != MetaType::STRING) throw Error(path_ + ": key '" + key + "' is " + meta_type_name(v->type) + ", expected a string");
  return v->str;
}
std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

const MetaValue& GgufFile::get_array(const std::string& key) const {
  const MetaValue* v = find(key);
  if (!v) throw Error(path_ + ": missing required key '" + key + "'");
  if (v->type != MetaType::ARRAY) throw Error(path_ + ": key '" + key + "' is " + meta_type_name(v->type) + ", expected an array");
  return *v;
}

}  // namespace nucleus
