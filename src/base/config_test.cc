#include "base/config.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace wharf {
namespace {

using Clock = std::chrono::steady_clock;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

ConfigDoc MustParse(std::string_view text) {
  Result<ConfigDoc> doc = ConfigDoc::Parse(text, "wharfd.yaml");
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? std::move(doc).value() : *ConfigDoc::Parse("", "wharfd.yaml");
}

template <typename T>
std::string ErrorOf(const Result<T>& r) {
  if (r.ok()) return "ok";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}
std::string ErrorOf(const Status& s) { return s.ok() ? "ok" : s.message(); }

constexpr std::string_view kSample = R"(# wharfd test config
listen: 0.0.0.0:4000
homa:
  unsched_bytes: 60KB
  max_message: 64MiB
  resend_after: 2ms
  overcommit: 8
  fifo_fraction: 0.05
  gso: yes
policy:
  rate: 10Gbps
  allow: [alice, bob]
  deny:
    - mallory
offset: -3
)";

TEST(ConfigDocTest, TypedGettersReadValues) {
  ConfigDoc doc = MustParse(kSample);
  EXPECT_EQ(*doc.GetString("listen", ""), "0.0.0.0:4000");
  EXPECT_EQ(*doc.GetBytes("homa.unsched_bytes", 0), 60'000u);
  EXPECT_EQ(*doc.GetBytes("homa.max_message", 0), 64u << 20);
  EXPECT_EQ(*doc.GetDuration("homa.resend_after", 0), 2 * kNsPerMs);
  EXPECT_EQ(*doc.GetUint("homa.overcommit", 0), 8u);
  EXPECT_DOUBLE_EQ(*doc.GetDouble("homa.fifo_fraction", 0), 0.05);
  EXPECT_TRUE(*doc.GetBool("homa.gso", false));
  EXPECT_EQ(*doc.GetRate("policy.rate", 0), 10'000'000'000u);
  EXPECT_THAT(*doc.GetStringList("policy.allow", {}), ElementsAre("alice", "bob"));
  EXPECT_THAT(*doc.GetStringList("policy.deny", {}), ElementsAre("mallory"));
  EXPECT_EQ(*doc.GetInt("offset", 0), -3);
  EXPECT_TRUE(doc.CheckNoUnknownKeys().ok()) << doc.CheckNoUnknownKeys();
}

TEST(ConfigDocTest, AbsentOrEmptyKeysGiveDefaults) {
  ConfigDoc doc = MustParse("homa:\n  rto:\nempty_section:\n");
  EXPECT_EQ(*doc.GetDuration("homa.rto", 15 * kNsPerMs), 15 * kNsPerMs);
  EXPECT_EQ(*doc.GetInt("homa.absent", 7), 7);
  EXPECT_EQ(*doc.GetString("empty_section.name", "dflt"), "dflt");
  EXPECT_THAT(*doc.GetStringList("nowhere", {"x"}), ElementsAre("x"));
  EXPECT_TRUE(*doc.GetBool("nope", true));
  EXPECT_EQ(*doc.GetRate("policy.rate", 123), 123u);
  EXPECT_TRUE(doc.CheckNoUnknownKeys().ok());
}

TEST(ConfigDocTest, EmptyOrCommentOnlyFileIsAllDefaults) {
  for (std::string_view text :
       {"", "\n\n", "# everything commented out\n# homa:\n#   rto: 5ms\n", "---\n", "~"}) {
    Result<ConfigDoc> doc = ConfigDoc::Parse(text, "wharfd.yaml");
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_EQ(*doc->GetUint("homa.overcommit", 8), 8u);
    EXPECT_FALSE(doc->Has("homa"));
    EXPECT_TRUE(doc->CheckNoUnknownKeys().ok());
  }
}

TEST(ConfigDocTest, ValueErrorsNameFileLineKeyExpectedAndFound) {
  ConfigDoc doc = MustParse("a: 1\npolicy:\n  x: 1\n  rate: fast\n");
  EXPECT_EQ(ErrorOf(doc.GetRate("policy.rate", 0)),
            "wharfd.yaml:4: policy.rate: expected a rate like '10Gbps' (units: bps, Kbps, Mbps, "
            "Gbps, Tbps), got 'fast'");
}

TEST(ConfigDocTest, EachGetterReportsItsOwnExpectation) {
  ConfigDoc doc = MustParse("v: junk\n");
  EXPECT_EQ(ErrorOf(doc.GetInt("v", 0)), "wharfd.yaml:1: v: expected an integer, got 'junk'");
  EXPECT_EQ(ErrorOf(doc.GetUint("v", 0)),
            "wharfd.yaml:1: v: expected a non-negative integer, got 'junk'");
  EXPECT_EQ(ErrorOf(doc.GetBool("v", false)),
            "wharfd.yaml:1: v: expected true or false, got 'junk'");
  EXPECT_EQ(ErrorOf(doc.GetDouble("v", 0)), "wharfd.yaml:1: v: expected a number, got 'junk'");
  EXPECT_THAT(ErrorOf(doc.GetDuration("v", 0)),
              StartsWith("wharfd.yaml:1: v: expected a duration like '5ms'"));
  EXPECT_THAT(ErrorOf(doc.GetBytes("v", 0)),
              StartsWith("wharfd.yaml:1: v: expected a size like '64MiB'"));
}

TEST(ConfigDocTest, UnsignedKeysRejectNegativeAndOverflow) {
  ConfigDoc doc = MustParse("neg: -5\nbig: 18446744073709551616\nport: 70000\n");
  EXPECT_EQ(ErrorOf(doc.GetUint("neg", 0)),
            "wharfd.yaml:1: neg: expected a non-negative integer, got '-5'");
  EXPECT_EQ(ErrorOf(doc.GetUint("big", 0)),
            "wharfd.yaml:2: big: expected a non-negative integer, got '18446744073709551616' "
            "(out of 64-bit range)");
  EXPECT_EQ(ErrorOf(doc.GetUint("port", 0, 65535)),
            "wharfd.yaml:3: port: expected an integer in [0, 65535], got '70000'");
  EXPECT_EQ(ErrorOf(doc.GetInt("port", 0, 1, 65535)),
            "wharfd.yaml:3: port: expected an integer in [1, 65535], got '70000'");
  EXPECT_THAT(ErrorOf(doc.GetBytes("neg", 0)), HasSubstr("got '-5' (negative)"));
}

TEST(ConfigDocTest, MapOrListWhereScalarExpected) {
  ConfigDoc doc = MustParse("homa:\n  port: 1\nlist: [1, 2]\n");
  EXPECT_EQ(ErrorOf(doc.GetUint("homa", 0)),
            "wharfd.yaml:1: homa: expected a non-negative integer, got a map");
  EXPECT_EQ(ErrorOf(doc.GetString("list", "")),
            "wharfd.yaml:3: list: expected a string, got a list");
  EXPECT_EQ(ErrorOf(doc.GetRate("homa", 0)),
            "wharfd.yaml:1: homa: expected a rate like '10Gbps', got a map");
}

TEST(ConfigDocTest, ScalarWhereMapExpected) {
  ConfigDoc doc = MustParse("homa: 5\n");
  EXPECT_EQ(ErrorOf(doc.GetUint("homa.port", 0)),
            "wharfd.yaml:1: homa: expected a map holding 'port', got '5'");
}

TEST(ConfigDocTest, StringListErrors) {
  ConfigDoc doc = MustParse("one: alice\nmap: {a: 1}\nnested:\n  - ok\n  - {a: 1}\nholes:\n  -\n");
  EXPECT_EQ(ErrorOf(doc.GetStringList("one", {})),
            "wharfd.yaml:1: one: expected a list of strings, got 'alice'");
  EXPECT_EQ(ErrorOf(doc.GetStringList("map", {})),
            "wharfd.yaml:2: map: expected a list of strings, got a map");
  EXPECT_EQ(ErrorOf(doc.GetStringList("nested", {})),
            "wharfd.yaml:5: nested.1: expected a string, got a map");
  EXPECT_THAT(ErrorOf(doc.GetStringList("holes", {})),
              HasSubstr("holes.0: expected a string, got an empty item"));
  EXPECT_TRUE(doc.GetStringList("empty", {}).ok());
}

TEST(ConfigDocTest, EmptyFlowListIsEmpty) {
  ConfigDoc doc = MustParse("allow: []\n");
  EXPECT_TRUE(doc.GetStringList("allow", {"default"})->empty());
}

TEST(ConfigDocTest, QuotedScalarsAreText) {
  ConfigDoc doc = MustParse("name: \"42\"\nport: '4000'\n");
  EXPECT_EQ(*doc.GetString("name", ""), "42");
  EXPECT_EQ(*doc.GetUint("port", 0), 4000u);
}

TEST(ConfigDocTest, SyntaxErrorCarriesLineAndColumn) {
  Result<ConfigDoc> doc = ConfigDoc::Parse("a: 1\nb: [1, 2\nc: 3\n", "wharfd.yaml");
  EXPECT_THAT(ErrorOf(doc), MatchesRegex("wharfd\\.yaml:[0-9]+:[0-9]+: YAML syntax error: .+"));
  Result<ConfigDoc> bad_indent = ConfigDoc::Parse("a:\n  b: 1\n c: 2\n", "wharfd.yaml");
  EXPECT_THAT(ErrorOf(bad_indent), StartsWith("wharfd.yaml:3:"));
  EXPECT_THAT(ErrorOf(bad_indent), HasSubstr("YAML syntax error"));
}

TEST(ConfigDocTest, TopLevelMustBeAMap) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("just text\n", "wharfd.yaml")),
            "wharfd.yaml:1: expected a map of settings at the top level, got 'just text'");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("- a\n- b\n", "wharfd.yaml")),
            "wharfd.yaml:1: expected a map of settings at the top level, got a list");
}

TEST(ConfigDocTest, MultipleDocumentsAreAnError) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a: 1\n---\nb: 2\n", "wharfd.yaml")),
            "wharfd.yaml:3: expected one YAML document, found 2");
}

TEST(ConfigDocTest, DuplicateKeysAreAnError) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("homa:\n  rto: 1ms\n  rto: 2ms\n", "wharfd.yaml")),
            "wharfd.yaml:3: homa.rto: duplicate key (first set on line 2)");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("homa: {}\nx: 1\nhoma: {a: 1}\n", "wharfd.yaml")),
            "wharfd.yaml:3: homa: duplicate key (first set on line 1)");
}

TEST(ConfigDocTest, BadKeyNamesAreAnError) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("homa.rto: 1ms\n", "wharfd.yaml")),
            "wharfd.yaml:1: 'homa.rto': key names must not contain '.'; nest maps instead");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a:\n  [x, y]: 1\n", "wharfd.yaml")),
            "wharfd.yaml:2: a: keys must be non-empty plain names");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("\"\": 1\n", "wharfd.yaml")),
            "wharfd.yaml:1: top level: keys must be non-empty plain names");
}

TEST(ConfigDocTest, StrayCommasAreRefusedNotHung) {
  // A ',' where no value can start: yaml-cpp, the parser before libyaml,
  // looped for ever on these; each must be an error, and quickly.
  for (const char* text :
       {",", ", a", "  ,", "# c\n,", "---\n,", "a: 1\n---\n,", "\t,", "...\n,", "%YAML 1.2\n---\n,",
        "a: [1]\n ,\n", "--- ,", "\xEF\xBB\xBF,", "a: 1\n,\nb: 2\n"}) {
    const Clock::time_point start = Clock::now();
    EXPECT_THAT(ErrorOf(ConfigDoc::Parse(text, "wharfd.yaml")), HasSubstr("YAML syntax error"))
        << text;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << text;
  }
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("# c\n  ,\n", "wharfd.yaml")),
            "wharfd.yaml:2:3: YAML syntax error: unexpected ',' outside [...] or {...}");
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: the\"route's MTU\nb: 1\n,\n", "wharfd.yaml")),
              StartsWith("wharfd.yaml:3:1: YAML syntax error: "));
  // A byte order mark is not a column.
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("\xEF\xBB\xBF,", "wharfd.yaml")),
            "wharfd.yaml:1:1: YAML syntax error: unexpected ',' outside [...] or {...}");
  // Commas inside flow collections, quotes, comments and scalars are fine,
  // including one that starts a continuation line of a plain scalar.
  ConfigDoc doc = MustParse("a: [1,\n  2\n  , 3]\nb: x,y\nc: ',x'\n# ,\nd: foo\n  , bar\n");
  EXPECT_THAT(*doc.GetStringList("a", {}), ElementsAre("1", "2", "3"));
  EXPECT_EQ(*doc.GetString("d", ""), "foo , bar");
  // Inside [...] a missing item is the parser's own message.
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: [1,,2]\n", "wharfd.yaml")),
              Eq("wharfd.yaml:1:7: YAML syntax error: did not find expected node content (while "
                 "parsing a flow node started at 1:7)"));
}

TEST(ConfigDocTest, SyntaxErrorsSayWhatWasBeingRead) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a: 1\nb: [1, 2\nc: 3\n", "wharfd.yaml")),
            "wharfd.yaml:3:2: YAML syntax error: did not find expected ',' or ']' (while parsing "
            "a flow sequence started at 2:4)");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a: 'open\n", "wharfd.yaml")),
            "wharfd.yaml:2:1: YAML syntax error: found unexpected end of stream (while scanning a "
            "quoted scalar started at 1:4)");
}

TEST(ConfigDocTest, TabsCannotIndent) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("homa:\n\trto: 1ms\n", "wharfd.yaml")),
            "wharfd.yaml:2:1: YAML syntax error: a tab where YAML allows only spaces (indent with "
            "spaces)");
  // Tabs elsewhere are blanks or text.
  ConfigDoc doc = MustParse("homa:\n  rto:\t1ms\t# comment\t\n  name: \"a\\tb\"\n");
  EXPECT_EQ(*doc.GetDuration("homa.rto", 0), kNsPerMs);
  EXPECT_EQ(*doc.GetString("homa.name", ""), "a\tb");
}

TEST(ConfigDocTest, TextMustBeUtf8WithoutControlCharacters) {
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a: 1\nname: caf\xE9\n", "wharfd.yaml")),
            "wharfd.yaml:2:10: YAML syntax error: incomplete UTF-8 octet sequence; a config file "
            "must be UTF-8 text without control characters");
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: 1\n\xFF: 2\n", "wharfd.yaml")),
              StartsWith("wharfd.yaml:2:1: YAML syntax error: invalid leading UTF-8 octet (0xFF)"));
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse(std::string_view("a: x\0y\n", 7), "wharfd.yaml")),
              StartsWith("wharfd.yaml:1:5: YAML syntax error: control characters are not allowed"));
  // UTF-16 is not read as such: its byte order mark is not UTF-8.
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse(std::string_view("\xFF\xFE"
                                                        "a\0:\0",
                                                        6),
                                       "wharfd.yaml")),
              StartsWith("wharfd.yaml:1:1: YAML syntax error: invalid leading UTF-8 octet"));
  // Columns count characters, not bytes.
  ConfigDoc doc = MustParse("name: \"\xC2\xB5s \xE2\x82\xAC\"\n");
  EXPECT_EQ(*doc.GetString("name", ""), "\xC2\xB5s \xE2\x82\xAC");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("x: \"\xE2\x82\xAC\xE2\x82\xAC\" ,\n", "wharfd.yaml")),
            "wharfd.yaml:1:9: YAML syntax error: unexpected ',' outside [...] or {...}");
}

TEST(ConfigDocTest, LinesCountEveryKindOfLineBreak) {
  ConfigDoc doc = MustParse("a: 1\r\nb: 2\rc: x\r\n");
  EXPECT_EQ(ErrorOf(doc.GetInt("c", 0)), "wharfd.yaml:3: c: expected an integer, got 'x'");
}

TEST(ConfigDocTest, NullFormsMeanTheDefault) {
  ConfigDoc doc = MustParse("a:\nb: ~\nc: null\nd: NULL\ne: !!null x\nf: 'null'\ng: \"\"\n");
  for (const char* key : {"a", "b", "c", "d", "e"}) {
    EXPECT_FALSE(doc.Has(key)) << key;
    EXPECT_EQ(*doc.GetString(key, "dflt"), "dflt") << key;
  }
  EXPECT_EQ(*doc.GetString("f", "dflt"), "null");  // quoted: text
  EXPECT_EQ(*doc.GetString("g", "dflt"), "");
  // A null is not a name.
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("~: 1\n", "wharfd.yaml")),
            "wharfd.yaml:1: top level: keys must be non-empty plain names");
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a:\n  Null: 1\n", "wharfd.yaml")),
            "wharfd.yaml:2: a: keys must be non-empty plain names");
}

TEST(ConfigDocTest, TagsAreIgnored) {
  ConfigDoc doc = MustParse("a: !!str 5\nb: !!int '7'\n");
  EXPECT_EQ(*doc.GetInt("a", 0), 5);
  EXPECT_EQ(*doc.GetInt("b", 0), 7);
}

TEST(ConfigDocTest, NestingIsBounded) {
  // 64 levels below the top are fine (the 64th holds a scalar).
  std::string ok;
  for (int i = 0; i < 63; ++i) ok += fmt::format("{:{}}k{}:\n", "", 2 * i, i);
  ok += fmt::format("{:{}}leaf: 1\n", "", 2 * 63);
  Result<ConfigDoc> doc = ConfigDoc::Parse(ok, "wharfd.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  std::string key;
  for (int i = 0; i < 63; ++i) key += fmt::format("k{}.", i);
  EXPECT_EQ(*doc->GetInt(key + "leaf", 0), 1);
  // One more level is refused, naming the key.
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: " + std::string(64, '[') + "1" + std::string(64, ']'),
                                       "wharfd.yaml")),
              StartsWith("wharfd.yaml:1: a.0.0."));
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: " + std::string(64, '[') + "1" + std::string(64, ']'),
                                       "wharfd.yaml")),
              HasSubstr(": nested deeper than 64 levels"));
  // A file of nothing but openings stops at the 65th, whatever its length.
  std::string maps;
  for (int i = 0; i < 1'000'000; ++i) maps += "{k: ";
  for (const std::string& text : {"a: " + std::string(4 << 20, '['), "a: " + maps}) {
    const Clock::time_point start = Clock::now();
    EXPECT_THAT(ErrorOf(ConfigDoc::Parse(text, "wharfd.yaml")),
                HasSubstr("nested deeper than 64 levels"));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  }
}

TEST(ConfigDocTest, KeysAreBoundedInLength) {
  // Each entry keeps its whole dotted key: a long name over many keys would
  // multiply, so the dotted key is capped.
  const std::string name(500, 'n');
  Result<ConfigDoc> fits = ConfigDoc::Parse(fmt::format("{}:\n  abc: 1\n", name), "wharfd.yaml");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(*fits->GetInt(name + ".abc", 0), 1);
  EXPECT_THAT(
      ErrorOf(ConfigDoc::Parse(fmt::format("{}:\n  abcdefghijkl: 1\n", name), "wharfd.yaml")),
      MatchesRegex("wharfd\\.yaml:2: 'n+\\.\\.\\.' \\(513 chars\\): key longer than 512 "
                   "bytes"));
  // An explicit key ("? ...") may be longer than a line; the list index
  // counts too.
  std::string keys = "? " + std::string(1 << 20, 'k') + "\n: {a: 1}\n";
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse(keys, "wharfd.yaml")),
              HasSubstr("key longer than 512 bytes"));
  EXPECT_THAT(
      ErrorOf(ConfigDoc::Parse(fmt::format("{}: [1]\n", std::string(511, 'l')), "wharfd.yaml")),
      HasSubstr("(513 chars): key longer than 512 bytes"));
}

// Every input that ever hung yaml-cpp (fuzz/known_hangs/) gives an answer,
// an error that names the file, quickly. The time bound is loose (a parse
// takes microseconds); it is there so that a regression fails here, with
// the file's name, rather than at ctest's timeout.
TEST(ConfigDocTest, KnownHangsAreErrorsInBoundedTime) {
  int files = 0;
  for (const auto& file : std::filesystem::directory_iterator(WHARF_KNOWN_HANGS_DIR)) {
    const std::string path = file.path().string();
    const Clock::time_point start = Clock::now();
    Result<ConfigDoc> doc = ConfigDoc::LoadFile(path);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << path;
    EXPECT_THAT(ErrorOf(doc), StartsWith(path + ":"));
    ++files;
  }
  EXPECT_GE(files, 3);
  // What each is, to the parser.
  const std::string dir = WHARF_KNOWN_HANGS_DIR;
  for (const auto& [name, error] :
       {std::pair{"config_fuzzer-yaml-cpp-hang.yaml",
                  ":16:17: YAML syntax error: control characters are not allowed (0x00)"},
        std::pair{"config_fuzzer-yaml-cpp-hang-2.yaml",
                  ":22:1: YAML syntax error: unexpected ',' outside [...] or {...}"},
        std::pair{"config_fuzzer-yaml-cpp-hang-3.yaml",
                  ":1:56: YAML syntax error: control characters are not allowed (0x00)"}}) {
    const std::string path = dir + "/" + name;
    EXPECT_THAT(ErrorOf(ConfigDoc::LoadFile(path)), StartsWith(path + error));
  }
}

TEST(ConfigDocTest, LargeDocumentsParse) {
  std::string text;
  for (int i = 0; i < 50'000; ++i) text += fmt::format("key{}: value{}\n", i, i);
  Result<ConfigDoc> doc = ConfigDoc::Parse(text, "wharfd.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc->GetString("key49999", ""), "value49999");
}

TEST(ConfigDocTest, HugeDocumentsStopEarly) {
  std::string text = "l: [";
  for (int i = 0; i < 300'000; ++i) text += "1,";
  text += "1]\n";
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse(text, "wharfd.yaml")), "wharfd.yaml:1: more than 100000 keys");
  // A stream of empty documents counts too.
  std::string docs = "a: 1\n";
  for (int i = 0; i < 300'000; ++i) docs += "---\n";
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse(docs, "wharfd.yaml")),
            "wharfd.yaml:3: expected one YAML document, found 200000 or more");
}

TEST(ConfigDocTest, AnchorsAndAliasesAreRefusedWithTheirPlace) {
  // An alias stands for a copy of its anchor's node: refused rather than
  // expanded, so that no document can multiply itself.
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse("a: &x [1, *x]\n", "wharfd.yaml")),
            "wharfd.yaml:1:4: YAML anchors and aliases (&name, *name) are not supported in "
            "wharf config files; write the values out");
  EXPECT_THAT(ErrorOf(ConfigDoc::Parse("a: 1\nb:\n  c: *nope\n", "wharfd.yaml")),
              HasSubstr("wharfd.yaml:3:6:"));
  // Ten levels of ten aliases each would flatten into 10^10 keys.
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 10; ++i) {
    bomb += fmt::format("l{}: &l{} [", i, i);
    for (int j = 0; j < 10; ++j) bomb += fmt::format("{}*l{}", j ? ", " : "", i - 1);
    bomb += "]\n";
  }
  EXPECT_EQ(ErrorOf(ConfigDoc::Parse(bomb, "wharfd.yaml")),
            "wharfd.yaml:1:5: YAML anchors and aliases (&name, *name) are not supported in "
            "wharf config files; write the values out");
}

// A library embedded in multi-threaded applications must not fork (the
// parser once ran in a child process); any fork in this process, from
// whatever code, runs this handler.
std::atomic<int> forks{0};
TEST(ConfigDocTest, ParsingNeverForks) {
  static const int registered = ::pthread_atfork([] { ++forks; }, nullptr, nullptr);
  ASSERT_EQ(registered, 0);
  const int before = forks.load();
  EXPECT_TRUE(ConfigDoc::Parse("homa:\n  rto: 1ms\n", "wharfd.yaml").ok());
  EXPECT_FALSE(ConfigDoc::Parse("a: [\n", "wharfd.yaml").ok());
  EXPECT_FALSE(ConfigDoc::Parse(",", "wharfd.yaml").ok());
  EXPECT_EQ(forks.load(), before);
}

// Parsing keeps no state outside the document: threads parse at once.
TEST(ConfigDocTest, ThreadsParseAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &good] {
      for (int i = 0; i < 200; ++i) {
        Result<ConfigDoc> doc =
            ConfigDoc::Parse(fmt::format("t:\n  id: {}\n  i: {}\n", t, i), "wharfd.yaml");
        if (doc.ok() && *doc->GetInt("t.id", -1) == t && *doc->GetInt("t.i", -1) == i) ++good;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good.load(), 4 * 200);
}

TEST(ConfigDocTest, SettingsBuildADocumentWithoutYaml) {
  auto doc = ConfigDoc::FromSettings(
      {{"homa.overcommit", "4"}, {"udp.mtu", "{not: yaml}"}, {"homa.overcommit", "6"}}, "settings");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc->GetInt("homa.overcommit", 8), 6);  // the later pair wins
  // A value is only ever a scalar: YAML syntax in it is just text.
  auto mtu = doc->GetUint("udp.mtu", 1500);
  ASSERT_FALSE(mtu.ok());
  EXPECT_NE(mtu.status().message().find("settings:2: udp.mtu"), std::string::npos) << mtu.status();
  EXPECT_EQ(*doc->ChildKeys("homa"), std::vector<std::string>{"overcommit"});
  EXPECT_TRUE(doc->CheckNoUnknownKeys().ok());
  auto unknown = ConfigDoc::FromSettings({{"homa.overcomit", "4"}}, "settings");
  ASSERT_TRUE(unknown.ok());
  (void)unknown->GetInt("homa.overcommit", 8);
  Status s = unknown->CheckNoUnknownKeys();
  EXPECT_NE(s.message().find("did you mean 'homa.overcommit'"), std::string::npos) << s;
}

TEST(ConfigDocTest, SettingsWithBadKeysAreErrors) {
  auto empty_part = ConfigDoc::FromSettings({{"homa..x", "1"}}, "settings");
  ASSERT_FALSE(empty_part.ok());
  EXPECT_NE(empty_part.status().message().find("settings:1: 'homa..x'"), std::string::npos)
      << empty_part.status();
  auto both = ConfigDoc::FromSettings({{"a.b", "1"}, {"a.b.c", "2"}}, "settings");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("settings:2: 'a.b.c': 'a.b' is set as a value"),
            std::string::npos)
      << both.status();
  auto section = ConfigDoc::FromSettings({{"a.b.c", "1"}, {"a.b", "2"}}, "settings");
  ASSERT_FALSE(section.ok());
  EXPECT_NE(section.status().message().find("is a section"), std::string::npos);
}

TEST(ConfigDocTest, HasDoesNotMarkKnown) {
  ConfigDoc doc = MustParse("a: 1\nb:\n");
  EXPECT_TRUE(doc.Has("a"));
  EXPECT_FALSE(doc.Has("b"));  // present without a value: same as absent
  EXPECT_FALSE(doc.Has("c"));
  EXPECT_EQ(ErrorOf(doc.CheckNoUnknownKeys()),
            "wharfd.yaml:1: unknown key 'a'; wharfd.yaml:2: unknown key 'b'");
}

TEST(ConfigDocTest, ChildKeysEnumeratesDataSections) {
  ConfigDoc doc = MustParse(
      "apps:\n  web:\n    quota: 1GiB\n  db:\n    quota: 2GiB\n    qouta: 3\n"
      "peers:\n  - host: a\n  - host: b\nscalar: 1\n");
  Result<std::vector<std::string>> apps = doc.ChildKeys("apps");
  ASSERT_TRUE(apps.ok());
  EXPECT_THAT(*apps, ElementsAre("web", "db"));
  for (const std::string& app : *apps) EXPECT_TRUE(doc.GetBytes("apps." + app + ".quota", 0).ok());
  EXPECT_THAT(*doc.ChildKeys("peers"), ElementsAre("0", "1"));
  EXPECT_EQ(*doc.GetString("peers.1.host", ""), "b");
  EXPECT_TRUE(doc.ChildKeys("absent")->empty());
  EXPECT_EQ(ErrorOf(doc.ChildKeys("scalar")),
            "wharfd.yaml:10: scalar: expected a map or a list, got '1'");
  // apps.db.qouta is a typo of a key read for db; nothing in peers.0 was
  // read, and a list index gets no spelling suggestion.
  EXPECT_EQ(ErrorOf(doc.CheckNoUnknownKeys()),
            "wharfd.yaml:6: unknown key 'apps.db.qouta' (did you mean 'apps.db.quota'?); "
            "wharfd.yaml:8: unknown key 'peers.0'");
}

TEST(ConfigDocTest, UnknownKeysAreListedWithSuggestions) {
  ConfigDoc doc = MustParse(
      "homa:\n"
      "  unsched_byte: 10KB\n"  // line 2: typo
      "  rto: 5ms\n"
      "hmoa:\n"  // line 4: misspelled section
      "  rto: 1ms\n"
      "  grant: 2\n"
      "port: 4000\n"  // line 7: right name, wrong section
      "zzz: 1\n");    // line 8: nothing close
  EXPECT_EQ(*doc.GetDuration("homa.rto", 0), 5 * kNsPerMs);
  EXPECT_EQ(*doc.GetBytes("homa.unsched_bytes", 60000), 60000u);
  EXPECT_EQ(*doc.GetUint("homa.port", 4000), 4000u);
  Status status = doc.CheckNoUnknownKeys();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "wharfd.yaml:2: unknown key 'homa.unsched_byte' (did you mean 'homa.unsched_bytes'?); "
            "wharfd.yaml:4: unknown key 'hmoa' (did you mean 'homa'?); "
            "wharfd.yaml:7: unknown key 'port' (did you mean 'homa.port'?); "
            "wharfd.yaml:8: unknown key 'zzz'");
}

TEST(ConfigDocTest, KeysReadWithErrorsAreNotAlsoUnknown) {
  ConfigDoc doc = MustParse("rate: fast\n");
  EXPECT_FALSE(doc.GetRate("rate", 0).ok());
  EXPECT_TRUE(doc.CheckNoUnknownKeys().ok());
}

// A directory of its own per test, removed even when the test fails.
class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("wharf_config_test_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, std::string_view text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, LoadsAFileAndNamesItInErrors) {
  const std::string path = Write("wharfd.yaml", "homa:\n  rto: soon\n");
  Result<ConfigDoc> doc = ConfigDoc::LoadFile(path);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->source_name(), path);
  EXPECT_THAT(ErrorOf(doc->GetDuration("homa.rto", 0)),
              StartsWith(path + ":2: homa.rto: expected"));
}

TEST_F(ConfigFileTest, MissingFileIsNotFound) {
  const std::string path = (dir_ / "absent.yaml").string();
  Result<ConfigDoc> doc = ConfigDoc::LoadFile(path);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(doc.status().message(), HasSubstr(path));
}

TEST_F(ConfigFileTest, DirectoryIsNotAConfig) {
  Result<ConfigDoc> doc = ConfigDoc::LoadFile(dir_.string());
  EXPECT_EQ(ErrorOf(doc), "config file " + dir_.string() + ": not a regular file");
}

TEST_F(ConfigFileTest, SyntaxErrorNamesThePath) {
  const std::string path = Write("bad.yaml", "a: [\n");
  EXPECT_THAT(ErrorOf(ConfigDoc::LoadFile(path)), StartsWith(path + ":"));
}

TEST_F(ConfigFileTest, EmptyFileIsAllDefaults) {
  Result<ConfigDoc> doc = ConfigDoc::LoadFile(Write("empty.yaml", ""));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_TRUE(doc->CheckNoUnknownKeys().ok());
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

TEST(ConfigDocTest, LineOfGivesEachKeysLineAndZeroForAbsentOnes) {
  Result<ConfigDoc> doc = ConfigDoc::Parse("a:\n  b: 1\nlist:\n  - x\n  - y\n", "f.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->LineOf("a"), 1);
  EXPECT_EQ(doc->LineOf("a.b"), 2);
  EXPECT_EQ(doc->LineOf("list.1"), 5);
  EXPECT_EQ(doc->LineOf("nope"), 0);
  // Asking for a line does not make a key known.
  EXPECT_FALSE(doc->CheckNoUnknownKeys().ok());
}

}  // namespace
}  // namespace wharf
