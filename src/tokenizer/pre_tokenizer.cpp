#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "core/error.h"

namespace nucleus {

namespace {

// English contractions, case-insensitive the way the Llama 3 / Qwen2 tokenizer.json patterns write
// "(?i:'s|'t|...)": only the ASCII letters fold (PCRE2's caseless Unicode mode would also fold
// U+017F 'ſ' to 's' and U+212A KELVIN SIGN to 'k').
#define NUCLEUS_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"

// GPT-2 (OpenAI's encoder.py): contractions, letters, numbers, other symbols, each optionally after
// one space; whitespace before a non-space is left for the next word's leading space.
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3: a word may start with one non-letter (usually the space), digits go in groups of up to
// three, punctuation runs keep trailing newlines, newline runs keep leading whitespace.
constexpr const char* kLlama3 = NUCLEUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: Llama 3's pattern with single digits.
constexpr const char* kQwen2 = NUCLEUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen 3.5: Qwen2's pattern, with combining marks (\p{M}) kept inside words.
constexpr const char* kQwen35 = NUCLEUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-4o (o200k): words are an optional leading non-letter, upper-case letters then lower-case ones
// (or the reverse), with a contraction suffix; marks (\p{M}) stay with their letters.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" NUCLEUS_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" NUCLEUS_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Mistral "tekken": like GPT-4o without contractions, single digits.
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

#undef NUCLEUS_CONTRACTIONS

// CJK ideographs (U+4E00..U+9FA5), U+0800..U+4E00 and Hangul syllables, as DeepSeek writes them.
constexpr const char* kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

// DeepSeek LLM's cased-letter class (from its tokenizer.json), optionally after one whitespace.
constexpr const char* kDeepseekLetters =
    R"(\s?[\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD})"
    R"(\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15})"
    R"(\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
    R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB})"
    R"(\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D})"
    R"(\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E})"
    R"(\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06})"
    R"(\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB})"
    R"(\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

// ASCII and full-width punctuation, curly quotes, ideographic space and full stop.
constexpr const char* kDeepseekPunctuation =
    R"(\s?[\x{21}-\x{2F}\x{3A}-\x{7E}\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";

// BLOOM / Poro / GPT-3 Finnish: words end at whitespace and (Latin, CJK, Devanagari, Arabic) punctuation.
constexpr const char* kBloom = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";

struct Family {
  std::vector<const char*> names;     // tokenizer.ggml.pre values
  std::vector<const char*> patterns;  // applied in turn
  PreTokenizerTraits traits;
};

// The families of llama.cpp's vocabulary loader (llama-vocab.cpp), by tokenizer.ggml.pre name.
const Family kFamilies[] = {
    // Files converted before tokenizer.ggml.pre existed: llama.cpp's fallback patterns.
    {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, {}},
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "mpt", "olmo", "jais", "exaone4", "trillion"},
     {kGpt2},
     {}},
    {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
     {kLlama3},
     {.ignore_merges = true, .add_bos = true}},
    {{"dbrx", "smaug-bpe"}, {kLlama3}, {}},
    {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan"}, {kQwen2}, {}},
    {{"qwen35"}, {kQwen35}, {}},
    // Gemma 4 merges over the whole text: lines and runs of newlines only (merges never hold '\n').
    {{"gemma4"}, {R"([^\n]+|[\n]+)"}, {.add_bos = true, .sentencepiece_alphabet = true}},
    {{"deepseek-llm"}, {R"([\r\n])", kDeepseekLetters, kDeepseekPunctuation, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}, {}},
    {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}, {}},
    {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, {}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2}, {}},
    {{"gpt-4o", "llama4"}, {kGpt4o}, {}},
    {{"tekken"}, {kTekken}, {.ignore_merges = true, .add_bos = true}},
    {{"bloom", "poro-chat", "gpt3-finnish"}, {kBloom}, {}},
};

const Family* find_family(const std::string& name) {
  for (const Family& family : kFamilies) {
    for (const char* family_name : family.names) {
      if (name == family_name) return &family;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> PreTokenizer::known_names() {
  std::vector<std::string> names;
  for (const Family& family : kFamilies) names.insert(names.end(), family.names.begin(), family.names.end());
  std::sort(names.begin(), names.end());
  return names;
}

PreTokenizer::PreTokenizer(const std::string& name) : name_(name) {
  const Family* family = find_family(name);
  if (!family) {
    std::string known;
    for (const std::string& known_name : known_names()) known += (known.empty() ? "" : ", ") + known_name;
    throw Error("unknown pre-tokenizer '" + name + "' (tokenizer.ggml.pre); known: " + known +
                "; choose one with --tokenizer-pre NAME");
  }
  traits_ = family->traits;
  for (const char* pattern : family->patterns) patterns_.emplace_back(pattern);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  if (text.empty()) return;
  SplitPattern::Scratch scratch;
  std::vector<std::string_view> pieces = {text};
  std::vector<std::string_view> next;
  for (const SplitPattern& pattern : patterns_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) pattern.split(piece, scratch, next);
    pieces.swap(next);
  }
  words.insert(words.end(), pieces.begin(), pieces.end());
}

}  // namespace nucleus
