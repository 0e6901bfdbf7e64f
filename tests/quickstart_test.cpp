// The README's quick start on a machine without ../shared: the default model ships with the
// checkout, so `scripts/setup.sh`'s last step (scripts/story.sh) tells its story from a copy of the
// checkout with no shared assets reachable, and the story is the model's greedy reference.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "test_helpers.h"

namespace nucleus {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "nucleus-quickstart-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(QuickStart, DefaultModelIsTheSharedOneByteForByte) {
  NUCLEUS_REQUIRE_SHARED();
  EXPECT_EQ(test::read_file(std::string(NUCLEUS_SOURCE_DIR) + "/models/stories260K.gguf"),
            test::read_file(test::shared_path("models/stories260K.gguf")));
}

TEST(QuickStart, StoryFromACopyOfTheCheckoutWithoutSharedAssets) {
  NUCLEUS_REQUIRE_SHARED();  // only for the reference story; the run itself sees no shared folder
  const std::string reference = test::read_file(test::shared_path("reference/stories260K-llama2c-greedy-256.txt"));

  // The copy: what a clone has (scripts/, models/) plus the binary setup.sh would have built, in a
  // directory whose ../shared does not exist; NUCLEUS_SHARED_DIR points at an empty folder.
  TempDir work;
  const fs::path checkout = work.path / "nucleus";
  const fs::path empty_shared = work.path / "empty-shared";
  fs::create_directories(checkout / "build");
  fs::create_directories(empty_shared);
  ASSERT_FALSE(fs::exists(checkout / ".." / "shared"));
  const fs::path source = NUCLEUS_SOURCE_DIR;
  fs::copy(source / "scripts", checkout / "scripts", fs::copy_options::recursive);
  fs::create_directories(checkout / "models");
  fs::copy_file(source / "models" / "stories260K.gguf", checkout / "models" / "stories260K.gguf");
  fs::copy_file(test::nucleus_binary(), checkout / "build" / "nucleus");

  const fs::path out = work.path / "story.txt", err = work.path / "story.err";
  const std::string command = "cd / && NUCLEUS_SHARED_DIR='" + empty_shared.string() + "' bash '" +
                              (checkout / "scripts" / "story.sh").string() + "' > '" + out.string() + "' 2> '" +
                              err.string() + "'";
  const int status = std::system(command.c_str());
  ASSERT_EQ(status, 0) << test::read_file(err.string());

  // Greedy from "Once upon a time": the continuation of llama2.c's greedy story for this model.
  const std::string story = "Once upon a time" + test::read_file(out.string());
  std::string trimmed = story;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  ASSERT_GT(trimmed.size(), 300u) << trimmed;  // 120 tokens of story, not an error message
  EXPECT_EQ(reference.substr(0, trimmed.size()), trimmed);
  EXPECT_NE(test::read_file(err.string()).find("nucleus serve"), std::string::npos);  // says what to run next
}

}  // namespace
}  // namespace nucleus
