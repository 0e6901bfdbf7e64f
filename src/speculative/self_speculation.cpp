#include "speculative/self_speculation.h"

#include <string>

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

std::unique_ptr<Model> load_layer_prefix_model(const Model& target, int64_t n_layers) {
  const HParams& hp = target.hparams();
  if (n_layers < 1 || n_layers > hp.n_layer)
    throw Error("self-speculation: K must be in 1.." + std::to_string(hp.n_layer) + " (the target's layers), got " +
                std::to_string(n_layers));
  const GgufFile& file = target.file();
  GgufWriter writer;
  for (const auto& [key, value] : file.metadata()) writer.set(key, value);
  writer.set(hp.arch_name + ".block_count", MetaValue::u32(static_cast<uint32_t>(n_layers)));
  for (const TensorInfo& t : file.tensors()) {
    if (t.name.rfind("blk.", 0) == 0) {
      const int64_t layer = std::stoll(t.name.substr(4, t.name.find('.', 4) - 4));
      if (layer >= n_layers) continue;
    }
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    writer.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
  }
  auto prefix = Model::load(GgufFile::from_bytes(writer.to_bytes(), file.path() + " (first " + std::to_string(n_layers) + " layers)"));
  prefix->set_kernels(target.kernels());
  return prefix;
}

SelfSpeculationProposer::SelfSpeculationProposer(const Model& target, int64_t n_layers, const SamplingParams& params,
                                                 int n_threads)
    : prefix_(load_layer_prefix_model(target, n_layers)),
      draft_(std::make_unique<DraftModelProposer>(*prefix_, params, n_threads, "self:" + std::to_string(n_layers))) {}

}  // namespace nucleus
