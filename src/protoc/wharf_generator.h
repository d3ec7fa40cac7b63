// protoc/wharf_generator.h: WharfGenerator, protoc-gen-wharf's code
// generator (docs/rpc.md). For foo.proto it writes foo.wharf.h and
// foo.wharf.cc beside protoc's foo.pb.h: for each service S, a class S with
// the methods' MethodInfo constants (kGet: path and id), S::Stub (blocking,
// asynchronous and callback forms of each method, over an endpoint and an
// address or over a connection), S::Service (one virtual handler per
// method that returns the answer; they run where requests are dispatched)
// and S::AsyncService (one per method that keeps a Responder and answers
// later, from any thread), each with Register. The code calls into
// include/wharf/rpc.h.
//
// Unary methods only, for now: a streaming method is refused with an error
// that names it, never silently skipped. One option,
// --wharf_opt=class_suffix=NAME: service S's class is S + NAME, so that it
// can sit beside gRPC's class S in one program (wharf-grpc-node does).
#pragma once

#include <string>

#include <google/protobuf/compiler/code_generator.h>

namespace wharf::protoc {

class WharfGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }
};

}  // namespace wharf::protoc
