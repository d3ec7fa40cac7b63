// FakeNetwork: routing, faults, timing and logging of packets between fake
// endpoints.
#include "transport/fake/fake_network.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "wire/packet.h"

namespace wharf::transport::fake {
namespace {

std::string DefaultDescribe(std::span<const std::byte> bytes) { return wire::Describe(bytes); }

}  // namespace

LinkCounters& LinkCounters::operator+=(const LinkCounters& o) {
  sent += o.sent;
  delivered += o.delivered;
  dropped += o.dropped;
  partitioned += o.partitioned;
  no_route += o.no_route;
  duplicated += o.duplicated;
  delayed += o.delayed;
  return *this;
}

std::string DescribeBytesAsText(std::span<const std::byte> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size());
  for (std::byte b : bytes) {
    auto c = static_cast<unsigned char>(b);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text.push_back(static_cast<char>(c));
    } else {
      text += "\\x";
      text.push_back(kHex[c >> 4]);
      text.push_back(kHex[c & 0xf]);
    }
  }
  return text;
}

FakeNetwork::FakeNetwork(SimClock& clock, uint64_t seed)
    : clock_(clock), describer_(DefaultDescribe), dice_(seed) {}

FakeNetwork::~FakeNetwork() {
  // The clock may outlive us: its timers must not call back into freed memory.
  for (auto& [id, packet] : in_flight_) clock_.Cancel(packet.timer);
  // Endpoints that outlive us (a test bug, but a common one in teardown
  // order) must not call back either.
  for (auto& [address, endpoint] : endpoints_) endpoint->network_ = nullptr;
}

std::unique_ptr<FakeDatagram> FakeNetwork::Attach(std::string host_name, NetAddress address) {
  if (endpoints_.contains(address)) {
    // A test that attaches one address twice is wrong; there is no Status to
    // return through this signature, so fail loudly and early.
    std::fprintf(stderr, "FakeNetwork::Attach(%s, %s): address already attached to host %s\n",
                 host_name.c_str(), address.ToString().c_str(),
                 endpoints_[address]->host_name().c_str());
    std::abort();
  }
  std::unique_ptr<FakeDatagram> endpoint(new FakeDatagram(this, std::move(host_name), address));
  endpoints_.emplace(address, endpoint.get());
  return endpoint;
}

void FakeNetwork::Detach(FakeDatagram& endpoint) {
  auto it = endpoints_.find(endpoint.LocalAddress());
  if (it != endpoints_.end() && it->second == &endpoint) endpoints_.erase(it);
}

void FakeNetwork::SetDescriber(Describer describer) {
  describer_ = describer ? std::move(describer) : Describer(DefaultDescribe);
}

void FakeNetwork::SetLinkBothWays(std::string_view a, std::string_view b,
                                  const LinkConfig& config) {
  links_.Set(a, b, config);
  links_.Set(b, a, config);
}

std::pair<std::string, std::string> FakeNetwork::UnorderedPair(std::string_view a,
                                                               std::string_view b) {
  if (b < a) std::swap(a, b);
  return {std::string(a), std::string(b)};
}

void FakeNetwork::Partition(std::string_view a, std::string_view b) {
  partitions_.insert(UnorderedPair(a, b));
}

void FakeNetwork::Heal(std::string_view a, std::string_view b) {
  partitions_.erase(UnorderedPair(a, b));
}

bool FakeNetwork::IsPartitioned(std::string_view a, std::string_view b) const {
  return !partitions_.empty() && partitions_.contains(UnorderedPair(a, b));
}

LinkCounters FakeNetwork::Counters(std::string_view src_host, std::string_view dst_host) const {
  auto it = counters_.find({std::string(src_host), std::string(dst_host)});
  return it == counters_.end() ? LinkCounters{} : it->second;
}

LinkCounters FakeNetwork::TotalCounters() const {
  LinkCounters total;
  for (const auto& [pair, counters] : counters_) total += counters;
  return total;
}

LinkCounters& FakeNetwork::CountersFor(const std::string& src_host, const std::string& dst_host) {
  return counters_[{src_host, dst_host}];
}

Result<size_t> FakeNetwork::Send(FakeDatagram& sender, std::span<const OutDatagram> batch) {
  // Validate first so that a bad batch sends nothing: the caller cannot tell
  // which prefix went out from an error.
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].size() > max_datagram_bytes_) {
      return InvalidArgumentError(
          "fake endpoint " + sender.host_name() + " (" + sender.LocalAddress().ToString() +
          "): datagram " + std::to_string(i) + " of the batch, to " + batch[i].to.ToString() +
          ", is " + std::to_string(batch[i].size()) + " bytes, over MaxDatagramBytes " +
          std::to_string(max_datagram_bytes_));
    }
  }
  for (const OutDatagram& datagram : batch) {
    // The network carries whole datagrams: join a gathered one here.
    std::vector<std::byte> bytes;
    bytes.reserve(datagram.size());
    bytes.assign(datagram.bytes.begin(), datagram.bytes.end());
    bytes.insert(bytes.end(), datagram.payload.begin(), datagram.payload.end());
    Transmit(sender, datagram.to, std::move(bytes));
  }
  return batch.size();
}

void FakeNetwork::Lose(PacketLog::EntryId log_id, LinkCounters& counters, PacketLoss loss) {
  ++counters.dropped;
  if (loss == PacketLoss::kPartitioned) ++counters.partitioned;
  if (loss == PacketLoss::kNoRoute) ++counters.no_route;
  if (LogEntry* entry = log_.Find(log_id)) entry->loss = loss;
}

void FakeNetwork::Transmit(const FakeDatagram& sender, const NetAddress& to,
                           std::vector<std::byte> bytes) {
  const std::string& src = sender.host_name();
  std::string description = describer_(bytes);
  auto endpoint = endpoints_.find(to);
  std::string dst = endpoint == endpoints_.end() ? to.ToString() : endpoint->second->host_name();
  LinkCounters& counters = CountersFor(src, dst);
  ++counters.sent;

  // 1 and 2: lost before reaching any link.
  PacketLoss early_loss = PacketLoss::kNone;
  if (endpoint == endpoints_.end()) {
    early_loss = PacketLoss::kNoRoute;
  } else if (IsPartitioned(src, dst)) {
    early_loss = PacketLoss::kPartitioned;
  }
  if (early_loss != PacketLoss::kNone) {
    Lose(log_.Record({src, dst, description}), counters, early_loss);
    if (early_loss == PacketLoss::kNoRoute) ReportNoRoute(sender.LocalAddress(), to);
    return;
  }

  // 3: faults, then the link's transmit queue.
  const LinkConfig& config = links_.Get(src, dst);
  FaultDecision random = dice_.Roll(config);
  FaultDecision scripted = script_.Apply(src, dst, description, random.drop);
  TimeNs arrival_ns = links_.Transmit(src, dst, bytes.size(), clock_.NowNs()) + config.delay_ns;

  // 4: lost, or on its way (maybe late, maybe twice).
  if (scripted.drop) {
    Lose(log_.Record({src, dst, std::move(description)}), counters, PacketLoss::kDropped);
    return;
  }
  bool delayed = random.delayed || scripted.delayed;
  bool duplicate = random.duplicate || scripted.duplicate;
  if (delayed) ++counters.delayed;

  Packet packet;
  packet.src_host = src;
  packet.dst_host = dst;
  packet.from = sender.LocalAddress();
  packet.to = to;
  packet.bytes = std::move(bytes);
  LogEntry entry{src, dst, description};
  entry.delayed = delayed;
  packet.log_id = log_.Record(std::move(entry));

  Packet copy;
  if (duplicate) {
    ++counters.duplicated;
    copy = packet;
    LogEntry copy_entry{src, dst, std::move(description)};
    copy_entry.duplicate = true;
    copy.log_id = log_.Record(std::move(copy_entry));
  }
  Launch(std::move(packet), arrival_ns + random.extra_delay_ns + scripted.extra_delay_ns);
  // Launched second, so that at equal arrival times the original is
  // received first.
  if (duplicate) Launch(std::move(copy), arrival_ns);
}

void FakeNetwork::Launch(Packet packet, TimeNs at_ns) {
  uint64_t id = next_packet_id_++;
  auto it = in_flight_.emplace(id, std::move(packet)).first;
  it->second.timer = clock_.ScheduleAt(at_ns, [this, id] { Arrive(id); });
}

void FakeNetwork::ReportNoRoute(const NetAddress& from, const NetAddress& to) {
  if (!report_no_route_) return;
  auto sender = endpoints_.find(from);
  if (sender == endpoints_.end()) return;
  PathError error;
  error.to = to;
  error.kind = PathError::Kind::kPortUnreachable;
  error.error = ECONNREFUSED;
  error.reporter = to.WithPort(0);
  sender->second->InjectPathError(error);
}

void FakeNetwork::Arrive(uint64_t packet_id) {
  auto node = in_flight_.extract(packet_id);
  if (node.empty()) return;
  Packet& packet = node.mapped();
  LinkCounters& counters = CountersFor(packet.src_host, packet.dst_host);
  // 5: the world may have changed while the packet was in flight.
  if (IsPartitioned(packet.src_host, packet.dst_host)) {
    Lose(packet.log_id, counters, PacketLoss::kPartitioned);
    return;
  }
  auto endpoint = endpoints_.find(packet.to);
  if (endpoint == endpoints_.end()) {
    Lose(packet.log_id, counters, PacketLoss::kNoRoute);
    ReportNoRoute(packet.from, packet.to);
    return;
  }
  ++counters.delivered;
  endpoint->second->Deliver(packet.from, std::move(packet.bytes));
}

}  // namespace wharf::transport::fake
