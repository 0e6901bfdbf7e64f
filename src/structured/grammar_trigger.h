// Lazy constraints: a grammar that applies from the first occurrence of a trigger text in the output
// on (tool calls under tool_choice "auto": free text until the model opens a call, "<tool_call>",
// then a call valid under the tools' schemas).
//
// TriggerScanner finds, for the free text so far, every token that would complete the trigger
// (the trigger may start in the text and end in the token, or lie wholly inside the token) and where
// in the token's bytes the trigger starts, so a constraint can check those bytes against the
// grammar before the token is sampled. An occurrence that ends inside the token either lies wholly
// in it (tokens holding the whole trigger: found once, at construction) or begins in the text's last
// bytes, which then end in a proper prefix of the trigger, and continues at the token's start (the
// tokens starting with the trigger's rest: a subtree of the vocabulary trie) — never a scan of the
// whole vocabulary per step.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nucleus {

class VocabularyTrie;

class TriggerScanner {
 public:
  TriggerScanner(std::string trigger, std::shared_ptr<const VocabularyTrie> vocabulary);

  const std::string& trigger() const { return trigger_; }

  struct Completion {
    int32_t token;
    size_t start;  // where the trigger starts in tail + the token's bytes
  };
  // Tokens completing the trigger after `text` (which does not contain it), each once.
  std::vector<Completion> completions(std::string_view text) const;
  // Where the first trigger occurrence starts in `text`, or npos.
  size_t find(std::string_view text) const { return text.find(trigger_); }

 private:
  std::string trigger_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  std::vector<int32_t> holding_trigger_;  // tokens whose bytes contain the whole trigger
};

}  // namespace nucleus
