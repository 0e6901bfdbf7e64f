// From a grammar to the tokens a model may emit next.
//
// VocabularyTrie: every token's bytes (Tokenizer::token_to_piece) in one byte trie, built once per
// vocabulary. Tokens without bytes (control and unknown tokens) are never in a mask, except the
// end-of-generation tokens, which are allowed exactly when the grammar is complete.
//
// TokenConstraint: one request's parse. allowed_tokens() asks ConstraintTables for the mask of the
// current grammar state (cached per state: states repeat, inside a JSON string every character
// leaves the same state). accept_token() advances; rollback() undoes whole tokens.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar_matcher.h"
#include "structured/grammar_trigger.h"
#include "structured/state_dfa.h"

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
  // Per entry of `sorted`: bit d (d < 64) set when the token's bytes from offset d on are plain
  // characters (VocabularyTrie::plain_from), read in trie order so a subtree scan is sequential.
  std::vector<uint64_t> plain_from_bits;
};

class VocabularyTrie {
 public:
  explicit VocabularyTrie(const Tokenizer& tokenizer);

  const TokenTrie& all() const { return all_; }
  // "Plain" tokens are whole UTF-8 characters that JSON strings may hold raw (no control bytes,
  // no '"', no '\', no DEL): a grammar state that every such character leads back to (the inside
  // of a free string) allows all of them at once; only the other tokens need a walk, in special().
  const TokenMask& plain_tokens() const { return plain_; }
  // Plain tokens by their number of characters: those with at most n (n ≤ kChainChars), and the
  // list of those with more (with the byte offset of their character kChainChars).
  static constexpr size_t kChainChars = 24;
  const TokenMask& plain_tokens_up_to(size_t n_chars) const { return plain_up_to_[std::min(n_chars, kChainChars)]; }
  const std::vector<std::pair<int32_t, uint32_t>>& long_plain_tokens() const { return long_plain_; }
  // The plain tokens whose first byte is `byte` (nullptr when there are none).
  const TokenMask* plain_tokens_starting_with(uint8_t byte) const {
    return plain_by_first_byte_[byte].words.empty() ? nullptr : &plain_by_first_byte_[byte];
  }
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
  std::vector<TokenMask> plain_by_first_byte_;  // 256 entries; empty words: no plain token starts so
  std::vector<TokenMask> plain_up_to_;           // kChainChars + 1 entries
  std::vector<std::pair<int32_t, uint32_t>> long_plain_;
};

// What every parse of one grammar over one vocabulary shares: the automaton (stack nodes and
// memoized byte steps), its lazy determinization (StateDfa: one id per state, one table read per
// trie node walked) and the mask of each grammar state seen (at most `max_masks`, then the cache
// starts over). Not thread-safe: used by the engine's step thread only.
//
// A mask (constraint_tables.cpp) = the plain tokens decided in blocks + a walk of the rest:
// * chain: when every plain character leads the state to one next state, and so on (a free string
//   loops on one state; a bounded string steps through one state per character), a plain token of
//   n characters lives exactly when the n-th state does — a precomputed bitset per n;
// * first byte: otherwise, the first bytes whose characters all lead to one state holding a
//   looping one (a key that is no declared name) allow the plain tokens starting with them — a
//   bitset per byte;
// * walk: the other tokens, from the trie root, along bytes the DFA takes; a subtree reached in a
//   state holding a looping one (a free string, alone or beside a format's stacks) is scanned in
//   trie order (plain_from_bits) instead of descended.
// Every block is exact (the same answer as running each token's bytes), so the mask still equals
// checking every token one by one.
//
// Masks shared between contexts (constraint_tables_context.cpp): the same rule is used in many
// places (one string format in many properties, one object type at many depths), and its states
// there differ only in the frames below. So a state is first cut above its lowest frames, which
// become placeholders (GrammarAutomaton::placeholder); the mask of that shared state is computed
// once — the tokens it allows, allowed in every context, and the tokens whose fate a return into
// a placeholder leaves open (a subtree of a trie, or single tokens) — and each context runs only
// those open tokens from its own state.
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
  size_t num_dfa_states() const { return dfa_.size(); }
  size_t num_masks() const { return masks_.size(); }                // states whose mask is cached
  size_t num_shared_masks() const { return shared_masks_.size(); }  // shared states (without context) among them

 private:
  // Where a shared state's stacks return into placeholders: what the context does from there is
  // left to each context. A subtree of a trie entered by such a step (node, bytes consumed at it,
  // the placeholders returned into: StateDfa::escape_set), and single tokens (bytes left from
  // `offset`) that only such a step can keep alive.
  struct Escapes {
    struct Subtree {
      const TokenTrie* trie;
      uint32_t node, depth, set;
    };
    struct Token {
      int32_t token;
      uint32_t offset, set;
    };
    std::vector<Subtree> subtrees;
    std::vector<Token> tokens;
  };
  struct SharedMask {
    TokenMask allowed;  // allowed in every context
    Escapes open;       // decided by the context
  };
  // The mask of DFA state `id` (end of generation aside), escapes into escapes_.
  void compute(uint32_t id, TokenMask& mask);
  // `state` cut above its lowest frames into `out`, the frame each placeholder stands for into
  // `contexts` (false when there is nothing to cut).
  bool without_context(const GrammarAutomaton::State& state, GrammarAutomaton::State& out, std::vector<uint32_t>& contexts);
  const SharedMask& shared_mask(const GrammarAutomaton::State& shared);
  // Adds to `mask` the open tokens of `shared` that its placeholders' `contexts` allow.
  void resolve(const SharedMask& shared, const std::vector<uint32_t>& contexts, TokenMask& mask);
  // Walks the children of `trie_node` (depth bytes consumed, DFA state `here`).
  void walk(const TokenTrie& trie, uint32_t trie_node, uint32_t here, size_t depth, TokenMask& mask);
  // Child `c` of a node reached in state `here` after `depth` bytes: its step, then visit().
  void step_into(const TokenTrie& trie, uint32_t c, uint32_t here, size_t depth, TokenMask& mask);
  // Trie node `c` reached in state `here` after `depth` bytes: its tokens and its subtree.
  void visit(const TokenTrie& trie, uint32_t c, uint32_t here, size_t depth, TokenMask& mask);
  // Runs the token's bytes from `offset` on from state `id`: allowed, left open (escapes_) or not.
  void run_rest(int32_t token, size_t offset, uint32_t id, TokenMask& mask);
  // True when every plain character (VocabularyTrie::plain_tokens) leads DFA state `id` to a
  // superset of itself (memoized per id): a free string loops on one state; the `.*` before an
  // unanchored pattern keeps its stacks while others start. Then no plain rest can kill it (a
  // state's successors are the union of its stacks', so a superset steps to a superset).
  bool loops(uint32_t id);
  bool keeps_on_plain_characters(uint32_t id);
  // True when `id` holds every stack of a state known to loop (loops() said so): that part alone
  // keeps any plain rest alive.
  bool holds_a_loop(uint32_t id);
  // Every stack of `part` is in `id`.
  bool includes(uint32_t id, uint32_t part);
  // True when every continuation of ranges[level..] leads `id` to a superset of `home`.
  bool keeps_after(uint32_t id, uint32_t home, int level, const uint8_t (*ranges)[2], int n_ranges);
  // The state every character starting with byte `first` leads `id` to: kDead when none fits,
  // kNoDestination when they lead to different states or `first` starts no plain character.
  static constexpr uint32_t kNoDestination = UINT32_MAX;
  uint32_t character_destination(uint32_t id, uint8_t first);
  // The state every plain character leads `id` to (kDead: none fits), or kNoDestination when
  // they do not all lead to one state (memoized per id).
  uint32_t uniform_destination(uint32_t id);
  // The plain-token block of `id` when every plain character leads each state of a chain to the
  // next (false, nothing changed, otherwise); marks every first byte of a plain token covered.
  bool plain_block_by_chain(uint32_t id, bool* covered, TokenMask& mask);
  // The plain-token block of the first bytes whose characters lead `id` to a looping state, which
  // it marks covered (mask: cleared first).
  void plain_block_by_first_byte(uint32_t id, bool* covered, TokenMask& mask);
  // The root's children whose `covered` flag equals `want_covered`, walked from `id`.
  void walk_root(const TokenTrie& trie, uint32_t id, const bool* covered, bool want_covered, TokenMask& mask);
  bool returns_after(uint32_t id, uint32_t home, int level, const uint8_t (*ranges)[2], int n_ranges);
  // Allows the tokens of trie node `c`'s subtree (depth bytes consumed) from a state that holds a
  // looping one (holds_a_loop).
  void allow_subtree_from_loop(const TokenTrie& trie, uint32_t c, size_t depth, uint32_t id, TokenMask& mask);

  std::shared_ptr<GrammarAutomaton> automaton_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  size_t max_masks_;
  StateDfa dfa_;
  std::vector<int8_t> loops_;  // per DFA id: -1 unknown, 0, 1
  // The looping states found so far, by their first stack; per DFA id, holds_a_loop's answer: 1
  // yes, else 0 or the number of looping states it was last checked against + 2.
  std::unordered_map<uint32_t, std::vector<uint32_t>> loops_by_first_stack_;
  size_t n_loop_states_ = 0;
  std::vector<uint32_t> holds_loop_;
  std::vector<uint32_t> uniform_;  // per DFA id: uniform_destination, kUnknownUniform until asked
  static constexpr uint32_t kUnknownUniform = UINT32_MAX - 1;
  struct StateHash {
    size_t operator()(const GrammarAutomaton::State& s) const;
  };
  std::unordered_map<GrammarAutomaton::State, TokenMask, StateHash> masks_;
  std::unordered_map<GrammarAutomaton::State, SharedMask, StateHash> shared_masks_;
  Escapes escapes_;  // filled by compute()
  GrammarAutomaton::State scratch_state_;
  std::vector<uint32_t> scratch_contexts_;
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
