// fuzz/rpc_decode_fuzzer.cc: arbitrary bytes as the request of each method
// of the generated test service (src/protoc/testdata/rpc_test.proto,
// wharf.rpctest.Tester), taken the way a generated server takes them
// (rpc::ServeMethod): rpc::Decode, then the Service's handler with its
// ServerContext, then rpc::Encode of the answer; and the same bytes as each
// method's response, as a Stub decodes it. No traffic: the one endpoint
// (embedded, its socket bound on loopback) is there for the buffers Encode
// takes from it, and never calls or serves.
//
// What must hold, besides no crash or sanitizer report:
//   - a decode succeeds, or fails with kInvalidArgument whose message names
//     the method's path, "malformed request" (or response), the byte count
//     and the message type;
//   - what decoded encodes (rpc::Encode, into a buffer of exactly the size
//     protobuf computed) to bytes that decode to an equal message
//     (MessageDifferencer, unknown fields included) and encode to the same
//     bytes again;
//   - the handlers' answers encode and decode the same way: Echo's and
//     Nest's (overridden here), and the generated kUnimplemented, naming
//     the method, of the three left as generated.
// Seeds (fuzz/seeds/rpc_decode_fuzzer/): a request of each method with
// fields set (protoc --encode), a 300-byte payload (a two-byte length) and
// a payload followed by fields Payload does not know.
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_fail.h"
#include "rpc_test.wharf.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"

namespace wharf::rpctest {
namespace {

using fuzz::Fail;

// Echo and Nest answer as src/protoc/rpc_test.cc's server does; Fail, Slow
// and Missing keep the generated kUnimplemented.
class FuzzService final : public Tester::Service {
 public:
  Result<Payload> Echo(const rpc::ServerContext&, const Payload& request) override {
    Payload reply;
    reply.set_data(request.data());
    reply.set_received(request.data().size());
    return reply;
  }
  Result<Outer::Inner> Nest(const rpc::ServerContext&, const Outer::Inner& request) override {
    Outer::Inner reply;
    reply.set_text("re:" + request.text());
    return reply;
  }
};

// The endpoint Encode allocates from: embedded, on loopback, never called
// and serving nothing, so its socket stays silent.
Endpoint& BufferSource() {
  static std::unique_ptr<Endpoint> endpoint = [] {
    Result<std::unique_ptr<Endpoint>> ep =
        Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
    if (!ep.ok()) Fail("cannot open the endpoint Encode allocates from");
    return std::move(*ep);
  }();
  return *endpoint;
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// A failed Decode of `size` bytes as `Message`: kInvalidArgument, and the
// message says which method, which direction, how many bytes, which type.
template <typename Message>
void CheckRefusal(const Status& status, const rpc::MethodInfo& method, std::string_view what,
                  size_t size) {
  if (status.code() != StatusCode::kInvalidArgument) {
    Fail("a refused decode is not kInvalidArgument");
  }
  const std::string& text = status.message();
  if (!Contains(text, std::string(method.path) + ": malformed " + std::string(what))) {
    Fail("a refused decode does not name the method and direction");
  }
  if (!Contains(text, "(" + std::to_string(size) + " bytes")) {
    Fail("a refused decode does not say how many bytes");
  }
  if (!Contains(text, Message().GetTypeName())) Fail("a refused decode does not name the type");
}

// `message` encodes with rpc::Encode, and its encoding decodes to an equal
// message that encodes to the same bytes.
template <typename Message>
void CheckRoundTrip(const Message& message, const rpc::MethodInfo& method, std::string_view what) {
  Result<Buffer> bytes = rpc::Encode(BufferSource(), message, method, what);
  if (!bytes.ok()) Fail("a decoded message does not encode");
  if (bytes->size() != message.ByteSizeLong()) Fail("Encode's buffer is not the message's size");
  Result<Message> back = rpc::Decode<Message>(*bytes, method, what);
  if (!back.ok()) Fail("an encoded message does not decode");
  if (!google::protobuf::util::MessageDifferencer::Equals(message, *back)) {
    Fail("an encoded message decodes to a different one");
  }
  const std::string again = back->SerializeAsString();
  if (std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()) != again) {
    Fail("encoding a decoded encoding changes its bytes");
  }
}

// `bytes` as the response of `method` and as its request, served by
// `service`'s plain handler `handler`.
template <typename Request, typename Reply>
void FuzzMethod(const Buffer& bytes, const rpc::MethodInfo& method, Tester::Service& service,
                Result<Reply> (Tester::Service::*handler)(const rpc::ServerContext&,
                                                          const Request&)) {
  if (Result<Reply> reply = rpc::Decode<Reply>(bytes, method, "response"); reply.ok()) {
    CheckRoundTrip(*reply, method, "response");
  } else {
    CheckRefusal<Reply>(reply.status(), method, "response", bytes.size());
  }

  Result<Request> request = rpc::Decode<Request>(bytes, method, "request");
  if (!request.ok()) {
    // What ServeMethod answers the client, without calling the handler.
    CheckRefusal<Request>(request.status(), method, "request", bytes.size());
    return;
  }
  CheckRoundTrip(*request, method, "request");
  const RpcContext call{.peer = "homa://127.0.0.1:9", .method = method.id};
  const rpc::ServerContext context(call, method);
  if (context.method().id != method.id || context.peer() != call.peer) {
    Fail("the ServerContext is not the call's");
  }
  Result<Reply> answer = (service.*handler)(context, *request);
  if (answer.ok()) {
    CheckRoundTrip(*answer, method, "response");
  } else if (answer.status().code() != StatusCode::kUnimplemented ||
             !Contains(answer.status().message(), std::string(method.path) + ": not implemented")) {
    Fail("a handler left as generated does not answer kUnimplemented naming its method");
  }
}

}  // namespace
}  // namespace wharf::rpctest

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Parsing a proto3 string that is not UTF-8 fails (as it should) and logs
  // an error each time; the checks above say everything that matters.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  using namespace wharf::rpctest;
  static FuzzService service;
  // The input in place (no copy): the sanitizers see any read outside it.
  std::span<std::byte> whole(reinterpret_cast<std::byte*>(const_cast<uint8_t*>(data)), size);
  const Buffer bytes = Buffer::Wrap(whole, nullptr);
  FuzzMethod(bytes, Tester::kEcho, service, &Tester::Service::Echo);
  FuzzMethod(bytes, Tester::kFail, service, &Tester::Service::Fail);
  FuzzMethod(bytes, Tester::kNest, service, &Tester::Service::Nest);
  FuzzMethod(bytes, Tester::kSlow, service, &Tester::Service::Slow);
  FuzzMethod(bytes, Tester::kMissing, service, &Tester::Service::Missing);
  return 0;
}
