// The explainer UI's files (web/explainer/), compiled into the binary at build time by
// cmake/embed_assets.cmake, so `nucleus serve` needs no files beside it and no network.
#pragma once
#include <string_view>

namespace nucleus::server {

struct StaticAsset {
  std::string_view name;          // file name, e.g. "app.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view body;
};

// nullptr when no embedded file has that name.
const StaticAsset* find_static_asset(std::string_view name);

}  // namespace nucleus::server
