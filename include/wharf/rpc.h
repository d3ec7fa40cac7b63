// wharf/rpc.h: the runtime of typed RPCs, the code protoc-gen-wharf
// generates from a .proto file calls into (docs/rpc.md). Applications use
// the generated Stub and Service classes; they meet this header's types in
// their signatures: PendingCall (an asynchronous call's typed handle),
// ServerContext and Responder (a handler's view of its call).
//
// Messages are protobuf messages, but nothing here includes protobuf: every
// function is a template over the message type, so that libwharf itself
// never links it. A request is serialized once, straight into a Buffer from
// Endpoint::AllocateBuffer: in managed mode that is the memory shared with
// wharfd, which sends it from there (no copy); embedded, a block with room
// for the frame's headers in front. An answer is parsed where it arrived.
//
// Errors are Status values that name the method ("/kv.Store/Get: ..."); no
// exception crosses this API.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wharf/buffer.h"
#include "wharf/completion.h"
#include "wharf/endpoint.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::rpc {

// One method of a service: its full path and the id it is called by, which
// protoc-gen-wharf derives from the path (CRC-32) and checks for collisions
// within a file and against wharf's reserved ids.
struct MethodInfo {
  std::string_view path;  // "/kv.Store/Get"
  uint32_t id = 0;
};

// Key/value pairs beside a call's request or a stream's opening
// (CallOptions::metadata); the server reads them from its ServerContext.
using ::wharf::kMaxMetadataBytes;
using ::wharf::kMaxMetadataEntries;
using ::wharf::Metadata;

// protobuf sizes messages in int: larger ones cannot be serialized.
inline constexpr size_t kMaxMessageBytes = std::numeric_limits<int>::max();

// "/kv.Store/Get: " + text: every error of a typed call says which method.
inline Status MethodError(const MethodInfo& method, StatusCode code, std::string_view text) {
  return Status(code, std::string(method.path) + ": " + std::string(text));
}
// The same for a status from elsewhere (the server, the transport), unless
// it names the method already (the server's decode errors do).
inline Status WithMethod(const MethodInfo& method, const Status& status) {
  if (status.ok() || std::string_view(status.message()).starts_with(method.path)) return status;
  return status.WithContext(method.path);
}

// Serializes `message` into a Buffer from `allocate(size)`, which returns
// `offset` bytes more than the message needs: the message goes after them.
// `what` is "request" or "response", for the error.
template <typename Message, typename Allocate>
Result<Buffer> EncodeInto(const Message& message, const MethodInfo& method, std::string_view what,
                          size_t offset, Allocate allocate) {
  const size_t size = message.ByteSizeLong();
  if (size > kMaxMessageBytes) {
    return MethodError(method, StatusCode::kInvalidArgument,
                       std::string(what) + " of " + std::to_string(size) +
                           " bytes is larger than protobuf can serialize");
  }
  Buffer buffer = allocate(size);
  if (buffer.size() != size + offset) {
    return MethodError(method, StatusCode::kResourceExhausted,
                       "no room for a " + std::to_string(size) + "-byte " + std::string(what));
  }
  // ByteSizeLong cached the sizes this uses.
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(buffer.data() + offset));
  return buffer;
}

// Serializes `message` into a Buffer from `endpoint` (see the file comment).
template <typename Message>
Result<Buffer> Encode(Endpoint& endpoint, const Message& message, const MethodInfo& method,
                      std::string_view what) {
  return EncodeInto(message, method, what, 0,
                    [&endpoint](size_t size) { return endpoint.AllocateBuffer(size); });
}

// Parses a `Message` from the `size` bytes at `data`, in place.
template <typename Message>
Result<Message> DecodeBytes(const std::byte* data, size_t size, const MethodInfo& method,
                            std::string_view what) {
  Message message;
  if (size > kMaxMessageBytes || !message.ParseFromArray(data, static_cast<int>(size))) {
    return MethodError(method, StatusCode::kInvalidArgument,
                       "malformed " + std::string(what) + " (" + std::to_string(size) +
                           " bytes are not a " + message.GetTypeName() + ")");
  }
  return message;
}

// Parses a `Message` from `bytes`, in place.
template <typename Message>
Result<Message> Decode(const Buffer& bytes, const MethodInfo& method, std::string_view what) {
  return DecodeBytes<Message>(bytes.data(), bytes.size(), method, what);
}

// Where a stub's calls go: a peer's address through an endpoint, or an open
// connection (whose endpoint is named too: its buffers come from there).
// Borrows both; they must outlive the stub.
class Channel {
 public:
  Channel(Endpoint& endpoint, std::string address)
      : endpoint_(&endpoint), address_(std::move(address)) {}
  Channel(Endpoint& endpoint, Connection& connection)
      : endpoint_(&endpoint), connection_(&connection) {}

  Endpoint& endpoint() const { return *endpoint_; }
  // The peer's address, or the connection's peer.
  std::string peer() const { return connection_ != nullptr ? connection_->peer() : address_; }

  Completion ICall(const MethodInfo& method, Buffer request, const CallOptions& options) const {
    return connection_ != nullptr ? connection_->ICall(method.id, std::move(request), options)
                                  : endpoint_->ICall(address_, method.id, std::move(request), options);
  }
  Result<Buffer> Call(const MethodInfo& method, Buffer request, const CallOptions& options) const {
    return connection_ != nullptr ? connection_->Call(method.id, std::move(request), options)
                                  : endpoint_->Call(address_, method.id, std::move(request), options);
  }

 private:
  Endpoint* endpoint_;
  Connection* connection_ = nullptr;
  std::string address_;
};

// A blocking typed call: encode, call, decode.
template <typename Reply, typename Request>
Result<Reply> CallMethod(const Channel& channel, const MethodInfo& method, const Request& request,
                         const CallOptions& options) {
  Result<Buffer> bytes = Encode(channel.endpoint(), request, method, "request");
  if (!bytes.ok()) return bytes.status();
  Result<Buffer> answer = channel.Call(method, std::move(*bytes), options);
  if (!answer.ok()) return WithMethod(method, answer.status());
  return Decode<Reply>(*answer, method, "response");
}

// The handle of an asynchronous typed call (Stub::AsyncX). Copyable like
// the Completion it wraps; wait on it, poll it, or cancel it.
template <typename Reply>
class PendingCall {
 public:
  PendingCall() = default;
  PendingCall(Completion completion, const MethodInfo& method)
      : completion_(std::move(completion)), method_(&method) {}
  // Failed before it left (the request could not be encoded).
  PendingCall(Status failed, const MethodInfo& method) : failed_(std::move(failed)), method_(&method) {}

  // False for a default-constructed handle (no call).
  bool valid() const { return completion_.valid() || !failed_.ok(); }
  bool done() const { return !failed_.ok() || completion_.done(); }
  // Drives the endpoint once (non-blocking), then returns done().
  bool Poll() { return !failed_.ok() || completion_.Poll(); }
  // Blocks until the answer or `timeout`; kDeadlineExceeded if the wait
  // timed out (the call goes on: wait again, or Cancel). Takes the answer:
  // call it once per answer.
  Result<Reply> Wait(std::chrono::nanoseconds timeout = Completion::kForever) {
    if (!failed_.ok()) return failed_;
    Status s = completion_.Wait(timeout);
    if (!s.ok()) return WithMethod(*method_, s);
    Buffer answer = completion_.TakeMessage();
    return Decode<Reply>(answer, *method_, "response");
  }
  // Withdraws the call: Wait returns kCancelled, and the server's handler
  // sees ServerContext::cancelled() once the withdrawal reached it.
  void Cancel() { completion_.Cancel(); }
  Completion& completion() { return completion_; }

 private:
  Completion completion_;
  Status failed_;
  const MethodInfo* method_ = nullptr;
};

template <typename Reply, typename Request>
PendingCall<Reply> StartMethod(const Channel& channel, const MethodInfo& method,
                               const Request& request, const CallOptions& options) {
  Result<Buffer> bytes = Encode(channel.endpoint(), request, method, "request");
  if (!bytes.ok()) return PendingCall<Reply>(bytes.status(), method);
  return PendingCall<Reply>(channel.ICall(method, std::move(*bytes), options), method);
}

// The callback form: `done(answer)` runs once, on the thread that completes
// the call (one driving the endpoint), or here if it failed before leaving.
template <typename Reply, typename Request>
void CallMethodThen(const Channel& channel, const MethodInfo& method, const Request& request,
                    std::function<void(Result<Reply>)> done, const CallOptions& options) {
  Result<Buffer> bytes = Encode(channel.endpoint(), request, method, "request");
  if (!bytes.ok()) {
    done(bytes.status());
    return;
  }
  Completion completion = channel.ICall(method, std::move(*bytes), options);
  // The callback holds a copy of the handle to take the answer from it.
  completion.OnComplete([completion, &method, done = std::move(done)](const Status& s) mutable {
    if (!s.ok()) {
      done(WithMethod(method, s));
      return;
    }
    Buffer answer = completion.TakeMessage();
    done(Decode<Reply>(answer, method, "response"));
  });
}

// What a handler knows about the call it serves.
class ServerContext {
 public:
  ServerContext(const RpcContext& context, const MethodInfo& method)
      : peer_(context.peer),
        method_(&method),
        deadline_(context.deadline),
        metadata_(context.metadata) {}

  // The client's address ("homa://1.2.3.4:5678"), valid during the handler
  // call (copy it to keep it).
  std::string_view peer() const { return peer_; }
  const MethodInfo& method() const { return *method_; }
  // When the client stops waiting (time_point::max(): it set no deadline).
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  bool deadline_passed() const { return std::chrono::steady_clock::now() >= deadline_; }
  // What the client sent (CallOptions::metadata). During the handler
  // call, or, for a stream, as long as the stream.
  const Metadata& metadata() const {
    static const Metadata kNone;
    return metadata_ != nullptr ? *metadata_ : kNone;
  }

 private:
  std::string_view peer_;
  const MethodInfo* method_;
  std::chrono::steady_clock::time_point deadline_;
  const Metadata* metadata_;
};

// The right to answer one call later, typed. Move-only; any thread.
// Dropped unanswered, the client gets kInternal.
template <typename Reply>
class Responder {
 public:
  Responder(::wharf::Responder inner, Endpoint& endpoint, const MethodInfo& method)
      : inner_(std::move(inner)), endpoint_(&endpoint), method_(&method) {}

  // Sends the answer or the error. Once; later calls fail (kFailedPrecondition).
  Status Respond(const Result<Reply>& answer) {
    if (!answer.ok()) return inner_.Respond(answer.status());
    Result<Buffer> bytes = Encode(*endpoint_, *answer, *method_, "response");
    if (!bytes.ok()) return inner_.Respond(bytes.status());
    return inner_.Respond(std::move(*bytes));
  }
  // True once the client withdrew the call or its deadline passed.
  bool cancelled() const { return inner_.cancelled(); }

 private:
  ::wharf::Responder inner_;
  Endpoint* endpoint_;
  const MethodInfo* method_;
};

// Registers one method of a generated Service: the request is parsed (a
// malformed one is answered kInvalidArgument naming the method, and never
// reaches the handler), then `handle(context, request)` returns the answer.
// An Endpoint::Serve handler: it runs where the request is dispatched, with
// no hand-over to another thread.
template <typename Request, typename Reply, typename Handle>
Status ServeMethod(Endpoint& endpoint, const MethodInfo& method, Handle handle) {
  return endpoint.Serve(
      method.id, [&endpoint, &method, handle = std::move(handle)](
                     const RpcContext& context, Buffer bytes) -> Result<Buffer> {
        Result<Request> request = Decode<Request>(bytes, method, "request");
        if (!request.ok()) return request.status();
        Result<Reply> reply = handle(ServerContext(context, method), *request);
        if (!reply.ok()) return reply.status();
        return Encode(endpoint, *reply, method, "response");
      });
}

// The same for a generated AsyncService: `handle(context, request,
// responder)` keeps the responder and answers when it likes.
template <typename Request, typename Reply, typename Handle>
Status ServeMethodLater(Endpoint& endpoint, const MethodInfo& method, Handle handle) {
  return endpoint.ServeAsync(
      method.id, [&endpoint, &method, handle = std::move(handle)](
                     const RpcContext& context, Buffer bytes, ::wharf::Responder responder) {
        Result<Request> request = Decode<Request>(bytes, method, "request");
        if (!request.ok()) {
          responder.Respond(request.status()).IgnoreError();
          return;
        }
        handle(ServerContext(context, method), std::move(*request),
               Responder<Reply>(std::move(responder), endpoint, method));
      });
}

// "/kv.Store/Get is not implemented": what a method nobody overrode answers.
inline Status NotImplemented(const MethodInfo& method) {
  return MethodError(method, StatusCode::kUnimplemented, "not implemented by this server");
}

}  // namespace wharf::rpc
