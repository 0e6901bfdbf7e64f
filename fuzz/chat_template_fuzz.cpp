// Chat-template rendering of arbitrary message lists: a JSON body ({"messages": [...], "tools":
// [...], "chat_template_kwargs": {...}} or a bare message list) rendered by every C++ family renderer
// and by the Jinja interpreter running each real template of ../shared/templates (parsed once at
// start-up). Byte 0 picks the template, byte 1's low bit add_generation_prompt; the rest is the JSON.
// Messages of any shape (missing roles, numbers as content, tool calls with string arguments,
// invalid UTF-8 in strings) must render or be an Error.
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "tokenizer/chat_template.h"

using namespace nucleus;
using nlohmann::ordered_json;

static std::vector<ChatTemplate>* templates;
static volatile size_t sink;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  templates = new std::vector<ChatTemplate>();
  for (int kind = 0; kind <= static_cast<int>(ChatTemplateKind::deepseek_r1); ++kind)
    templates->push_back(make_chat_template(static_cast<ChatTemplateKind>(kind)));
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(fuzz::shared_dir() + "/templates"))
    if (entry.path().extension() == ".jinja") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());  // a stable index per template, whatever the directory order
  std::tm day{};
  day.tm_year = 124, day.tm_mon = 6, day.tm_mday = 26;
  for (const std::string& path : paths) {
    try {
      ChatTemplate t = chat_template_from_jinja(fuzz::read_file(path));
      t.bos_token = "<s>";
      t.eos_token = "</s>";
      t.now = day;
      templates->push_back(std::move(t));
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz: %s is not used: %s\n", path.c_str(), e.what());
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input input(data, size);
  const ChatTemplate& chat_template = (*templates)[input.byte() % templates->size()];
  const bool add_generation_prompt = input.byte() & 1;
  const std::string_view text = input.rest();
  const ordered_json body = ordered_json::parse(text.begin(), text.end(), nullptr, false);
  if (body.is_discarded()) return 0;
  ordered_json messages = body, kwargs = ordered_json::object(), tools = nullptr;
  if (body.is_object()) {
    messages = body.contains("messages") ? body["messages"] : ordered_json::array();
    if (body.contains("chat_template_kwargs") && body["chat_template_kwargs"].is_object())
      kwargs = body["chat_template_kwargs"];
    if (body.contains("tools")) tools = body["tools"];
  }
  try {
    sink = render_chat_json(chat_template, messages, add_generation_prompt, kwargs, tools).size();
  } catch (const Error&) {
  }
  return 0;
}
