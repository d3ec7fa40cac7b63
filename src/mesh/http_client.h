// mesh/http_client.h: HttpGet, one bounded HTTP/1.1 GET, for the tools that
// read other wharfds' pages (`wharf mesh`, its collector). An adapter over
// cpp-httplib's client (only in http_client.cc): a new connection per call,
// no keep-alive, no redirects followed, no TLS. It does not parse what it
// gets: the callers do (cluster_matrix.h).
#pragma once

#include <cstddef>
#include <string>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::mesh {

// GETs `path_and_query` ("/api/v1/matrix?window=1m") from `base_url`
// ("http://127.0.0.1:4002", "127.0.0.1:4002", "http://[::1]:4002/prefix";
// without a port, 80) and returns the body of a 200 answer.
//
// Bounded: connecting, and every wait for the answer's bytes, take at most
// `timeout` each, and a body still arriving when `timeout` has passed since
// the call began is abandoned (a server that trickles its status line and
// headers can stretch the call to a few timeouts; a host name is resolved
// by getaddrinfo, which no timeout bounds). At most `max_body_bytes` of
// body are kept: a longer one is refused, as soon as its Content-Length or
// its bytes say so.
//
// Errors name the URL and say what happened:
//   InvalidArgument   a base_url that is not http://host[:port][/path]
//   Unavailable       connection refused (or another connect failure), a
//                     connection closed early, a 5xx
//   DeadlineExceeded  no connection or no answer within `timeout`
//   ResourceExhausted the body is over max_body_bytes
//   NotFound, InvalidArgument, Unknown
//                     a 404, another 4xx, any other status but 200; each
//                     with the first line of the body
// Thread-safe: calls share nothing.
Result<std::string> HttpGet(const std::string& base_url, const std::string& path_and_query,
                            DurationNs timeout, size_t max_body_bytes = 16 << 20);

// `base_url` as HttpGet reads it, written out: "http://host:port[/path]"
// (no trailing "/"), or InvalidArgument saying what is wrong with it.
Result<std::string> NormalizeHttpUrl(const std::string& base_url);

}  // namespace wharf::mesh
