// One streaming completion request as a benchmark client sees it: when the first token arrived, the
// gaps between later chunks, when the stream ended, and the exact token counts from the usage chunk.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nucleus::cli {

struct StreamTiming {
  bool ok = false;
  std::string error;                   // why it failed (HTTP status, connection error, error event)
  double ttft_seconds = 0;             // request sent → first chunk with a choice
  double latency_seconds = 0;          // request sent → "data: [DONE]"
  std::vector<double> chunk_gaps;      // seconds between consecutive chunks with a choice (inter-token latency)
  int64_t prompt_tokens = 0, output_tokens = 0;  // from the final usage chunk
  std::string replica;                 // the x-nucleus-replica response header (empty: none)
};

using ExtraHeaders = std::vector<std::pair<std::string, std::string>>;

// POSTs `body` to `base_url` + "/v1/completions" with stream and stream_options.include_usage set,
// and times the SSE events as they arrive. `api_key` empty: no Authorization header.
StreamTiming stream_completion(const std::string& base_url, const std::string& api_key, nlohmann::json body,
                               const ExtraHeaders& extra_headers = {});

}  // namespace nucleus::cli
