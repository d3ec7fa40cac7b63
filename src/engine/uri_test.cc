#include "engine/uri.h"

#include <gtest/gtest.h>

#include "base/text.h"
#include "wire/endpoint_id.h"

namespace wharf::engine {
namespace {

TEST(UriTest, SchemeAndDefault) {
  auto a = ParseUri("homa://127.0.0.1:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->scheme, "homa");
  EXPECT_EQ(a->address.ToString(), "127.0.0.1:4000");
  auto b = ParseUri("[::1]:9");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->scheme, "homa");
  EXPECT_TRUE(b->address.is_v6());
}

TEST(UriTest, TcpSchemeAndTcpDefault) {
  auto a = ParseUri("tcp://198.18.0.2:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->scheme, "tcp");
  auto b = ParseUri("198.18.0.2:4000", "tcp");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->scheme, "tcp");
  EXPECT_EQ(b->address, a->address);
}

TEST(UriTest, ResolvesLocalhost) {
  auto a = ParseUri("homa://localhost:7");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->address.port(), 7);
}

TEST(UriTest, UnknownSchemeAndBadHostAreClearErrors) {
  auto a = ParseUri("smtp://1.2.3.4:25");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("unknown scheme 'smtp'"), std::string::npos);
  EXPECT_FALSE(ParseUri("homa://1.2.3.4").ok());
}

// A resolver that knows one name, counts its lookups, and fails the rest as
// the system's does.
class OneNameResolver final : public NameResolver {
 public:
  Result<transport::NetAddress> Resolve(const std::string& host, uint16_t port) const override {
    ++lookups;
    if (host != "kv.example") return InvalidArgumentError("cannot resolve '" + host + "'");
    return transport::NetAddress::Ipv4(0xC6120007, port);  // 198.18.0.7
  }
  mutable int lookups = 0;
};

TEST(UriTest, ParseUri__NamesGoToTheGivenResolver) {
  OneNameResolver resolver;
  auto a = ParseUri("tcp://kv.example:7000/kv", "homa", &resolver);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->address.ToString(), "198.18.0.7:7000");
  EXPECT_EQ(FormatUri(*a), "tcp://198.18.0.7:7000/kv");
  auto b = ParseUri("homa://no-such-host.invalid:1", "homa", &resolver);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("cannot resolve 'no-such-host.invalid'"), std::string::npos);
  // Numeric addresses never reach it.
  ASSERT_TRUE(ParseUri("homa://127.0.0.1:9", "homa", &resolver).ok());
  EXPECT_EQ(resolver.lookups, 2);
}

TEST(UriTest, ParseUri__WithoutAResolverRefusesNames) {
  auto r = ParseUri("homa://kv.example:7000", "homa", nullptr);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("numeric addresses only"), std::string::npos)
      << r.status();
  ASSERT_TRUE(ParseUri("homa://[::1]:7000/kv", "homa", nullptr).ok());
}

TEST(UriTest, ParseUri__RefusesNamesThatAreNotPrintableUtf8) {
  OneNameResolver resolver;
  for (const char* bad : {"homa://127.0.0.1:1/caf\xe9", "homa://127.0.0.1:1/a\x1b[2J",
                          "homa://127.0.0.1:1/kv\n", "homa://caf\xe9:1"}) {
    auto r = ParseUri(bad, "homa", &resolver);
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(IsValidUtf8(r.status().message())) << r.status().message();
  }
  EXPECT_EQ(resolver.lookups, 0);
  auto ok = ParseUri("homa://127.0.0.1:1/caf\xc3\xa9");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->endpoint_name, "caf\xc3\xa9");
}

TEST(UriTest, ANameAfterThePortPicksAnEndpoint) {
  auto plain = ParseUri("homa://1.2.3.4:4000");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->endpoint_id, 0);
  EXPECT_EQ(plain->endpoint_name, "");
  auto kv = ParseUri("homa://1.2.3.4:4000/kv");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(kv->address.port(), 4000);
  EXPECT_EQ(kv->endpoint_name, "kv");
  EXPECT_EQ(kv->endpoint_id, wire::EndpointIdForName("kv"));
  EXPECT_NE(kv->endpoint_id, 0);
  auto by_id = ParseUri("homa://[::1]:4000/#17577");
  ASSERT_TRUE(by_id.ok()) << by_id.status();
  EXPECT_EQ(by_id->endpoint_id, 17577);
  EXPECT_EQ(EndpointSuffix(17577), "/#17577");
  EXPECT_EQ(EndpointSuffix(0), "");
  // A peer's printed address parses back to the same endpoint.
  auto back = ParseUri("homa://1.2.3.4:4000" + EndpointSuffix(kv->endpoint_id));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->endpoint_id, kv->endpoint_id);
}

TEST(UriTest, BadEndpointNamesAreClearErrors) {
  for (const char* bad : {"homa://1.2.3.4:1/", "homa://1.2.3.4:1/a/b", "homa://1.2.3.4:1/#",
                          "homa://1.2.3.4:1/#0", "homa://1.2.3.4:1/#65536", "homa://1.2.3.4:1/#12x"}) {
    auto r = ParseUri(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto long_name = ParseUri("homa://1.2.3.4:1/" + std::string(256, 'n'));
  EXPECT_EQ(long_name.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf::engine

namespace wharf::engine {
namespace {

TEST(PackedUriTest, RoundTripsV4AndV6WithEndpoint) {
  for (const char* text : {"homa://198.18.0.2:4000/#77", "tcp://[2001:db8::1]:9", "homa://1.2.3.4:5"}) {
    Result<Uri> uri = ParseUri(text);
    ASSERT_TRUE(uri.ok()) << text;
    Result<Uri> back = UnpackUri(PackUri(*uri));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->scheme, uri->scheme);
    EXPECT_EQ(back->address, uri->address);
    EXPECT_EQ(back->endpoint_id, uri->endpoint_id);
  }
}

TEST(PackedUriTest, EqualAddressesPackEqualAndHashAlike) {
  Result<Uri> a = ParseUri("homa://10.0.0.1:4000");
  Result<Uri> b = ParseUri("homa://10.0.0.1:4000");
  Result<Uri> other_port = ParseUri("homa://10.0.0.1:4001");
  Result<Uri> other_scheme = ParseUri("tcp://10.0.0.1:4000");
  ASSERT_TRUE(a.ok() && b.ok() && other_port.ok() && other_scheme.ok());
  EXPECT_EQ(PackUri(*a), PackUri(*b));
  EXPECT_EQ(PackedUriHash()(PackUri(*a)), PackedUriHash()(PackUri(*b)));
  EXPECT_FALSE(PackUri(*a) == PackUri(*other_port));
  EXPECT_FALSE(PackUri(*a) == PackUri(*other_scheme));
}

TEST(PackedUriTest, RefusesGarbage) {
  PackedUri p;
  EXPECT_FALSE(UnpackUri(p).ok());  // no scheme
  p.words[2] = uint64_t{1} << 32 | uint64_t{5} << 40;
  EXPECT_FALSE(UnpackUri(p).ok());  // family 5
  p.words[2] = uint64_t{9} << 32 | uint64_t{4} << 40;
  EXPECT_FALSE(UnpackUri(p).ok());  // scheme 9
  p.words[2] = uint64_t{1} << 32 | uint64_t{4} << 40 | uint64_t{1} << 60;
  EXPECT_FALSE(UnpackUri(p).ok());  // stray bits
}

}  // namespace
}  // namespace wharf::engine
