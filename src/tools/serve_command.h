// `wharf serve`: an echo server. Answers the echo RPC (method 1) and a stats
// RPC (method 2), and echoes every message on accepted connections. Counts
// how often each request id ran, so tests can check exactly-once execution.
// With --lend-bytes (ucx://), lends one block of its memory to every
// `wharf rma` client that asks (method kLendMethod): their reads, writes
// and atomics meet in it.
#pragma once

#include <string>

#include "tools/common_flags.h"

namespace CLI {
class App;
}

namespace wharf::tools {

struct ServeOptions {
  std::string listen = "homa://0.0.0.0:4000";
  double duration_s = 0;  // 0 = until SIGINT/SIGTERM
  // The echo handler answers this long after a request arrives (0: at once).
  double handler_delay_ms = 0;
  // Bytes of memory lent to every `wharf rma` client that asks (ucx:// only;
  // 0: none).
  uint64_t lend_bytes = 0;
  EndpointFlags endpoint;
};

void AddServeFlags(CLI::App& app, ServeOptions& options);
int RunServe(const ServeOptions& options);

}  // namespace wharf::tools
