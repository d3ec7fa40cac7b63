// mesh/http_message.h: what an HTTP handler of wharfd's server sees and
// gives: the request (GET or HEAD, path, query) and the response (status,
// type, body), and helpers handlers share. No I/O, no library types.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wharf::mesh {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD": other methods never reach a handler
  std::string path;    // percent-decoded, without the query
  // The query's name=value pairs, percent-decoded, ordered by name (pairs
  // with the same name in the order sent).
  std::vector<std::pair<std::string, std::string>> query;
};

// What a handler answers. The server adds Content-Length and the connection
// headers, and leaves the body out for HEAD.
struct HttpResponse {
  int status = 200;  // 200..599; anything else becomes a 500 (handler_errors)
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on one of the server's worker threads, several at once when
// options.threads > 1. An exception it throws becomes a 500.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// The first value of query parameter `name`, or "" without one.
std::string_view QueryValue(const HttpRequest& request, std::string_view name);
// A plain-text answer with `status` (an error's message, a newline added).
HttpResponse TextResponse(int status, std::string message);
// A 200 with `body` as application/json.
HttpResponse JsonResponse(std::string body);

}  // namespace wharf::mesh
