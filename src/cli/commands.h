// The CLI's subcommands. Each registers its flags on the parent app and returns the
// function that runs it; errors are thrown as nucleus::Error and printed by main().
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "engine/model_source.h"

namespace nucleus::cli {

using Runner = std::function<int()>;

constexpr const char* kDefaultModel = "models/stories260K.gguf";

// Adds -m/--model, --tokenizer and --tokenizer-pre to a subcommand.
void add_model_flags(CLI::App& command, ModelSource& source);
int default_threads();

Runner add_generate_command(CLI::App& app);
Runner add_logits_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_inspect_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);
Runner add_quantize_command(CLI::App& app);
Runner add_synth_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_chat_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);

}  // namespace nucleus::cli
