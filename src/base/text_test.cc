#include "base/text.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace wharf {
namespace {

TEST(Text, IsValidUtf8__AcceptsWellFormed) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("kv-store"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));              // é
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));              // €
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x9a\xa2"));          // 🚢
  EXPECT_TRUE(IsValidUtf8(std::string_view("a\0b", 3)));  // NUL is UTF-8 (a control, though)
}

TEST(Text, IsValidUtf8__RefusesMalformed) {
  EXPECT_FALSE(IsValidUtf8("caf\xe9"));          // Latin-1 é
  EXPECT_FALSE(IsValidUtf8("\xc3"));             // cut after the lead byte
  EXPECT_FALSE(IsValidUtf8("\x80"));             // a lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));     // overlong, three bytes
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));     // a surrogate (U+D800)
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xff"));
}

TEST(Text, Utf8Prefix__NeverCutsACharacter) {
  const std::string name = std::string(63, 'a') + "\xc3\xa9";  // 65 bytes
  EXPECT_EQ(Utf8Prefix(name, 64), std::string(63, 'a'));
  EXPECT_EQ(Utf8Prefix(name, 65), name);
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x9a\xa2x", 3), "");
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x9a\xa2x", 4), "\xf0\x9f\x9a\xa2");
  // Invalid bytes count as one character each.
  EXPECT_EQ(Utf8Prefix("ab\xe9\xe9", 3), "ab\xe9");
}

TEST(Text, PrintableText__EscapesWhatIsNotPrintableUtf8) {
  EXPECT_EQ(PrintableText("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(PrintableText("caf\xe9"), "caf\\xe9");
  EXPECT_EQ(PrintableText("a\x1b[31mred"), "a\\x1b[31mred");
  EXPECT_EQ(PrintableText(std::string_view("a\0b\x7f", 4)), "a\\x00b\\x7f");
  EXPECT_EQ(PrintableText("\xc2\x9b" "2J"), "\\u009b2J");  // C1 CSI
  EXPECT_EQ(PrintableText("\xc3"), "\\xc3");
}

TEST(Text, PrintableText__CutsBetweenEscapesAndCharacters) {
  EXPECT_EQ(PrintableText(std::string(63, 'a') + "\xc3\xa9", 64), std::string(63, 'a'));
  EXPECT_EQ(PrintableText("ab\xe9", 5), "ab");  // "\xe9" needs 4 bytes, 3 are left
  EXPECT_EQ(PrintableText("ab\xe9", 6), "ab\\xe9");
  EXPECT_EQ(PrintableText("anything", 0), "");
}

TEST(Text, PrintableText__RandomBytesGiveValidUtf8WithinTheLimit) {
  std::mt19937 rng(26);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 80, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const size_t limit = rng() % 100;
    const std::string shown = PrintableText(bytes, limit);
    ASSERT_TRUE(IsValidUtf8(shown)) << round;
    ASSERT_LE(shown.size(), limit) << round;
    ASSERT_TRUE(CheckText(shown, "shown", limit).ok()) << round;
  }
}

TEST(Text, CheckText__NamesTheFieldAndByte) {
  EXPECT_TRUE(CheckText("homa://127.0.0.1:0/kv", "address", 64).ok());
  Status bad = CheckText("homa://127.0.0.1:0/caf\xe9", "hello address", 64);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "hello address is not UTF-8 (byte 22: \"\\xe9\")");
  Status control = CheckText("kv\n", "endpoint name", 64);
  EXPECT_EQ(control.message(), "endpoint name holds a control character (byte 2)");
  Status longer = CheckText(std::string(65, 'a'), "program", 64);
  EXPECT_EQ(longer.message(), "program is 65 bytes, over the limit of 64");
}

}  // namespace
}  // namespace wharf
