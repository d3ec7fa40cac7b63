// daemon/testing/good_pair.h: GoodPair, two well-behaved managed
// applications of one wharfd (a server serving an echo method and accepting
// a connection, and a client with that connection open) whose traffic the
// isolation tests check while a rogue application misbehaves beside them.
// Exchange() does one RPC and one message each way over the connection and
// checks every byte; it returns a Status (not gtest assertions) so any
// thread may call it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "client/testing/server_thread.h"
#include "wharf/endpoint.h"

namespace wharf::daemon::testing {

class GoodPair {
 public:
  static constexpr uint32_t kEchoMethod = 7;

  static Result<std::unique_ptr<GoodPair>> Start(const std::string& socket) {
    std::unique_ptr<GoodPair> p(new GoodPair());
    auto open = [&](std::string address) {
      return Endpoint::Open(
          {.address = std::move(address), .hosting = Hosting::kManaged, .daemon_socket = socket});
    };
    WHARF_ASSIGN_OR_RETURN(p->server_, open("homa://0.0.0.0:0/good-server"));
    WHARF_RETURN_IF_ERROR(p->server_->Serve(
        kEchoMethod, [](const RpcContext&, Buffer req) -> Result<Buffer> {
          return Buffer::Copy("re:" + std::string(req.AsStringView()));
        }));
    WHARF_RETURN_IF_ERROR(p->server_->Listen());
    p->running_ = std::make_unique<wharf::testing::ServerThread>(*p->server_);
    WHARF_ASSIGN_OR_RETURN(p->client_, open("homa://0.0.0.0:0"));
    Result<std::unique_ptr<Connection>> accepted = UnavailableError("not accepted");
    std::thread acceptor([&] { accepted = p->server_->Accept(std::chrono::seconds(5)); });
    Result<std::unique_ptr<Connection>> conn = p->client_->Connect(p->server_->address());
    acceptor.join();
    WHARF_RETURN_IF_ERROR(conn.status());
    WHARF_RETURN_IF_ERROR(accepted.status());
    p->conn_ = std::move(*conn);
    p->accepted_ = std::move(*accepted);
    return p;
  }

  ~GoodPair() {
    conn_.reset();
    accepted_.reset();
    running_.reset();
  }

  // One round: an RPC, a message client -> server and one back, each
  // checked byte for byte; the first failure, naming the step.
  Status Exchange(uint64_t round) {
    const std::chrono::seconds limit(5);
    const std::string tag = std::to_string(round);
    Result<Buffer> r = client_->Call(server_->address(), kEchoMethod, Buffer::Copy("ping" + tag),
                                     {.deadline = limit});
    if (!r.ok()) return r.status().WithContext("good RPC " + tag);
    if (r->AsStringView() != "re:ping" + tag) {
      return DataLossError("good RPC " + tag + " answered '" + std::string(r->AsStringView()) + "'");
    }
    WHARF_RETURN_IF_ERROR(conn_->Send(Buffer::Copy("up" + tag)));
    Result<Buffer> up = accepted_->Recv(limit);
    if (!up.ok()) return up.status().WithContext("good message up " + tag);
    if (up->AsStringView() != "up" + tag) return DataLossError("good message up " + tag + " garbled");
    WHARF_RETURN_IF_ERROR(accepted_->Send(Buffer::Copy("down" + tag)));
    Result<Buffer> down = conn_->Recv(limit);
    if (!down.ok()) return down.status().WithContext("good message down " + tag);
    if (down->AsStringView() != "down" + tag) {
      return DataLossError("good message down " + tag + " garbled");
    }
    return OkStatus();
  }

  Endpoint& server() { return *server_; }
  Endpoint& client() { return *client_; }

 private:
  GoodPair() = default;

  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<wharf::testing::ServerThread> running_;
  std::unique_ptr<Endpoint> client_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<Connection> accepted_;
};

}  // namespace wharf::daemon::testing
