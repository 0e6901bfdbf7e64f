#include "structured/grammar_trigger.h"

#include <algorithm>

#include "core/error.h"
#include "structured/token_mask.h"

namespace nucleus {

TriggerScanner::TriggerScanner(std::string trigger, std::shared_ptr<const VocabularyTrie> vocabulary)
    : trigger_(std::move(trigger)), vocabulary_(std::move(vocabulary)) {
  if (trigger_.empty()) throw Error("internal: an empty grammar trigger");
  for (int32_t id = 0; id < vocabulary_->n_vocab(); ++id)
    if (vocabulary_->bytes_of(id).find(trigger_) != std::string::npos) holding_trigger_.push_back(id);
}

std::vector<TriggerScanner::Completion> TriggerScanner::completions(std::string_view text) const {
  // Only the last |trigger| - 1 bytes of the text can take part in an occurrence.
  const size_t keep = std::min(text.size(), trigger_.size() - 1);
  const std::string_view tail = text.substr(text.size() - keep);
  std::vector<Completion> out;
  std::string joined;
  auto check = [&](int32_t id) {
    const std::string& bytes = vocabulary_->bytes_of(id);
    if (bytes.empty()) return;
    joined.assign(tail);
    joined += bytes;
    const size_t at = joined.find(trigger_);
    if (at != std::string::npos) out.push_back({id, at});
  };
  for (int32_t id : holding_trigger_) check(id);
  // Tokens that finish an occurrence begun in the tail (those holding the whole trigger were seen above).
  const TokenTrie& trie = vocabulary_->all();
  for (size_t k = 1; k <= keep; ++k) {
    if (tail.substr(keep - k) != std::string_view(trigger_).substr(0, k)) continue;
    const std::string_view rest = std::string_view(trigger_).substr(k);
    uint32_t node = 0;
    bool found = true;
    for (char c : rest) {  // descend along the rest of the trigger
      const TokenTrie::Node& n = trie.nodes[node];
      found = false;
      for (uint32_t ch = n.first_child; ch < n.first_child + n.num_children; ++ch)
        if (trie.nodes[ch].byte == static_cast<uint8_t>(c)) {
          node = ch;
          found = true;
          break;
        }
      if (!found) break;
    }
    if (!found) continue;
    for (uint32_t i = trie.nodes[node].subtree_begin; i < trie.nodes[node].subtree_end; ++i) {
      const int32_t id = trie.sorted[i];
      check(id);
    }
  }
  std::sort(out.begin(), out.end(), [](const Completion& a, const Completion& b) { return a.token < b.token; });
  out.erase(std::unique(out.begin(), out.end(), [](const Completion& a, const Completion& b) { return a.token == b.token; }),
            out.end());
  return out;
}

}  // namespace nucleus
