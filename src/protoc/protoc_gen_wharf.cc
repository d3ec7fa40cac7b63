// protoc-gen-wharf: protoc runs it as a plugin (--wharf_out=DIR, or through
// the CMake function wharf_generate_proto); it reads the request on stdin
// and answers on stdout (google/protobuf/compiler/plugin.h).
#include <google/protobuf/compiler/plugin.h>

#include "protoc/wharf_generator.h"

int main(int argc, char* argv[]) {
  wharf::protoc::WharfGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
