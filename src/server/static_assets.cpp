#include "server/static_assets.h"

#include <array>
#include <cstddef>

namespace nucleus::server {

namespace {

std::string_view bytes_view(const unsigned char* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Generated: kEmbeddedFiles, an array of {name, content type, bytes, size}.
struct EmbeddedFile {
  const char* name;
  const char* content_type;
  const unsigned char* data;
  size_t size;
};
#include "explainer_assets.inc"

std::array<StaticAsset, std::size(kEmbeddedFiles)> make_assets() {
  std::array<StaticAsset, std::size(kEmbeddedFiles)> assets;
  for (size_t i = 0; i < assets.size(); ++i)
    assets[i] = {kEmbeddedFiles[i].name, kEmbeddedFiles[i].content_type, bytes_view(kEmbeddedFiles[i].data, kEmbeddedFiles[i].size)};
  return assets;
}

}  // namespace

const StaticAsset* find_static_asset(std::string_view name) {
  static const auto assets = make_assets();  // immutable after its thread-safe initialization
  for (const StaticAsset& asset : assets)
    if (asset.name == name) return &asset;
  return nullptr;
}

}  // namespace nucleus::server
