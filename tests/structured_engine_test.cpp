// Structured output through the engine (random-weight Llama 3 model, 128k vocabulary): every
// constrained output is a sentence of its grammar and satisfies its schema, greedy and sampled; a
// constrained request's tokens are identical alone and among 31 others, with and without
// speculation; speculative greedy equals plain greedy under a constraint.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/llm_engine.h"
#include "engine/model_source.h"
#include "engine_test_helpers.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"
#include "structured/constraint.h"
#include "structured/grammar_matcher.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age", "ok"],
  "additionalProperties": false
})";

std::shared_ptr<const Grammar> compile(ConstraintSpec::Kind kind, std::string text, std::vector<std::string> choices = {}) {
  ConstraintCompiler compiler;
  ConstraintSpec spec;
  spec.kind = kind;
  spec.text = std::move(text);
  spec.choices = std::move(choices);
  return compiler.compile(spec).grammar;
}

size_t codepoint_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Validates a person object by hand (the schema above).
void expect_valid_person(const std::string& text) {
  nlohmann::json v;
  ASSERT_NO_THROW(v = nlohmann::json::parse(text)) << text;
  ASSERT_TRUE(v.is_object()) << text;
  for (const auto& [key, value] : v.items()) EXPECT_TRUE(key == "name" || key == "age" || key == "tags" || key == "ok") << text;
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
  EXPECT_LE(codepoint_count(v["name"].get<std::string>()), 12u) << text;
  ASSERT_TRUE(v.contains("age") && v["age"].is_number_integer()) << text;
  EXPECT_GE(v["age"].get<int64_t>(), 0);
  EXPECT_LE(v["age"].get<int64_t>(), 120);
  ASSERT_TRUE(v.contains("ok") && v["ok"].is_boolean()) << text;
  if (v.contains("tags")) {
    ASSERT_TRUE(v["tags"].is_array());
    EXPECT_LE(v["tags"].size(), 3u);
    for (const auto& t : v["tags"]) EXPECT_TRUE(t == "red" || t == "green" || t == "blue") << text;
  }
}

struct Loaded {
  LoadedModel model;
  Loaded() : model(load_model(ModelSource{test::shared_path("models/test/llama3-f16.gguf"), "", {}})) {}
};

Loaded& llama3() {
  static Loaded loaded;
  return loaded;
}

RequestOptions constrained(std::shared_ptr<const Grammar> grammar, int variant, int32_t max_tokens) {
  RequestOptions o;
  o.grammar = std::move(grammar);
  o.stop.max_tokens = max_tokens;
  if (variant == 0) {
    o.sampling.temperature = 0.0f;
  } else {
    o.sampling.temperature = 1.0f;
    o.sampling.seed = 77 + static_cast<uint64_t>(variant);
  }
  return o;
}

EngineConfig small_config() {
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 256;
  return config;
}

TEST(StructuredEngine, OutputsAreSentencesOfTheirGrammarGreedyAndSampled) {
  NUCLEUS_REQUIRE_SHARED();
  Loaded& loaded = llama3();
  const Tokenizer& tokenizer = *loaded.model.tokenizer;
  const auto person = compile(ConstraintSpec::Kind::json_schema, kPersonSchema);
  const auto choice = compile(ConstraintSpec::Kind::choice, "", {"positive", "negative", "neutral"});
  const auto regex = compile(ConstraintSpec::Kind::regex, "[A-Z][a-z]{2,8}-[0-9]{3}");
  const auto object = compile(ConstraintSpec::Kind::json_object, "");
  const std::vector<int32_t> prompt = tokenizer.encode("Describe a person as JSON:", true, false);
  int finished = 0, runs = 0;
  for (const auto& grammar : {person, choice, regex, object}) {
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE(variant);
      const auto result = test::run_engine(*loaded.model.model, small_config(), {prompt},
                                           {constrained(grammar, variant, 160)}, nullptr, &tokenizer)[0];
      ++runs;
      if (result.reason == FinishReason::stop) {
        ++finished;
        EXPECT_TRUE(grammar_matches(*grammar, result.text)) << result.text;
        EXPECT_TRUE(tokenizer.is_end_of_generation(result.tokens.back()));
        if (grammar == person) {
          expect_valid_person(result.text);
        }
        if (grammar == object) {
          EXPECT_TRUE(nlohmann::json::parse(result.text).is_object()) << result.text;
        }
      } else {
        // Cut by max_tokens: still a valid prefix of a sentence.
        ASSERT_EQ(result.reason, FinishReason::length);
        EXPECT_EQ(grammar_prefix_length(*grammar, result.text), result.text.size()) << result.text;
      }
    }
  }
  // The bounded grammars (person, choice, regex) always finish within 160 tokens.
  EXPECT_GE(finished, 12) << "of " << runs;
}

// Under the sanitizers a batch of 12 (memory and UB errors are the point there), 32 elsewhere.
#ifdef NUCLEUS_SANITIZED
constexpr int kBatchRequests = 12;
#else
constexpr int kBatchRequests = 32;
#endif

TEST(StructuredEngine, ConstrainedTokensAreIdenticalAloneAndInABatchWithAndWithoutSpeculation) {
  NUCLEUS_REQUIRE_SHARED();
  Loaded& loaded = llama3();
  Model& model = *loaded.model.model;
  const Tokenizer& tokenizer = *loaded.model.tokenizer;
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto person = compile(ConstraintSpec::Kind::json_schema, kPersonSchema);
  const auto choice = compile(ConstraintSpec::Kind::choice, "", {"alpha beta", "alpha gamma", "delta"});
  for (const bool speculative : {false, true}) {
    SCOPED_TRACE(speculative ? "ngram speculation" : "plain");
    std::vector<std::vector<int32_t>> prompts;
    std::vector<RequestOptions> options;
    for (int i = 0; i < kBatchRequests; ++i) {
      prompts.push_back(test::random_prompt(static_cast<uint64_t>(i), 4 + (i * 13) % 40, n_vocab));
      RequestOptions o = constrained(i % 3 == 2 ? nullptr : (i % 3 == 0 ? person : choice), i % 2, 48);
      if (speculative) {
        o.proposer = std::make_shared<NgramProposer>(1, 3);
        o.num_speculative_tokens = 3;
      }
      options.push_back(o);
    }
    std::vector<test::EngineResult> alone;
    for (int i : {0, 1, 3, 4})
      alone.push_back(test::run_engine(model, small_config(), {prompts[static_cast<size_t>(i)]}, {options[static_cast<size_t>(i)]},
                                       nullptr, &tokenizer)[0]);
    EngineConfig batched = small_config();
    batched.max_num_batched_tokens = 64;  // chunked prefill beside decodes
    const auto together = test::run_engine(model, batched, prompts, options, nullptr, &tokenizer);
    int k = 0;
    for (int i : {0, 1, 3, 4}) {
      EXPECT_EQ(alone[static_cast<size_t>(k)].tokens, together[static_cast<size_t>(i)].tokens) << "request " << i;
      EXPECT_EQ(alone[static_cast<size_t>(k)].text, together[static_cast<size_t>(i)].text);
      ++k;
    }
  }
}

TEST(StructuredEngine, SpeculativeGreedyEqualsPlainGreedyUnderAConstraint) {
  NUCLEUS_REQUIRE_SHARED();
  Loaded& loaded = llama3();
  Model& model = *loaded.model.model;
  const Tokenizer& tokenizer = *loaded.model.tokenizer;
  const auto person = compile(ConstraintSpec::Kind::json_schema, kPersonSchema);
  const std::vector<int32_t> prompt = tokenizer.encode("{\"name\": \"Ann\", \"age\": 3, \"ok\": true} again:", true, false);
  const auto plain = test::run_engine(model, small_config(), {prompt}, {constrained(person, 0, 96)}, nullptr, &tokenizer)[0];
  for (int kind = 0; kind < 2; ++kind) {
    RequestOptions o = constrained(person, 0, 96);
    if (kind == 0) {
      o.proposer = std::make_shared<NgramProposer>(1, 3);
    } else {
      o.proposer = std::shared_ptr<Proposer>(make_self_speculation_proposer(model, 1, o.sampling, 1));
    }
    o.num_speculative_tokens = 4;
    const auto spec = test::run_engine(model, small_config(), {prompt}, {o}, nullptr, &tokenizer)[0];
    EXPECT_EQ(spec.tokens, plain.tokens) << (kind == 0 ? "ngram" : "self:1");
    EXPECT_GT(spec.spec.num_proposed, 0);
  }
}

TEST(StructuredEngine, AGrammarTooAmbiguousToMaskEndsItsRequestWithAnErrorWhileTheOthersFinish) {
  NUCLEUS_REQUIRE_SHARED();
  Loaded& loaded = llama3();
  const Tokenizer& tokenizer = *loaded.model.tokenizer;
  // Every byte can close or open a nested `line`: the parses alive at once double until the
  // matcher's bound (GrammarAutomaton::kMaxLiveStacks) ends the request.
  const auto ambiguous = compile(ConstraintSpec::Kind::grammar, "root ::= line{2,4}\nline ::= [^\n] root*\n");
  const auto person = compile(ConstraintSpec::Kind::json_schema, kPersonSchema);
  LLMEngine engine(*loaded.model.model, &tokenizer, small_config());
  const std::vector<int32_t> prompt = tokenizer.encode("Write anything:", true, false);
  RequestOptions plain;
  plain.stop.max_tokens = 24;
  plain.stop.ignore_eos = true;
  const int64_t bad = engine.add_request(prompt, constrained(ambiguous, 0, 400));
  const int64_t good = engine.add_request(prompt, constrained(person, 0, 48));
  const int64_t free = engine.add_request(prompt, plain);
  std::map<int64_t, RequestOutput> last;
  for (int steps = 0; steps < 2000 && last.size() < 3; ++steps)
    for (RequestOutput& out : engine.step())
      if (out.finished) last[out.request_id] = out;
  ASSERT_EQ(last.size(), 3u);
  EXPECT_NE(last[bad].error.find("too ambiguous"), std::string::npos) << last[bad].error;
  EXPECT_EQ(last[good].error, "");
  EXPECT_EQ(last[free].error, "");
  EXPECT_EQ(last[free].num_output_tokens, 24);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);  // the failed request's blocks went back too
}

TEST(StructuredEngine, AConstraintWithoutATokenizerIsRefused) {
  NUCLEUS_REQUIRE_SHARED();
  Loaded& loaded = llama3();
  LLMEngine engine(*loaded.model.model, nullptr, small_config());
  RequestOptions o = constrained(compile(ConstraintSpec::Kind::json_object, ""), 0, 8);
  EXPECT_THROW(engine.add_request({1, 2, 3}, o), Error);
}

}  // namespace
}  // namespace nucleus
