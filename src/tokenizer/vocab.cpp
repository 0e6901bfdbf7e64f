#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/unicode.h"

namespace nucleus {

bool is_output_marker_text(std::string_view text) {
  for (std::string_view marker : {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_tag|>", "<tool_call>", "</tool_call>",
                                  "<think>", "</think>"})
    if (text == marker) return true;
  return false;
}


namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTokenTypesKey = "tokenizer.ggml.token_type";

// Texts of tokens that end a turn or a document in some model family. Files rarely list them in
// metadata, so (like llama.cpp) they are recognized by text and added to the end-of-generation set.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
};
// Fill-in-the-middle padding/repository/file-separator tokens: a code model emitting one has left
// the completion, so they end generation too.
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSeparatorTexts[] = {"<|file_sep|>"};
// gpt-oss (harmony format) structure tokens: always rendered, so the channel markup stays visible.
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

uint32_t attribute_for_type(int64_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::UNDEFINED: return kAttrUndefined;
    case TokenType::NORMAL: return kAttrNormal;
    case TokenType::UNKNOWN: return kAttrUnknown;
    case TokenType::CONTROL: return kAttrControl;
    case TokenType::USER_DEFINED: return kAttrUserDefined;
    case TokenType::UNUSED: return kAttrUnused;
    case TokenType::BYTE: return kAttrByte;
  }
  return std::numeric_limits<uint32_t>::max();
}

bool is_byte_token_text(const std::string& text) {
  return text.size() == 6 && text.compare(0, 3, "<0x") == 0 && std::isxdigit(static_cast<unsigned char>(text[3])) &&
         std::isxdigit(static_cast<unsigned char>(text[4])) && text[5] == '>';
}

// The lowest id whose text is in `list`, or -1.
template <size_t N>
int32_t first_token_with_text(const Vocab& vocab, const std::string_view (&list)[N]) {
  int32_t best = -1;
  for (std::string_view text : list) {
    const int32_t id = vocab.find(text);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

class VocabLoader {
 public:
  VocabLoader(const GgufFile& file, const VocabDefaults& defaults) : file_(file), defaults_(defaults) {}

  Vocab load() {
    vocab_.source = file_.path();
    vocab_.type = defaults_.type;
    read_tokens();
    read_special_ids();
    find_end_of_generation_tokens();
    collect_special_tokens();
    apply_model_specific_attributes();
    return std::move(vocab_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { throw Error(file_.path() + ": " + problem); }

  // An array-valued key; nullptr when absent. Checks the element kind and that there is an entry per token.
  enum class Elements { INTEGERS, NUMBERS };
  const MetaValue* optional_per_token_array(const char* key, Elements elements, size_t n_tokens) const {
    const MetaValue* value = file_.find(key);
    if (!value) return nullptr;
    if (value->type != MetaType::ARRAY) fail(std::string(key) + " is " + meta_type_name(value->type) + ", expected an array");
    const MetaType elem = value->elem_type;
    const bool is_float = elem == MetaType::FLOAT32 || elem == MetaType::FLOAT64;
    const bool is_integer = !is_float && elem != MetaType::STRING && elem != MetaType::ARRAY;
    if (!(is_integer || (is_float && elements == Elements::NUMBERS))) {
      fail(std::string(key) + " is an array of " + meta_type_name(elem) + ", expected " +
           (elements == Elements::INTEGERS ? "integers" : "numbers"));
    }
    if (value->array_size() < n_tokens) {
      fail(std::string(key) + " has " + std::to_string(value->array_size()) + " entries but the vocabulary has " +
           std::to_string(n_tokens) + " tokens");
    }
    return value;
  }

  void read_tokens() {
    const MetaValue* tokens = file_.find(kTokensKey);
    if (!tokens) fail(std::string("missing ") + kTokensKey + " (the vocabulary)");
    if (tokens->type != MetaType::ARRAY || tokens->elem_type != MetaType::STRING) {
      fail(std::string(kTokensKey) + " is not an array of strings");
    }
    const size_t n_tokens = tokens->strings.size();
    if (n_tokens == 0) fail(std::string(kTokensKey) + " is empty");
    if (n_tokens > static_cast<size_t>(std::numeric_limits<int32_t>::max())) fail(std::string(kTokensKey) + " has too many tokens");

    const MetaValue* scores = optional_per_token_array(kScoresKey, Elements::NUMBERS, n_tokens);
    const MetaValue* types = optional_per_token_array(kTokenTypesKey, Elements::INTEGERS, n_tokens);
    if (!types && defaults_.requires_token_types) {
      fail(std::string("missing ") + kTokenTypesKey + " (needed to find byte and control tokens)");
    }

    vocab_.texts.resize(n_tokens);
    vocab_.scores.assign(n_tokens, 0.0f);
    vocab_.attributes.assign(n_tokens, kAttrNormal);
    vocab_.ids.reserve(n_tokens);
    for (size_t i = 0; i < n_tokens; ++i) {
      std::string text = tokens->strings[i];
      // llama.cpp's convention: an empty token gets a unique placeholder text (it can never match input).
      if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
      if (!unicode::is_valid_utf8(text)) fail("token " + std::to_string(i) + " of " + kTokensKey + " is not valid UTF-8");
      const auto [it, inserted] = vocab_.ids.emplace(text, static_cast<int32_t>(i));
      if (!inserted) {
        fail("token '" + text + "' appears twice in " + kTokensKey + " (ids " + std::to_string(it->second) + " and " +
             std::to_string(i) + ")");
      }
      if (scores) {
        const double score = scores->reals.empty() ? static_cast<double>(scores->ints[i]) : scores->reals[i];
        // Merge order compares scores; NaN would make that order meaningless.
        if (std::isnan(score)) fail("token " + std::to_string(i) + " has score NaN in " + kScoresKey);
        vocab_.scores[i] = static_cast<float>(score);
      }
      if (types) {
        const uint32_t attribute = attribute_for_type(types->ints[i]);
        if (attribute == std::numeric_limits<uint32_t>::max()) {
          fail("token " + std::to_string(i) + " has unknown type " + std::to_string(types->ints[i]) + " in " + kTokenTypesKey);
        }
        if (attribute == kAttrByte && vocab_.type != VocabType::BYTE_LEVEL_BPE && !is_byte_token_text(text)) {
          fail("token " + std::to_string(i) + " has type BYTE but its text '" + text + "' is not of the form <0xXX>");
        }
        vocab_.attributes[i] = attribute;
      }
      vocab_.texts[i] = std::move(text);
    }
  }

  // A special id from metadata when it names a token, else the model's default (llama.cpp ignores
  // out-of-range ids too; some files store -1 as 0xFFFFFFFF for "none").
  int32_t special_id(const char* key, int32_t fallback) const {
    if (!vocab_.contains(fallback)) fallback = -1;
    const MetaValue* value = file_.find(key);
    if (!value) return fallback;
    const int64_t id = file_.get_int(key);  // throws for a non-integer value
    return (id >= 0 && id < vocab_.n_vocab()) ? static_cast<int32_t>(id) : fallback;
  }

  void read_special_ids() {
    vocab_.bos_id = special_id("tokenizer.ggml.bos_token_id", defaults_.bos_id);
    vocab_.eos_id = special_id("tokenizer.ggml.eos_token_id", defaults_.eos_id);
    vocab_.unknown_id = special_id("tokenizer.ggml.unknown_token_id", defaults_.unknown_id);
    vocab_.add_bos = file_.get_bool("tokenizer.ggml.add_bos_token", defaults_.add_bos);
    vocab_.add_eos = file_.get_bool("tokenizer.ggml.add_eos_token", defaults_.add_eos);
    vocab_.add_space_prefix = file_.get_bool("tokenizer.ggml.add_space_prefix", defaults_.add_space_prefix);
    if (vocab_.add_bos && vocab_.bos_id < 0) fail("tokenizer.ggml.add_bos_token is true but there is no valid tokenizer.ggml.bos_token_id");
    if (vocab_.add_eos && vocab_.eos_id < 0) fail("tokenizer.ggml.add_eos_token is true but there is no valid tokenizer.ggml.eos_token_id");
  }

  void mark_control(int32_t id) { vocab_.attributes[id] |= kAttrControl; }

  void find_end_of_generation_tokens() {
    std::vector<int32_t> end_ids;
    auto add = [&](int32_t id) {
      if (id >= 0) end_ids.push_back(id);
    };

    struct FimKey {
      const char* key;
      int32_t by_text;
    };
    const FimKey fim_keys[] = {
        {"tokenizer.ggml.fim_pad_token_id", first_token_with_text(vocab_, kFimPadTexts)},
        {"tokenizer.ggml.fim_rep_token_id", first_token_with_text(vocab_, kFimRepoTexts)},
        {"tokenizer.ggml.fim_sep_token_id", first_token_with_text(vocab_, kFimSeparatorTexts)},
    };
    for (const FimKey& fim : fim_keys) {
      int32_t id = special_id(fim.key, -1);
      if (id < 0 && fim.by_text >= 0) {
        id = fim.by_text;
        mark_control(id);
      }
      add(id);
    }

    for (std::string_view text : kEndOfGenerationTexts) {
      const int32_t id = vocab_.find(text);
      if (id < 0) continue;
      mark_control(id);
      add(id);
    }
    for (std::string_view text : kAlwaysRenderedTexts) {
      if (const int32_t id = vocab_.find(text); id >= 0) vocab_.attributes[id] = kAttrUserDefined;
    }
    // Explicit end-of-turn / end-of-message ids; the usual texts of both are in the list above already.
    add(vocab_.eos_id);
    add(special_id("tokenizer.ggml.eot_token_id", -1));
    add(special_id("tokenizer.ggml.eom_token_id", -1));

    // Harmony-format vocabularies (gpt-oss) and solar-open: "<|end|>" closes a message inside a turn,
    // "<|return|>"/"<|call|>" (or "<|calls|>"/"<|flush|>") end the turn.
    auto has_text = [&](std::string_view text) {
      const int32_t id = vocab_.find(text);
      return id >= 0 && std::find(end_ids.begin(), end_ids.end(), id) != end_ids.end();
    };
    const bool has_end = has_text("<|end|>");
    if (has_end && ((has_text("<|return|>") && has_text("<|call|>")) || (has_text("<|calls|>") && has_text("<|flush|>")))) {
      const int32_t end_id = vocab_.find("<|end|>");
      end_ids.erase(std::remove(end_ids.begin(), end_ids.end(), end_id), end_ids.end());
      vocab_.attributes[end_id] = kAttrUserDefined;
    }

    // Gemma 4 (and PaddleOCR): "</s>" is ordinary text beside "<|tool_response>", not an end.
    if (has_text("<|tool_response>") && has_text("</s>")) {
      const int32_t s_id = vocab_.find("</s>");
      end_ids.erase(std::remove(end_ids.begin(), end_ids.end(), s_id), end_ids.end());
      vocab_.attributes[s_id] = kAttrNormal;
    }

    std::sort(end_ids.begin(), end_ids.end());
    end_ids.erase(std::unique(end_ids.begin(), end_ids.end()), end_ids.end());
    vocab_.end_of_generation_ids = std::move(end_ids);
  }

  void collect_special_tokens() {
    for (int32_t id = 0; id < vocab_.n_vocab(); ++id) {
      if (vocab_.has_attribute(id, kAttrControl | kAttrUserDefined | kAttrUnknown)) vocab_.special_token_ids.push_back(id);
    }
    std::stable_sort(vocab_.special_token_ids.begin(), vocab_.special_token_ids.end(), [&](int32_t a, int32_t b) {
      return vocab_.texts[a].size() > vocab_.texts[b].size();
    });
  }

  // Phi-3's tokenizer strips whitespace after its special tokens (the chat template writes
  // "<|user|>\n"); the file does not record this, so it is keyed on the model name as in llama.cpp.
  void apply_model_specific_attributes() {
    const MetaValue* name_value = file_.find("general.name");
    if (!name_value || name_value->type != MetaType::STRING) return;
    std::string name = name_value->str;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
    for (int32_t id : vocab_.special_token_ids) vocab_.attributes[id] |= kAttrRstrip;
    if (const int32_t id = vocab_.find("</s>"); id >= 0) vocab_.attributes[id] |= kAttrRstrip;
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (const int32_t id = vocab_.find(text); id >= 0) vocab_.attributes[id] &= ~kAttrRstrip;
    }
  }

  const GgufFile& file_;
  const VocabDefaults& defaults_;
  Vocab vocab_;
};

}  // namespace

Vocab load_vocab(const GgufFile& file, const VocabDefaults& defaults) { return VocabLoader(file, defaults).load(); }

}  // namespace nucleus
