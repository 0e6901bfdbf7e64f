// The explainer's speed panels over HTTP (panels 2–4, on the speed model): the traced generation on
// the roofline, speculative passes, the batching curve, continuous vs static batching schedules and
// the paged KV memory picture. Timed measurements run one at a time: a request for one while
// another runs gets 409 (code "busy"). docs/API.md documents every field and response.
//
//   POST /explain/trace             {context, max_tokens, sampling…} → per-step cost + machine roofline
//   POST /explain/speculative       {context, proposer, gamma, max_tokens, temperature, self_layers, seed}
//   POST /explain/batching          {batch_sizes, prompt_tokens, gen_tokens} → starts (202) or the cached curve (200)
//   GET  /explain/batching          progress / result of the batching curve
//   POST /explain/schedules         {gen_lengths, prompt_tokens, max_batch} → continuous vs static timelines
//   POST /explain/kv_memory         {lengths, kv_cache_mib, block_size, max_model_len} → paged vs contiguous fit
#pragma once
#include <functional>

namespace httplib {
class Server;
}
namespace nucleus::explain {
class Explainer;
}

namespace nucleus::server {

void register_explainer_speed_routes(httplib::Server& http, int retry_after_seconds, std::function<explain::Explainer&()> explainer);

}  // namespace nucleus::server
