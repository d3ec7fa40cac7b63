// client/rpc_limits.h: the rpc.max_request_bytes and rpc.max_response_bytes
// checks (engine/engine_config.h), where the library applies them: a
// client refuses to send a request over the limit (kInvalidArgument); a
// server refuses a request over it without running the handler
// (kInvalidArgument) and sends kResourceExhausted instead of a response
// over its limit; a stream refuses to write, and ends when it receives, a
// message over its direction's limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine_config.h"
#include "wharf/status.h"

namespace wharf::internal {

// OK, or `code` saying which limit `bytes` is over. `what`: "request" or
// "response".
inline Status WithinLimit(uint64_t limit, size_t bytes, std::string_view what, StatusCode code) {
  if (limit == 0 || bytes <= limit) return OkStatus();
  return Status(code, "a " + std::string(what) + " of " + std::to_string(bytes) +
                          " bytes is over rpc.max_" + std::string(what) + "_bytes (" +
                          std::to_string(limit) + ")");
}
inline Status RequestWithinLimit(const engine::EngineConfig::RpcLimits& limits, size_t bytes) {
  return WithinLimit(limits.max_request_bytes, bytes, "request", StatusCode::kInvalidArgument);
}
inline Status ResponseWithinLimit(const engine::EngineConfig::RpcLimits& limits, size_t bytes) {
  return WithinLimit(limits.max_response_bytes, bytes, "response",
                     StatusCode::kResourceExhausted);
}

}  // namespace wharf::internal
