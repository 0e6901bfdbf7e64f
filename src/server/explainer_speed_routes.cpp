#include "server/explainer_speed_routes.h"

#include <httplib.h>

#include <algorithm>

#include "explain/explainer.h"
#include "server/explainer_fields.h"
#include "server/json_fields.h"
#include "server/route_helpers.h"

namespace nucleus::server {

using nlohmann::json;

namespace {

// Runs a measurement; one refused because another holds the speed model is a 409.
template <class F>
auto measured(F&& measure) {
  try {
    return measure();
  } catch (const explain::MeasurementBusy& e) {
    throw ApiError(409, e.what(), "invalid_request_error", "", "busy");
  }
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
  explain::BatchingCurveRequest request;
  request.batch_sizes = integer_list_field(body, "batch_sizes", 8, 1, 64, {1, 2, 4, 8, 16});
  std::sort(request.batch_sizes.begin(), request.batch_sizes.end());
  request.batch_sizes.erase(std::unique(request.batch_sizes.begin(), request.batch_sizes.end()), request.batch_sizes.end());
  request.n_prompt = integer_field(body, "prompt_tokens", 1, 256).value_or(32);
  request.n_gen = integer_field(body, "gen_tokens", 2, 256).value_or(32);
  if (request.n_prompt + request.n_gen > explainer.speed_hparams().n_ctx_train)
    throw invalid_param("gen_tokens", "prompt_tokens + gen_tokens must fit the speed model's context length of " +
                                          std::to_string(explainer.speed_hparams().n_ctx_train));
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
  options.max_tokens = explainer_max_tokens_field(body, 48);
  options.self_layers = integer_field(body, "self_layers", 1, explainer.speed_hparams().n_layer).value_or(0);
  options.sampling = explainer_sampling_fields(body, explainer.speed_hparams().n_vocab);
  if (!field(body, "temperature")) options.sampling.temperature = 0.0f;  // greedy by default: α is then deterministic
  return options;
}

json schedule_json(const explain::ScheduleRun& run) {
  json requests = json::array();
  for (const explain::ScheduledRequest& r : run.requests)
    requests.push_back({{"gen_tokens", r.gen_tokens}, {"slot", r.slot}, {"admitted_seconds", r.admitted_seconds},
                        {"finished_seconds", r.finished_seconds}});
  json steps = json::array();
  for (const explain::ScheduleStep& s : run.steps)
    steps.push_back({{"start_seconds", s.start_seconds}, {"end_seconds", s.end_seconds}, {"num_running", s.num_running}});
  return {{"total_seconds", run.total_seconds}, {"mean_latency_seconds", run.mean_latency_seconds},
          {"mean_occupancy", run.mean_occupancy}, {"requests", requests}, {"steps", steps}};
}

}  // namespace

void register_explainer_speed_routes(httplib::Server& http, int retry_after, std::function<explain::Explainer&()> explainer) {
  http.Post("/explain/trace", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = explainer_context_field(body, e);
      SamplingParams params = explainer_sampling_fields(body, e.speed_hparams().n_vocab);
      if (!field(body, "temperature")) params.temperature = 0.0f;
      const int64_t max_tokens = explainer_max_tokens_field(body, 32);
      const MachinePeak peak = measured([&] { return e.machine_peak(); });
      const explain::GenerationTrace trace = measured([&] { return e.trace(context, params, max_tokens); });
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
      const std::string context = explainer_context_field(body, e);
      const explain::SpeculativeOptions options = speculative_fields(body, e);
      const explain::SpeculativeTrace t = measured([&] { return e.speculate(context, options); });
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
      const explain::BatchingCurveStatus status = measured([&] { return e.batching().start(request); });
      send_json(res, status.state == explain::BatchingCurveState::done ? 200 : 202, batching_json(status));
    });
  });

  http.Get("/explain/batching", [=](const httplib::Request&, httplib::Response& res) {
    guarded(res, retry_after, [&] { send_json(res, 200, batching_json(explainer().batching().status())); });
  });

  http.Post("/explain/schedules", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      explain::ScheduleWorkload workload;
      workload.gen_lengths = integer_list_field(body, "gen_lengths", 32, 1, 256, {48, 6, 10, 40, 8, 12, 36, 4});
      workload.prompt_tokens = integer_field(body, "prompt_tokens", 1, 256).value_or(8);
      workload.max_batch = integer_field(body, "max_batch", 1, 16).value_or(4);
      const int64_t longest = *std::max_element(workload.gen_lengths.begin(), workload.gen_lengths.end());
      if (workload.prompt_tokens + longest > e.speed_hparams().n_ctx_train)
        throw invalid_param("gen_lengths", "prompt_tokens + the longest of 'gen_lengths' must fit the speed model's context length of " +
                                               std::to_string(e.speed_hparams().n_ctx_train));
      const explain::BatchingSchedules s = measured([&] { return e.schedules(workload); });
      send_json(res, 200,
                {{"gen_lengths", workload.gen_lengths}, {"prompt_tokens", workload.prompt_tokens}, {"max_batch", workload.max_batch},
                 {"continuous", schedule_json(s.continuous)}, {"static", schedule_json(s.static_batching)}});
    });
  });

  http.Post("/explain/kv_memory", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      explain::KvMemoryRequest request;
      request.max_model_len = integer_field(body, "max_model_len", 1, e.speed_hparams().n_ctx_train).value_or(e.speed_hparams().n_ctx_train);
      request.lengths = integer_list_field(body, "lengths", 64, 1, request.max_model_len, {60, 200, 30, 120, 90, 20});
      request.kv_cache_bytes = integer_field(body, "kv_cache_mib", 1, 1024).value_or(64) << 20;
      request.block_size = integer_field(body, "block_size", 1, 256).value_or(16);
      const explain::KvMemoryLayout m = e.kv_memory(request);
      if (m.num_blocks > 16384)
        throw invalid_param("kv_cache_mib", "'kv_cache_mib' gives " + std::to_string(m.num_blocks) +
                                                " blocks on this model; the picture takes at most 16384");
      send_json(res, 200,
                {{"lengths", request.lengths}, {"kv_cache_bytes", request.kv_cache_bytes}, {"block_size", m.block_size},
                 {"num_blocks", m.num_blocks}, {"bytes_per_block", m.bytes_per_block}, {"max_model_len", m.max_model_len},
                 {"paged", {{"requests", m.paged_requests}, {"tokens", m.paged_tokens}, {"wasted_tokens", m.paged_wasted_tokens},
                            {"block_owner", m.block_owner}, {"block_fill", m.block_fill}}},
                 {"contiguous", {{"requests", m.contiguous_requests}, {"tokens", m.contiguous_tokens},
                                 {"reserved_tokens", m.contiguous_reserved_tokens}}}});
    });
  });
}

}  // namespace nucleus::server
