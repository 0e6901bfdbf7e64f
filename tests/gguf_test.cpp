// GGUF reader/writer: round trips of every metadata type, and one test per validation rule.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {
namespace {

std::vector<uint8_t> sample_file() {
  GgufWriter w;
  MetaValue u8; u8.type = MetaType::UINT8; u8.integer = 200;
  MetaValue i8; i8.type = MetaType::INT8; i8.integer = -100;
  MetaValue u16; u16.type = MetaType::UINT16; u16.integer = 60000;
  MetaValue i16; i16.type = MetaType::INT16; i16.integer = -30000;
  MetaValue u64; u64.type = MetaType::UINT64; u64.integer = static_cast<int64_t>(0xfedcba9876543210ull);
  MetaValue i64; i64.type = MetaType::INT64; i64.integer = std::numeric_limits<int64_t>::min();
  MetaValue f64; f64.type = MetaType::FLOAT64; f64.real = 3.141592653589793;
  MetaValue nested; nested.type = MetaType::ARRAY; nested.elem_type = MetaType::ARRAY;
  nested.array = {MetaValue::i32_array({1, 2}), MetaValue::string_array({"x"})};
  w.set("a.u8", u8);
  w.set("a.i8", i8);
  w.set("a.u16", u16);
  w.set("a.i16", i16);
  w.set("a.u32", MetaValue::u32(4000000000u));
  w.set("a.i32", MetaValue::i32(-2000000000));
  w.set("a.f32", MetaValue::f32(0.5f));
  w.set("a.bool", MetaValue::boolean(true));
  w.set("a.string", MetaValue::string("héllo"));
  w.set("a.u64", u64);
  w.set("a.i64", i64);
  w.set("a.f64", f64);
  w.set("a.strings", MetaValue::string_array({"", "a", "▁b"}));
  w.set("a.floats", MetaValue::f32_array({1.5f, -2.0f}));
  w.set("a.nested", nested);
  static const float data[2 * 3] = {1, 2, 3, 4, 5, 6};
  static const float bias[5] = {7, 8, 9, 10, 11};
  w.add_tensor("t.matrix", GgmlType::F32, {2, 3}, data, sizeof data);
  w.add_tensor("t.bias", GgmlType::F32, {5}, bias, sizeof bias);
  return w.to_bytes();
}

TEST(Gguf, RoundTripsEveryMetadataTypeAndTensors) {
  auto f = GgufFile::from_bytes(sample_file(), "sample.gguf");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_int("a.u8"), 200);
  EXPECT_EQ(f->get_int("a.i8"), -100);
  EXPECT_EQ(f->get_int("a.u16"), 60000);
  EXPECT_EQ(f->get_int("a.i16"), -30000);
  EXPECT_EQ(f->get_int("a.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("a.i32"), -2000000000);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("a.f32")), 0.5f);
  EXPECT_TRUE(f->get_bool("a.bool", false));
  EXPECT_EQ(f->get_string("a.string"), "héllo");
  EXPECT_EQ(static_cast<uint64_t>(f->get_int("a.u64")), 0xfedcba9876543210ull);
  EXPECT_EQ(f->get_int("a.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_DOUBLE_EQ(f->get_float("a.f64"), 3.141592653589793);
  EXPECT_EQ(f->get_array("a.strings").strings, (std::vector<std::string>{"", "a", "▁b"}));
  EXPECT_EQ(f->get_array("a.floats").reals, (std::vector<double>{1.5, -2.0}));
  const MetaValue& nested = f->get_array("a.nested");
  ASSERT_EQ(nested.array.size(), 2u);
  EXPECT_EQ(nested.array[0].ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(nested.array[1].strings, (std::vector<std::string>{"x"}));
  const TensorInfo* m = f->find_tensor("t.matrix");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ne[0], 2);
  EXPECT_EQ(m->ne[1], 3);
  EXPECT_EQ(m->offset % f->alignment(), 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(m->data)[5], 6.0f);
  const TensorInfo* b = f->find_tensor("t.bias");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->offset % 32, 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(b->data)[4], 11.0f);
}

// Expects parsing `bytes` to throw an Error whose message contains `needle`.
void expect_error(std::vector<uint8_t> bytes, const std::string& needle) {
  try {
    GgufFile::from_bytes(std::move(bytes), "bad.gguf");
    ADD_FAILURE() << "no error, expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.gguf"), std::string::npos) << e.what();
  }
}

template <typename T>
void poke(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// Offset of the first occurrence of `text` in the file (used to find fields by their key).
size_t find_text(const std::vector<uint8_t>& bytes, const std::string& text) {
  auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  EXPECT_NE(it, bytes.end());
  return static_cast<size_t>(it - bytes.begin());
}

TEST(Gguf, RejectsWrongMagic) {
  auto bytes = sample_file();
  bytes[0] = 'X';
  expect_error(bytes, "bad magic");
}

TEST(Gguf, RejectsUnknownVersion) {
  auto bytes = sample_file();
  poke<uint32_t>(bytes, 4, 7);
  expect_error(bytes, "unsupported GGUF version 7");
  poke<uint32_t>(bytes, 4, 1);
  expect_error(bytes, "unsupported GGUF version 1");
}

TEST(Gguf, AcceptsVersion2) {
  auto bytes = sample_file();
  poke<uint32_t>(bytes, 4, 2);
  EXPECT_EQ(GgufFile::from_bytes(bytes, "v2.gguf")->version(), 2u);
}

TEST(Gguf, RejectsTruncationAnywhere) {
  const auto bytes = sample_file();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(GgufFile::from_bytes(truncated, "cut.gguf"), Error) << "cut at " << cut;
  }
}

TEST(Gguf, RejectsStringLengthPastEnd) {
  auto bytes = sample_file();
  const size_t key = find_text(bytes, "a.string");
  poke<uint64_t>(bytes, key + 8 + 4, 1ull << 40);  // key, value type, then the string's length
  expect_error(bytes, "string length");
}

TEST(Gguf, RejectsArrayLengthPastEnd) {
  auto bytes = sample_file();
  const size_t key = find_text(bytes, "a.strings");
  poke<uint64_t>(bytes, key + 9 + 4 + 4, 1ull << 60);  // key, type, element type, then the count
  expect_error(bytes, "array length");
}

TEST(Gguf, RejectsUnknownValueType) {
  auto bytes = sample_file();
  const size_t key = find_text(bytes, "a.u8");
  poke<uint32_t>(bytes, key + 4, 99);
  expect_error(bytes, "unknown metadata value type 99");
}

TEST(Gguf, RejectsTensorDataPastEnd) {
  auto bytes = sample_file();
  const size_t name = find_text(bytes, "t.bias");
  // name, n_dims (4), dims (8), type (4), offset (8)
  poke<uint64_t>(bytes, name + 6 + 4 + 8 + 4, 1ull << 20);
  expect_error(bytes, "runs past the end of the file");
}

TEST(Gguf, RejectsDimensionOverflow) {
  auto bytes = sample_file();
  const size_t name = find_text(bytes, "t.matrix");
  poke<uint64_t>(bytes, name + 8 + 4, 1ull << 40);
  poke<uint64_t>(bytes, name + 8 + 4 + 8, 1ull << 40);
  expect_error(bytes, "overflow");
}

TEST(Gguf, RejectsUnknownTensorType) {
  auto bytes = sample_file();
  const size_t name = find_text(bytes, "t.bias");
  poke<uint32_t>(bytes, name + 6 + 4 + 8, 77);
  expect_error(bytes, "unknown or unsupported type id 77");
}

TEST(Gguf, RejectsMisalignedTensorOffset) {
  auto bytes = sample_file();
  const size_t name = find_text(bytes, "t.bias");
  poke<uint64_t>(bytes, name + 6 + 4 + 8 + 4, 33);
  expect_error(bytes, "not aligned");
}

TEST(Gguf, MissingRequiredKeyIsNamed) {
  auto f = GgufFile::from_bytes(sample_file(), "sample.gguf");
  try {
    f->get_int("llama.block_count");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing required key 'llama.block_count'"), std::string::npos);
  }
  EXPECT_THROW(f->get_int("a.string"), Error);  // wrong kind
}

}  // namespace
}  // namespace nucleus
