#include "sampling/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace nucleus {

std::vector<int32_t> banned_ngram_tokens(std::span<const int32_t> sequence, int32_t ngram_size) {
  std::vector<int32_t> banned;
  if (ngram_size <= 0 || sequence.size() + 1 < static_cast<size_t>(ngram_size)) return banned;
  const size_t n = static_cast<size_t>(ngram_size);
  const auto prefix = sequence.subspan(sequence.size() - (n - 1));  // the last n−1 tokens
  for (size_t i = 0; i + n <= sequence.size(); ++i)
    if (std::equal(prefix.begin(), prefix.end(), sequence.begin() + static_cast<std::ptrdiff_t>(i)))
      banned.push_back(sequence[i + n - 1]);
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}

namespace {

struct Beam {
  std::vector<int32_t> tokens;  // generated so far
  double sum_logprobs = 0.0;
};

struct Extension {
  double score;   // sum_logprobs of the beam + log-prob of the token
  int32_t beam;   // index into the live beams
  int32_t token;
};

bool ranks_before(const Extension& a, const Extension& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.beam != b.beam) return a.beam < b.beam;
  return a.token < b.token;
}

// The n-best list of finished hypotheses.
class Hypotheses {
 public:
  Hypotheses(int32_t capacity, float length_penalty) : capacity_(static_cast<size_t>(capacity)), length_penalty_(length_penalty) {}

  void add(std::vector<int32_t> tokens, double sum_logprobs, bool ended_by_end_of_generation) {
    const double length = static_cast<double>(std::max<size_t>(tokens.size(), 1));
    const double score = sum_logprobs / std::pow(length, static_cast<double>(length_penalty_));
    if (list_.size() >= capacity_ && !(score > worst_score())) return;
    // Best first; a new entry goes after every equal score (found later ranks lower).
    const auto at = std::upper_bound(list_.begin(), list_.end(), score,
                                     [](double s, const BeamHypothesis& h) { return s > h.score; });
    list_.insert(at, BeamHypothesis{std::move(tokens), sum_logprobs, score, ended_by_end_of_generation});
    if (list_.size() > capacity_) list_.pop_back();
  }

  bool is_done(double best_live_sum, size_t current_length, size_t max_length, EarlyStopping mode) const {
    if (list_.size() < capacity_) return false;
    const double alpha = length_penalty_;
    switch (mode) {
      case EarlyStopping::immediately: return true;
      case EarlyStopping::heuristic:
        return worst_score() >= best_live_sum / std::pow(static_cast<double>(current_length), alpha);
      case EarlyStopping::never: {
        const double length = static_cast<double>(alpha > 0.0 ? max_length : current_length);
        return worst_score() >= best_live_sum / std::pow(length, alpha);
      }
    }
    return false;
  }

  std::vector<BeamHypothesis> best(size_t n) const {
    std::vector<BeamHypothesis> result;
    for (size_t i = 0; i < std::min(n, list_.size()); ++i) result.push_back(list_[i]);
    return result;
  }

 private:
  double worst_score() const { return list_.back().score; }

  size_t capacity_;
  float length_penalty_;
  std::vector<BeamHypothesis> list_;  // best first; equal scores in the order they were found
};

void validate(const BeamSearchParams& p, int64_t n_vocab) {
  if (p.num_beams < 1) throw Error("beam search: num_beams must be >= 1, got " + std::to_string(p.num_beams));
  if (p.num_return_sequences < 1 || p.num_return_sequences > p.num_beams)
    throw Error("beam search: num_return_sequences must be in [1, num_beams], got " +
                std::to_string(p.num_return_sequences));
  if (p.max_new_tokens < 0) throw Error("beam search: max_new_tokens must be >= 0");
  if (!std::isfinite(p.length_penalty)) throw Error("beam search: length_penalty must be finite");
  if (n_vocab <= 0) throw Error("beam search: empty vocabulary");
}

}  // namespace

std::vector<BeamHypothesis> beam_search(const BeamSearchParams& params, std::span<const int32_t> prompt,
                                        int64_t n_vocab, const NextTokenLogits& next_token_logits) {
  validate(params, n_vocab);
  const size_t num_beams = static_cast<size_t>(params.num_beams);
  const size_t vocab = static_cast<size_t>(n_vocab);
  std::vector<int32_t> end_ids = params.end_of_generation_ids;
  std::sort(end_ids.begin(), end_ids.end());
  end_ids.erase(std::unique(end_ids.begin(), end_ids.end()), end_ids.end());
  auto is_end = [&](int32_t t) { return std::binary_search(end_ids.begin(), end_ids.end(), t); };
  // Enough extensions that num_beams non-ending ones remain even if every end id ranks high.
  const size_t num_extensions = (1 + end_ids.size()) * num_beams;

  Hypotheses hypotheses(params.num_beams, params.length_penalty);
  std::vector<Beam> live(1);
  if (params.max_new_tokens == 0) return {BeamHypothesis{}};

  std::vector<float> logits(vocab);  // [live.size(), n_vocab]
  next_token_logits({}, {}, logits.data());
  std::vector<double> logprobs(vocab);
  std::vector<uint32_t> order(vocab);
  std::vector<Extension> extensions;
  std::vector<int32_t> sequence;  // prompt + a beam's tokens, for the n-gram rule

  for (size_t step = 0;; ++step) {
    extensions.clear();
    for (size_t b = 0; b < live.size(); ++b) {
      const float* row = logits.data() + b * vocab;
      double max = -INFINITY;
      for (size_t t = 0; t < vocab; ++t) max = std::max(max, static_cast<double>(row[t]));
      if (max == -INFINITY) continue;  // every token banned (a constraint with nothing left): no extension
      double sum = 0.0;
      for (size_t t = 0; t < vocab; ++t) sum += std::exp(row[t] - max);
      const double log_normalizer = max + std::log(sum);
      for (size_t t = 0; t < vocab; ++t) logprobs[t] = row[t] - log_normalizer;
      if (step < static_cast<size_t>(std::max(params.min_new_tokens, 0)))
        for (int32_t t : end_ids)
          if (t >= 0 && static_cast<size_t>(t) < vocab) logprobs[static_cast<size_t>(t)] = -INFINITY;
      if (params.no_repeat_ngram_size > 0) {
        sequence.assign(prompt.begin(), prompt.end());
        sequence.insert(sequence.end(), live[b].tokens.begin(), live[b].tokens.end());
        for (int32_t t : banned_ngram_tokens(sequence, params.no_repeat_ngram_size))
          if (t >= 0 && static_cast<size_t>(t) < vocab) logprobs[static_cast<size_t>(t)] = -INFINITY;
      }
      // This beam's best num_extensions tokens suffice: the global best are among them.
      order.resize(vocab);
      std::iota(order.begin(), order.end(), 0u);
      auto better = [&](uint32_t a, uint32_t c) { return logprobs[a] > logprobs[c] || (logprobs[a] == logprobs[c] && a < c); };
      const size_t keep = std::min(num_extensions, vocab);
      if (keep < vocab) std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(), better);
      for (size_t i = 0; i < keep; ++i) {
        const uint32_t t = order[i];
        if (logprobs[t] == -INFINITY) continue;  // banned: never an extension
        extensions.push_back({live[b].sum_logprobs + logprobs[t], static_cast<int32_t>(b), static_cast<int32_t>(t)});
      }
    }
    const size_t take = std::min(num_extensions, extensions.size());
    std::partial_sort(extensions.begin(), extensions.begin() + static_cast<std::ptrdiff_t>(take), extensions.end(), ranks_before);

    std::vector<Beam> next;
    std::vector<int32_t> parents, tokens;
    for (size_t rank = 0; rank < take && next.size() < num_beams; ++rank) {
      const Extension& e = extensions[rank];
      std::vector<int32_t> extended = live[static_cast<size_t>(e.beam)].tokens;
      extended.push_back(e.token);
      if (is_end(e.token)) {
        if (rank < num_beams) hypotheses.add(std::move(extended), e.score, true);
        continue;
      }
      next.push_back({std::move(extended), e.score});
      parents.push_back(e.beam);
      tokens.push_back(e.token);
    }
    const size_t length = step + 1;
    if (next.empty()) break;
    if (hypotheses.is_done(next.front().sum_logprobs, length, static_cast<size_t>(params.max_new_tokens),
                           params.early_stopping))
      break;
    if (length == static_cast<size_t>(params.max_new_tokens)) {
      for (Beam& beam : next) hypotheses.add(std::move(beam.tokens), beam.sum_logprobs, false);
      break;
    }
    live = std::move(next);
    logits.resize(live.size() * vocab);
    next_token_logits(parents, tokens, logits.data());
  }
  return hypotheses.best(static_cast<size_t>(params.num_return_sequences));
}

}  // namespace nucleus
