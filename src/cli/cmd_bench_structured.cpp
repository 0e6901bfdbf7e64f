// nucleus bench structured: compile and mask times of structured output over a directory of JSON
// Schemas (JSONSchemaBench's MaskBench measurement, one thread): each schema is compiled from
// scratch (no cache); then, for up to --instances-per-schema of its valid instances, the instance
// is tokenized with the model's vocabulary and fed token by token, timing the allowed-token mask
// at every step (each schema starts with cold tables, as a new schema does in the server). Also
// counts the share of schemas handled and any instance token a mask refused (a completeness bug).
//   nucleus bench structured -m MODEL --schemas DIR [--instances DIR] [--slowest N] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/latency_summary.h"
#include "engine/model_source.h"
#include "io/gguf.h"
#include "structured/constraint.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::cli {
namespace {

namespace fs = std::filesystem;

struct StructuredBenchOptions {
  ModelSource source;
  std::string schemas;
  std::string instances;  // default: <schemas>/../instances
  int instances_per_schema = 2;
  int slowest = 0;  // list this many schemas with the largest total mask time
  bool json = false;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(const StructuredBenchOptions& options) {
  const std::unique_ptr<GgufFile> file = open_model_file(options.source);
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(*file, options.source.tokenizer_options);
  const auto trie_start = std::chrono::steady_clock::now();
  auto trie = std::make_shared<const VocabularyTrie>(*tokenizer);
  const double trie_seconds = seconds_since(trie_start);
  const fs::path schema_dir(options.schemas);
  if (!fs::is_directory(schema_dir)) throw Error("--schemas: '" + options.schemas + "' is not a directory");
  const fs::path instance_dir = options.instances.empty() ? schema_dir.parent_path() / "instances" : fs::path(options.instances);

  std::vector<fs::path> schemas;
  for (const auto& entry : fs::recursive_directory_iterator(schema_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".json") schemas.push_back(entry.path());
  std::sort(schemas.begin(), schemas.end());
  if (schemas.empty()) throw Error("--schemas: no .json files under '" + options.schemas + "'");

  std::vector<double> compile_seconds, mask_seconds;
  std::map<std::string, int> refusals;  // first words of each compile error
  std::vector<std::pair<double, std::string>> per_schema;  // total mask seconds, schema path
  int64_t compiled = 0, instance_tokens = 0, refused_tokens = 0, instances_run = 0;
  for (const fs::path& path : schemas) {
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::json_schema;
    spec.text = read_text(path);
    ConstraintCompiler compiler;  // fresh: no cache
    std::shared_ptr<const Grammar> grammar;
    try {
      const auto start = std::chrono::steady_clock::now();
      grammar = compiler.compile(spec).grammar;
      compile_seconds.push_back(seconds_since(start));
    } catch (const Error& e) {
      std::string reason = e.what();
      reason = reason.substr(0, std::min<size_t>(reason.size(), 60));
      ++refusals[reason];
      continue;
    }
    ++compiled;
    const fs::path valid = instance_dir / fs::relative(path.parent_path(), schema_dir) / (path.stem().string() + ".valid.jsonl");
    std::ifstream in(valid);
    std::string line;
    auto tables = std::make_shared<ConstraintTables>(grammar, trie);
    const size_t first_mask = mask_seconds.size();
    for (int k = 0; k < options.instances_per_schema && std::getline(in, line); ++k) {
      if (line.empty()) continue;
      ++instances_run;
      TokenConstraint constraint(tables);
      for (int32_t token : tokenizer->encode(line, false, false)) {
        const auto start = std::chrono::steady_clock::now();
        const bool allowed = constraint.allowed_tokens().allows(token);
        mask_seconds.push_back(seconds_since(start));

        ++instance_tokens;
        if (!allowed || !constraint.accept_token(token)) {
          ++refused_tokens;  // key order or a construct the grammar writes differently: stop here
          break;
        }
      }
    }
    double total = 0;
    for (size_t i = first_mask; i < mask_seconds.size(); ++i) total += mask_seconds[i];
    per_schema.emplace_back(total, fs::relative(path, schema_dir).string() + " (" +
                                       std::to_string(mask_seconds.size() - first_mask) + " masks)");
  }
  const LatencySummary compile = summarize(compile_seconds);
  const LatencySummary mask = summarize(mask_seconds);
  const auto n = static_cast<int64_t>(schemas.size());
  if (options.json) {
    nlohmann::json out = {{"schemas", n},
                          {"compiled", compiled},
                          {"vocabulary", trie->n_vocab()},
                          {"vocabulary_trie_seconds", trie_seconds},
                          {"compile_seconds", {{"mean", compile.mean}, {"p50", compile.p50}, {"p99", compile.p99}}},
                          {"mask_seconds", {{"mean", mask.mean}, {"p50", mask.p50}, {"p99", mask.p99}}},
                          {"masks", mask_seconds.size()},
                          {"instances", instances_run},
                          {"refused_instance_tokens", refused_tokens}};
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [reason, count] : refusals) reasons[reason] = count;
    out["refusals"] = reasons;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("vocabulary: %d tokens (trie built in %.1f ms), one thread\n", trie->n_vocab(), trie_seconds * 1e3);
  std::printf("schemas handled: %lld of %lld (%.1f%%)\n", static_cast<long long>(compiled), static_cast<long long>(n),
              100.0 * static_cast<double>(compiled) / static_cast<double>(n));
  std::printf("compile: mean %.2f ms, p50 %.2f ms, p99 %.2f ms\n", compile.mean * 1e3, compile.p50 * 1e3, compile.p99 * 1e3);
  std::printf("mask:    mean %.1f us, p50 %.1f us, p99 %.1f us over %zu masks (%lld instances, cold tables per schema)\n",
              mask.mean * 1e6, mask.p50 * 1e6, mask.p99 * 1e6, mask_seconds.size(), static_cast<long long>(instances_run));
  std::printf("instance tokens refused by a mask: %lld of %lld\n", static_cast<long long>(refused_tokens),
              static_cast<long long>(instance_tokens));
  std::sort(per_schema.rbegin(), per_schema.rend());
  if (options.slowest > 0) std::printf("slowest schemas by total mask time:\n");
  for (size_t i = 0; i < per_schema.size() && i < static_cast<size_t>(options.slowest); ++i)
    std::printf("  %9.1f ms  %s\n", per_schema[i].first * 1e3, per_schema[i].second.c_str());
  if (!refusals.empty()) {
    std::printf("refused schemas by reason:\n");
    for (const auto& [reason, count] : refusals) std::printf("  %3d  %s\n", count, reason.c_str());
  }
  return 0;
}

}  // namespace

void add_bench_structured_command(CLI::App& bench, std::function<void(Runner)> set_runner) {
  auto options = std::make_shared<StructuredBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("structured", "structured output: compile and per-token mask times over a directory of JSON Schemas");
  add_model_flags(*cmd, options->source);
  cmd->add_option("--schemas", options->schemas, "directory of .json schemas (searched recursively)")->required();
  cmd->add_option("--instances", options->instances, "directory of <schema>.valid.jsonl instances (default: ../instances)");
  cmd->add_option("--instances-per-schema", options->instances_per_schema, "valid instances fed per schema")->check(CLI::NonNegativeNumber);
  cmd->add_option("--slowest", options->slowest, "list the N schemas with the largest total mask time")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", options->json, "one JSON object instead of the table");
  cmd->callback([options, set_runner] { set_runner([options] { return run(*options); }); });
}

}  // namespace nucleus::cli
