// protoc-gen-wharf: protoc runs it as a plugin (--wharf_out=DIR, or through
// the CMake function wharf_generate_proto); it reads the request on stdin
// and answers on stdout (google/protobuf/compiler/plugin.h).
#include <google/protobuf/compiler/plugin.h>

#include <cstdio>
#include <cstring>

#include "protoc/wharf_generator.h"

int main(int argc, char* argv[]) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "protoc-gen-wharf: the protoc plugin that generates wharf's typed RPCs (a Stub, a\n"
        "Service and an AsyncService per service) into NAME.wharf.h and NAME.wharf.cc.\n"
        "protoc runs it; it reads protoc's request on stdin. By hand:\n"
        "  protoc -I. --cpp_out=out --plugin=protoc-gen-wharf=$(which protoc-gen-wharf) \\\n"
        "         --wharf_out=out kv.proto\n"
        "One option: --wharf_out=class_suffix=NAME:out names service S's class S + NAME.\n"
        "In CMake: wharf_generate_proto(TARGET app PROTOS kv.proto). See docs/rpc.md.\n");
    return 0;
  }
  wharf::protoc::WharfGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
