// bench/grpc/echo_server.cc: the completion-queue echo server (echo_server.h).
// Each call is an EchoCall that posts itself for the next Echo, answers it,
// and deletes itself when the answer is sent (gRPC's async "CallData").
#include "bench/grpc/echo_server.h"

namespace wharf::bench::grpc_node {
namespace {

// Calls posted per queue at start: how many requests a queue can accept
// before its thread has replaced the ones it is answering.
constexpr int kCallsPerQueue = 64;

class EchoCall {
 public:
  // `fixed_bytes` > 0: the answer to a request that names no size.
  EchoCall(wharf::bench::Echo::AsyncService* service, grpc::ServerCompletionQueue* cq,
           std::atomic<uint64_t>* served, uint64_t fixed_bytes)
      : service_(service),
        cq_(cq),
        served_(served),
        fixed_bytes_(fixed_bytes),
        responder_(&context_) {
    service_->RequestEcho(&context_, &request_, &responder_, cq_, cq_, this);
  }

  // Called with the queue's result for this call's tag.
  void Proceed(bool ok) {
    if (state_ == State::kFinishing || !ok) {
      // Answer sent (or the server is shutting down and the post failed).
      delete this;
      return;
    }
    // Post the next call before answering, so the queue never runs dry.
    new EchoCall(service_, cq_, served_, fixed_bytes_);
    state_ = State::kFinishing;
    grpc::Status status = grpc::Status::OK;
    const uint64_t wanted = request_.has_response_bytes() ? request_.response_bytes() : fixed_bytes_;
    if (wanted == 0 && !request_.has_response_bytes()) {
      response_.set_payload(std::move(*request_.mutable_payload()));
    } else if (wanted <= kMaxEchoBytes) {
      response_.mutable_payload()->assign(wanted, 'r');
    } else {
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "response_bytes above 64 MiB");
    }
    served_->fetch_add(1, std::memory_order_relaxed);
    responder_.Finish(response_, status, this);
  }

 private:
  enum class State { kWaiting, kFinishing };

  wharf::bench::Echo::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
  std::atomic<uint64_t>* served_;
  const uint64_t fixed_bytes_;
  grpc::ServerContext context_;
  wharf::bench::EchoRequest request_;
  wharf::bench::EchoResponse response_;
  grpc::ServerAsyncResponseWriter<wharf::bench::EchoResponse> responder_;
  State state_ = State::kWaiting;
};

}  // namespace

Result<std::unique_ptr<EchoServer>> EchoServer::Start(const std::string& address, int threads,
                                                      uint64_t response_bytes) {
  if (threads < 1 || threads > 64) {
    return InvalidArgumentError("grpc server threads: expected 1..64, got " +
                                std::to_string(threads));
  }
  if (response_bytes > kMaxEchoBytes) {
    return InvalidArgumentError("grpc server: response size above 64 MiB");
  }
  std::unique_ptr<EchoServer> server(new EchoServer());
  server->response_bytes_ = response_bytes;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(&server->service_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  for (int i = 0; i < threads; ++i) server->queues_.push_back(builder.AddCompletionQueue());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    // Shut the queues down cleanly even though nothing was served.
    if (server->server_ != nullptr) server->server_->Shutdown();
    for (auto& cq : server->queues_) cq->Shutdown();
    for (auto& cq : server->queues_) {
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) {
      }
    }
    server->shut_down_ = true;
    return UnavailableError("grpc server: cannot listen on " + address);
  }
  for (auto& cq : server->queues_) {
    for (int i = 0; i < kCallsPerQueue; ++i) {
      new EchoCall(&server->service_, cq.get(), &server->served_, server->response_bytes_);
    }
  }
  for (auto& cq : server->queues_) {
    server->threads_.emplace_back([s = server.get(), q = cq.get()] { s->Serve(q); });
  }
  return server;
}

void EchoServer::Serve(grpc::ServerCompletionQueue* cq) {
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) static_cast<EchoCall*>(tag)->Proceed(ok);
}

void EchoServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Calls still open get a short grace, then are cancelled.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  for (auto& cq : queues_) cq->Shutdown();
  for (auto& thread : threads_) thread.join();
}

EchoServer::~EchoServer() { Shutdown(); }

Result<std::string> GrpcServerAddress(const bench::NodeTransportConfig& config) {
  if (config.proto != "grpc") {
    return InvalidArgumentError("--proto " + config.proto + ": this node speaks only grpc");
  }
  if (config.host < 0 || config.host >= static_cast<int>(config.addresses.size())) {
    return InvalidArgumentError("grpc server: host is not in the addresses");
  }
  return config.addresses[static_cast<size_t>(config.host)] + ":" + std::to_string(config.port);
}

Result<std::unique_ptr<bench::EchoServer>> StartGrpcEchoServer(
    const bench::NodeTransportConfig& config) {
  WHARF_ASSIGN_OR_RETURN(std::string address, GrpcServerAddress(config));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<EchoServer> server,
                         EchoServer::Start(address, kServerThreads, config.response_bytes));
  return std::unique_ptr<bench::EchoServer>(std::move(server));
}

}  // namespace wharf::bench::grpc_node
