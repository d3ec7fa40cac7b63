// WharfGenerator: checks a file's services, then prints foo.wharf.h and
// foo.wharf.cc with protobuf's Printer.
#include "protoc/wharf_generator.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "protoc/method_ids.h"

namespace wharf::protoc {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::io::Printer;
using Vars = std::map<std::string, std::string>;

// "a.b" -> "a::b" (a package or a dotted name inside one).
std::string DotsToColons(const std::string& dotted) {
  std::string out;
  for (char c : dotted) {
    if (c == '.') {
      out += "::";
    } else {
      out += c;
    }
  }
  return out;
}

// The C++ class protoc's C++ generator makes for a message: nested types
// are joined with '_' (Outer.Inner -> Outer_Inner) in the file's namespace.
std::string QualifiedClass(const Descriptor* message) {
  std::string name = message->name();
  for (const Descriptor* outer = message->containing_type(); outer != nullptr;
       outer = outer->containing_type()) {
    name = outer->name() + "_" + name;
  }
  const std::string& package = message->file()->package();
  return package.empty() ? "::" + name : "::" + DotsToColons(package) + "::" + name;
}

// "dir/foo.proto" -> "dir/foo".
std::string StripProto(const std::string& name) {
  const std::string suffix = ".proto";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

std::string Hex(uint32_t id) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08xu", id);
  return text;
}

// The generator's parameter (--wharf_opt=...): empty, or
// "class_suffix=NAME", which names the generated class of service S
// "S" + NAME, so that it can sit beside gRPC's class S in one program.
Result<std::string> ClassSuffixOf(const std::string& parameter) {
  if (parameter.empty()) return std::string();
  const std::string key = "class_suffix=";
  if (parameter.rfind(key, 0) != 0) {
    return InvalidArgumentError("protoc-gen-wharf: unknown option '" + parameter +
                                "' (the one option is class_suffix=NAME)");
  }
  std::string suffix = parameter.substr(key.size());
  const bool identifier =
      !suffix.empty() && std::all_of(suffix.begin(), suffix.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
      });
  if (!identifier) {
    return InvalidArgumentError("protoc-gen-wharf: class_suffix '" + suffix +
                                "' is not an identifier's tail (letters, digits, _)");
  }
  return suffix;
}

struct MethodPlan {
  const MethodDescriptor* method;
  uint32_t id;
};

// The Printer variables of a method: its name, request and reply classes.
Vars MethodVars(const MethodPlan& m) {
  return {{"method", m.method->name()},
          {"req", QualifiedClass(m.method->input_type())},
          {"rep", QualifiedClass(m.method->output_type())}};
}

bool Streaming(const MethodPlan& m) {
  return m.method->client_streaming() || m.method->server_streaming();
}
// Server streaming only: one request, then a stream of replies.
bool ServerStreamingOnly(const MethodPlan& m) {
  return m.method->server_streaming() && !m.method->client_streaming();
}

// A streaming method's handler declaration, the same in Service and
// AsyncService (a stream is answered when the handler likes either way).
void PrintStreamHandler(Printer& p, const MethodPlan& m) {
  const Vars v = MethodVars(m);
  if (ServerStreamingOnly(m)) {
    p.Print(v,
            "    // Server streaming: write replies, then Finish.\n"
            "    virtual void $method$(const $req$& request,\n"
            "        ::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream);\n");
  } else {
    Vars kind = v;
    kind["kind"] = m.method->server_streaming() ? "Bidirectional" : "Client";
    p.Print(kind,
            "    // $kind$ streaming: read requests (OnRead here, or Read on a thread of\n"
            "    // your own), write replies, then Finish.\n"
            "    virtual void $method$(::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream);\n");
  }
}

// Everything wrong with the file's services, or "" when it can be
// generated: id collisions, names the generated classes would clash on.
std::string Check(const FileDescriptor* file, const std::string& suffix,
                  std::vector<std::vector<MethodPlan>>* plans) {
  MethodIdTable ids;
  std::string errors;
  for (int s = 0; s < file->service_count(); ++s) {
    const ServiceDescriptor* service = file->service(s);
    std::vector<MethodPlan> plan;
    // What the generated classes declare besides the methods' own names.
    std::set<std::string> names = {"Register", "Stub", "Service", "AsyncService",
                                   "kServiceName", service->name() + suffix};
    for (int m = 0; m < service->method_count(); ++m) {
      const MethodDescriptor* method = service->method(m);
      Result<uint32_t> id = ids.Add("/" + service->full_name() + "/" + method->name());
      if (!id.ok()) {
        errors += id.status().message() + "; ";
        continue;
      }
      for (const std::string& name :
           {method->name(), "Async" + method->name(), "k" + method->name()}) {
        if (!names.insert(name).second) {
          errors += method->full_name() + ": its generated name " + name +
                    " is taken in the generated classes of " + service->full_name() +
                    "; rename the method; ";
        }
      }
      plan.push_back({method, *id});
    }
    plans->push_back(std::move(plan));
  }
  if (errors.size() >= 2) errors.resize(errors.size() - 2);
  return errors;
}

void PrintHeader(Printer& p, const FileDescriptor* file, const std::string& suffix,
                 const std::vector<std::vector<MethodPlan>>& plans) {
  const std::string base = StripProto(file->name());
  p.Print({{"proto", file->name()}, {"pb_h", base + ".pb.h"}},
          "// Generated by protoc-gen-wharf from $proto$. Do not edit.\n"
          "#pragma once\n"
          "\n"
          "#include <functional>\n"
          "#include <string>\n"
          "#include <string_view>\n"
          "\n"
          "#include <wharf/rpc.h>\n"
          "#include <wharf/rpc_stream.h>\n"
          "\n"
          "#include \"$pb_h$\"\n"
          "\n");
  const std::string ns = DotsToColons(file->package());
  if (!ns.empty()) p.Print({{"ns", ns}}, "namespace $ns$ {\n\n");
  for (int s = 0; s < file->service_count(); ++s) {
    const ServiceDescriptor* service = file->service(s);
    p.Print({{"name", service->name() + suffix}, {"full", service->full_name()}},
            "// The service $full$.\n"
            "class $name$ final {\n"
            " public:\n"
            "  static constexpr std::string_view kServiceName = \"$full$\";\n"
            "  // Each method's path and the id it is called by (CRC-32 of the path).\n");
    for (const MethodPlan& m : plans[s]) {
      p.Print({{"method", m.method->name()},
               {"path", "/" + service->full_name() + "/" + m.method->name()},
               {"id", Hex(m.id)}},
              "  static constexpr ::wharf::rpc::MethodInfo k$method${\"$path$\", $id$};\n");
    }
    p.Print(
        "\n"
        "  // The client side. Borrows what it is made with: they must outlive it.\n"
        "  // Thread-safe like the endpoint.\n"
        "  class Stub {\n"
        "   public:\n"
        "    // Calls `address` (\"homa://10.0.0.2:4000\") through `endpoint`.\n"
        "    Stub(::wharf::Endpoint& endpoint, std::string address)\n"
        "        : channel_(endpoint, std::move(address)) {}\n"
        "    // Calls over `connection`, opened on `endpoint`.\n"
        "    Stub(::wharf::Endpoint& endpoint, ::wharf::Connection& connection)\n"
        "        : channel_(endpoint, connection) {}\n");
    for (const MethodPlan& m : plans[s]) {
      const Vars v = MethodVars(m);
      if (ServerStreamingOnly(m)) {
        p.Print(v,
                "\n"
                "    // $method$ (server streaming): sends the request; Read the replies\n"
                "    // from the stream, then Finish.\n"
                "    ::wharf::Result<::wharf::rpc::ClientStream<$req$, $rep$>> $method$(\n"
                "        const $req$& request, const ::wharf::CallOptions& options = {}) const {\n"
                "      return ::wharf::rpc::OpenServerStream<$req$, $rep$>(channel_, k$method$, request,\n"
                "                                                          options);\n"
                "    }\n");
        continue;
      }
      if (Streaming(m)) {
        Vars kind = v;
        kind["kind"] = m.method->server_streaming() ? "bidirectional" : "client";
        kind["then"] = m.method->server_streaming() ? "Read replies (as they come) and Finish"
                                                    : "CloseAndRecv for the reply";
        p.Print(kind,
                "\n"
                "    // $method$ ($kind$ streaming): Write requests, WritesDone, then\n"
                "    // $then$.\n"
                "    ::wharf::Result<::wharf::rpc::ClientStream<$req$, $rep$>> $method$(\n"
                "        const ::wharf::CallOptions& options = {}) const {\n"
                "      return ::wharf::rpc::OpenStream<$req$, $rep$>(channel_, k$method$, options);\n"
                "    }\n");
        continue;
      }
      p.Print(v,
              "\n"
              "    // $method$: blocking; asynchronous (wait on, poll or cancel the handle);\n"
              "    // with a callback, run where the call completes.\n"
              "    ::wharf::Result<$rep$> $method$(const $req$& request,\n"
              "        const ::wharf::CallOptions& options = {}) const {\n"
              "      return ::wharf::rpc::CallMethod<$rep$>(channel_, k$method$, request, options);\n"
              "    }\n"
              "    ::wharf::rpc::PendingCall<$rep$> Async$method$(const $req$& request,\n"
              "        const ::wharf::CallOptions& options = {}) const {\n"
              "      return ::wharf::rpc::StartMethod<$rep$>(channel_, k$method$, request, options);\n"
              "    }\n"
              "    void $method$(const $req$& request,\n"
              "        std::function<void(::wharf::Result<$rep$>)> done,\n"
              "        const ::wharf::CallOptions& options = {}) const {\n"
              "      ::wharf::rpc::CallMethodThen<$rep$>(channel_, k$method$, request,\n"
              "                                          std::move(done), options);\n"
              "    }\n");
    }
    p.Print(
        "\n"
        "   private:\n"
        "    ::wharf::rpc::Channel channel_;\n"
        "  };\n"
        "\n"
        "  // The server side, answering when a handler returns: override the\n"
        "  // methods you serve, then Register. The handlers run where requests\n"
        "  // are dispatched (no hand-over to another thread). A method nobody\n"
        "  // overrode answers kUnimplemented.\n"
        "  class Service {\n"
        "   public:\n"
        "    virtual ~Service() = default;\n"
        "    // Serves every method on `endpoint`; this object must outlive that.\n"
        "    ::wharf::Status Register(::wharf::Endpoint& endpoint);\n");
    for (const MethodPlan& m : plans[s]) {
      const Vars v = MethodVars(m);
      if (Streaming(m)) {
        PrintStreamHandler(p, m);
        continue;
      }
      p.Print(v,
              "    virtual ::wharf::Result<$rep$> $method$(\n"
              "        const ::wharf::rpc::ServerContext& context, const $req$& request);\n");
    }
    p.Print(
        "  };\n"
        "\n"
        "  // The server side, answering later: each handler keeps its responder\n"
        "  // and answers from any thread when ready (responder.cancelled() says\n"
        "  // when the client stopped waiting). A method nobody overrode answers\n"
        "  // kUnimplemented.\n"
        "  class AsyncService {\n"
        "   public:\n"
        "    virtual ~AsyncService() = default;\n"
        "    ::wharf::Status Register(::wharf::Endpoint& endpoint);\n");
    for (const MethodPlan& m : plans[s]) {
      const Vars v = MethodVars(m);
      if (Streaming(m)) {
        PrintStreamHandler(p, m);
        continue;
      }
      p.Print(v,
              "    virtual void $method$(const ::wharf::rpc::ServerContext& context,\n"
              "        $req$ request, ::wharf::rpc::Responder<$rep$> responder);\n");
    }
    p.Print("  };\n};\n\n");
  }
  if (!ns.empty()) p.Print({{"ns", ns}}, "}  // namespace $ns$\n");
}

void PrintSource(Printer& p, const FileDescriptor* file, const std::string& suffix,
                 const std::vector<std::vector<MethodPlan>>& plans) {
  const std::string base = StripProto(file->name());
  p.Print({{"proto", file->name()}, {"wharf_h", base + ".wharf.h"}},
          "// Generated by protoc-gen-wharf from $proto$. Do not edit.\n"
          "#include \"$wharf_h$\"\n"
          "\n"
          "#include <utility>\n"
          "\n");
  const std::string ns = DotsToColons(file->package());
  if (!ns.empty()) p.Print({{"ns", ns}}, "namespace $ns$ {\n\n");
  for (int s = 0; s < file->service_count(); ++s) {
    const ServiceDescriptor* service = file->service(s);
    const std::string name = service->name() + suffix;
    for (const MethodPlan& m : plans[s]) {
      Vars v = MethodVars(m);
      v["service"] = name;
      if (Streaming(m)) {
        for (const char* kind : {"Service", "AsyncService"}) {
          v["kind"] = kind;
          p.Print(v, ServerStreamingOnly(m)
                         ? "void $service$::$kind$::$method$(const $req$&,\n"
                           "    ::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream) {\n"
                         : "void $service$::$kind$::$method$(\n"
                           "    ::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream) {\n");
          p.Print(v,
                  "  // A failed Finish means the client is gone: nobody to tell.\n"
                  "  stream->Finish(::wharf::rpc::NotImplemented(k$method$)).IgnoreError();\n"
                  "}\n"
                  "\n");
        }
        continue;
      }
      p.Print(v,
              "::wharf::Result<$rep$> $service$::Service::$method$(\n"
              "    const ::wharf::rpc::ServerContext&, const $req$&) {\n"
              "  return ::wharf::rpc::NotImplemented(k$method$);\n"
              "}\n"
              "\n"
              "void $service$::AsyncService::$method$(const ::wharf::rpc::ServerContext&,\n"
              "    $req$, ::wharf::rpc::Responder<$rep$> responder) {\n"
              "  // A failed Respond means the client is gone: nobody to tell.\n"
              "  responder.Respond(::wharf::rpc::NotImplemented(k$method$)).IgnoreError();\n"
              "}\n"
              "\n");
    }
    for (const char* kind : {"Service", "AsyncService"}) {
      const bool later = std::string(kind) == "AsyncService";
      p.Print({{"service", name}, {"kind", kind}},
              "::wharf::Status $service$::$kind$::Register(::wharf::Endpoint& endpoint) {\n");
      for (const MethodPlan& m : plans[s]) {
        const Vars v = MethodVars(m);
        if (ServerStreamingOnly(m)) {
          p.Print(v,
                  "  if (::wharf::Status s = ::wharf::rpc::ServeServerStreamMethod<$req$, $rep$>(\n"
                  "          endpoint, k$method$,\n"
                  "          [this](const $req$& request,\n"
                  "                 ::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream) {\n"
                  "            $method$(request, std::move(stream));\n"
                  "          });\n"
                  "      !s.ok()) {\n"
                  "    return s;\n"
                  "  }\n");
          continue;
        }
        if (Streaming(m)) {
          p.Print(v,
                  "  if (::wharf::Status s = ::wharf::rpc::ServeStreamMethod<$req$, $rep$>(\n"
                  "          endpoint, k$method$,\n"
                  "          [this](::wharf::rpc::ServerStreamPtr<$req$, $rep$> stream) {\n"
                  "            $method$(std::move(stream));\n"
                  "          });\n"
                  "      !s.ok()) {\n"
                  "    return s;\n"
                  "  }\n");
          continue;
        }
        if (later) {
          p.Print(v,
                  "  if (::wharf::Status s = ::wharf::rpc::ServeMethodLater<$req$, $rep$>(\n"
                  "          endpoint, k$method$,\n"
                  "          [this](const ::wharf::rpc::ServerContext& context, $req$ request,\n"
                  "                 ::wharf::rpc::Responder<$rep$> responder) {\n"
                  "            $method$(context, std::move(request), std::move(responder));\n"
                  "          });\n"
                  "      !s.ok()) {\n"
                  "    return s;\n"
                  "  }\n");
        } else {
          p.Print(v,
                  "  if (::wharf::Status s = ::wharf::rpc::ServeMethod<$req$, $rep$>(\n"
                  "          endpoint, k$method$,\n"
                  "          [this](const ::wharf::rpc::ServerContext& context, const $req$& request) {\n"
                  "            return $method$(context, request);\n"
                  "          });\n"
                  "      !s.ok()) {\n"
                  "    return s;\n"
                  "  }\n");
        }
      }
      p.Print("  return ::wharf::OkStatus();\n}\n\n");
    }

  }
  if (!ns.empty()) p.Print({{"ns", ns}}, "}  // namespace $ns$\n");
}

}  // namespace

bool WharfGenerator::Generate(const FileDescriptor* file, const std::string& parameter,
                              google::protobuf::compiler::GeneratorContext* context,
                              std::string* error) const {
  Result<std::string> suffix = ClassSuffixOf(parameter);
  if (!suffix.ok()) {
    *error = suffix.status().message();
    return false;
  }
  std::vector<std::vector<MethodPlan>> plans;
  if (std::string problems = Check(file, *suffix, &plans); !problems.empty()) {
    *error = problems;
    return false;
  }
  const std::string base = StripProto(file->name());
  {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(context->Open(base + ".wharf.h"));
    Printer printer(out.get(), '$');
    PrintHeader(printer, file, *suffix, plans);
  }
  {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
        context->Open(base + ".wharf.cc"));
    Printer printer(out.get(), '$');
    PrintSource(printer, file, *suffix, plans);
  }
  return true;
}

}  // namespace wharf::protoc
