#include "server/explainer_routes.h"

#include <httplib.h>

#include <algorithm>

#include "explain/explainer.h"
#include "sampling/sampler.h"
#include "server/json_fields.h"
#include "server/route_helpers.h"
#include "server/static_assets.h"

namespace nucleus::server {

using nlohmann::json;

namespace {

constexpr int64_t kMaxGeneratedTokens = 256;

std::string context_field(const json& body, const explain::Explainer& explainer) {
  if (!body.is_object()) throw invalid_param("", "the request body must be a JSON object");
  return string_field(body, "context").value_or(explainer.default_context());
}

// The sampling knobs of the explainer: OpenAI's names, a wider temperature range (T ≫ 1 is the point).
SamplingParams sampling_fields(const json& body, const explain::Explainer& explainer) {
  SamplingParams s;
  if (auto v = number_field(body, "temperature", 0.0, 100.0)) s.temperature = static_cast<float>(*v);
  if (auto v = integer_field(body, "top_k", 0, explainer.hparams().n_vocab)) s.top_k = static_cast<int32_t>(*v);
  if (auto v = number_field(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
  if (auto v = number_field(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (auto v = number_field(body, "typical_p", 0.0, 1.0)) s.typical_p = static_cast<float>(*v);
  if (auto v = integer_field(body, "seed", 0, INT64_MAX)) s.seed = static_cast<uint64_t>(*v);
  validate_sampling_params(s);
  return s;
}

int64_t max_tokens_field(const json& body, int64_t default_value) {
  return integer_field(body, "max_tokens", 1, kMaxGeneratedTokens).value_or(default_value);
}

json continuation_json(const explain::Continuation& c) {
  return {{"tokens", c.tokens}, {"text", c.text}, {"score", c.score}};
}

json step_json(const explain::TraceStep& step) {
  const double bytes = step.cost.weight_bytes + step.cost.kv_bytes;
  return {{"phase", step.prefill ? "prefill" : "decode"},
          {"tokens", step.cost.n_tokens},
          {"flops", step.cost.flops},
          {"weight_bytes", step.cost.weight_bytes},
          {"kv_bytes", step.cost.kv_bytes},
          {"seconds", step.seconds},
          {"intensity", step.cost.intensity()},
          {"gb_per_s", step.seconds > 0 ? bytes / step.seconds / 1e9 : 0.0},
          {"gflop_per_s", step.seconds > 0 ? step.cost.flops / step.seconds / 1e9 : 0.0},
          {"token", step.token},
          {"text", step.text}};
}

json batching_json(const explain::BatchingCurveStatus& status) {
  json points = json::array();
  for (const BatchPoint& p : status.points)
    points.push_back({{"batch", p.batch}, {"gen_tok_s", p.gen_tok_s}, {"total_tok_s", p.total_tok_s}, {"ttft_ms", p.ttft_ms},
                      {"tpot_ms", p.tpot_ms}, {"seconds", p.seconds}});
  json out = {{"state", explain::batching_curve_state_name(status.state)},
              {"cached", status.cached},
              {"completed", status.points.size()},
              {"total", status.request.batch_sizes.size()},
              {"batch_sizes", status.request.batch_sizes},
              {"prompt_tokens", status.request.n_prompt},
              {"gen_tokens", status.request.n_gen},
              {"points", points},
              {"knee", status.state == explain::BatchingCurveState::done ? json(status.knee) : json(nullptr)}};
  if (!status.error.empty()) out["error"] = status.error;
  return out;
}

explain::BatchingCurveRequest batching_fields(const json& body, const explain::Explainer& explainer) {
  if (!body.is_object()) throw invalid_param("", "the request body must be a JSON object");
  explain::BatchingCurveRequest request;
  request.batch_sizes = {1, 2, 4, 8, 16};
  if (const json* sizes = field(body, "batch_sizes")) {
    if (!sizes->is_array() || sizes->empty() || sizes->size() > 8)
      throw invalid_param("batch_sizes", "'batch_sizes' must be a list of 1 to 8 integers");
    request.batch_sizes.clear();
    for (const json& b : *sizes) {
      if (!b.is_number_integer() || b.get<int64_t>() < 1 || b.get<int64_t>() > 64)
        throw invalid_param("batch_sizes", "'batch_sizes' entries must be integers between 1 and 64, got " + b.dump());
      request.batch_sizes.push_back(b.get<int64_t>());
    }
    std::sort(request.batch_sizes.begin(), request.batch_sizes.end());
    request.batch_sizes.erase(std::unique(request.batch_sizes.begin(), request.batch_sizes.end()), request.batch_sizes.end());
  }
  request.n_prompt = integer_field(body, "prompt_tokens", 1, 256).value_or(32);
  request.n_gen = integer_field(body, "gen_tokens", 2, 256).value_or(32);
  if (request.n_prompt + request.n_gen > explainer.hparams().n_ctx_train)
    throw invalid_param("gen_tokens", "prompt_tokens + gen_tokens must fit the model's context length of " +
                                          std::to_string(explainer.hparams().n_ctx_train));
  return request;
}

explain::SpeculativeOptions speculative_fields(const json& body, const explain::Explainer& explainer) {
  explain::SpeculativeOptions options;
  const std::string proposer = string_field(body, "proposer").value_or("ngram");
  if (proposer == "ngram") {
    options.proposer = explain::ProposerKind::ngram;
  } else if (proposer == "self") {
    options.proposer = explain::ProposerKind::self;
  } else if (proposer == "draft") {
    if (!explainer.has_draft_model())
      throw invalid_param("proposer", "'proposer' is 'draft' but the server has no draft model (start it with --draft MODEL)");
    options.proposer = explain::ProposerKind::draft;
  } else {
    throw invalid_param("proposer", "'proposer' must be 'ngram', 'self' or 'draft', got '" + proposer + "'");
  }
  options.gamma = static_cast<int32_t>(integer_field(body, "gamma", 1, 16).value_or(4));
  options.max_tokens = max_tokens_field(body, 48);
  options.self_layers = integer_field(body, "self_layers", 1, explainer.hparams().n_layer).value_or(0);
  options.sampling = sampling_fields(body, explainer);
  if (!field(body, "temperature")) options.sampling.temperature = 0.0f;  // greedy by default: α is then deterministic
  return options;
}

}  // namespace

void register_explainer_routes(httplib::Server& http, int retry_after, std::function<explain::Explainer&()> explainer) {
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const StaticAsset* index = find_static_asset("index.html");
    res.set_content(std::string(index->body), std::string(index->content_type));
  });
  http.Get(R"(/explainer/([A-Za-z0-9_.\-]+))", [retry_after](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      const StaticAsset* asset = find_static_asset(req.matches[1].str());
      if (!asset) throw ApiError(404, "no file " + req.path, "not_found_error");
      res.set_content(std::string(asset->body), std::string(asset->content_type));
    });
  });

  http.Get("/explain/info", [=](const httplib::Request&, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      json proposers = {"ngram", "self"};
      if (e.has_draft_model()) proposers.push_back("draft");
      send_json(res, 200,
                {{"default_context", e.default_context()}, {"n_vocab", e.hparams().n_vocab}, {"n_layer", e.hparams().n_layer},
                 {"n_ctx", e.hparams().n_ctx_train}, {"proposers", proposers}, {"n_threads", e.n_threads()},
                 {"max_tokens_limit", kMaxGeneratedTokens}});
    });
  });

  http.Post("/explain/distribution", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      const SamplingParams params = sampling_fields(body, e);
      const int64_t top_n = integer_field(body, "top_n", 1, e.hparams().n_vocab).value_or(30);
      const explain::NextTokenDistribution d = e.distribution(context, params, top_n);
      json tokens = json::array();
      for (const explain::TokenProbability& t : d.top)
        tokens.push_back({{"id", t.id}, {"text", t.text}, {"raw_prob", t.raw_prob}, {"prob", t.prob}, {"kept", t.kept}});
      send_json(res, 200, {{"context", context}, {"tokens", tokens}, {"kept_count", d.kept_count},
                           {"kept_mass", d.kept_raw_mass}, {"greedy", d.greedy}, {"n_vocab", e.hparams().n_vocab}});
    });
  });

  http.Post("/explain/sample", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      const explain::SampledToken t = e.sample(context, sampling_fields(body, e));
      send_json(res, 200, {{"token", {{"id", t.id}, {"text", t.text}}}, {"context", t.context}, {"seed", t.seed}});
    });
  });

  http.Post("/explain/resample", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      const SamplingParams params = sampling_fields(body, e);
      const explain::Continuation c = e.resample(context, params, max_tokens_field(body, 48));
      json out = continuation_json(c);
      out["seed"] = c.seed;
      send_json(res, 200, out);
    });
  });

  http.Post("/explain/continuations", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      const int64_t max_tokens = max_tokens_field(body, 24);
      const auto num_beams = static_cast<int32_t>(integer_field(body, "num_beams", 1, 8).value_or(3));
      json beams = json::array();
      for (const explain::Continuation& c : e.beams(context, num_beams, max_tokens)) beams.push_back(continuation_json(c));
      send_json(res, 200, {{"greedy", continuation_json(e.greedy(context, max_tokens))}, {"beams", beams}});
    });
  });

  http.Post("/explain/trace", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      SamplingParams params = sampling_fields(body, e);
      if (!field(body, "temperature")) params.temperature = 0.0f;
      const int64_t max_tokens = max_tokens_field(body, 32);
      const explain::GenerationTrace trace = e.trace(context, params, max_tokens);
      const MachinePeak peak = e.machine_peak();
      json steps = json::array();
      double flops = 0, bytes = 0, seconds = 0;
      for (const explain::TraceStep& s : trace.steps) {
        steps.push_back(step_json(s));
        flops += s.cost.flops;
        bytes += s.cost.weight_bytes + s.cost.kv_bytes;
        seconds += s.seconds;
      }
      send_json(res, 200,
                {{"steps", steps},
                 {"text", trace.text},
                 {"machine", {{"read_gb_per_s", peak.read_gb_per_s}, {"gflop_per_s", peak.gflop_per_s},
                              {"ridge_intensity", peak.read_gb_per_s > 0 ? peak.gflop_per_s / peak.read_gb_per_s : 0.0},
                              {"n_threads", e.n_threads()}}},
                 {"totals", {{"flops", flops}, {"bytes", bytes}, {"seconds", seconds}}}});
    });
  });

  http.Post("/explain/speculative", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = context_field(body, e);
      const explain::SpeculativeTrace t = e.speculate(context, speculative_fields(body, e));
      json passes = json::array();
      for (const explain::SpeculativePass& pass : t.passes) {
        json tokens = json::array();
        for (const explain::PassToken& token : pass.tokens)
          tokens.push_back({{"id", token.id}, {"text", token.text}, {"status", explain::draft_status_name(token.status)}});
        passes.push_back({{"tokens", tokens}, {"drafted", pass.num_drafted}, {"accepted", pass.num_accepted},
                          {"running_alpha", pass.running_alpha}});
      }
      json theory = json::array();
      for (const explain::SpeedupPoint& p : t.theory)
        theory.push_back({{"alpha", p.alpha}, {"tokens_per_pass", p.tokens_per_pass}, {"speedup", p.speedup}});
      send_json(res, 200,
                {{"proposer", t.proposer}, {"gamma", t.gamma}, {"passes", passes}, {"text", t.text},
                 {"generated_tokens", t.num_generated}, {"alpha", t.alpha}, {"tokens_per_pass", t.tokens_per_pass},
                 {"speculative_seconds", t.speculative_seconds}, {"plain_seconds", t.plain_seconds},
                 {"measured_speedup", t.measured_speedup}, {"cost_ratio", t.cost_ratio}, {"theory", theory}});
    });
  });

  http.Post("/explain/batching", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const explain::BatchingCurveRequest request = batching_fields(parse_body(req), e);
      explain::BatchingCurveStatus status;
      if (!e.batching().start(request, status))
        throw ApiError(409, "another batching curve is being measured (" + std::to_string(status.points.size()) + " of " +
                                std::to_string(status.request.batch_sizes.size()) + " batch sizes done); retry when it finishes",
                       "invalid_request_error", "", "busy");
      send_json(res, status.state == explain::BatchingCurveState::done ? 200 : 202, batching_json(status));
    });
  });

  http.Get("/explain/batching", [=](const httplib::Request&, httplib::Response& res) {
    guarded(res, retry_after, [&] { send_json(res, 200, batching_json(explainer().batching().status())); });
  });
}

}  // namespace nucleus::server
