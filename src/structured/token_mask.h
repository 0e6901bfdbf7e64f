// From a grammar to the tokens a model may emit next.
//
// VocabularyTrie: every token's bytes (Tokenizer::token_to_piece) in one byte trie, built once per
// vocabulary. Tokens without bytes (control and unknown tokens) are never in a mask, except the
// end-of-generation tokens, which are allowed exactly when the grammar is complete.
//
// TokenConstraint: one request's parse. allowed_tokens() walks the trie from the current grammar
// state, descending only along bytes some stack can take, so the cost is the number of trie nodes
// that stay viable; masks are cached per grammar state (states repeat: inside a JSON string every
// character leaves the same state). accept_token() advances; rollback() undoes whole tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar_matcher.h"
#include "structured/grammar_trigger.h"

namespace nucleus {

class Tokenizer;

// A bitset over the vocabulary: bit id set = the token may come next.
struct TokenMask {
  std::vector<uint64_t> words;
  bool allows(int32_t id) const { return (words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  void allow(int32_t id) { words[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  size_t count() const;
};

// Token byte strings as a trie: children of a node are contiguous and sorted by byte.
struct TokenTrie {
  struct Node {
    uint32_t first_child = 0, num_children = 0;
    uint32_t first_token = 0, num_tokens = 0;  // tokens whose bytes end here: tokens[first_token ...]
    uint32_t subtree_begin = 0, subtree_end = 0;  // every token below (and at) this node: sorted[begin, end)
    uint8_t byte = 0;                          // the byte leading into this node
  };
  std::vector<Node> nodes;  // nodes[0]: the root (the empty prefix)
  std::vector<int32_t> tokens;
  std::vector<int32_t> sorted;  // the trie's ids sorted by their bytes: each subtree is a range
};

class VocabularyTrie {
 public:
  explicit VocabularyTrie(const Tokenizer& tokenizer);

  const TokenTrie& all() const { return all_; }
  // "Plain" tokens are whole UTF-8 characters that JSON strings may hold raw (no control bytes,
  // no '"', no '\', no DEL): a grammar state that every such character leads back to (the inside
  // of a free string) allows all of them at once; only the other tokens need a walk, in special().
  const TokenMask& plain_tokens() const { return plain_; }
  const TokenTrie& special() const { return special_; }
  const std::string& bytes_of(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  // True when the token's bytes from `offset` on are plain characters (offset at a character start).
  bool plain_from(int32_t id, size_t offset) const {
    const std::string& b = pieces_[static_cast<size_t>(id)];
    return offset >= plain_start_[static_cast<size_t>(id)] && (offset == b.size() || (static_cast<uint8_t>(b[offset]) & 0xC0) != 0x80);
  }
  const std::vector<int32_t>& end_of_generation_ids() const { return end_of_generation_; }
  bool is_end_of_generation(int32_t id) const;
  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  size_t max_token_bytes_ = 0;
  std::vector<uint16_t> plain_start_;  // per id: the smallest offset from which its bytes are plain
  std::vector<std::string> pieces_;  // per id; empty for tokens that are never masked in
  std::vector<int32_t> end_of_generation_;
  TokenTrie all_, special_;
  TokenMask plain_;
};

// What every parse of one grammar over one vocabulary shares: the automaton (stack nodes and
// memoized byte steps) and the mask of each grammar state seen (at most `max_masks`, then the cache
// starts over). Not thread-safe: used by the engine's step thread only.
class ConstraintTables {
 public:
  ConstraintTables(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> vocabulary,
                   size_t max_masks = 512);
  // The tokens allowed from `state` (the reference stays valid until the next call).
  const TokenMask& mask_for(const GrammarAutomaton::State& state);
  const std::shared_ptr<GrammarAutomaton>& automaton() const { return automaton_; }
  const VocabularyTrie& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const VocabularyTrie>& vocabulary_ptr() const { return vocabulary_; }
  const Grammar& grammar() const { return automaton_->grammar(); }

 private:
  void walk(const TokenTrie& trie, uint32_t trie_node, size_t depth, TokenMask& mask);
  // True when every plain character (VocabularyTrie::plain_tokens) leads from `state` back to it.
  bool loops_on_plain_characters(const GrammarAutomaton::State& state);
  // True when the stack `node` alone loops on plain characters (memoized per node).
  bool node_loops(uint32_t node);
  // Allows the tokens of trie node `c`'s subtree (depth bytes consumed) from a looping state.
  void allow_subtree_from_loop(const TokenTrie& trie, uint32_t c, size_t depth, const GrammarAutomaton::State& state,
                               TokenMask& mask);
  bool returns_after(const GrammarAutomaton::State& state, const GrammarAutomaton::State& home, int level,
                     const uint8_t (*ranges)[2], int n_ranges);

  std::shared_ptr<GrammarAutomaton> automaton_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  size_t max_masks_;
  std::vector<GrammarAutomaton::State> depth_states_;  // walk() scratch, one per trie depth
  std::vector<int8_t> node_loops_;                     // per automaton node: -1 unknown, 0, 1
  GrammarAutomaton::State probe_a_, probe_b_;          // allow_subtree_from_loop() scratch
  struct StateHash {
    size_t operator()(const GrammarAutomaton::State& s) const;
  };
  std::unordered_map<GrammarAutomaton::State, TokenMask, StateHash> masks_;
};

// Lazy form (a non-empty `trigger`): the output is free text until the trigger first appears in it;
// from the trigger's first byte on (bytes of earlier tokens included), the rest must be a prefix of a
// sentence of the grammar, whose sentences therefore start with the trigger. While free, every token
// is allowed (end of generation too) except those that would complete the trigger with bytes the
// grammar refuses — so a call the model opens is always a valid one.
class TokenConstraint {
 public:
  explicit TokenConstraint(std::shared_ptr<ConstraintTables> tables, std::string trigger = {});
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> vocabulary,
                  std::string trigger = {})
      : TokenConstraint(std::make_shared<ConstraintTables>(std::move(grammar), std::move(vocabulary)), std::move(trigger)) {}

  // The tokens allowed now (the reference stays valid until the next call on any constraint
  // sharing these tables).
  const TokenMask& allowed_tokens();
  // Sets the logit of every token not allowed to −inf. logits: [n_vocab].
  void mask_logits(float* logits, int64_t n_vocab);
  // Takes the token if the grammar allows it (returns false and changes nothing otherwise). An
  // end-of-generation token is taken only when the grammar is complete, and ends the parse.
  bool accept_token(int32_t id);
  // Undoes the last n accepted tokens.
  void rollback(size_t n);
  // The output so far is a sentence (lazy and not yet triggered: free text, which may end anywhere).
  bool complete() const { return !triggered() && trigger_ ? true : matcher_.accepting(); }
  bool lazy() const { return trigger_ != nullptr; }
  bool triggered() const { return triggered_at_ != kNotTriggered; }
  bool ended() const { return !ended_at_.empty(); }        // an end-of-generation token was taken
  size_t num_tokens() const { return accepted_.size(); }
  const VocabularyTrie& vocabulary() const { return tables_->vocabulary(); }

 private:
  std::shared_ptr<ConstraintTables> tables_;
  GrammarMatcher matcher_;
  std::vector<int32_t> accepted_;  // token ids taken
  std::vector<size_t> ended_at_;   // position of the end-of-generation token, if taken
  TokenMask ended_mask_;           // after the end: nothing

  // Lazy constraints only.
  static constexpr size_t kNotTriggered = SIZE_MAX;
  const TokenMask& free_mask();                // every token but those completing the trigger badly
  std::unique_ptr<TriggerScanner> trigger_;
  size_t triggered_at_ = kNotTriggered;        // index in accepted_ of the token that completed the trigger
  std::string free_text_;                      // the output's bytes before that token
  std::vector<size_t> free_sizes_;             // bytes per accepted free token, for rollback
  TokenMask free_mask_;
  std::vector<int32_t> free_refused_;          // the tokens free_mask_ leaves out
};

}  // namespace nucleus
