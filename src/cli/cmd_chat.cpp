// nucleus chat: a multi-turn conversation in the terminal, one user message per input line.
//
// Each turn renders the whole conversation with the model's chat template. The KV cache keeps every
// token fed so far, so a turn prefills only what is new (ConversationCache below says when the cache
// can be kept and what is fed).
//
// Output: the answer streams to stdout, then a line break; after each answer one line on stderr:
//   prefill: N of M tokens (C cached), X tok/s | decode: K tokens, Y tok/s
// where M is the whole conversation, C the tokens reused from the cache and N = M - C.
//
// Ctrl-C (SIGINT) stops the current answer; at the prompt it ends the chat, as EOF does. SIGINT is
// blocked before any thread starts and read from a signalfd: no handler, no global flag, and the model
// is never interrupted inside a step (a Ctrl-C during a long prefill is seen when that step ends).
#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "model/sequence_runner.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "server/openai_protocol.h"
#include "tokenizer/chat_template.h"

namespace nucleus::cli {

namespace {

constexpr int64_t kDefaultContext = 4096;  // the model's training context when that is smaller

struct ChatOptions {
  ModelSource source;
  std::string system;
  std::string chat_template;  // empty: the model's own
  std::string chat_template_kwargs;  // JSON object, as in requests: {"enable_thinking": false}
  int n_predict = 512;        // tokens per answer at most
  int n_threads = 0;
  int64_t n_ctx = 0;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  uint64_t seed = 0;
  bool seed_given = false;
};

// SIGINT, taken synchronously. Constructed before any other thread exists so every thread inherits
// the blocked mask (otherwise the kernel could deliver the signal to an OpenMP worker and end the
// process); the destructor restores the caller's mask.
class InterruptSignal {
 public:
  InterruptSignal() {
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    pthread_sigmask(SIG_BLOCK, &interrupt, &previous_mask_);
    fd_ = signalfd(-1, &interrupt, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ < 0) {
      pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
      throw Error(std::string("cannot watch Ctrl-C: signalfd: ") + std::strerror(errno));
    }
  }
  ~InterruptSignal() {
    take();  // a Ctrl-C pressed while the chat ends must not turn into a kill once unblocked
    ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  }
  InterruptSignal(const InterruptSignal&) = delete;
  InterruptSignal& operator=(const InterruptSignal&) = delete;

  int fd() const { return fd_; }
  // True when a SIGINT arrived since the last call (several count as one).
  bool take() {
    bool taken = false;
    signalfd_siginfo info;
    while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) taken = true;
    return taken;
  }

 private:
  int fd_ = -1;
  sigset_t previous_mask_;
};

// Lines from stdin, read with poll() so that a Ctrl-C at the prompt is seen while waiting for input.
// Works the same on a terminal and on a pipe.
class LineReader {
 public:
  enum class Result { line, end_of_input, interrupted };

  Result next(std::string& line, InterruptSignal& interrupt) {
    for (;;) {
      if (interrupt.take()) return Result::interrupted;
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Result::line;
      }
      if (end_of_input_) {
        if (buffer_.empty()) return Result::end_of_input;
        line.swap(buffer_);  // a last line without a line break
        buffer_.clear();
        return Result::line;
      }
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {interrupt.fd(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        throw Error(std::string("reading the input: poll: ") + std::strerror(errno));
      }
      if (fds[0].revents == 0) continue;  // only the signal: taken at the top of the loop
      char chunk[4096];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n > 0) {
        buffer_.append(chunk, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        end_of_input_ = true;
      }
    }
  }

 private:
  std::string buffer_;
  bool end_of_input_ = false;
};

// The KV cache of a conversation: the tokens it holds and the text they stand for. A new turn keeps it
// when
//   1. the encoding of the whole rendered conversation starts with the cached tokens (exact reuse), or
//   2. the rendering starts with the cached text: the history is unchanged and only the model's sampled
//      answer tokens are not the canonical encoding of their text. The model keeps its own tokens and
//      the text the template added since is encoded on its own (as llama.cpp's chat does);
// otherwise — the template rewrote earlier text (Mistral v3 moves the system message to the last user
// turn; Llama 3 and Gemma trim answers) — the cache is dropped and the conversation prefilled anew.
class ConversationCache {
 public:
  ConversationCache(Model& model, const Tokenizer& tokenizer, int64_t n_ctx, int n_threads)
      : tokenizer_(tokenizer), runner_(model, n_ctx, n_threads) {}

  struct Prefill {
    size_t n_cached = 0;  // tokens reused
    size_t n_new = 0;     // tokens fed now
    bool reset = false;   // an earlier cache was dropped
  };

  // Feeds what the rendered conversation `rendered` adds to the cache; returns the logits of its last
  // token. Throws Error when the conversation no longer fits the context.
  const std::vector<float>& prefill(const std::string& rendered, Prefill& info) {
    const std::vector<int32_t> encoded = encode_chat_prompt(tokenizer_, rendered);
    std::vector<int32_t> new_tokens;
    const bool tokens_hold = !tokens_.empty() && tokens_.size() < encoded.size() &&
                             std::equal(tokens_.begin(), tokens_.end(), encoded.begin());
    const std::string kept_text = text_ + unfed_text_;
    const bool text_holds = !tokens_.empty() && rendered.size() > kept_text.size() &&
                            rendered.compare(0, kept_text.size(), kept_text) == 0;
    if (tokens_hold) {
      new_tokens.assign(encoded.begin() + static_cast<std::ptrdiff_t>(tokens_.size()), encoded.end());
    } else if (text_holds) {
      new_tokens = unfed_;
      const std::vector<int32_t> added = tokenizer_.encode(std::string_view(rendered).substr(kept_text.size()),
                                                           /*add_special=*/false, /*parse_special=*/true);
      new_tokens.insert(new_tokens.end(), added.begin(), added.end());
    } else {
      info.reset = !tokens_.empty();
      runner_.reset();
      tokens_.clear();
      new_tokens = encoded;
    }
    const size_t total = tokens_.size() + new_tokens.size();
    if (static_cast<int64_t>(total) >= runner_.n_ctx())
      throw Error("the conversation has " + std::to_string(total) + " tokens and no longer fits the context of " +
                  std::to_string(runner_.n_ctx()) + " (raise it with -c)");
    info.n_cached = tokens_.size();
    info.n_new = new_tokens.size();
    const std::vector<float>& logits = runner_.feed(new_tokens);
    tokens_.insert(tokens_.end(), new_tokens.begin(), new_tokens.end());
    text_ = rendered;
    unfed_.clear();
    unfed_text_.clear();
    return logits;
  }

  // Appends a sampled answer token. When its logits are needed (`feed`) it is fed now and they are
  // returned; else it waits for the next prefill (the last token of an answer cut short by -n).
  const std::vector<float>* append(int32_t token, bool feed) {
    const std::string piece = tokenizer_.token_to_piece(token);
    if (!feed) {
      unfed_.push_back(token);
      unfed_text_ += piece;
      return nullptr;
    }
    const std::vector<float>& logits = runner_.feed({token});
    tokens_.push_back(token);
    text_ += piece;
    return &logits;
  }

  int64_t n_ctx() const { return runner_.n_ctx(); }
  const std::vector<int32_t>& tokens() const { return tokens_; }  // the runner's n_past() of them
  // The conversation text the model has seen: the last rendering and the answer tokens after it.
  std::string seen_text() const { return text_ + unfed_text_; }
  size_t n_tokens() const { return tokens_.size(); }

 private:
  const Tokenizer& tokenizer_;
  SequenceRunner runner_;
  std::vector<int32_t> tokens_;   // the KV cache's tokens, in order
  std::string text_;              // their pieces: a prefix of the rendered conversation
  std::vector<int32_t> unfed_;    // sampled answer tokens not fed yet
  std::string unfed_text_;
};

// The answer as the conversation stores it: its text as generated, unless that starts with a space the
// template writes itself. Llama 2 and Mistral v1 render an answer as ' ' + content after a prompt that
// ends in "[/INST]", DeepSeek 2 as 'Assistant: ' + content after "Assistant:", so the model's first
// token carries the space ("▁Hi", "ĠHi"); storing it too would double it in the history and the next
// turn would not see the text the model saw. (SentencePiece decoding drops that space the same way.)
std::string stored_answer(const ChatTemplate& chat_template, std::vector<ChatMessage> messages, const std::string& answer,
                          const std::string& seen_text, const nlohmann::ordered_json& kwargs) {
  auto reproduces_seen_text = [&](const std::string& content) {
    messages.push_back({"assistant", content});
    const std::string rendered =
        render_chat_json(chat_template, chat_messages_to_json(messages), /*add_generation_prompt=*/false, kwargs);
    messages.pop_back();
    return rendered.compare(0, seen_text.size(), seen_text) == 0;
  };
  if (answer.empty() || answer[0] != ' ' || reproduces_seen_text(answer)) return answer;
  const std::string without_space = answer.substr(1);
  return reproduces_seen_text(without_space) ? without_space : answer;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

bool is_blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

struct TurnStats {
  size_t n_conversation = 0;  // tokens of the rendered conversation
  size_t n_cached = 0;        // of those, reused from the KV cache
  double prefill_seconds = 0.0;
  int64_t n_generated = 0;
  double decode_seconds = 0.0;
  bool cache_reset = false;  // the template rewrote earlier text: the cache was dropped
  bool interrupted = false;
};

void print_stats(const TurnStats& s) {
  const size_t n_prefilled = s.n_conversation - s.n_cached;
  std::fprintf(stderr, "prefill: %zu of %zu tokens (%zu cached%s), %.1f tok/s | decode: %lld tokens, %.1f tok/s%s\n",
               n_prefilled, s.n_conversation, s.n_cached, s.cache_reset ? ", cache reset" : "",
               static_cast<double>(n_prefilled) / std::max(s.prefill_seconds, 1e-9),
               static_cast<long long>(s.n_generated),
               static_cast<double>(s.n_generated) / std::max(s.decode_seconds, 1e-9),
               s.interrupted ? " (interrupted)" : "");
}

int run_chat(const ChatOptions& options) {
  InterruptSignal interrupt;  // first: before model loading can start threads
  ModelSource source = options.source;
  source.n_ctx = options.n_ctx;  // the context the model is loaded for (Phi-3 picks its rope factors by it)
  LoadedModel loaded = load_model(source);
  Model& model = *loaded.model;
  const Tokenizer& tokenizer = *loaded.tokenizer;
  const ChatTemplate chat_template = chat_template_for_model(model.file(), tokenizer, options.chat_template);
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (!options.chat_template_kwargs.empty()) {
    const nlohmann::json given = nlohmann::json::parse(options.chat_template_kwargs, nullptr, false);
    if (given.is_discarded()) throw Error("--chat-template-kwargs: not valid JSON: " + options.chat_template_kwargs);
    try {
      kwargs = server::parse_chat_template_kwargs(nlohmann::json{{"chat_template_kwargs", given}});
    } catch (const server::ApiError& e) {
      throw Error(std::string("--chat-template-kwargs: ") + e.what());
    }
  }

  const int64_t n_ctx_train = model.hparams().n_ctx_train;
  if (options.n_ctx > n_ctx_train)
    throw Error("-c " + std::to_string(options.n_ctx) + " exceeds the model's context length " + std::to_string(n_ctx_train));
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : std::min(n_ctx_train, kDefaultContext);
  const int n_threads = options.n_threads > 0 ? options.n_threads : default_threads();
  const int64_t n_vocab = model.hparams().n_vocab;

  SamplingParams params;
  params.temperature = options.temperature;
  params.top_k = options.top_k;
  params.top_p = options.top_p;
  params.seed = options.seed_given ? options.seed : random_seed();
  SamplerChain chain(params);

  const bool interactive = ::isatty(STDIN_FILENO);
  std::fprintf(stderr, "chat template: %s (%s), context: %lld tokens, seed: %llu. Ctrl-C stops an answer; Ctrl-D ends.\n",
               chat_template_label(chat_template).c_str(), options.chat_template.empty() ? "the model's" : "--chat-template",
               static_cast<long long>(n_ctx), static_cast<unsigned long long>(*params.seed));

  std::vector<ChatMessage> messages;
  if (!options.system.empty()) messages.push_back({"system", options.system});
  ConversationCache cache(model, tokenizer, n_ctx, n_threads);
  uint64_t draw_position = 0;  // counts every draw of the session, so no two draws share a random number
  LineReader reader;

  for (;;) {
    if (interactive) write_out("> ");
    std::string line;
    if (reader.next(line, interrupt) != LineReader::Result::line) {
      if (interactive) write_out("\n");
      break;
    }
    if (is_blank(line)) continue;
    messages.push_back({"user", line});
    const std::string rendered =
        render_chat_json(chat_template, chat_messages_to_json(messages), /*add_generation_prompt=*/true, kwargs);

    TurnStats stats;
    ConversationCache::Prefill prefill;
    const auto prefill_start = std::chrono::steady_clock::now();
    const std::vector<float>* logits = &cache.prefill(rendered, prefill);
    stats.prefill_seconds = seconds_since(prefill_start);
    stats.n_cached = prefill.n_cached;
    stats.n_conversation = prefill.n_cached + prefill.n_new;
    stats.cache_reset = prefill.reset;

    // The answer: sampled until an end-of-generation token, the budget, or Ctrl-C.
    const int64_t budget = std::min<int64_t>(options.n_predict, n_ctx - static_cast<int64_t>(cache.n_tokens()));
    std::vector<int32_t> sequence = cache.tokens();  // conversation + answer so far, for the sampler's penalties
    IncrementalDetokenizer detokenizer(tokenizer);
    std::string answer;
    const auto decode_start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < budget; ++i) {
      if (interrupt.take()) {
        stats.interrupted = true;
        break;
      }
      const int32_t token = chain.sample(logits->data(), n_vocab, SamplingContext{sequence, draw_position++});
      if (tokenizer.is_end_of_generation(token)) break;
      const std::string piece = detokenizer.push(token);
      write_out(piece);
      answer += piece;
      sequence.push_back(token);
      ++stats.n_generated;
      logits = cache.append(token, /*feed=*/i + 1 < budget);
    }
    const std::string tail = detokenizer.flush();
    answer += tail;
    write_out(tail + "\n");
    stats.decode_seconds = seconds_since(decode_start);
    print_stats(stats);
    messages.push_back({"assistant", stored_answer(chat_template, messages, answer, cache.seen_text(), kwargs)});
  }
  return 0;
}

}  // namespace

Runner add_chat_command(CLI::App& app) {
  auto options = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand("chat", "chat with a model in the terminal, one message per line");
  add_model_flags(*cmd, options->source);
  cmd->add_option("--system", options->system, "system message that opens the conversation");
  cmd->add_option("--chat-template", options->chat_template,
                  "template family instead of the model's (" + chat_template_names() + ")");
  cmd->add_option("--chat-template-kwargs", options->chat_template_kwargs,
                  "the template's variables as JSON, e.g. '{\"enable_thinking\": false}' (Qwen3, Gemma 4)");
  cmd->add_option("-n,--n-predict", options->n_predict, "maximum tokens per answer (default 512)")->check(CLI::PositiveNumber);
  cmd->add_option("-c,--ctx-size", options->n_ctx, "context length (default: the model's, at most 4096)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--threads", options->n_threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--temp", options->temperature, "temperature; 0 = greedy (default 0.8)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", options->top_k, "keep the k most likely tokens; <= 0 = off (default 40)");
  cmd->add_option("--top-p", options->top_p, "nucleus sampling mass; 1 = off (default 0.95)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("-s,--seed", options->seed, "random seed (default: random, printed at the start)")
      ->each([options](const std::string&) { options->seed_given = true; });
  return [options] { return run_chat(*options); };
}

}  // namespace nucleus::cli
