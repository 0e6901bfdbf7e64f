#include "cli/speculation_flags.h"

#include "core/error.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"

namespace nucleus::cli {

void add_speculation_flags(CLI::App& command, SpeculationFlags& flags) {
  command.add_option("--draft", flags.draft_path, "speculative decoding: draft model (GGUF) sharing the target's vocabulary");
  command.add_option("--spec", flags.spec, "speculative decoding without a file: ngram (prompt lookup) or self:K (first K layers)");
  command.add_option("--gamma", flags.gamma, "speculative decoding: draft tokens per target pass")
      ->check(CLI::Range(1, 64));
}

namespace {
int64_t parse_self_layers(const std::string& spec) {
  size_t used = 0;
  int64_t layers = 0;
  try {
    if (spec.rfind("self:", 0) != 0) throw std::invalid_argument(spec);
    layers = std::stoll(spec.substr(5), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != spec.size() - 5) throw Error("--spec: expected ngram or self:K (K layers), got '" + spec + "'");
  return layers;
}
}  // namespace

ProposerFactory::ProposerFactory(const SpeculationFlags& flags, const LoadedModel& target) : flags_(flags), target_(target) {
  if (!flags.draft_path.empty() && !flags.spec.empty()) throw Error("give only one of --draft MODEL and --spec ngram|self:K");
  if (!flags.spec.empty() && flags.spec != "ngram") {
    self_layers_ = parse_self_layers(flags.spec);
    const int64_t n_layer = target.model->hparams().n_layer;
    if (self_layers_ < 1 || self_layers_ > n_layer)
      throw Error("--spec self:K: K must be between 1 and the target's " + std::to_string(n_layer) + " layers, got " +
                  std::to_string(self_layers_));
  }
  if (!flags.draft_path.empty()) {
    ModelSource source;
    source.model_path = flags.draft_path;
    draft_ = load_model(source);
    check_same_vocabulary(target.model->file(), draft_.model->file(), flags.draft_path);
  }
}

std::shared_ptr<Proposer> ProposerFactory::make(const SamplingParams& sampling, int n_threads) {
  if (flags_.spec == "ngram") return std::make_shared<NgramProposer>(1, 3);
  if (!draft_batch_) {
    if (draft_.model) {
      draft_batch_ = std::make_shared<DraftBatch>(*draft_.model, n_threads);
    } else if (self_layers_ > 0) {
      draft_batch_ = self_speculation_batch(*target_.model, self_layers_, n_threads);
    } else {
      return nullptr;
    }
  }
  return std::make_shared<DraftModelProposer>(draft_batch_, sampling, describe());
}

std::string ProposerFactory::describe() const {
  if (draft_.model) return "draft:" + flags_.draft_path;
  if (flags_.spec == "ngram") return "ngram[1,3]";
  return flags_.spec;
}

}  // namespace nucleus::cli
