#include "daemon/status_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace wharf::daemon {
namespace {

DaemonReport WithApplication(std::string program, std::string endpoint, std::string reason) {
  DaemonReport r;
  r.socket = "/run/wharf/wharfd.sock";
  r.applications.push_back(ApplicationReport{.id = 1,
                                             .program = std::move(program),
                                             .endpoint = std::move(endpoint),
                                             .closing = true,
                                             .close_reason = std::move(reason),
                                             .counters = {{"commands", 3}}});
  r.transports.push_back({"homa://127.0.0.1:4000", {{"udp.received", 9}}});
  return r;
}

TEST(StatusReport, RenderStatusJson__TheShapeWharfStatusReads) {
  DaemonReport r = WithApplication("kv-server", "homa://127.0.0.1:4000/kv", "");
  r.counters.hello_timeouts = 2;
  r.loop.stalls = 1;
  r.loop.max_turn_ns = 12'000'000;
  Result<std::string> text = RenderStatusJson(r);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["daemon"]["hello_timeouts"], 2);
  EXPECT_EQ(doc["daemon"]["loop"]["stalls"], 1);
  EXPECT_EQ(doc["daemon"]["loop"]["max_turn_us"], 12000);
  EXPECT_EQ(doc["applications"][0]["program"], "kv-server");
  EXPECT_EQ(doc["applications"][0]["state"], "closing");
  EXPECT_EQ(doc["applications"][0]["commands"], 3);
  EXPECT_EQ(doc["transports"]["homa://127.0.0.1:4000"]["udp.received"], 9);
}

TEST(StatusReport, RenderStatusJson__BytesThatAreNotUtf8NeverThrow) {
  // What used to abort wharfd (nlohmann type_error.316): a Latin-1 name, a
  // name cut inside a character, garbage in a close reason.
  Result<std::string> text = RenderStatusJson(
      WithApplication("caf\xe9", std::string(63, 'a') + "\xc3", "INVALID_ARGUMENT: \xff\xfe"));
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json doc = nlohmann::json::parse(*text);  // strict: throws on bad UTF-8
  EXPECT_EQ(doc["applications"][0]["program"], "caf\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(doc["applications"][0]["endpoint"], std::string(63, 'a') + "\xef\xbf\xbd");
}

}  // namespace
}  // namespace wharf::daemon
