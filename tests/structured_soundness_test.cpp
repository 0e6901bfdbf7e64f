// Soundness of JSON Schema outputs, checked by an independent validator: for shared schemas the
// compiler handles, the engine generates under each (random-weight Llama 3 model, 128k vocabulary,
// greedy and sampled, all batched in one engine) and every output that finishes is validated by
// ajv (tests/tools/validate_json_instances.mjs, formats asserted); an output cut by max_tokens must
// still be a valid prefix. The test command runs every 12th schema (two schemas under the
// sanitizers, which are there for memory safety, not coverage); scripts/structured-soundness.sh runs all of them (NUCLEUS_STRUCTURED_ALL=1).
//
// Completeness on the same data: every valid instance, tokenized with the model's vocabulary,
// passes the mask at every token (instances whose keys are not in the schema's order are
// reordered first: our grammars emit properties in schema order, and JSON Schema does not fix one).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "engine/llm_engine.h"
#include "engine/model_source.h"
#include "engine_test_helpers.h"
#include "io/gguf.h"
#include "structured/constraint.h"
#include "structured/grammar_matcher.h"
#include "structured/token_mask.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct SchemaRow {
  std::string id, category, draft;
  std::string path() const { return test::shared_path("structured/schemas/" + category + "/" + id + ".json"); }
  std::string instances(const std::string& kind) const {
    return test::shared_path("structured/instances/" + category + "/" + id + "." + kind + ".jsonl");
  }
};

std::vector<SchemaRow> read_index() {
  std::ifstream in(test::shared_path("structured/INDEX.tsv"));
  std::string line;
  std::getline(in, line);
  std::vector<SchemaRow> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::string> cols;
    std::string col;
    while (std::getline(ss, col, '\t')) cols.push_back(col);
    rows.push_back({cols.at(0), cols.at(1), cols.at(6)});
  }
  return rows;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int sample_stride() {
  if (std::getenv("NUCLEUS_STRUCTURED_ALL")) return 1;
#ifdef NUCLEUS_SANITIZED
  return 120;  // two schemas: under ASan every cold mask walk is ~10x slower; the corpus is the release run's
#else
  return 12;
#endif
}

TEST(StructuredSoundness, FinishedOutputsValidateWithAjvAndCutOnesArePrefixes) {
  NUCLEUS_REQUIRE_SHARED();
  LoadedModel loaded = load_model(ModelSource{test::shared_path("models/test/llama3-f16.gguf"), "", {}});
  const Tokenizer& tokenizer = *loaded.tokenizer;
  ConstraintCompiler compiler;
  std::vector<SchemaRow> rows;
  std::vector<std::shared_ptr<const Grammar>> grammars;
  const auto index = read_index();
  for (size_t i = 0; i < index.size(); i += static_cast<size_t>(sample_stride())) {
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::json_schema;
    spec.text = read_text(index[i].path());
    try {
      grammars.push_back(compiler.compile(spec).grammar);
      rows.push_back(index[i]);
    } catch (const Error&) {
      // Refused schemas are the coverage test's business (StructuredJsonSchemaCorpus).
    }
  }
  ASSERT_GE(rows.size(), 2u);
  const std::vector<int32_t> prompt = tokenizer.encode("Answer in JSON:", true, false);
  // A random-weight model fills strings and whitespace for hundreds of tokens; a bias towards the
  // tokens that close strings, values and containers makes most outputs finish. Soundness must hold
  // whatever the logits are, so the bias changes what is tested only in making it finish.
  std::vector<std::pair<int32_t, float>> closing_bias;
  for (const char* piece : {"\"", "\",", "\"}", "\"]", "}", "]", ",", "\":", "\",\"", "},", "],", "0", "1", "true", "null"})
    if (const int32_t id = tokenizer.find_token(piece); id >= 0) closing_bias.emplace_back(id, 6.0f);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
  for (size_t s = 0; s < rows.size(); ++s)
    for (int variant = 0; variant < 2; ++variant) {
      RequestOptions o;
      o.grammar = grammars[s];
#ifdef NUCLEUS_SANITIZED
      o.stop.max_tokens = 96;
#else
      o.stop.max_tokens = 192;
#endif
      o.sampling.temperature = variant == 0 ? 0.0f : 1.0f;
      o.sampling.seed = 1000 + s;
      o.sampling.logit_bias = closing_bias;
      prompts.push_back(prompt);
      options.push_back(o);
    }
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 2048;
  config.max_num_seqs = 32;
  const auto results = test::run_engine(*loaded.model, config, prompts, options, nullptr, &tokenizer);

  const std::string input = testing::TempDir() + "structured_soundness_input.jsonl";
  std::ofstream out(input);
  size_t finished = 0;
  for (size_t k = 0; k < results.size(); ++k) {
    const SchemaRow& row = rows[k / 2];
    if (results[k].reason == FinishReason::stop) {
      ++finished;
      out << nlohmann::json{{"schema_file", row.path()}, {"draft", row.draft}, {"text", results[k].text}}.dump() << "\n";
    } else {
      EXPECT_EQ(grammar_prefix_length(*grammars[k / 2], results[k].text), results[k].text.size())
          << row.category << "/" << row.id << ": " << results[k].text;
    }
  }
  out.close();
  const auto validated = test::run_shell("node " + std::string(NUCLEUS_SOURCE_DIR) + "/tests/tools/validate_json_instances.mjs '" +
                                         input + "'");
  ASSERT_EQ(validated.exit_code, 0) << validated.out;
  std::stringstream lines(validated.out);
  std::string line;
  size_t checked = 0, valid = 0, schema_errors = 0, k = 0;
  std::vector<size_t> finished_index;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].reason == FinishReason::stop) finished_index.push_back(i);
  while (std::getline(lines, line)) {
    const auto verdict = nlohmann::json::parse(line);
    const size_t i = finished_index.at(k++);
    const std::string error = verdict.value("error", "");
    if (error.rfind("schema_error", 0) == 0) {
      ++schema_errors;  // ajv cannot compile this schema: nothing to compare with
      continue;
    }
    ++checked;
    valid += verdict["ok"].get<bool>();
    EXPECT_TRUE(verdict["ok"].get<bool>()) << rows[i / 2].category << "/" << rows[i / 2].id << ": " << results[i].text << "\n"
                                           << error;
  }
  EXPECT_EQ(k, finished);
  std::printf("schemas %zu, outputs %zu, finished %zu, validated by ajv %zu (valid %zu), ajv schema errors %zu\n", rows.size(),
              results.size(), finished, checked, valid, schema_errors);
#ifndef NUCLEUS_SANITIZED  // the sanitizers' four short outputs are for memory safety: they need not finish
  EXPECT_GE(checked * 3, results.size()) << "too few outputs finished to say much";
#endif
}

// Reorders an instance's object keys to the schema's properties order, recursively through
// properties, items and local $refs (enough for the shared instances whose order differs).
nlohmann::ordered_json reorder(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema,
                               const nlohmann::ordered_json& root, int depth = 0) {
  if (depth > 32 || !schema.is_object()) return value;
  if (schema.contains("$ref") && schema["$ref"].is_string()) {
    const std::string ref = schema["$ref"];
    if (ref.rfind("#/", 0) == 0) {
      try {
        return reorder(value, root.at(nlohmann::ordered_json::json_pointer(ref.substr(1))), root, depth + 1);
      } catch (const std::exception&) {
        return value;
      }
    }
  }
  if (value.is_object() && schema.contains("properties") && schema["properties"].is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [key, sub] : schema["properties"].items())
      if (value.contains(key)) out[key] = reorder(value[key], sub, root, depth + 1);
    for (const auto& [key, v] : value.items())
      if (!out.contains(key)) out[key] = v;
    return out;
  }
  if (value.is_array() && schema.contains("items") && schema["items"].is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& v : value) out.push_back(reorder(v, schema["items"], root, depth + 1));
    return out;
  }
  return value;
}

TEST(StructuredSoundness, EveryValidInstancePassesTheMaskAtEveryToken) {
  NUCLEUS_REQUIRE_SHARED();
  auto tokenizer = Tokenizer::from_gguf(*GgufFile::open(test::shared_path("models/test/llama3-f16.gguf")));
  auto trie = std::make_shared<const VocabularyTrie>(*tokenizer);
  ConstraintCompiler compiler;
  size_t instances = 0, tokens = 0, reordered = 0, not_in_order = 0;
  const auto index = read_index();
  for (size_t i = 3; i < index.size(); i += static_cast<size_t>(sample_stride())) {  // other schemas than above
    const SchemaRow& row = index[i];
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::json_schema;
    spec.text = read_text(row.path());
    std::shared_ptr<const Grammar> grammar;
    try {
      grammar = compiler.compile(spec).grammar;
    } catch (const Error&) {
      continue;
    }
    auto tables = std::make_shared<ConstraintTables>(grammar, trie);
    std::ifstream in(row.instances("valid"));
    std::string line;
#ifdef NUCLEUS_SANITIZED
    int budget = 2;  // instances per schema
#else
    int budget = 1000;
#endif
    while (budget-- > 0 && std::getline(in, line)) {
      if (line.empty()) continue;
      std::string text = line;
      if (!grammar_matches(*grammar, text)) {
        const auto schema = nlohmann::ordered_json::parse(spec.text);
        text = reorder(nlohmann::ordered_json::parse(line), schema, schema).dump();
        ++reordered;
      }
      // The byte-level grammar's completeness is StructuredJsonSchemaCorpus's test; here the claim
      // is that the token masks agree with it: a text the grammar takes is never cut by a mask.
      if (!grammar_matches(*grammar, text)) {
        ++not_in_order;  // keys in an order our simple reorder() cannot restore (inside anyOf, ...)
        continue;
      }
      ++instances;
      TokenConstraint constraint(tables);
      bool ok = true;
      for (int32_t t : tokenizer->encode(text, false, false)) {
        ++tokens;
        if (!constraint.allowed_tokens().allows(t) || !constraint.accept_token(t)) {
          ok = false;
          break;
        }
      }
      EXPECT_TRUE(ok && constraint.complete() && constraint.allowed_tokens().allows(trie->end_of_generation_ids().front()))
          << row.category << "/" << row.id << ": " << text;
    }
  }
  std::printf("valid instances %zu (%zu reordered to schema order, %zu left out), tokens %zu\n", instances, reordered,
              not_in_order, tokens);
  EXPECT_LE(not_in_order * 20, instances);
#ifdef NUCLEUS_SANITIZED
  EXPECT_GE(instances, 2u);
#else
  EXPECT_GE(instances, 30u);
#endif
}

}  // namespace
}  // namespace nucleus
