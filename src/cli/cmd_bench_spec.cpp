// nucleus bench spec: speculative decoding against plain decoding on one sequence, per γ — the
// measured acceptance α, the draft's relative cost c, tokens per target pass, the measured speedup
// and the one the theory predicts from α and c, plus what a verification pass of γ + 1 tokens
// costs relative to a one-token step (the memory-bound argument): the median of paired rounds, the
// two passes' median milliseconds, and the ratio of the fastest of each (`quiet v/s`, the figure for
// a machine without neighbours), with --profile where each pass's time goes. Table, --json, --svg.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/bench_common.h"
#include "cli/bench_profile.h"
#include "cli/commands.h"
#include "cli/speculation_flags.h"
#include "core/error.h"
#include "model/cost_model.h"
#include "sampling/sampler.h"
#include "speculative/spec_benchmark.h"

namespace nucleus::cli {

namespace {

struct SpecBenchOptions {
  ModelSource source;
  SpeculationFlags speculation;
  std::string gammas = "1,2,4,8";
  std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
      "big, red ball. Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
  int64_t n_gen = 128;
  SamplingParams sampling;
  uint64_t seed = 1;
  int n_threads = 0;
  int repetitions = 15;
  bool json = false;
  std::string svg_path;
  bool temperature_given = false;
  bool profile = false;
};

std::vector<int32_t> parse_gammas(const std::string& text) {
  std::vector<int32_t> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > 64) throw Error("--gamma: '" + item + "' is not an integer in [1, 64]");
    values.push_back(static_cast<int32_t>(v));
  }
  if (values.empty()) throw Error("--gamma: give at least one value");
  return values;
}

int run_bench_spec(SpecBenchOptions o) {
  if (!o.temperature_given) o.sampling.temperature = 0.0f;  // greedy unless --temp
  const std::vector<int32_t> gammas = parse_gammas(o.gammas);
  if (!o.speculation.enabled()) throw Error("bench spec: give --draft MODEL or --spec ngram|self:K");
  validate_sampling_params(o.sampling);
  o.sampling.seed = o.seed;
  LoadedModel target = load_model(o.source);
  ProposerFactory proposers(o.speculation, target);
  const int n_threads = o.n_threads > 0 ? o.n_threads : default_threads();
  std::vector<int32_t> prompt = target.tokenizer->encode(o.prompt, true, false);
  if (prompt.empty()) prompt.push_back(target.tokenizer->bos_id());
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt + o.n_gen + 64 > target.model->hparams().n_ctx_train)
    throw Error("bench spec: prompt (" + std::to_string(n_prompt) + " tokens) plus -n does not fit the context");

  time_plain_decode(*target.model, prompt, 4, o.sampling, n_threads);  // warm up: page in the weights
  const DecodeTiming plain = time_plain_decode(*target.model, prompt, o.n_gen, o.sampling, n_threads);
  const double plain_tok_s = static_cast<double>(plain.n_tokens) / plain.seconds;
  if (!o.json) {
    std::printf("target %s, proposer %s, %lld prompt tokens, %lld generated, %d threads, temperature %.2f\n",
                o.source.model_path.c_str(), proposers.describe().c_str(), static_cast<long long>(n_prompt),
                static_cast<long long>(o.n_gen), n_threads, o.sampling.temperature);
    std::printf("plain decoding: %.2f tok/s\n", plain_tok_s);
    std::printf("%5s %7s %8s %7s %10s %9s %10s %13s %15s %11s %9s %12s\n", "gamma", "alpha", "accept", "c", "tok/pass",
                "speedup", "predicted", "verify/step", "verify, step ms", "quiet v/s", "step GB/s", "pass GFLOP/s");
  }
  nlohmann::json report = nlohmann::json::array();
  std::vector<SvgSeries> series = {{"measured speedup", "#1f77b4", {}}, {"predicted from alpha, c", "#ff7f0e", {}}};
  for (int32_t gamma : gammas) {
    const std::shared_ptr<Proposer> proposer = proposers.make(o.sampling, n_threads);
    const SpeculativeTiming spec = time_speculative_decode(*target.model, *proposer, gamma, prompt, o.n_gen, o.sampling, n_threads);
    const SpeculativeStats& s = spec.stats;
    const double draft_per_token = s.num_proposed > 0 ? s.draft_seconds / static_cast<double>(s.num_proposed) : 0.0;
    const double c = draft_per_token / plain.seconds_per_token();
    const double speedup = plain.seconds / spec.decode.seconds;
    const double predicted = predicted_speedup(s.alpha(), gamma, c);
    StepProfile one_token_profile, verify_profile;
    const VerificationCost verify =
        verification_cost(*target.model, prompt, gamma + 1, o.repetitions, n_threads, o.profile ? &one_token_profile : nullptr,
                          o.profile ? &verify_profile : nullptr);
    // What bounds each kind of pass: the one-token step streams every weight (its GB/s against the
    // memory's), the verification pass reuses each for gamma + 1 tokens (its GFLOP/s against the
    // multipliers'). Costs at the prompt's end, where verification_cost times them (model/cost_model.h).
    const StepCost step_cost = estimate_sequence_step_cost(*target.model, n_prompt, 1);
    const StepCost pass_cost = estimate_sequence_step_cost(*target.model, n_prompt, gamma + 1);
    const double step_gb_per_s = (step_cost.weight_bytes + step_cost.kv_bytes) / (verify.one_token_ms * 1e6);
    const double pass_gflop_per_s = pass_cost.flops / (verify.n_token_ms * 1e6);
    series[0].points.emplace_back(gamma, speedup);
    series[1].points.emplace_back(gamma, predicted);
    report.push_back({{"gamma", gamma},
                      {"alpha", s.alpha()},
                      {"acceptance_rate", s.acceptance_rate()},
                      {"c", c},
                      {"tokens_per_pass", s.tokens_per_pass()},
                      {"speedup", speedup},
                      {"speedup_predicted", predicted},
                      {"verify_cost_ratio", verify.ratio},
                      {"verify_ms", verify.n_token_ms},
                      {"step_ms", verify.one_token_ms},
                      {"verify_min_ms", verify.n_token_min_ms},
                      {"step_min_ms", verify.one_token_min_ms},
                      {"verify_cost_ratio_quiet", verify.min_ratio()},
                      {"step_gb_per_s", step_gb_per_s},
                      {"verify_gflop_per_s", pass_gflop_per_s},
                      {"passes", s.num_passes},
                      {"draft_seconds", s.draft_seconds},
                      {"target_seconds", s.target_seconds},
                      {"spec_seconds", spec.decode.seconds},
                      {"plain_seconds", plain.seconds},
                      {"proposed", s.num_proposed},
                      {"accepted", s.num_accepted},
                      {"plain_tok_s", plain_tok_s},
                      {"spec_tok_s", static_cast<double>(spec.decode.n_tokens) / spec.decode.seconds},
                      {"proposer", proposers.describe()},
                      {"n_prompt", n_prompt},
                      {"n_gen", o.n_gen},
                      {"n_threads", n_threads},
                      {"temperature", o.sampling.temperature}});
    if (o.profile) {
      report.back()["profile_step"] = profile_json(one_token_profile);
      report.back()["profile_verify"] = profile_json(verify_profile);
    }
    if (!o.json) {
      std::printf("%5d %7.3f %8.3f %7.3f %10.2f %8.2fx %9.2fx %12.2fx %7.2f %7.2f %10.2fx %9.1f %12.1f\n", gamma,
                  s.alpha(), s.acceptance_rate(), c, s.tokens_per_pass(), speedup, predicted, verify.ratio,
                  verify.n_token_ms, verify.one_token_ms, verify.min_ratio(), step_gb_per_s, pass_gflop_per_s);
      if (o.profile) {
        print_profile("one-token step", report.back()["profile_step"]);
        print_profile("verification of " + std::to_string(gamma + 1) + " tokens", report.back()["profile_verify"]);
      }
    }
    std::fflush(stdout);
  }
  if (o.json) std::printf("%s\n", report.dump(2).c_str());
  if (!o.svg_path.empty())
    write_svg_plot(o.svg_path, "Speculative decoding: measured vs predicted speedup (" + proposers.describe() + ")",
                   "gamma (draft tokens per pass, log2)", series, 0, "", /*shared_y=*/true);
  return 0;
}

}  // namespace

void add_bench_spec_command(CLI::App& bench, std::function<void(Runner)> set_runner) {
  auto o = std::make_shared<SpecBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("spec", "speculative decoding per gamma: alpha, c, tokens per pass, measured and predicted speedup");
  add_model_flags(*cmd, o->source);
  cmd->add_option("--draft", o->speculation.draft_path, "draft model (GGUF) sharing the target's vocabulary");
  cmd->add_option("--spec", o->speculation.spec, "proposer without a file: ngram or self:K");
  cmd->add_option("--gamma", o->gammas, "draft tokens per pass, comma-separated");
  cmd->add_option("-p,--prompt", o->prompt, "prompt text");
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens to generate per run")->check(CLI::PositiveNumber);
  cmd->add_option("--temp", o->sampling.temperature, "temperature; 0 = greedy (default)")
      ->check(CLI::NonNegativeNumber)
      ->each([o](const std::string&) { o->temperature_given = true; });
  cmd->add_option("--top-p", o->sampling.top_p, "nucleus sampling mass; 1 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("-s,--seed", o->seed, "random seed");
  cmd->add_option("-t,--threads", o->n_threads, "threads")->check(CLI::NonNegativeNumber);
  cmd->add_option("-r,--repetitions", o->repetitions, "repetitions of the verification-cost measurement")->check(CLI::PositiveNumber);
  cmd->add_flag("--profile", o->profile,
                "split the one-token step and the verification pass: matmuls per weight type, attention, other operators");
  cmd->add_flag("--json", o->json, "JSON array, one object per gamma: gamma, alpha, c, tokens_per_pass, speedup, speedup_predicted, ...");
  cmd->add_option("--svg", o->svg_path, "write an SVG plot of measured and predicted speedup");
  cmd->callback([o, set_runner] { set_runner([o] { return run_bench_spec(*o); }); });
}

}  // namespace nucleus::cli
