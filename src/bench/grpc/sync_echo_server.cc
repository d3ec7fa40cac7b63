// bench/grpc/sync_echo_server.cc: the synchronous-API echo server
// (sync_echo_server.h).
#include "bench/grpc/sync_echo_server.h"

#include <chrono>

#include "bench/grpc/echo_server.h"

namespace wharf::bench::grpc_node {

grpc::Status SyncEchoServer::Service::Echo(grpc::ServerContext*,
                                           const wharf::bench::EchoRequest* request,
                                           wharf::bench::EchoResponse* response) {
  // The same answers as the completion-queue server's (echo_server.cc).
  const uint64_t wanted =
      request->has_response_bytes() ? request->response_bytes() : response_bytes;
  if (wanted > kMaxEchoBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "response_bytes above 64 MiB");
  }
  if (wanted == 0 && !request->has_response_bytes()) {
    response->set_payload(request->payload());
  } else {
    response->mutable_payload()->assign(wanted, 'r');
  }
  served.fetch_add(1, std::memory_order_relaxed);
  return grpc::Status::OK;
}

Result<std::unique_ptr<SyncEchoServer>> SyncEchoServer::Start(const std::string& address,
                                                             uint64_t response_bytes) {
  if (response_bytes > kMaxEchoBytes) {
    return InvalidArgumentError("grpc server: response size above 64 MiB");
  }
  std::unique_ptr<SyncEchoServer> server(new SyncEchoServer());
  server->service_.response_bytes = response_bytes;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(&server->service_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    if (server->server_ != nullptr) server->server_->Shutdown();
    server->shut_down_ = true;
    return UnavailableError("grpc server: cannot listen on " + address);
  }
  return server;
}

void SyncEchoServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_->Wait();
}

SyncEchoServer::~SyncEchoServer() { Shutdown(); }

Result<std::unique_ptr<bench::EchoServer>> StartGrpcSyncEchoServer(
    const bench::NodeTransportConfig& config) {
  WHARF_ASSIGN_OR_RETURN(std::string address, GrpcServerAddress(config));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<SyncEchoServer> server,
                         SyncEchoServer::Start(address, config.response_bytes));
  return std::unique_ptr<bench::EchoServer>(std::move(server));
}

}  // namespace wharf::bench::grpc_node
