// OpenAI request parsing, every field: /v1/completions and /v1/chat/completions bodies (prompt as
// text / ids / lists, messages of any shape, sampling fields, stop, logit_bias, logprobs, n, tools
// and tool_choice, chat_template_kwargs, structured output in every dialect, which compiles the
// constraint), plus /tokenize and /detokenize and the model-name check. Served model: stories260K's
// tokenizer with a Jinja chat template from ../shared/templates (byte 0 picks which, the endpoint,
// the tool-call parser and the reasoning split). Every bad body must be an ApiError (the 400 naming
// the field) or an Error — any other exception would be a 500, a crash worse.
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "server/api_error.h"
#include "server/openai_protocol.h"
#include "structured/constraint.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace nucleus;
using namespace nucleus::server;

namespace {

struct Served {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<ChatTemplate> templates;
  ConstraintCompiler constraints{8};
};
Served* served;
volatile size_t sink;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  served = new Served();
  served->file = GgufFile::open(fuzz::shared_dir() + "/models/stories260K.gguf");
  served->tokenizer = Tokenizer::from_gguf(*served->file);
  std::tm day{};
  day.tm_year = 124, day.tm_mon = 6, day.tm_mday = 26;
  for (const char* name : {"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
                           "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "Qwen3-Coder", "google-gemma-2-2b-it"}) {
    ChatTemplate t = chat_template_from_jinja(fuzz::read_file(fuzz::shared_dir() + "/templates/" + name + ".jinja"));
    t.bos_token = "<s>";
    t.eos_token = "</s>";
    t.now = day;
    served->templates.push_back(std::move(t));
  }
  served->templates.push_back(make_chat_template(ChatTemplateKind::chatml));  // a family renderer (--chat-template)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input input(data, size);
  const uint8_t control = input.byte();
  const uint8_t formats = input.byte();
  const std::string_view text = input.rest();
  const nlohmann::json body = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (body.is_discarded()) return 0;
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr, false);

  ModelContext model;
  model.tokenizer = served->tokenizer.get();
  const size_t template_index = (control >> 3) % (served->templates.size() + 1);
  if (template_index < served->templates.size()) model.chat_template = &served->templates[template_index];
  else model.chat_template_error = "the model has no chat template";
  model.model_name = "stories260K";
  model.max_model_len = 256;
  model.constraints = control & 0x80 ? nullptr : &served->constraints;
  if (formats % 7 < 6) model.tool_call_format = static_cast<ToolCallFormat>(formats % 7);
  model.reasoning_split = formats & 0x80;

  try {
    switch (control & 7) {
      case 0:
      case 1:
      case 2: {
        const GenerationRequest request = parse_completion_request(body, model, control & 4 ? nullptr : &ordered);
        sink = request.num_sequences();
        for (const auto& prompt : request.prompts)
          for (int32_t id : prompt) FUZZ_CHECK(id >= 0 && id < served->tokenizer->n_vocab(), "prompt id outside the vocabulary");
        break;
      }
      case 3:
      case 4:
      case 5: {
        const GenerationRequest request = parse_chat_request(body, model, control & 1 ? nullptr : &ordered);
        sink = request.num_sequences();
        for (const auto& prompt : request.prompts)
          for (int32_t id : prompt) FUZZ_CHECK(id >= 0 && id < served->tokenizer->n_vocab(), "prompt id outside the vocabulary");
        break;
      }
      case 6:
        check_model_name(body, model);
        sink = parse_tokenize_request(body, model, &ordered).size();
        break;
      case 7:
        sink = parse_detokenize_request(body, model).size();
        sink = parse_chat_template_kwargs(body).size();
        break;
    }
  } catch (const ApiError&) {
  } catch (const Error&) {
  }
  return 0;
}
