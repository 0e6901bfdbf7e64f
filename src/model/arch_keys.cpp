#include "model/arch_keys.h"

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

ArchKeys::ArchKeys(const GgufFile& file, const std::string& arch) : file_(file), prefix_(arch + ".") {}

const MetaValue* ArchKeys::find(const std::string& key) const {
  read_.insert(key);
  return file_.find(prefix_ + key);
}

bool ArchKeys::has(const std::string& key) const { return find(key) != nullptr; }

bool ArchKeys::is_array(const std::string& key) const {
  const MetaValue* v = find(key);
  return v && v->type == MetaType::ARRAY;
}

int64_t ArchKeys::get_int(const std::string& key) {
  read_.insert(key);
  return file_.get_int(prefix_ + key);
}

int64_t ArchKeys::get_int(const std::string& key, int64_t fallback) {
  read_.insert(key);
  return file_.get_int(prefix_ + key, fallback);
}

double ArchKeys::get_float(const std::string& key, double fallback) {
  read_.insert(key);
  return file_.get_float(prefix_ + key, fallback);
}

std::string ArchKeys::get_string(const std::string& key, const std::string& fallback) {
  read_.insert(key);
  return file_.get_string(prefix_ + key, fallback);
}

std::vector<int64_t> ArchKeys::get_per_layer_int(const std::string& key, int64_t n_layer, int64_t fallback) {
  const MetaValue* v = find(key);
  if (!v) return std::vector<int64_t>(static_cast<size_t>(n_layer), fallback);
  if (v->type != MetaType::ARRAY) return std::vector<int64_t>(static_cast<size_t>(n_layer), get_int(key));
  if (v->ints.size() != static_cast<size_t>(n_layer))
    fail(key, "has " + std::to_string(v->array_size()) + " integer elements, expected one per layer (" +
                  std::to_string(n_layer) + ")");
  return v->ints;
}

std::vector<bool> ArchKeys::get_bool_array(const std::string& key, int64_t n_layer) {
  const MetaValue* v = find(key);
  if (!v) fail(key, "is missing (required)");
  if (v->type != MetaType::ARRAY || v->elem_type != MetaType::BOOL || v->ints.size() != static_cast<size_t>(n_layer))
    fail(key, "must be an array of one bool per layer (" + std::to_string(n_layer) + ")");
  std::vector<bool> out;
  for (int64_t b : v->ints) out.push_back(b != 0);
  return out;
}

std::vector<int64_t> ArchKeys::get_int_array(const std::string& key) {
  const MetaValue* v = find(key);
  if (!v) fail(key, "is missing (required)");
  if (v->type != MetaType::ARRAY || v->ints.size() != v->array_size()) fail(key, "must be an array of integers");
  return v->ints;
}

void ArchKeys::accept(const std::string& key, const char* why) {
  (void)why;
  read_.insert(key);
}

void ArchKeys::fail(const std::string& key, const std::string& problem) const {
  throw Error(file_.path() + ": key '" + prefix_ + key + "' " + problem);
}

void ArchKeys::reject_unread() const {
  for (const auto& [key, value] : file_.metadata()) {
    if (key.rfind(prefix_, 0) != 0) continue;
    if (read_.count(key.substr(prefix_.size()))) continue;
    throw Error(file_.path() + ": key '" + key + "' (" + value.to_display(4) +
                ") describes a feature nucleus does not implement for architecture '" +
                prefix_.substr(0, prefix_.size() - 1) + "'; refusing to run the model without it");
  }
}

}  // namespace nucleus
