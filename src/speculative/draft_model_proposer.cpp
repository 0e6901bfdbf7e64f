#include "speculative/draft_model_proposer.h"

#include <algorithm>

#include "core/error.h"

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

DraftModelProposer::DraftModelProposer(std::shared_ptr<DraftBatch> batch, const SamplingParams& params, std::string name)
    : batch_(std::move(batch)), sequence_(batch_->add_sequence()), chain_(params), name_(std::move(name)) {}

DraftModelProposer::DraftModelProposer(Model& draft, const SamplingParams& params, int n_threads, std::string name)
    : DraftModelProposer(std::make_shared<DraftBatch>(draft, n_threads), params, std::move(name)) {}

DraftModelProposer::~DraftModelProposer() { batch_->remove_sequence(sequence_); }

DraftBatch::Job DraftModelProposer::job(const DraftRequest& request, DraftProposal& proposal) {
  return DraftBatch::Job{sequence_, &request, &chain_, &context_, &proposal};
}

void DraftModelProposer::propose(const DraftRequest& request, DraftProposal& proposal) {
  const DraftBatch::Job one = job(request, proposal);
  batch_->propose(std::span<const DraftBatch::Job>(&one, 1));
}

void DraftModelProposer::propose_batch(std::span<Proposer* const> members, std::span<const DraftRequest> requests,
                                       std::span<DraftProposal* const> proposals) {
  std::vector<DraftBatch::Job> jobs;
  jobs.reserve(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    // Members share this batch group, so they are DraftModelProposers of this DraftBatch.
    auto& member = static_cast<DraftModelProposer&>(*members[i]);
    if (member.batch_ != batch_) throw Error("propose_batch: a member drafts with another model");
    jobs.push_back(member.job(requests[i], *proposals[i]));
  }
  batch_->propose(jobs);
}

}  // namespace nucleus
