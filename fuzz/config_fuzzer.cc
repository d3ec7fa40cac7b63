// fuzz/config_fuzzer.cc: arbitrary YAML through ConfigDoc and the getters the
// engine's settings reader uses; errors are fine, crashes and hangs are not.
//
// Parsing runs in this process (libyaml, base/config.cc), so libFuzzer sees
// the coverage of everything wharf does with the parser's events, and its
// -timeout catches an input that does not finish. The inputs that once
// hung yaml-cpp (fuzz/known_hangs/) are in the seed corpus: scripts/fuzz
// adds every fuzz/known_hangs/config_fuzzer-* file to it.
//
// Beyond not crashing, every error must be kInvalidArgument (the document's
// fault; kResourceExhausted only if memory ran out) and name the source.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = ConfigDoc::Parse(text, "fuzz.yaml");
  if (!doc.ok()) {
    const Status status = doc.status();
    const std::string& message = status.message();
    if ((status.code() != StatusCode::kInvalidArgument &&
         status.code() != StatusCode::kResourceExhausted) ||
        !message.starts_with("fuzz.yaml")) {
      std::fprintf(stderr, "config_fuzzer: unexpected error: %s\n", status.ToString().c_str());
      std::abort();
    }
    return 0;
  }
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
