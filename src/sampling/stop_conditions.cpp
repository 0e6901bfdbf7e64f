#include "sampling/stop_conditions.h"

#include <algorithm>

namespace nucleus {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::none: return "";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
  }
  return "";
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStringMatcher::push(std::string_view text) {
  if (stopped_) return "";
  std::string buffer = std::move(held_);
  held_.clear();
  buffer.append(text);
  if (stops_.empty()) return buffer;

  // The earliest complete match. (Matches cannot lie wholly in the old held-back tail.)
  size_t match_at = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = buffer.find(stop);
    if (at < match_at || (at == match_at && at != std::string::npos && stop.size() < matched_.size())) {
      match_at = at;
      matched_ = stop;
    }
  }
  if (match_at != std::string::npos) {
    stopped_ = true;
    buffer.resize(match_at);
    return buffer;
  }

  // Hold back the longest tail that some stop string begins with.
  size_t longest_stop = 0;
  for (const std::string& stop : stops_) longest_stop = std::max(longest_stop, stop.size());
  for (size_t tail = std::min(buffer.size(), longest_stop - 1); tail > 0; --tail) {
    const std::string_view suffix(buffer.data() + buffer.size() - tail, tail);
    const bool could_start = std::any_of(stops_.begin(), stops_.end(),
                                         [&](const std::string& stop) { return stop.starts_with(suffix); });
    if (could_start) {
      held_ = std::string(suffix);
      buffer.resize(buffer.size() - tail);
      break;
    }
  }
  return buffer;
}

std::string StopStringMatcher::flush() {
  std::string rest = std::move(held_);
  held_.clear();
  return stopped_ ? std::string() : rest;
}

StopChecker::StopChecker(const StopParams& params) : params_(params), matcher_(params.stop) {}

std::string StopChecker::on_token(bool end_of_generation, std::string_view text) {
  if (finished()) return "";
  const bool may_stop = n_tokens_ >= params_.min_tokens;  // this token's index ≥ min_tokens
  ++n_tokens_;
  std::string emitted;
  if (may_stop && end_of_generation && !params_.ignore_eos) {
    stopped_by_eog_ = true;
    return finish(FinishReason::stop);
  }
  if (may_stop) {
    emitted = matcher_.push(text);
    if (matcher_.stopped()) {
      reason_ = FinishReason::stop;
      return emitted;
    }
  } else {
    emitted = matcher_.flush();  // (empty: nothing is held before min_tokens)
    emitted.append(text);
  }
  if (n_tokens_ >= params_.max_tokens) emitted += finish(FinishReason::length);
  return emitted;
}

std::string StopChecker::finish(FinishReason reason) {
  if (reason_ == FinishReason::none) reason_ = reason;
  return matcher_.flush();
}

}  // namespace nucleus
