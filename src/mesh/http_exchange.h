// mesh/http_exchange.h: HttpExchange, one HTTP request answered on a
// socket: the request head is parsed, checked (GET and HEAD only, no body),
// routed to its handler, and the response written back, all through
// cpp-httplib (0.11.4), the only place wharf uses it. It owns no sockets and
// no threads: HttpServer's poller reads a complete head and a worker hands
// it here (http_server.cc says why the library's own loop is not used).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "mesh/http_message.h"
#include "wharf/result.h"

namespace wharf::mesh {

// Owned by an HttpServer::Impl; Answer runs on its workers, several at once.
class HttpExchange {
 public:
  struct Counts {
    uint64_t requests = 0;        // responses written, every status
    uint64_t not_found = 0;       // 404: no route for the path
    uint64_t bad_requests = 0;    // refused heads: 400, 405, 413, 414, 431
    uint64_t handler_errors = 0;  // 500: a handler threw or gave a bad status
  };

  // Routes are exact paths; one ending in "/" matches every path under it
  // (an exact route wins, then the longest prefix). InvalidArgument naming
  // the route for an empty, relative, unprintable or repeated path or a
  // missing handler. `keep_alive_timeout_ns` is what the Keep-Alive header
  // announces (the server enforces it).
  static Result<std::unique_ptr<HttpExchange>> Create(
      std::vector<std::pair<std::string, HttpHandler>> routes, const Clock& clock,
      DurationNs keep_alive_timeout_ns, size_t max_requests_per_connection);
  ~HttpExchange();
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  // What the log lines name the server ("http 127.0.0.1:4002"). Before the
  // first Answer.
  void set_name(std::string name);

  // Answers the request whose complete head is `head` on socket `fd`,
  // writing until `deadline_ns` or until `stop_fd` is readable (the server
  // is stopping). `last`: the connection's last request (its response says
  // "Connection: close"). True when the connection must be closed after it:
  // the last request, a refused or unparsable head, a failed write, or the
  // client asked.
  bool Answer(int fd, std::string_view head, bool last, int stop_fd, TimeNs deadline_ns);

  // A head the server refused before it was whole (over its size limit):
  // counted as a request and a bad one.
  void CountRefusedHead();
  Counts counts() const;

 private:
  class Impl;  // in http_exchange.cc, where cpp-httplib's types may appear
  explicit HttpExchange(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wharf::mesh
