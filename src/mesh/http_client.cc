// http_client.cc: HttpGet over cpp-httplib's ClientImpl (0.11.4, the compiled
// libcpp-httplib), the one place its client is used. What the library gives
// and what is ours:
//   library: connecting with a timeout (Error::Connection or
//            ConnectionTimeout), the request, reading the status line and
//            headers (each read bounded by the read timeout; a read that
//            times out is Error::Read, like a connection closed early),
//            chunked and gzip bodies.
//   ours:    the URL's shape, the overall deadline on the body and its size
//            limit (checked in the callbacks, which cancel the transfer),
//            telling a timeout from a closed connection (by the time
//            taken), and the error text. The library reports a refused
//            connection, an unreachable host and an unknown name all as
//            Error::Connection; a connect of our own then says which.
// The library's client never touches signals (only its Server sets SIGPIPE;
// the client sends with MSG_NOSIGNAL).
#include "mesh/http_client.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "base/text.h"
#include "base/unique_fd.h"

namespace wharf::mesh {
namespace {

// Kept of a refused answer's body, for its first line.
constexpr size_t kMaxErrorBodyBytes = 1024;
// Of that first line, shown in the error.
constexpr size_t kMaxErrorLineBytes = 200;

struct ParsedUrl {
  std::string host;  // a name, an IPv4 address or an IPv6 one without brackets
  int port = 80;
  std::string prefix;  // "" or "/path" without a trailing "/"
  std::string text;    // "http://host:port/path"
};

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

Result<ParsedUrl> ParseUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("URL '" + PrintableText(url, 200) + "': " + std::string(why) +
                                " (expected http://host:port or host:port)");
  };
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return bad("space or control character");
  }
  std::string_view rest = url;
  if (StartsWithNoCase(rest, "http://")) {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    return bad("only http:// is supported");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.find_first_of("?#") != std::string_view::npos)
    return bad("a query or fragment in the base");
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");

  ParsedUrl out;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("'[' without ']'");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("junk after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      if (authority.find(':') != colon) return bad("an IPv6 address needs brackets");
      port_text = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
      if (port_text.empty()) return bad("empty port");
    }
    out.host = std::string(authority);
  }
  if (out.host.empty()) return bad("no host");
  if (!port_text.empty()) {
    int port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      return bad("port '" + std::string(port_text) + "' is not 1..65535");
    }
    out.port = port;
  }
  out.prefix = std::string(path);
  const bool v6 = out.host.find(':') != std::string::npos;
  out.text = "http://" + (v6 ? "[" + out.host + "]" : out.host) + ":" + std::to_string(out.port) +
             out.prefix;
  return out;
}

std::string DurationText(DurationNs d) {
  char out[32];
  if (d % kNsPerSec == 0) {
    std::snprintf(out, sizeof out, "%lld s", static_cast<long long>(d / kNsPerSec));
  } else if (d >= kNsPerSec) {
    std::snprintf(out, sizeof out, "%.1f s", static_cast<double>(d) / kNsPerSec);
  } else {
    std::snprintf(out, sizeof out, "%lld ms",
                  static_cast<long long>((d + kNsPerMs - 1) / kNsPerMs));
  }
  return out;
}

// The first line of a refused answer's body, safe to print.
std::string FirstLine(std::string_view body) {
  const size_t end = body.find_first_of("\r\n");
  std::string_view line = body.substr(0, end);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return PrintableText(line, kMaxErrorLineBytes);
}

Status HttpStatusError(int status, std::string message) {
  if (status == 404) return NotFoundError(std::move(message));
  if (status >= 500 && status <= 599) return UnavailableError(std::move(message));
  if (status >= 400 && status <= 499) return InvalidArgumentError(std::move(message));
  return UnknownError(std::move(message));
}

// Why a connection failed, which the library does not say (only
// Error::Connection, and its errno is gone by then): a connect of our own,
// bounded by `timeout`, asks the kernel (refused, no route) or the
// resolver (unknown host).
Status ConnectFailure(const ParsedUrl& url, const std::string& where, DurationNs timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return UnavailableError(where + ": host '" + PrintableText(url.host, 100) +
                            "': " + ::gai_strerror(rc));
  }
  int error = 0;
  UniqueFd fd(::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = errno;
  } else if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd p{.fd = fd.get(), .events = POLLOUT, .revents = 0};
      const int ms = static_cast<int>(std::min<DurationNs>(timeout / kNsPerMs + 1, 60'000));
      if (::poll(&p, 1, ms) == 1) {
        socklen_t len = sizeof error;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
      } else {
        error = ETIMEDOUT;
      }
    }
  }
  ::freeaddrinfo(found);
  if (error == ECONNREFUSED) return UnavailableError(where + ": connection refused");
  if (error == ETIMEDOUT) {
    return DeadlineExceededError(where + ": could not connect within " + DurationText(timeout));
  }
  if (error != 0) return UnavailableError(where + ": could not connect: " + std::strerror(error));
  // It connected this time: the first try met something passing.
  return UnavailableError(where + ": could not connect (it connects now: try again)");
}

}  // namespace

Result<std::string> NormalizeHttpUrl(const std::string& base_url) {
  WHARF_ASSIGN_OR_RETURN(ParsedUrl url, ParseUrl(base_url));
  return url.text;
}

Result<std::string> HttpGet(const std::string& base_url, const std::string& path_and_query,
                            DurationNs timeout, size_t max_body_bytes) {
  WHARF_ASSIGN_OR_RETURN(ParsedUrl url, ParseUrl(base_url));
  const std::string path = url.prefix +
                           (path_and_query.empty() || path_and_query.front() != '/' ? "/" : "") +
                           path_and_query;
  const std::string where = "GET " + url.text + PrintableText(path_and_query, 200);
  if (timeout <= 0) return InvalidArgumentError(where + ": the timeout must be positive");

  const Clock& clock = SystemClock::Get();
  const TimeNs started_ns = clock.NowNs();
  int status = 0;
  bool too_big = false;
  bool late = false;
  std::string body;
  httplib::Error error = httplib::Error::Success;
  try {
    httplib::ClientImpl client(url.host, url.port);
    const auto sec = static_cast<time_t>(timeout / kNsPerSec);
    const auto usec = static_cast<time_t>((timeout % kNsPerSec) / kNsPerUs);
    client.set_connection_timeout(sec, usec);
    client.set_read_timeout(sec, usec);
    client.set_write_timeout(sec, usec);
    client.set_keep_alive(false);
    client.set_follow_location(false);
    httplib::Result result = client.Get(
        path, httplib::Headers{{"Accept", "application/json"}},
        [&](const httplib::Response& response) {
          status = response.status;
          if (status == 200 && response.has_header("Content-Length")) {
            const std::string length = response.get_header_value("Content-Length");
            uint64_t n = 0;
            auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
            if (ec == std::errc() && n > max_body_bytes) {
              too_big = true;
              return false;
            }
          }
          return true;
        },
        [&](const char* data, size_t n) {
          if (status != 200) {
            // Enough for the first line of the error.
            body.append(
                data, std::min(n, kMaxErrorBodyBytes - std::min(body.size(), kMaxErrorBodyBytes)));
            return body.size() < kMaxErrorBodyBytes;
          }
          if (n > max_body_bytes - body.size()) {
            too_big = true;
            return false;
          }
          if (clock.NowNs() - started_ns > timeout) {
            late = true;
            return false;
          }
          body.append(data, n);
          return true;
        });
    error = result.error();
    if (result && status == 0) status = result->status;
  } catch (const std::exception& e) {
    return InternalError(where + ": " + e.what());
  }

  const DurationNs took_ns = clock.NowNs() - started_ns;
  if (too_big) {
    return ResourceExhaustedError(where + ": the body is over the limit of " +
                                  std::to_string(max_body_bytes) + " bytes");
  }
  if (late) return DeadlineExceededError(where + ": the body took over " + DurationText(timeout));
  if (status != 0 && status != 200) {
    std::string message = where + ": HTTP " + std::to_string(status);
    const std::string line = FirstLine(body);
    if (!line.empty()) message += ": " + line;
    return HttpStatusError(status, std::move(message));
  }
  switch (error) {
    case httplib::Error::Success:
      return body;
    case httplib::Error::Connection:
      return ConnectFailure(url, where, timeout);
    case httplib::Error::ConnectionTimeout:
      return DeadlineExceededError(where + ": could not connect within " + DurationText(timeout));
    case httplib::Error::Read:
      // A read that timed out and a connection closed early look alike.
      if (took_ns >= timeout) {
        return DeadlineExceededError(where + ": no answer within " + DurationText(timeout));
      }
      return UnavailableError(where + ": the connection closed before a whole answer came");
    case httplib::Error::Write:
      return UnavailableError(where + ": the connection closed while sending the request");
    default:
      return UnavailableError(where + ": " + httplib::to_string(error));
  }
}

}  // namespace wharf::mesh
