// fuzz/config_fuzzer.cc: arbitrary YAML through ConfigDoc and the engine's
// full settings reader; errors are fine, crashes and hangs are not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = ConfigDoc::Parse(text, "fuzz.yaml");
  if (!doc.ok()) return 0;
  (void)doc->GetUint("homa.overcommit", 8);
  (void)doc->GetBytes("homa.unsched_bytes", 60000);
  (void)doc->GetRate("homa.link_rate", 1);
  (void)doc->GetDuration("homa.tick", 1);
  (void)doc->GetBool("udp.gso", true);
  (void)doc->GetStringList("homa.unsched_cutoffs", {});
  (void)doc->ChildKeys("homa");
  (void)doc->CheckNoUnknownKeys();
  return 0;
}
