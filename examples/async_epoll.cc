// async_epoll: wharf inside the application's own epoll loop, one thread,
// no blocking wharf calls.
//
// Each endpoint's fd() is added to the application's epoll set, next to the
// application's own descriptors. fd() becomes readable when the endpoint has
// work: packets arrived, or a protocol timer (retransmission, a deadline) is
// due. The application then calls Poll(), which does that work and runs the
// callbacks of the operations it completed. Here one thread hosts both a
// server endpoint and a client endpoint, and the client's calls report back
// through Completion::OnComplete callbacks.
#include <sys/epoll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "wharf/endpoint.h"

namespace {

using namespace std::chrono_literals;

bool Check(const wharf::Status& s, const char* what) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return s.ok();
}

bool AddToEpoll(int epfd, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

struct Tally {
  int ok = 0;
  int failed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"async_epoll: wharf endpoints driven by the application's epoll loop"};
  int calls = 100;
  double timeout_s = 10;
  app.add_option("--calls", calls, "RPCs to issue, all at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", timeout_s, "Give up after this many seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  // Declared before the endpoints: a callback may still run while they close.
  Tally tally;
  auto server = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  auto client = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!Check(server.status(), "open server") || !Check(client.status(), "open client")) return 1;
  // The handler runs inside (*server)->Poll(), on this thread.
  wharf::Status served = (*server)->Serve(
      1, [](const wharf::RpcContext&, wharf::Buffer request) -> wharf::Result<wharf::Buffer> {
        return request;
      });
  if (!Check(served, "serve")) return 1;

  // The application's loop; its own descriptors (sockets, timers, pipes)
  // would sit in the same set.
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0 || !AddToEpoll(epfd, (*server)->fd()) || !AddToEpoll(epfd, (*client)->fd())) {
    std::fprintf(stderr, "epoll setup: %s\n", std::strerror(errno));
    return 1;
  }

  // Issue every call up front; each reports through its callback, which runs
  // inside the Poll() that completes it and takes the response from the copy
  // of the Completion it holds.
  for (int i = 0; i < calls; ++i) {
    std::string text = "call " + std::to_string(i);
    wharf::Completion c = (*client)->ICall((*server)->address(), 1, wharf::Buffer::Copy(text));
    c.OnComplete([&tally, c, text](const wharf::Status& s) mutable {
      if (s.ok() && c.TakeMessage().AsStringView() == text) {
        ++tally.ok;
      } else {
        ++tally.failed;
        std::fprintf(stderr, "%s: %s\n", text.c_str(),
                     s.ok() ? "wrong echo" : s.ToString().c_str());
      }
    });
  }

  auto give_up = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(timeout_s));
  int wakeups = 0;
  while (tally.ok + tally.failed < calls && std::chrono::steady_clock::now() < give_up) {
    epoll_event events[8];
    int n = epoll_wait(epfd, events, 8, 100);
    for (int i = 0; i < n; ++i) {
      ++wakeups;
      if (events[i].data.fd == (*server)->fd()) {
        (*server)->Poll();  // runs the echo handler for arrived requests
      } else {
        (*client)->Poll();  // runs the callbacks of completed calls
      }
    }
  }
  close(epfd);
  std::printf("%d calls: %d ok, %d failed, %d epoll wake-ups\n", calls, tally.ok, tally.failed,
              wakeups);
  return (tally.ok == calls) ? 0 : 1;
}
