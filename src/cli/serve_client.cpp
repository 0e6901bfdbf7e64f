#include "cli/serve_client.h"

#include <httplib.h>

#include <chrono>

namespace nucleus::cli {

StreamTiming stream_completion(const std::string& base_url, const std::string& api_key, nlohmann::json body,
                               const ExtraHeaders& extra_headers) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  StreamTiming timing;
  httplib::Client client(base_url);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(600, 0);
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.body = body.dump();
  request.headers.emplace("Content-Type", "application/json");
  if (!api_key.empty()) request.headers.emplace("Authorization", "Bearer " + api_key);
  for (const auto& [name, value] : extra_headers) request.headers.emplace(name, value);

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double last_chunk = -1;
  bool done = false;
  std::string buffer, error_event;
  request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    const double now = elapsed();
    buffer.append(data, length);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        timing.latency_seconds = now;
        continue;
      }
      const nlohmann::json chunk = nlohmann::json::parse(payload, nullptr, false);
      if (chunk.is_discarded()) {
        error_event = "unparsable event: " + payload.substr(0, 200);
        return false;
      }
      if (chunk.contains("error")) {
        error_event = chunk["error"].value("message", "error event");
        continue;
      }
      if (chunk.value("choices", nlohmann::json::array()).empty()) {
        if (chunk.contains("usage") && chunk["usage"].is_object()) {
          timing.prompt_tokens = chunk["usage"].value("prompt_tokens", int64_t{0});
          timing.output_tokens = chunk["usage"].value("completion_tokens", int64_t{0});
        }
        continue;
      }
      if (last_chunk < 0) {
        timing.ttft_seconds = now;
      } else {
        timing.chunk_gaps.push_back(now - last_chunk);
      }
      last_chunk = now;
    }
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(request, response, error);
  timing.replica = response.get_header_value("x-nucleus-replica");
  if (!sent && error_event.empty()) {
    timing.error = "connection: " + httplib::to_string(error);
  } else if (response.status != 200) {
    timing.error = "HTTP " + std::to_string(response.status) + " " + response.body.substr(0, 200);
  } else if (!error_event.empty()) {
    timing.error = error_event;
  } else if (!done) {
    timing.error = "stream ended without [DONE]";
  } else if (timing.output_tokens <= 0) {
    timing.error = "no usage chunk";
  } else {
    timing.ok = true;
  }
  return timing;
}

}  // namespace nucleus::cli
