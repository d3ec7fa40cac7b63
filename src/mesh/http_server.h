// mesh/http_server.h: HttpServer, the small HTTP/1.1 server wharfd shows
// /metrics, /api/v1/... and its dashboard with: GET and HEAD on exact or
// prefix routes, each answered by a handler on the server's own threads, so
// that no HTTP client can block wharfd's loop. It does not know what the
// pages hold (the handlers read what the loop publishes), and it does not
// speak TLS: wharfd gives it a loopback address unless told otherwise.
//
// Bounded whatever clients do: threads (options.threads workers plus one
// poller, none per connection), open connections (max_connections; past it
// the connection idle longest is closed to make room, or, when none is idle,
// the newcomer), memory (at most max_request_header_bytes buffered per
// connection; request bodies are refused, not read), and time (a request
// head must arrive within read_timeout, a response must be taken within it).
// http_server.cc says which of these limits are cpp-httplib's and which are
// ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "mesh/http_message.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::mesh {

// A request as a handler sees it.
struct HttpServerOptions {
  // Where to listen; port 0 picks one (see HttpServer::address()). The
  // caller chooses; wharfd's default is loopback.
  transport::NetAddress listen;
  // Worker threads calling handlers and writing responses, 1..64.
  int threads = 2;
  // Connections open at once, 1..65536. Past it the connection idle longest
  // (waiting for a request, or being closed) is closed to make room; if every
  // open connection has a request being answered, the newcomer gets a 503.
  // Both are counted in rejected_connections.
  size_t max_connections = 64;
  // A connection is closed when a whole request head has not arrived this
  // long after it became ready for one (accepted, or its last response sent):
  // idle keep-alive and trickling clients alike. Also bounds how long one
  // response may take to be sent. 1 ms..1 h.
  DurationNs read_timeout = 5 * kNsPerSec;
  // Request line plus headers, 256..1 MiB. A head that does not fit gets a
  // 431 (a 414 when the request line alone does not) and the connection
  // is closed.
  size_t max_request_header_bytes = 8192;
};

// Totals since Start, and one gauge. Read with HttpServer::counters().
struct HttpServerCounters {
  uint64_t accepted_connections = 0;   // every connection accepted
  uint64_t open_connections = 0;       // gauge: open now, at most max_connections
  uint64_t rejected_connections = 0;   // closed to keep to max_connections
  uint64_t timed_out_connections = 0;  // closed by read_timeout while waiting for a head
  uint64_t requests = 0;               // responses written, every status
  uint64_t not_found = 0;              // 404: no route for the path
  // Malformed or refused requests: a head the library cannot parse (400) or
  // over its limits (414, 400), over max_request_header_bytes (431, 414), a
  // method other than GET/HEAD (405), a request with a body (413).
  uint64_t bad_requests = 0;
  uint64_t handler_errors = 0;  // 500: a handler threw or gave a bad status
};

// Owned by its creator. Start and the destructor are called from one thread;
// address() and counters() from any thread. Handlers run on the server's
// threads and must be thread-safe when options.threads > 1.
class HttpServer {
 public:
  // Checks the options and routes, binds and listens, and starts the
  // threads: once it returns, connections to address() are accepted. Routes
  // are exact paths; one ending in "/" matches every path under it (an
  // exact route wins, then the longest prefix). Errors name the address:
  // "http.listen 127.0.0.1:80: Permission denied".
  static Result<std::unique_ptr<HttpServer>> Start(
      const HttpServerOptions& options, std::vector<std::pair<std::string, HttpHandler>> routes);

  // Stops accepting, closes every connection and joins every thread. Takes
  // no longer than the handlers running at that moment take to return: a
  // response being written or a client being waited for is abandoned.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound address, with the port the kernel picked for port 0.
  transport::NetAddress address() const;
  HttpServerCounters counters() const;

 private:
  class Impl;  // in http_server.cc, where cpp-httplib's types may appear
  explicit HttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace wharf::mesh
