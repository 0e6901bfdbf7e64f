// When a sequence stops, and what of its text may be shown.
//
// Rules, checked after every generated token (the first min_tokens tokens never stop a sequence;
// the sampler chain also bans end-of-generation tokens until then):
//   1. an end-of-generation token (EOS / end-of-turn) stops with reason "stop", unless ignore_eos
//      (then it is an ordinary token); its text is not emitted;
//   2. a stop string appearing in the detokenized output stops with reason "stop"; the text from the
//      start of the stop string on is never emitted, even when the string straddles several tokens;
//   3. after max_tokens tokens the sequence stops with reason "length".
// Stop strings are searched only in text from token min_tokens on. Text is held back only while its
// tail is still the beginning of some stop string (StopStringMatcher), so streaming lags the model by
// at most (longest stop string − 1) bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nucleus {

enum class FinishReason { none, stop, length };
const char* finish_reason_name(FinishReason reason);  // "", "stop", "length" (OpenAI's names)

struct StopParams {
  int32_t max_tokens = 128;
  int32_t min_tokens = 0;
  std::vector<std::string> stop;  // stop strings; empty ones are ignored
  bool ignore_eos = false;
};

// Finds stop strings in a stream of text that may split them anywhere.
// Invariant: the held-back text is the longest tail of what was pushed that is a proper prefix of
// some stop string — so any future match must begin inside it, and everything released before it
// can never become part of a match.
class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  // Adds text; returns what may be emitted now: with a match, the text before the earliest stop
  // string (and stopped() becomes true); otherwise everything but the held-back tail.
  // After a match, further pushes return "".
  std::string push(std::string_view text);
  // End of the stream: no stop string can match any more; returns the held-back text.
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string found
  const std::string& held_back() const { return held_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

// The per-token stop rules of one sequence (see the top of this file).
class StopChecker {
 public:
  explicit StopChecker(const StopParams& params);

  // One generated token: whether it is an end-of-generation token, and its detokenized text
  // (complete UTF-8, e.g. from IncrementalDetokenizer). Returns the text to emit now; when the
  // sequence finishes, the held-back text that is not part of a stop string is included.
  std::string on_token(bool end_of_generation, std::string_view text);
  // The sequence ended for an outside reason (context full): releases the held-back text.
  std::string finish(FinishReason reason);

  bool finished() const { return reason_ != FinishReason::none; }
  FinishReason finish_reason() const { return reason_; }
  int64_t n_tokens() const { return n_tokens_; }   // tokens seen, the stopping EOS included
  bool stopped_by_end_of_generation() const { return stopped_by_eog_; }
  bool stopped_by_stop_string() const { return matcher_.stopped(); }

 private:
  StopParams params_;
  StopStringMatcher matcher_;
  int64_t n_tokens_ = 0;
  FinishReason reason_ = FinishReason::none;
  bool stopped_by_eog_ = false;
};

}  // namespace nucleus
