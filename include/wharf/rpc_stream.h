// wharf/rpc_stream.h: typed streaming RPCs, what protoc-gen-wharf generates
// for client-, server- and bidirectional streaming methods calls into
// (docs/rpc.md). Each call is a stream connection to the server's endpoint
// (ConnectOptions::stream_method) carrying protobuf messages in order, with
// flow control, deadlines, cancellation both ways and metadata
// (wharf/raw_stream.h has the protocol).
//
// Client: the stub returns a ClientStream. Write (waits while a window of
// written messages is unread, unless called inside a callback of the
// endpoint), WritesDone, Read until it returns an empty optional, then
// Finish for the server's status. Dropping an unfinished ClientStream
// cancels the call.
//
// Server: a handler receives a ServerStreamPtr and keeps it as long as it
// likes; it runs on the thread driving the endpoint, so it must not block
// there: read with OnRead (a callback per message), or hand the stream to a
// thread of its own that calls Read. Write never blocks; Finish ends the
// call. A stream dropped unfinished answers kInternal.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "wharf/buffer.h"
#include "wharf/raw_stream.h"
#include "wharf/result.h"
#include "wharf/rpc.h"
#include "wharf/status.h"

namespace wharf::rpc {

// Serializes `message` into a stream message (after its kind byte), from
// the endpoint's buffers: in managed mode the shared heap.
template <typename Message>
Result<Buffer> EncodeStreamMessage(RawStream& stream, const Message& message,
                                   const MethodInfo& method, std::string_view what) {
  return EncodeInto(message, method, what, 1,
                    [&stream](size_t size) { return stream.NewMessage(size); });
}

// Parses a `Message` from a stream message (after its kind byte), in place.
template <typename Message>
Result<Message> DecodeStreamMessage(const Buffer& bytes, const MethodInfo& method,
                                    std::string_view what) {
  return DecodeBytes<Message>(bytes.data() + 1, bytes.size() - 1, method, what);
}

// The client's end of one streaming call. Move-only; one thread at a time
// (the stream underneath is thread-safe, the typed handle is not).
template <typename Request, typename Reply>
class ClientStream {
 public:
  ClientStream(std::shared_ptr<RawStream> raw, const MethodInfo& method)
      : raw_(std::move(raw)), method_(&method) {}
  ClientStream(ClientStream&&) noexcept = default;
  ClientStream& operator=(ClientStream&& other) noexcept {
    if (this != &other) {
      Abandon();
      raw_ = std::move(other.raw_);
      method_ = other.method_;
    }
    return *this;
  }
  ~ClientStream() { Abandon(); }

  // Sends one request; waits while a window of earlier ones is unread.
  Status Write(const Request& request) {
    Result<Buffer> bytes = EncodeStreamMessage(*raw_, request, *method_, "request");
    if (!bytes.ok()) return bytes.status();
    WHARF_RETURN_IF_ERROR(raw_->Write(std::move(*bytes)));
    return raw_->AwaitWritable();
  }
  // No more requests; the server's Read then returns an empty optional.
  Status WritesDone() { return raw_->WritesDone(); }
  // The next reply; an empty optional once the server finished with OK;
  // the server's error (or kDeadlineExceeded, kUnavailable...) otherwise.
  // `timeout` bounds this wait only (kDeadlineExceeded; the call goes on).
  Result<std::optional<Reply>> Read(std::chrono::nanoseconds timeout = Completion::kForever) {
    RawStream::Read read = raw_->ReadNext(timeout);
    if (!read.ok()) return read.status();
    if (!read->has_value()) return std::optional<Reply>();
    Result<Reply> reply = DecodeStreamMessage<Reply>(**read, *method_, "response");
    if (!reply.ok()) {
      raw_->Cancel(reply.status());
      return reply.status();
    }
    return std::optional<Reply>(std::move(*reply));
  }
  // Half-closes if not yet, drops unread replies and returns the server's
  // status.
  Status Finish(std::chrono::nanoseconds timeout = Completion::kForever) {
    raw_->WritesDone().IgnoreError();
    return raw_->AwaitStatus(timeout);
  }
  // For a client-streaming call: half-close, then the one reply and the
  // status.
  Result<Reply> CloseAndRecv() {
    WHARF_RETURN_IF_ERROR(raw_->WritesDone());
    Result<std::optional<Reply>> reply = Read();
    if (!reply.ok()) return reply.status();
    WHARF_RETURN_IF_ERROR(Finish());
    if (!reply->has_value()) {
      return MethodError(*method_, StatusCode::kInternal, "the server finished without a reply");
    }
    return std::move(**reply);
  }
  // Gives up: the server sees cancelled(), and reads here fail kCancelled.
  void Cancel() {
    raw_->Cancel(MethodError(*method_, StatusCode::kCancelled, "cancelled by the client"));
  }
  const std::string& peer() const { return raw_->peer(); }
  RawStream& raw() { return *raw_; }

 private:
  void Abandon() {
    if (raw_ != nullptr) {
      raw_->Cancel(MethodError(*method_, StatusCode::kCancelled, "the client dropped the stream"));
    }
  }

  std::shared_ptr<RawStream> raw_;
  const MethodInfo* method_;
};

// The server's end of one streaming call. Shared (ServerStreamPtr) between
// the handler and whatever it hands the stream to; thread-safe.
template <typename Request, typename Reply>
class ServerStream {
 public:
  using ReadResult = Result<std::optional<Request>>;

  ServerStream(std::shared_ptr<RawStream> raw, const MethodInfo& method)
      : raw_(std::move(raw)),
        method_(&method),
        context_(RpcContext{.peer = raw_->peer(),
                            .method = method.id,
                            .deadline = raw_->deadline(),
                            .metadata = &raw_->metadata()},
                 method) {}
  ServerStream(const ServerStream&) = delete;
  ServerStream& operator=(const ServerStream&) = delete;
  // Unfinished, the client gets kInternal.
  ~ServerStream() {
    raw_->OnRead(nullptr);  // its callback points here
    raw_->Finish(MethodError(*method_, StatusCode::kInternal,
                             "the server dropped the stream without finishing it"))
        .IgnoreError();
  }

  const ServerContext& context() const { return context_; }

  // The next request; an empty optional once the client half-closed;
  // kCancelled once it cancelled, kUnavailable if it went away. A
  // malformed request finishes the call with kInvalidArgument (the client
  // gets it too). Blocks: not inside the handler (use OnRead there).
  ReadResult Read(std::chrono::nanoseconds timeout = Completion::kForever) {
    return Typed(raw_->ReadNext(timeout));
  }
  // Every request from now on, then the end, goes to `fn`, on the thread
  // driving the endpoint.
  void OnRead(std::function<void(ReadResult)> fn) {
    if (!fn) {
      raw_->OnRead(nullptr);
      return;
    }
    // `this` only: the receive loop holds the callback, which must not keep
    // this handle (and so an unfinished call) alive; the destructor takes
    // the callback back.
    raw_->OnRead([this, fn = std::move(fn)](RawStream::Read read) { fn(Typed(std::move(read))); });
  }
  // Sends one reply (queued behind the window; never blocks).
  Status Write(const Reply& reply) {
    Result<Buffer> bytes = EncodeStreamMessage(*raw_, reply, *method_, "response");
    if (!bytes.ok()) return bytes.status();
    return raw_->Write(std::move(*bytes));
  }
  // Ends the call with `status` (after what was written). Once.
  Status Finish(const Status& status = OkStatus()) { return raw_->Finish(status); }
  // Write then Finish: a client-streaming call's answer.
  Status WriteAndFinish(const Reply& reply) {
    WHARF_RETURN_IF_ERROR(Write(reply));
    return Finish();
  }
  // The client cancelled, went away, or its deadline passed.
  bool cancelled() const { return raw_->cancelled(); }
  // Written bytes the client has not made room for yet.
  size_t queued_bytes() const { return raw_->queued_bytes(); }

 private:
  ReadResult Typed(RawStream::Read read) {
    if (!read.ok()) return read.status();
    if (!read->has_value()) return std::optional<Request>();
    Result<Request> request = DecodeStreamMessage<Request>(**read, *method_, "request");
    if (!request.ok()) {
      raw_->Finish(request.status()).IgnoreError();
      return request.status();
    }
    return std::optional<Request>(std::move(*request));
  }

  std::shared_ptr<RawStream> raw_;
  const MethodInfo* method_;
  ServerContext context_;
};

template <typename Request, typename Reply>
using ServerStreamPtr = std::shared_ptr<ServerStream<Request, Reply>>;

// Opens a client- or bidirectional-streaming call.
template <typename Request, typename Reply>
Result<ClientStream<Request, Reply>> OpenStream(const Channel& channel, const MethodInfo& method,
                                                const CallOptions& options) {
  Result<std::shared_ptr<RawStream>> raw =
      RawStream::Open(channel.endpoint(), channel.peer(), method.id, method.path,
                      options.deadline, options.metadata);
  if (!raw.ok()) return WithMethod(method, raw.status());
  return ClientStream<Request, Reply>(std::move(*raw), method);
}

// Opens a server-streaming call: the one request, then the half-close.
template <typename Request, typename Reply>
Result<ClientStream<Request, Reply>> OpenServerStream(const Channel& channel,
                                                      const MethodInfo& method,
                                                      const Request& request,
                                                      const CallOptions& options) {
  Result<ClientStream<Request, Reply>> stream = OpenStream<Request, Reply>(channel, method, options);
  if (!stream.ok()) return stream.status();
  WHARF_RETURN_IF_ERROR(stream->Write(request));
  WHARF_RETURN_IF_ERROR(stream->WritesDone());
  return stream;
}

// Registers a client- or bidirectional-streaming method of a generated
// Service: `handle(stream)` runs for each call, on the driving thread.
template <typename Request, typename Reply, typename Handle>
Status ServeStreamMethod(Endpoint& endpoint, const MethodInfo& method, Handle handle) {
  return endpoint.ServeStreams(
      method.id, [&endpoint, &method, handle = std::move(handle)](
                     std::unique_ptr<Connection> connection) {
        RawStream::Adopt(endpoint, std::move(connection), std::string(method.path),
                         [&method, handle](std::shared_ptr<RawStream> raw) {
                           handle(std::make_shared<ServerStream<Request, Reply>>(std::move(raw),
                                                                                 method));
                         });
      });
}

// Registers a server-streaming method: the runtime reads the one request
// first, then calls `handle(request, stream)`. A call that half-closes
// without a request is answered kInvalidArgument.
template <typename Request, typename Reply, typename Handle>
Status ServeServerStreamMethod(Endpoint& endpoint, const MethodInfo& method, Handle handle) {
  return ServeStreamMethod<Request, Reply>(
      endpoint, method, [&method, handle](ServerStreamPtr<Request, Reply> stream) {
        ServerStream<Request, Reply>* raw_stream = stream.get();
        // The callback holds the stream until the request came.
        raw_stream->OnRead([&method, handle, stream = std::move(stream)](
                               Result<std::optional<Request>> request) mutable {
          if (stream == nullptr) return;
          ServerStreamPtr<Request, Reply> taken = std::move(stream);
          taken->OnRead(nullptr);  // later messages queue (there should be none)
          if (!request.ok()) return;  // cancelled, gone, or malformed (finished already)
          if (!request->has_value()) {
            taken->Finish(MethodError(method, StatusCode::kInvalidArgument,
                                      "the client sent no request"))
                .IgnoreError();
            return;
          }
          handle(**request, std::move(taken));
        });
      });
}

}  // namespace wharf::rpc
