// libFuzzer target for what wharfd answers about its applications: the
// status JSON (daemon/status_report.h) and the stats reply
// (shm/attach_protocol.h), with names and texts as hostile as a hello can
// make them. Once, a program name that was not UTF-8 made the JSON library
// throw and wharfd abort.
//
// The path is wharfd's own: the hello's program name goes through
// PrintableText as AppSession::Attach does; the endpoint and close reason
// are taken raw (the adapter must cope even with what never passes the
// checks). The checks: rendering never fails or throws, the output is JSON
// that a strict parser reads back with the printable name intact, and a
// stats reply with the same names round-trips.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "base/text.h"
#include "daemon/app_session.h"
#include "daemon/status_report.h"
#include "shm/attach_protocol.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  FuzzedDataProvider in(data, size);
  const std::string program_raw = in.ConsumeRandomLengthString(200);
  const std::string endpoint = in.ConsumeRandomLengthString(600);
  const std::string reason = in.ConsumeRandomLengthString(300);
  const std::string counter = in.ConsumeRandomLengthString(100);
  const std::string transport = in.ConsumeRandomLengthString(100);

  daemon::DaemonReport r;
  r.socket = in.ConsumeRandomLengthString(100);
  r.last_fault = reason;
  daemon::ApplicationReport app;
  app.program = PrintableText(program_raw, daemon::AppSession::kMaxProgramBytes);
  app.endpoint = endpoint;
  app.closing = in.ConsumeBool();
  app.close_reason = reason;
  app.counters = {{counter, in.ConsumeIntegral<uint64_t>()}};
  r.applications.push_back(app);
  r.transports.push_back({transport, {{counter, 1}}});

  Result<std::string> json = daemon::RenderStatusJson(r);
  Check(json.ok());
  const nlohmann::json doc = nlohmann::json::parse(*json, nullptr, /*allow_exceptions=*/false);
  Check(!doc.is_discarded());
  Check(doc["applications"][0]["program"] == app.program);
  Check(app.program.size() <= daemon::AppSession::kMaxProgramBytes);
  Check(IsValidUtf8(app.program));

  // The stats reply carries names as bytes: whatever goes in comes out.
  const std::vector<shm::Counter> stats = {{counter, 7}, {endpoint, 8}};
  Result<shm::AttachMessage> back = shm::DecodeAttach(shm::EncodeStatsReply(stats));
  if (back.ok()) {
    Check(back->stats.size() == 2 && back->stats[0].name == counter &&
          back->stats[1].name == endpoint);
  } else {
    Check(endpoint.size() > shm::kMaxControlString);  // only an over-long name fails
  }
  return 0;
}
