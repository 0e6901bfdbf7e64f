// `nucleus chat` end to end on the test models (random weights, so answers are gibberish: the tests
// check structure): piped turns, KV-cache reuse between turns, Ctrl-C stopping an answer but not the
// program, and clear errors for models without a usable template.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <regex>
#include <string>
#include <vector>

#include "test_helpers.h"

namespace nucleus {
namespace {

using test::CommandResult;
using test::run_shell;
using test::shared_path;

std::string quote(const std::string& s) { return "'" + s + "'"; }

// A scratch directory for one test's files, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = testing::TempDir() + "/nucleus-chat-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() { std::system(("rm -rf " + quote(path_)).c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct TurnStats {
  int prefilled = 0;
  int conversation = 0;
  int cached = 0;
  int generated = 0;
  bool interrupted = false;
};

// The per-answer lines on stderr: "prefill: N of M tokens (C cached...), ... | decode: K tokens, ...".
std::vector<TurnStats> stats_lines(const std::string& err) {
  static const std::regex line(R"(prefill: (\d+) of (\d+) tokens \((\d+) cached[^)]*\), [0-9.]+ tok/s \| decode: (\d+) tokens, [0-9.]+ tok/s( \(interrupted\))?)");
  std::vector<TurnStats> turns;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    turns.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]), m[5].matched});
  }
  return turns;
}

std::string chat_command(const std::string& flags) {
  return quote(test::nucleus_binary()) + " chat -m " + quote(shared_path("models/test/qwen2-f16.gguf")) +
         " -t 2 -c 256 " + flags;
}

// Shell: waits up to 30 s for the background chat ($pid) to end — a chat that ignored its signal or its
// input is terminated instead, so a broken build fails the test rather than hanging it — and prints
// its exit status.
const std::string kEndWithin30s =
    "i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
    "kill -TERM $pid 2>/dev/null; wait $pid; echo $?";

TEST(CliChat, TwoPipedTurnsReuseTheCache) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  const CommandResult r = run_shell("printf 'Hello there\\nAnd one more thing\\n' | " + chat_command("-n 12 --seed 7") +
                                  " >" + dir.file("out") + " 2>" + dir.file("err") + "; echo $?");
  const std::string out = test::read_file(dir.file("out"));
  const std::string err = test::read_file(dir.file("err"));
  ASSERT_EQ(r.out, "0\n") << err;
  const std::vector<TurnStats> turns = stats_lines(err);
  ASSERT_EQ(turns.size(), 2u) << err;
  EXPECT_NE(err.find("chat template: jinja (the model's)"), std::string::npos) << err;
  // Turn 1 prefills the whole prompt; turn 2 only what the conversation gained since.
  EXPECT_EQ(turns[0].cached, 0);
  EXPECT_EQ(turns[0].prefilled, turns[0].conversation);
  // The cache holds the first prompt and every answer token fed: all but the last when -n ended it.
  EXPECT_EQ(turns[1].cached, turns[0].conversation + turns[0].generated - (turns[0].generated == 12 ? 1 : 0));
  EXPECT_LT(turns[1].prefilled, turns[1].conversation);
  EXPECT_EQ(turns[1].prefilled + turns[1].cached, turns[1].conversation);
  // Two answers streamed to stdout, each ended by a line break.
  for (const TurnStats& turn : turns) {
    EXPECT_GT(turn.generated, 0);
    EXPECT_LE(turn.generated, 12);
  }
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out.back(), '\n');
}

TEST(CliChat, SameSeedSameConversation) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  const std::string input = "printf 'one\\ntwo\\n' | ";
  run_shell(input + chat_command("-n 8 --seed 11") + " >" + dir.file("a") + " 2>/dev/null");
  run_shell(input + chat_command("-n 8 --seed 11") + " >" + dir.file("b") + " 2>/dev/null");
  const std::string a = test::read_file(dir.file("a"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, test::read_file(dir.file("b")));
}

TEST(CliChat, CtrlCStopsTheAnswerNotTheProgram) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  // The input stays open through a FIFO; SIGINT is sent once the first answer is streaming. The second
  // line is then answered in full (the context bounds it), and closing the input ends the chat.
  const std::string fifo = dir.file("in"), out = dir.file("out"), err = dir.file("err");
  const std::string script =
      "mkfifo " + fifo + "; " + chat_command("-n 100000 --temp 0") + " <" + fifo + " >" + out + " 2>" + err +
      " & pid=$!; exec 3>" + fifo + "; printf 'Hello\\n' >&3; "
      "i=0; while [ ! -s " + out + " ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; "
      "kill -INT $pid; "
      "i=0; while ! grep -q interrupted " + err + " && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; "
      "printf 'Go on\\n' >&3; exec 3>&-; " + kEndWithin30s;
  const CommandResult r = run_shell(script);
  const std::string errors = test::read_file(err);
  EXPECT_EQ(r.out, "0\n") << errors;
  const std::vector<TurnStats> turns = stats_lines(errors);
  ASSERT_EQ(turns.size(), 2u) << errors;
  EXPECT_TRUE(turns[0].interrupted);
  EXPECT_FALSE(turns[1].interrupted);
  EXPECT_GT(turns[1].cached, 0) << errors;  // the interrupted answer's tokens stay in the cache
}

TEST(CliChat, CtrlCAtThePromptEndsTheChat) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  const std::string fifo = dir.file("in"), out = dir.file("out"), err = dir.file("err");
  const std::string script =
      "mkfifo " + fifo + "; " + chat_command("-n 4") + " <" + fifo + " >" + out + " 2>" + err +
      " & pid=$!; exec 3>" + fifo + "; printf 'Hello\\n' >&3; "
      "i=0; while ! grep -q decode: " + err + " && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; "
      "kill -INT $pid; " + kEndWithin30s + "; exec 3>&-";
  const CommandResult r = run_shell(script);
  const std::string errors = test::read_file(err);
  EXPECT_EQ(r.out, "0\n") << errors;
  EXPECT_EQ(stats_lines(errors).size(), 1u) << errors;
}

TEST(CliChat, EmptyInputEndsAtOnce) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  const CommandResult r =
      run_shell("printf '\\n  \\n' | " + chat_command("") + " >" + dir.file("out") + " 2>" + dir.file("err") + "; echo $?");
  EXPECT_EQ(r.out, "0\n");
  EXPECT_TRUE(stats_lines(test::read_file(dir.file("err"))).empty());  // blank lines are not messages
  EXPECT_EQ(test::read_file(dir.file("out")), "");
}

TEST(CliChat, ModelWithoutTemplateSuggestsTheFlag) {
  NUCLEUS_REQUIRE_SHARED();
  auto r = test::run_nucleus("chat -m " + quote(shared_path("models/stories260K.gguf")) + " </dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no tokenizer.chat_template; choose one with --chat-template NAME"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
}

TEST(CliChat, TemplateOverrideRunsAModelWithoutOne) {
  NUCLEUS_REQUIRE_SHARED();
  ScratchDir dir;
  const CommandResult r = run_shell("printf 'Once upon a time\\n' | " + quote(test::nucleus_binary()) + " chat -m " +
                                  quote(shared_path("models/stories260K.gguf")) +
                                  " --chat-template zephyr -n 6 --seed 1 >" + dir.file("out") + " 2>" +
                                  dir.file("err") + "; echo $?");
  const std::string err = test::read_file(dir.file("err"));
  EXPECT_EQ(r.out, "0\n") << err;
  EXPECT_NE(err.find("chat template: zephyr (--chat-template)"), std::string::npos) << err;
  EXPECT_EQ(stats_lines(err).size(), 1u) << err;
}

TEST(CliChat, UnknownTemplateNameIsAnError) {
  NUCLEUS_REQUIRE_SHARED();
  auto r = test::run_nucleus("chat -m " + quote(shared_path("models/test/qwen2-f16.gguf")) +
                             " --chat-template vicuna </dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown chat template 'vicuna' (known: chatml, llama2,"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nucleus
