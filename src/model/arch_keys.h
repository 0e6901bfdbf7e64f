// Reading a family's "<arch>.*" metadata keys while remembering which were read, so that a key the
// description does not use — a feature nucleus does not implement, such as YaRN rope scaling — is an
// error naming it instead of being silently ignored.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace nucleus {

class GgufFile;
struct MetaValue;

class ArchKeys {
 public:
  ArchKeys(const GgufFile& file, const std::string& arch);

  bool has(const std::string& key) const;
  int64_t get_int(const std::string& key);
  int64_t get_int(const std::string& key, int64_t fallback);
  double get_float(const std::string& key, double fallback);
  std::string get_string(const std::string& key, const std::string& fallback);
  // A per-layer key that is either one number for every layer or an array of n_layer numbers.
  std::vector<int64_t> get_per_layer_int(const std::string& key, int64_t n_layer, int64_t fallback);
  // A per-layer bool array (e.g. gemma4's sliding_window_pattern); required.
  std::vector<bool> get_bool_array(const std::string& key, int64_t n_layer);
  // An integer array (e.g. qwen35's rope.dimension_sections); required.
  std::vector<int64_t> get_int_array(const std::string& key);
  bool is_array(const std::string& key) const;
  // Marks a key as read without using it; `why` documents the no-op for readers of the code.
  void accept(const std::string& key, const char* why);

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  // Throws Error naming the first "<arch>." key no reader consumed.
  void reject_unread() const;

 private:
  const MetaValue* find(const std::string& key) const;
  const GgufFile& file_;
  std::string prefix_;  // "<arch>."
  mutable std::set<std::string> read_;
};

}  // namespace nucleus
