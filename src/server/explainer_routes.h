// The explainer's HTTP surface: the single-page UI (embedded at build time, static_assets.h) and the
// JSON data endpoints behind its four panels (panel 1's here). Routes parse and validate (400 naming the field, as
// OpenAI does), call explain::Explainer, and write JSON; the logic lives in src/explain/.
//
//   GET  /                          the UI (index.html); /explainer/<file> its scripts and styles
//   GET  /explain/info              model facts, defaults, available proposers
//   POST /explain/distribution      {context, temperature, top_k, top_p, min_p, typical_p, top_n}
//   POST /explain/sample            {context, sampling…, seed} → one token appended
//   POST /explain/resample          {context, sampling…, seed, max_tokens} → a sentence
//   POST /explain/continuations     {context, max_tokens, num_beams} → greedy and beam continuations
//   POST /explain/degeneration      {context, sampling…, seed, max_tokens, num_beams} → greedy, beam, sampling + repetition
//   the speed panels (trace, speculative, batching, schedules, kv_memory): explainer_speed_routes.h
// docs/API.md documents every field and response.
#pragma once
#include <functional>

namespace httplib {
class Server;
}
namespace nucleus::explain {
class Explainer;
}

namespace nucleus::server {

// `explainer` returns the served explainer or throws ApiError (503 while loading / without one).
void register_explainer_routes(httplib::Server& http, int retry_after_seconds, std::function<explain::Explainer&()> explainer);

}  // namespace nucleus::server
