// bench/grpc/grpc_load_transport.cc: the completion-queue client of
// wharf-grpc-node (grpc_load_transport.h).
#include "bench/grpc/grpc_load_transport.h"

#include <algorithm>

#include "bench/grpc/echo_server.h"

namespace wharf::bench::grpc_node {
namespace {

// An RPC unanswered this long fails (DEADLINE_EXCEEDED), as wharf's do.
constexpr DurationNs kRpcDeadlineNs = 10 * kNsPerSec;
// A Wait blocks at most this long at a time, so that a deadline on the
// injected Clock is honoured even if gRPC's clock runs differently.
constexpr DurationNs kMaxWaitSliceNs = 50 * kNsPerMs;

gpr_timespec In(DurationNs ns) {
  // gRPC keeps deadlines in whole milliseconds, rounded up: "now" would
  // wait up to 1 ms for nothing (a closed loop at 1 in flight lost 1 ms per
  // RPC), while a deadline already past returns at once.
  if (ns <= 0) return gpr_inf_past(GPR_CLOCK_MONOTONIC);
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(std::max<DurationNs>(ns, 0), GPR_TIMESPAN));
}

std::shared_ptr<grpc::Channel> Connect(const std::string& target) {
  grpc::ChannelArguments args;
  // Messages of 1 MB and more (the workloads' largest).
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  args.SetMaxSendMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  // Each client thread gets its own connection, not a share of one.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A peer whose server is not up yet is retried soon, not after gRPC's
  // default 1 s back-off (the nodes of a run start together).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

GrpcLoadTransport::GrpcLoadTransport(const Clock& clock, int max_outstanding,
                                     uint64_t response_bytes)
    : clock_(clock), response_bytes_(response_bytes), by_tag_(static_cast<size_t>(std::max(1, max_outstanding)), nullptr) {
  // Room for every tag plus the warm-up calls; more only if the driver
  // abandons calls that are still in flight.
  for (size_t i = 0; i < by_tag_.size(); ++i) calls_.push_back(std::make_unique<Call>());
  for (auto& call : calls_) free_.push_back(call.get());
}

Result<std::unique_ptr<GrpcLoadTransport>> GrpcLoadTransport::Open(
    const bench::NodeTransportConfig& config, const Clock& clock, int max_outstanding,
    DurationNs warm_up_ns) {
  if (config.proto != "grpc") {
    return InvalidArgumentError("--proto " + config.proto + ": this node speaks only grpc");
  }
  if (config.host < 0 || config.host >= static_cast<int>(config.addresses.size())) {
    return InvalidArgumentError("grpc client: host is not in the addresses");
  }
  std::unique_ptr<GrpcLoadTransport> t(
      new GrpcLoadTransport(clock, max_outstanding, config.response_bytes));
  for (size_t h = 0; h < config.addresses.size(); ++h) {
    t->stubs_.push_back(static_cast<int>(h) == config.host
                            ? nullptr
                            : wharf::bench::Echo::NewStub(Connect(config.addresses[h] + ":" +
                                                                  std::to_string(config.port))));
  }
  for (size_t h = 0; h < t->stubs_.size(); ++h) {
    if (t->stubs_[h] != nullptr) t->Start(t->TakeCall(), static_cast<int>(h), 1);
  }
  const TimeNs until = clock.NowNs() + warm_up_ns;
  for (TimeNs now = clock.NowNs(); t->in_flight_ > 0 && now < until; now = clock.NowNs()) {
    void* tag = nullptr;
    bool ok = false;
    if (t->queue_.AsyncNext(&tag, &ok, In(std::min(until - now, kMaxWaitSliceNs))) ==
        grpc::CompletionQueue::GOT_EVENT) {
      t->Finish(static_cast<Call*>(tag), nullptr);
    }
  }
  return t;
}

GrpcLoadTransport::~GrpcLoadTransport() {
  for (auto& call : calls_) {
    if (call->reader != nullptr) call->context->TryCancel();
  }
  queue_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
  }
}

GrpcLoadTransport::Call* GrpcLoadTransport::TakeCall() {
  if (free_.empty()) {
    calls_.push_back(std::make_unique<Call>());
    return calls_.back().get();
  }
  Call* call = free_.back();
  free_.pop_back();
  return call;
}

void GrpcLoadTransport::Start(Call* call, int server, uint64_t bytes) {
  if (payload_.size() < bytes) payload_.assign(bytes, 'q');
  call->bytes = bytes;
  call->counted = false;
  call->context.emplace();
  call->context->set_deadline(In(kRpcDeadlineNs));
  // A connection still being set up is waited for rather than failed.
  call->context->set_wait_for_ready(true);
  call->request.set_payload(payload_.data(), bytes);
  call->response.Clear();
  call->reader = stubs_[static_cast<size_t>(server)]->PrepareAsyncEcho(&*call->context,
                                                                       call->request, &queue_);
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, call);
  ++in_flight_;
}

Status GrpcLoadTransport::Issue(uint32_t tag, int server, uint64_t bytes) {
  if (tag >= by_tag_.size() || server < 0 || server >= static_cast<int>(stubs_.size()) ||
      stubs_[static_cast<size_t>(server)] == nullptr) {
    return InvalidArgumentError("tag or server out of range");
  }
  if (bytes > kMaxEchoBytes) return InvalidArgumentError("request above 64 MiB");
  if (Call* old = by_tag_[tag]; old != nullptr) {
    // The driver gave up on it and reuses its tag: cancel it, and ignore
    // its completion when it comes.
    old->counted = false;
    old->context->TryCancel();
  }
  Call* call = TakeCall();
  Start(call, server, bytes);
  call->tag = tag;
  call->counted = true;
  by_tag_[tag] = call;
  return OkStatus();
}

bool GrpcLoadTransport::Finish(Call* call, bench::CompletionSink* sink) {
  --in_flight_;
  const bool counted = call->counted;
  bool ok = false;
  if (counted) {
    by_tag_[call->tag] = nullptr;
    if (!call->status.ok()) {
      if (first_error_.empty()) {
        first_error_ = "grpc: code " + std::to_string(static_cast<int>(call->status.error_code())) +
                       ": " + call->status.error_message();
      }
    } else if (const uint64_t want = response_bytes_ > 0 ? response_bytes_ : call->bytes;
               call->response.payload().size() != want) {
      if (first_error_.empty()) {
        first_error_ = "grpc: echo mismatch: sent " + std::to_string(call->bytes) +
                       " B, expected " + std::to_string(want) + " B back, got " +
                       std::to_string(call->response.payload().size()) + " B";
      }
    } else {
      ok = true;
    }
  }
  call->reader.reset();
  call->counted = false;
  free_.push_back(call);
  if (counted && sink != nullptr) sink->Done(call->tag, ok);
  return counted;
}

void GrpcLoadTransport::Wait(TimeNs deadline, bench::CompletionSink& sink) {
  int done = 0;
  while (true) {
    // Once something finished, only take what is already there.
    const DurationNs wait =
        done > 0 ? 0 : std::clamp<DurationNs>(deadline - clock_.NowNs(), 0, kMaxWaitSliceNs);
    void* tag = nullptr;
    bool ok = false;
    const grpc::CompletionQueue::NextStatus status = queue_.AsyncNext(&tag, &ok, In(wait));
    if (status == grpc::CompletionQueue::GOT_EVENT) {
      // A client call's Finish always comes back with ok true; its status
      // says how the call went.
      if (Finish(static_cast<Call*>(tag), &sink)) ++done;
      continue;
    }
    if (status == grpc::CompletionQueue::SHUTDOWN || done > 0 || clock_.NowNs() >= deadline) {
      return;
    }
  }
}

Result<std::unique_ptr<bench::LoadTransport>> OpenGrpcLoadTransport(
    const bench::NodeTransportConfig& config, const Clock& clock, int max_outstanding) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<GrpcLoadTransport> t,
                         GrpcLoadTransport::Open(config, clock, max_outstanding));
  return std::unique_ptr<bench::LoadTransport>(std::move(t));
}

}  // namespace wharf::bench::grpc_node
