// Stop conditions: stop strings that straddle 1, 2 and 3 tokens are never emitted, text is held back
// only while a stop string could still match, and the token rules (EOS, ignore_eos, min_tokens,
// max_tokens) end sequences with the right reason.
#include <gtest/gtest.h>

#include "engine/model_source.h"
#include "model/sequence_runner.h"
#include "sampling/stop_conditions.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

StopParams stop_params(int32_t max_tokens, int32_t min_tokens = 0, std::vector<std::string> stop = {},
                       bool ignore_eos = false) {
  StopParams p;
  p.max_tokens = max_tokens;
  p.min_tokens = min_tokens;
  p.stop = std::move(stop);
  p.ignore_eos = ignore_eos;
  return p;
}

struct StopCase {
  std::vector<std::string> pieces;  // the detokenized text of each token
  std::vector<std::string> stops;
  std::string expected;             // everything emitted
  bool stopped;
  int tokens_spanned;               // how many tokens the first match straddles (documentation)
};

// Emits every piece through a matcher and checks the holding invariant after each push.
std::string run_matcher(const StopCase& c, bool& stopped) {
  StopStringMatcher matcher(c.stops);
  std::string emitted, pushed;
  for (const std::string& piece : c.pieces) {
    emitted += matcher.push(piece);
    pushed += piece;
    if (matcher.stopped()) break;
    // Held back = the longest tail of the text that some stop string starts with; nothing more.
    EXPECT_EQ(emitted + matcher.held_back(), pushed);
    size_t longest = 0;
    for (const std::string& stop : c.stops)
      for (size_t n = 1; n < stop.size() && n <= pushed.size(); ++n)
        if (pushed.compare(pushed.size() - n, n, stop, 0, n) == 0) longest = std::max(longest, n);
    EXPECT_EQ(matcher.held_back().size(), longest) << "after '" << piece << "'";
  }
  stopped = matcher.stopped();
  emitted += matcher.flush();
  return emitted;
}

TEST(StopStringMatcher, StopStringsStraddlingOneTwoAndThreeTokens) {
  const std::vector<StopCase> cases = {
      // One token holds the whole stop string.
      {{"Hello", " world", "!", " More"}, {" world"}, "Hello", true, 1},
      {{"a", "bSTOPc", "d"}, {"STOP"}, "ab", true, 1},
      // Two tokens.
      {{"Hello", " wo", "rld", "!"}, {" world"}, "Hello", true, 2},
      {{"x", "<|e", "nd|>", "y"}, {"<|end|>"}, "x", true, 2},
      {{"ab", "cd", "ef"}, {"bc"}, "a", true, 2},
      // Three tokens.
      {{"The", " e", "n", "d.", " After"}, {" end"}, "The", true, 3},
      {{"1", "2", "3", "4", "5"}, {"234"}, "1", true, 3},
      {{"<", "|", "im_end", "|>", "tail"}, {"<|im_end|>"}, "", true, 4},
      // False starts: a prefix appears, the text goes elsewhere; all of it must come out.
      {{"Hello", " wo", "nderful", " world"}, {" world"}, "Hello wonderful", true, 1},
      {{"aab", "aac"}, {"aaa"}, "aabaac", false, 0},
      {{"ST", "OP", "!"}, {"STOPPED", "OP!"}, "ST", true, 2},
      // The earliest of several stop strings wins, whatever their order in the list.
      {{"one two", " three"}, {"three", "two"}, "one ", true, 1},
      // Never matched: everything is emitted, the held-back tail at the end too.
      {{"abc", "de"}, {"xyz", "e!"}, "abcde", false, 0},
      {{"end wi", "th S"}, {"STOP"}, "end with S", false, 0},
      // Multi-byte UTF-8 stop strings split at byte level between tokens.
      {{"caf", "\xC3", "\xA9", " au lait"}, {"\xC3\xA9 au"}, "caf", true, 3},
  };
  for (const StopCase& c : cases) {
    bool stopped = false;
    const std::string emitted = run_matcher(c, stopped);
    std::string all;
    for (const auto& piece : c.pieces) all += piece;
    EXPECT_EQ(emitted, c.expected) << all;
    EXPECT_EQ(stopped, c.stopped) << all;
    for (const std::string& stop : c.stops)
      EXPECT_EQ(emitted.find(stop), std::string::npos) << "emitted '" << emitted << "' contains '" << stop << "'";
  }
}

TEST(StopStringMatcher, HoldsNothingWithoutStopStrings) {
  StopStringMatcher matcher({});
  EXPECT_EQ(matcher.push("abc"), "abc");
  EXPECT_EQ(matcher.held_back(), "");
  StopStringMatcher empty_only({""});
  EXPECT_EQ(empty_only.push("abc"), "abc");
}

TEST(StopChecker, EndOfGenerationMaxTokensMinTokensAndIgnoreEos) {
  {
    StopChecker stop(stop_params(10));
    EXPECT_EQ(stop.on_token(false, "a"), "a");
    EXPECT_EQ(stop.on_token(true, ""), "");
    EXPECT_EQ(stop.finish_reason(), FinishReason::stop);
    EXPECT_TRUE(stop.stopped_by_end_of_generation());
  }
  {
    StopChecker stop(stop_params(3));
    std::string out;
    for (int i = 0; i < 3; ++i) out += stop.on_token(false, "x");
    EXPECT_EQ(out, "xxx");
    EXPECT_EQ(stop.finish_reason(), FinishReason::length);
  }
  {
    StopChecker stop(stop_params(4, 0, {}, true));
    stop.on_token(true, "");
    EXPECT_FALSE(stop.finished());
  }
  {
    // min_tokens: neither EOS nor a stop string can end the first 2 tokens.
    StopChecker stop(stop_params(10, 2, {"b"}));
    EXPECT_EQ(stop.on_token(false, "ab"), "ab");
    EXPECT_EQ(stop.on_token(true, ""), "");
    EXPECT_FALSE(stop.finished());
    EXPECT_EQ(stop.on_token(false, "cbd"), "c");
    EXPECT_EQ(stop.finish_reason(), FinishReason::stop);
    EXPECT_FALSE(stop.stopped_by_end_of_generation());
  }
  {
    // Held-back text is released when the length limit ends the sequence.
    StopChecker stop(stop_params(2, 0, {"xyz"}));
    EXPECT_EQ(stop.on_token(false, "a"), "a");
    EXPECT_EQ(stop.on_token(false, "x"), "x");
    EXPECT_EQ(stop.finish_reason(), FinishReason::length);
  }
}

// On real detokenized output: stop strings chosen to straddle 1, 2 and 3 tokens of a greedy
// continuation are cut exactly at their first occurrence.
TEST(StopChecker, RealTokensStopStringsAcrossTokenBoundaries) {
  NUCLEUS_REQUIRE_SHARED();
  ModelSource source;
  source.model_path = test::shared_path("models/stories260K.gguf");
  LoadedModel loaded = load_model(source);
  const Tokenizer& tokenizer = *loaded.tokenizer;
  const std::vector<int32_t> prompt = tokenizer.encode("Once upon a time", true, false);
  SequenceRunner runner(*loaded.model, 200, 1);
  std::vector<int32_t> tokens;
  const std::vector<float>* logits = &runner.feed(prompt);
  for (int i = 0; i < 60; ++i) {
    const auto t = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    tokens.push_back(t);
    logits = &runner.feed({t});
  }
  std::vector<std::string> pieces;
  std::vector<size_t> starts;  // byte offset of each piece in the text
  std::string text;
  for (int32_t t : tokens) {
    starts.push_back(text.size());
    pieces.push_back(tokenizer.token_to_piece(t));
    text += pieces.back();
  }
  int checked[4] = {0, 0, 0, 0};
  // Stop strings: from the middle of token i to the middle of token i + span − 1.
  for (size_t i = 2; i + 3 < pieces.size(); ++i) {
    for (int span = 1; span <= 3; ++span) {
      const size_t begin = starts[i] + (span == 1 ? 0 : pieces[i].size() / 2);
      const size_t last = i + static_cast<size_t>(span) - 1;
      const size_t end = span == 1 ? starts[i] + pieces[i].size() : starts[last] + std::max<size_t>(1, pieces[last].size() / 2);
      if (end <= begin) continue;
      const std::string stop_string = text.substr(begin, end - begin);
      const size_t first = text.find(stop_string);
      StopChecker stop(stop_params(1000, 0, {stop_string}));
      std::string emitted;
      for (size_t k = 0; k < pieces.size() && !stop.finished(); ++k) emitted += stop.on_token(false, pieces[k]);
      if (!stop.finished()) emitted += stop.finish(FinishReason::length);
      EXPECT_EQ(emitted, text.substr(0, first)) << "stop '" << stop_string << "'";
      EXPECT_EQ(emitted.find(stop_string), std::string::npos);
      ++checked[span];
    }
  }
  EXPECT_GT(checked[1], 10);
  EXPECT_GT(checked[2], 10);
  EXPECT_GT(checked[3], 10);
}

}  // namespace
}  // namespace nucleus
