// daemon/app_session_test.cc: one AppSession on a FakeSessionHost (no
// daemon, no threads, SimClock): the programs of hostile commands that
// fuzz/session_commands_fuzzer.cc explores, here from a fixed seed, so the
// suite runs the fuzzer's driver and some of its ground every time.
#include "daemon/app_session.h"

#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <vector>

#include "daemon/testing/session_program.h"

namespace wharf::daemon {
namespace {

using testing::RunSessionProgram;
using testing::SessionProgramResult;

TEST(AppSessionTest, EmptyProgramAttachesAndStaysOpen) {
  SessionProgramResult r = RunSessionProgram({});
  EXPECT_TRUE(r.attached);
  EXPECT_FALSE(r.closed);
  EXPECT_EQ(r.commands, 0u);
}

TEST(AppSessionTest, ValidNopsComplete) {
  // Four NOP commands; the selector bytes pick zeros, and cookie 1 + i.
  std::vector<uint8_t> program;
  for (uint8_t i = 0; i < 4; ++i) {
    program.insert(program.end(), {/*command*/ 0, /*valid*/ 0, /*NOP*/ 0, /*flags*/ 0,
                                   /*status*/ 0, /*cookie*/ 9, static_cast<uint8_t>(1 + i),
                                   /*handle*/ 0, /*offset*/ 0, /*length*/ 0, 0, 0, 0});
  }
  SessionProgramResult r = RunSessionProgram(program);
  EXPECT_TRUE(r.attached);
  EXPECT_FALSE(r.closed);
  EXPECT_EQ(r.commands, 4u);
  EXPECT_EQ(r.bad_commands, 0u);
  EXPECT_EQ(r.completions, 4u);
}

TEST(AppSessionTest, RandomProgramsStayInsideTheSession) {
  std::mt19937_64 rng(7);
  int closed = 0, refused = 0;
  uint64_t commands = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> program(64 + rng() % 2048);
    for (uint8_t& b : program) b = static_cast<uint8_t>(rng());
    SessionProgramResult r = RunSessionProgram(program);
    ASSERT_TRUE(r.attached) << i;
    closed += r.closed ? 1 : 0;
    refused += r.bad_commands > 0 ? 1 : 0;
    commands += r.commands;
  }
  std::cout << "programs: " << closed << " closed, " << refused << " with refused commands, "
            << commands << " commands\n";
  // The programs reach both outcomes and the commands themselves.
  EXPECT_GT(closed, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(commands, 300u);
}

}  // namespace
}  // namespace wharf::daemon
