#include "spec/draft_model_proposer.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "spec/rejection_sampler.h"

namespace nucleus {

namespace {

std::vector<std::string> token_texts(const GgufFile& file) {
  const MetaValue* tokens = file.find("tokenizer.ggml.tokens");
  return tokens ? tokens->strings : std::vector<std::string>{};
}

}  // namespace

void check_same_vocabulary(const GgufFile& target, const GgufFile& draft, const std::string& draft_name) {
  const std::string prefix = draft_name + ": vocabulary differs from the target's: ";
  const std::string target_model = target.get_string("tokenizer.ggml.model", "");
  const std::string draft_model = draft.get_string("tokenizer.ggml.model", "");
  if (target_model != draft_model)
    throw Error(prefix + "tokenizer model '" + draft_model + "' vs the target's '" + target_model + "'");
  const std::vector<std::string> target_tokens = token_texts(target), draft_tokens = token_texts(draft);
  if (target_tokens.size() != draft_tokens.size())
    throw Error(prefix + std::to_string(draft_tokens.size()) + " tokens vs the target's " +
                std::to_string(target_tokens.size()));
  for (size_t i = 0; i < target_tokens.size(); ++i)
    if (target_tokens[i] != draft_tokens[i])
      throw Error(prefix + "token " + std::to_string(i) + " is '" + draft_tokens[i] + "' vs the target's '" +
                  target_tokens[i] + "'");
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
    const int64_t t = target.get_int(key, -1), d = draft.get_int(key, -1);
    if (t != d) throw Error(prefix + key + " is " + std::to_string(d) + " vs the target's " + std::to_string(t));
  }
}

DraftModelProposer::DraftModelProposer(Model& draft, const SamplingParams& params, int64_t n_ctx, int n_threads,
                                       std::string name)
    : runner_(draft, n_ctx, n_threads), chain_(params), name_(std::move(name)) {}

void DraftModelProposer::propose(const DraftRequest& request, DraftProposal& proposal) {
  proposal.clear();
  const int32_t num_draft = request.num_draft_tokens;
  if (num_draft <= 0 || request.tokens.empty()) return;
  const int64_t n_vocab = runner_.model().hparams().n_vocab;
  // Re-feed at least the last token: its logits are the first draft's distribution.
  const auto n_tokens = static_cast<int64_t>(request.tokens.size());
  const int64_t kept = runner_.keep_common_prefix(request.tokens, n_tokens - 1);
  const std::vector<float>* logits = &runner_.feed(request.tokens.subspan(static_cast<size_t>(kept)));
  context_.assign(request.tokens.begin(), request.tokens.end());
  for (int32_t i = 0; i < num_draft; ++i) {
    const uint64_t position = request.first_position + static_cast<uint64_t>(i);
    const SamplingContext context{context_, position};
    int32_t token = 0;
    if (chain_.greedy()) {
      token = chain_.sample(logits->data(), n_vocab, context);
    } else {
      const Candidates& q = chain_.distribution(logits->data(), n_vocab, context);
      const size_t row = proposal.probs.size();
      proposal.probs.resize(row + static_cast<size_t>(n_vocab), 0.0f);
      for (size_t j = 0; j < q.size(); ++j) proposal.probs[row + static_cast<size_t>(q.ids[j])] = q.probs[j];
      token = draw_from_weights(proposal.probs.data() + row, n_vocab, uniform_at(request.seed, position, kDraftStream));
    }
    proposal.tokens.push_back(token);
    context_.push_back(token);
    if (i + 1 < num_draft) logits = &runner_.feed(std::span<const int32_t>(&token, 1));
  }
}

}  // namespace nucleus
