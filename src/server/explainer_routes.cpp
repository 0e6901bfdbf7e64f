#include "server/explainer_routes.h"

#include <httplib.h>

#include <algorithm>

#include "explain/explainer.h"
#include "server/explainer_fields.h"
#include "server/explainer_speed_routes.h"
#include "server/json_fields.h"
#include "server/route_helpers.h"
#include "server/static_assets.h"

namespace nucleus::server {

using nlohmann::json;

namespace {

json continuation_json(const explain::Continuation& c) {
  return {{"tokens", c.tokens}, {"text", c.text}, {"score", c.score}};
}

json repetition_json(const explain::RepetitionMeasures& m) {
  return {{"num_tokens", m.num_tokens}, {"repeated_4gram_share", m.repeated_4gram_share}, {"distinct_2", m.distinct_2},
          {"longest_loop", m.longest_loop}, {"loop_period", m.loop_period}, {"loop_start", m.loop_start}};
}

json speed_model_json(const explain::SpeedModelInfo& m) {
  return {{"path", m.path}, {"same_as_served", m.same_as_served}, {"random_weights", m.random_weights}, {"n_embd", m.n_embd},
          {"n_layer", m.n_layer}, {"n_ff", m.n_ff}, {"n_head", m.n_head}, {"n_head_kv", m.n_head_kv}, {"n_vocab", m.n_vocab},
          {"n_ctx", m.n_ctx}, {"weight_type", m.weight_type}, {"weight_bytes", m.weight_bytes}};
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
                 {"max_tokens_limit", kExplainerMaxGeneratedTokens}, {"speed_model", speed_model_json(e.speed_model())}});
    });
  });

  http.Post("/explain/distribution", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = explainer_context_field(body, e);
      const SamplingParams params = explainer_sampling_fields(body, e.hparams().n_vocab);
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
      const std::string context = explainer_context_field(body, e);
      const explain::SampledToken t = e.sample(context, explainer_sampling_fields(body, e.hparams().n_vocab));
      send_json(res, 200, {{"token", {{"id", t.id}, {"text", t.text}}}, {"context", t.context}, {"seed", t.seed}});
    });
  });

  http.Post("/explain/resample", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = explainer_context_field(body, e);
      const SamplingParams params = explainer_sampling_fields(body, e.hparams().n_vocab);
      const explain::Continuation c = e.resample(context, params, explainer_max_tokens_field(body, 48));
      json out = continuation_json(c);
      out["seed"] = c.seed;
      send_json(res, 200, out);
    });
  });

  http.Post("/explain/continuations", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = explainer_context_field(body, e);
      const int64_t max_tokens = explainer_max_tokens_field(body, 24);
      const auto num_beams = static_cast<int32_t>(integer_field(body, "num_beams", 1, 8).value_or(3));
      json beams = json::array();
      for (const explain::Continuation& c : e.beams(context, num_beams, max_tokens)) beams.push_back(continuation_json(c));
      send_json(res, 200, {{"greedy", continuation_json(e.greedy(context, max_tokens))}, {"beams", beams}});
    });
  });

  http.Post("/explain/degeneration", [=](const httplib::Request& req, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      explain::Explainer& e = explainer();
      const json body = parse_body(req);
      const std::string context = explainer_context_field(body, e);
      const SamplingParams sampling = explainer_sampling_fields(body, e.hparams().n_vocab);
      const int64_t max_tokens = explainer_max_tokens_field(body, 256);
      const auto num_beams = static_cast<int32_t>(integer_field(body, "num_beams", 1, 8).value_or(4));
      json outputs = json::array();
      uint64_t seed = 0;
      for (const explain::DecodedOutput& o : e.degeneration(context, sampling, num_beams, max_tokens)) {
        json out = continuation_json(o.continuation);
        json pieces = json::array();  // per token, so a page can mark the repeated span
        for (int32_t token : o.continuation.tokens) pieces.push_back(e.tokenizer().token_to_piece(token));
        out["pieces"] = pieces;
        out["method"] = o.method;
        out["repetition"] = repetition_json(o.repetition);
        outputs.push_back(out);
        if (o.method == "sampling") seed = o.continuation.seed;
      }
      send_json(res, 200, {{"context", context}, {"max_tokens", max_tokens}, {"num_beams", num_beams}, {"seed", seed},
                           {"outputs", outputs}});
    });
  });

  register_explainer_speed_routes(http, retry_after, explainer);
}

}  // namespace nucleus::server
