// llama.cpp's tokenizer test vectors (tests/*.inp and *.out): every case in the .inp file is followed
// by the line "__ggml_vocab_test__"; the .out file has one line per case, each id preceded by a space.
#include <string>

#include "tokenizer/tokenizer.h"

namespace nucleus {

namespace {
constexpr std::string_view kCaseTerminator = "\n__ggml_vocab_test__\n";
}

std::vector<std::string> split_token_cases(const std::string& inp_file_contents) {
  std::vector<std::string> cases;
  size_t begin = 0;
  while (begin < inp_file_contents.size()) {
    const size_t end = inp_file_contents.find(kCaseTerminator, begin);
    if (end == std::string::npos) {
      cases.push_back(inp_file_contents.substr(begin));  // a last case without its terminator line
      break;
    }
    cases.push_back(inp_file_contents.substr(begin, end - begin));
    begin = end + kCaseTerminator.size();
  }
  return cases;
}

std::string format_token_cases(const Tokenizer& tokenizer, const std::string& inp_file_contents) {
  std::string out;
  for (const std::string& text : split_token_cases(inp_file_contents)) {
    for (int32_t id : tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/false)) {
      out += ' ';
      out += std::to_string(id);
    }
    out += '\n';
  }
  return out;
}

}  // namespace nucleus
