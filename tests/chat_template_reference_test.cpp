// The C++ family renderers (what --chat-template NAME picks): for every real chat template in
// ../shared/templates that detect_chat_template recognizes as a family, the family renderer gives byte
// for byte what Python's jinja2 renders from the template's own source (tests/tools/
// render_chat_reference.py, with Hugging Face's settings), over conversations that exercise system
// messages, history, whitespace trimming, reasoning in history and enable_thinking. (A model's own
// template is run by the Jinja interpreter instead; tests/jinja_template_test.cpp holds that to jinja2
// for every shared template.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"

namespace nucleus {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Case {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;
  bool well_formed = true;  // alternating turns, system first: every family must render it
};

std::vector<Case> cases() {
  const ChatMessage system{"system", "You are terse."};
  const ChatMessage user{"user", "Hello there"};
  const ChatMessage padded_user{"user", "  What is 2+2?\n"};
  const ChatMessage assistant{"assistant", "Hi! How can I help?"};
  const ChatMessage reasoning_assistant{"assistant", "<think>\nThe user greets me.\n</think>\n\nHello!"};
  std::vector<Case> all = {
      {{user}, true, std::nullopt},
      {{system, user}, true, std::nullopt},
      {{system, user, assistant, padded_user}, true, std::nullopt},
      {{user, assistant}, false, std::nullopt},
      {{system, user, assistant}, false, std::nullopt},
      {{user, reasoning_assistant, user}, true, std::nullopt},
      {{user, reasoning_assistant}, false, std::nullopt},
      {{system, user}, true, true},
      {{system, user}, true, false},
      {{user, assistant, user}, true, false},
      {{user, assistant}, false, true},
  };
  all.push_back({{user, assistant, system, user}, true, std::nullopt, /*well_formed=*/false});
  return all;
}

json to_json(const Case& c) {
  json messages = json::array();
  for (const ChatMessage& m : c.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json out = {{"messages", messages}, {"add_generation_prompt", c.add_generation_prompt}};
  if (c.enable_thinking) out["enable_thinking"] = *c.enable_thinking;
  return out;
}

std::string describe(const Case& c) {
  std::string out = "messages:";
  for (const ChatMessage& m : c.messages) out += " " + m.role + "=" + json(m.content).dump();
  out += c.add_generation_prompt ? ", add_generation_prompt" : "";
  if (c.enable_thinking) out += std::string(", enable_thinking=") + (*c.enable_thinking ? "true" : "false");
  return out;
}

// The reference renderings of `all` for one template file.
json reference(const std::string& template_path, const ChatTemplate& chat_template, const std::vector<Case>& all) {
  json request = {{"template", template_path}, {"bos_token", chat_template.bos_token}, {"eos_token", chat_template.eos_token}};
  request["cases"] = json::array();
  for (const Case& c : all) request["cases"].push_back(to_json(c));
  const std::string request_path = testing::TempDir() + "/nucleus-chat-reference.json";
  std::ofstream(request_path) << request.dump();
  // Debian's python3 with Debian's python3-jinja2 (scripts/install-deps.sh installs it).
  const test::CommandResult run = test::run_shell("/usr/bin/python3 " + std::string(NUCLEUS_SOURCE_DIR) +
                                                  "/tests/tools/render_chat_reference.py " + request_path);
  std::remove(request_path.c_str());
  if (run.exit_code != 0) throw std::runtime_error("the jinja2 reference renderer failed (is python3-jinja2 installed?)");
  return json::parse(run.out);
}

TEST(ChatTemplateReference, EveryRecognizedSharedTemplateRendersLikeJinja2) {
  NUCLEUS_REQUIRE_SHARED();
  const std::vector<Case> all = cases();
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(test::shared_path("templates")))
    if (entry.path().extension() == ".jinja") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  ASSERT_GE(paths.size(), 60u);
  int recognized = 0;
  for (const fs::path& path : paths) {
    const std::string source = test::read_file(path.string());
    const std::optional<ChatTemplate> from_source = chat_template_from_source(source);
    if (!from_source) continue;
    ++recognized;
    ChatTemplate chat_template = *from_source;
    const ChatTemplateKind* kind = &chat_template.kind;
    chat_template.date_string = "26 Jul 2024";  // the reference's strftime_now day
    const json expected = reference(path.string(), chat_template, all);
    ASSERT_EQ(expected.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      SCOPED_TRACE(path.filename().string() + " as " + chat_template_name(*kind) + ", " + describe(all[i]));
      std::optional<std::string> rendered;
      std::string error;
      try {
        rendered = render_chat(chat_template, all[i].messages, all[i].add_generation_prompt, all[i].enable_thinking);
      } catch (const Error& e) {
        error = e.what();
      }
      if (expected[i].contains("error")) {
        EXPECT_FALSE(rendered) << "the template raises (" << expected[i]["error"] << ") but we rendered\n" << *rendered;
      } else if (rendered) {
        EXPECT_EQ(*rendered, expected[i]["text"].get<std::string>());
      } else {
        // Refusing is allowed only where the conversation is unusual; a plain one must render.
        EXPECT_FALSE(all[i].well_formed) << "refused a well-formed conversation: " << error;
      }
    }
  }
  EXPECT_GE(recognized, 8);  // Llama 3.x, Qwen 2.5/3, Gemma 2/4, Phi-3.5, Mistral, DeepSeek R1 at least
}

}  // namespace
}  // namespace nucleus
