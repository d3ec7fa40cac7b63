// UcpWorker: UCP context, worker, listener, endpoints and active messages.
#include "ucx/ucp_worker.h"

#include "base/clock.h"

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace wharf::ucx {
namespace {

// The one active-message id wharf's messages travel under.
constexpr unsigned kMessageId = 1;
// How long a closing worker waits for its endpoints' closes, all together.
constexpr DurationNs kCloseBudgetNs = 200 * kNsPerMs;

Status UcxError(std::string_view what, ucs_status_t status) {
  return UnavailableError(std::string(what) + ": " + ucs_status_string(status));
}

}  // namespace

struct UcpWorker::Ucp {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_listener_h listener = nullptr;

  // A send in flight: the Buffer UCX reads from, and who to tell.
  struct Sending {
    UcpWorker* worker;
    std::array<char, kMaxUcpHeaderBytes> header;
    Buffer message;
    std::function<void(const Status&)> done;
  };
  // A rendezvous receive in flight: where the data goes, and from whom.
  struct Receiving {
    UcpWorker* worker;
    PeerId peer;
    std::string header;
    Buffer message;
  };
  // A one-sided operation in flight: who to tell, and an atomic's words.
  struct Rma {
    UcpWorker* worker;
    std::function<void(Result<uint64_t>)> done;
    uint64_t value = 0;  // atomics: the operand (compare-and-swap: the compared word)
    uint64_t reply = 0;  // atomics: the new word in (compare-and-swap), the old word out
  };
  // What is in flight, so that a worker destroyed before UCX finished it
  // frees it (and tells the sender).
  std::unordered_set<Sending*> sends;
  std::unordered_set<Rma*> rmas;
  // Endpoint closes still flushing (Close). A worker destroyed with one
  // pending makes UCX 1.13 abort the process ("pending request ... should
  // have been flushed"), so the destructor finishes them first.
  std::vector<void*> closing;

  // Progresses until every request is done or `budget_ns` passed, then
  // cancels what is left, and frees them all.
  void Finish(const std::vector<void*>& requests, DurationNs budget_ns) {
    if (requests.empty()) return;
    auto pending = [&] {
      return std::any_of(requests.begin(), requests.end(), [](void* r) {
        return ucp_request_check_status(r) == UCS_INPROGRESS;
      });
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(budget_ns);
    while (pending() && std::chrono::steady_clock::now() < until) ucp_worker_progress(worker);
    for (void* r : requests) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_request_cancel(worker, r);
    }
    while (ucp_worker_progress(worker) != 0) {
    }
    for (void* r : requests) ucp_request_free(r);
  }

  static void OnRmaDone(void* request, ucs_status_t status, void* user_data) {
    auto* rma = static_cast<Rma*>(user_data);
    rma->worker->ucp_->rmas.erase(rma);
    if (rma->done) {
      if (status == UCS_OK) {
        rma->done(rma->reply);
      } else {
        rma->done(UcxError("ucx one-sided operation", status));
      }
    }
    delete rma;
    if (request != nullptr) ucp_request_free(request);
  }

  // Starts `rma` with `issue(params)`; completes it at once if UCX did.
  template <typename Issue>
  static void Start(UcpWorker* self, Rma* rma, bool reply, Issue issue) {
    self->ucp_->rmas.insert(rma);
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    params.cb.send = OnRmaDone;
    params.user_data = rma;
    if (reply) {
      params.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      params.datatype = ucp_dt_make_contig(8);
      params.reply_buffer = &rma->reply;
    }
    ucs_status_ptr_t request = issue(params);
    if (request == nullptr) {
      OnRmaDone(nullptr, UCS_OK, rma);
    } else if (UCS_PTR_IS_ERR(request)) {
      OnRmaDone(nullptr, UCS_PTR_STATUS(request), rma);
    }
  }
  std::unordered_set<Receiving*> receives;

  static void OnConnectRequest(ucp_conn_request_h request, void* arg) {
    auto* self = static_cast<UcpWorker*>(arg);
    if (self->peers_.size() >= self->max_peers_) {
      ++self->counters_.peers_refused;
      ucp_listener_reject(self->ucp_->listener, request);
      return;
    }
    transport::NetAddress from;
    ucp_conn_request_attr_t attr{};
    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    if (ucp_conn_request_query(request, &attr) == UCS_OK) {
      if (auto a = transport::NetAddress::FromSockaddr(
              reinterpret_cast<const sockaddr*>(&attr.client_address), sizeof(attr.client_address));
          a.ok()) {
        from = *a;
      }
    }
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.conn_request = request;
    params.err_mode = static_cast<ucp_err_handling_mode_t>(self->err_mode_);
    params.err_handler.cb = OnPeerError;
    params.err_handler.arg = self;
    ucp_ep_h ep = nullptr;
    if (ucp_ep_create(self->ucp_->worker, &params, &ep) == UCS_OK) self->PeerOf(ep, from);
  }

  static void OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status) {
    auto* self = static_cast<UcpWorker*>(arg);
    auto it = self->peer_ids_.find(ep);
    if (it == self->peer_ids_.end()) return;
    self->Fail(it->second, UcxError("ucx peer failed", status));
  }

  static ucs_status_t OnActiveMessage(void* arg, const void* header, size_t header_length,
                                      void* data, size_t length,
                                      const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcpWorker*>(arg);
    // Senders ask for the reply endpoint: it names the peer. An endpoint we
    // do not know (refused, or already failed) names nobody.
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0 || param->reply_ep == nullptr ||
        !self->peer_ids_.contains(param->reply_ep)) {
      ++self->counters_.anonymous_dropped;
      return UCS_OK;
    }
    const PeerId peer = self->peer_ids_.at(param->reply_ep);
    const std::string_view head(static_cast<const char*>(header), header_length);
    if (self->max_message_bytes_ != 0 && length > self->max_message_bytes_) {
      // Refused unread (a rendezvous is never fetched, UCX drops it).
      ++self->counters_.oversized_dropped;
      if (self->handlers_.oversized) self->handlers_.oversized(peer, head, length);
      return UCS_OK;
    }
    Buffer message = self->Allocate(length);
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
      // Eager: the bytes are valid during this call only.
      if (length > 0) std::memcpy(message.data(), data, length);
      if (self->handlers_.message) self->handlers_.message(peer, head, std::move(message));
      return UCS_OK;
    }
    // Rendezvous: fetch the data into the buffer, then deliver.
    auto* receiving = new Receiving{self, peer, std::string(head), std::move(message)};
    self->ucp_->receives.insert(receiving);
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    params.cb.recv_am = OnReceived;
    params.user_data = receiving;
    ucs_status_ptr_t request = ucp_am_recv_data_nbx(self->ucp_->worker, data,
                                                    receiving->message.data(), length, &params);
    if (request == nullptr) {
      OnReceived(nullptr, UCS_OK, length, receiving);  // done at once
    } else if (UCS_PTR_IS_ERR(request)) {
      self->ucp_->receives.erase(receiving);
      delete receiving;
      self->Fail(peer, UcxError("ucx receive", UCS_PTR_STATUS(request)));
    }
    // Otherwise OnReceived runs, and frees the request, when it is done
    // (freeing it here, inside the callback, would drop the receive).
    return UCS_OK;
  }

  static void OnReceived(void* request, ucs_status_t status, size_t length, void* user_data) {
    auto* receiving = static_cast<Receiving*>(user_data);
    UcpWorker* self = receiving->worker;
    self->ucp_->receives.erase(receiving);
    if (status == UCS_OK && length == receiving->message.size()) {
      if (self->handlers_.message) {
        self->handlers_.message(receiving->peer, receiving->header, std::move(receiving->message));
      }
    } else if (status != UCS_OK) {
      self->Fail(receiving->peer, UcxError("ucx receive", status));
    }
    delete receiving;
    if (request != nullptr) ucp_request_free(request);
  }

  static void OnSent(void* request, ucs_status_t status, void* user_data) {
    auto* sending = static_cast<Sending*>(user_data);
    sending->worker->ucp_->sends.erase(sending);
    if (sending->done) {
      sending->done(status == UCS_OK ? OkStatus() : UcxError("ucx send", status));
    }
    delete sending;
    if (request != nullptr) ucp_request_free(request);
  }
};

UcpWorker::UcpWorker(Handlers handlers)
    : handlers_(std::move(handlers)), ucp_(std::make_unique<Ucp>()) {}

Result<std::unique_ptr<UcpWorker>> UcpWorker::Create(const UcpOptions& options,
                                                     Handlers handlers) {
  std::unique_ptr<UcpWorker> self(new UcpWorker(std::move(handlers)));
  self->max_message_bytes_ = options.max_message_bytes;
  self->max_peers_ = options.max_peers;
  self->err_mode_ = options.detect_peer_failure ? UCP_ERR_HANDLING_MODE_PEER
                                                : UCP_ERR_HANDLING_MODE_NONE;
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    return UcxError("ucp_config_read", s);
  }
  Status configured = OkStatus();
  for (const auto& [key, value] : {std::pair{"TLS", options.tls},
                                   std::pair{"NET_DEVICES", options.devices}}) {
    if (value.empty()) continue;
    if (ucs_status_t s = ucp_config_modify(config, key, value.c_str()); s != UCS_OK) {
      configured = InvalidArgumentError(std::string("ucx.") + (key == std::string("TLS") ? "tls" : "devices") +
                                        ": UCX refused '" + value + "': " + ucs_status_string(s));
      break;
    }
  }
  if (configured.ok()) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
    if (ucs_status_t s = ucp_init(&params, config, &self->ucp_->context); s != UCS_OK) {
      configured = UcxError("ucp_init (ucx.tls '" + options.tls + "', ucx.devices '" +
                                options.devices + "')",
                            s);
    }
  }
  ucp_config_release(config);
  WHARF_RETURN_IF_ERROR(configured);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (ucs_status_t s = ucp_worker_create(self->ucp_->context, &worker_params, &self->ucp_->worker);
      s != UCS_OK) {
    return UcxError("ucp_worker_create", s);
  }
  if (ucs_status_t s = ucp_worker_get_efd(self->ucp_->worker, &self->efd_); s != UCS_OK) {
    return UcxError("ucp_worker_get_efd", s);
  }
  ucp_am_handler_param_t handler{};
  handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  handler.id = kMessageId;
  handler.cb = Ucp::OnActiveMessage;
  handler.arg = self.get();
  handler.flags = UCP_AM_FLAG_WHOLE_MSG;
  if (ucs_status_t s = ucp_worker_set_am_recv_handler(self->ucp_->worker, &handler); s != UCS_OK) {
    return UcxError("ucp_worker_set_am_recv_handler", s);
  }
  return self;
}

UcpWorker::~UcpWorker() {
  if (ucp_->listener != nullptr) ucp_listener_destroy(ucp_->listener);
  for (auto& [id, entry] : keys_) ucp_rkey_destroy(static_cast<ucp_rkey_h>(entry.rkey));
  keys_.clear();
  // Closes already under way (their flush needs the peers to answer: a
  // peer silent past the budget leaves UCX to complain), then every
  // endpoint left: forced where UCX
  // can tell a peer's failure, flushed (briefly) where it cannot, since a
  // forced close needs peer-failure handling.
  std::vector<void*> closes = std::move(ucp_->closing);
  for (auto& [id, entry] : peers_) {
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = err_mode_ == UCP_ERR_HANDLING_MODE_PEER ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t request = ucp_ep_close_nbx(static_cast<ucp_ep_h>(entry.ep), &params);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) closes.push_back(request);
  }
  ucp_->Finish(closes, kCloseBudgetNs);
  if (ucp_->worker != nullptr) ucp_worker_destroy(ucp_->worker);
  for (auto& [id, memh] : mapped_) ucp_mem_unmap(ucp_->context, static_cast<ucp_mem_h>(memh));
  if (ucp_->context != nullptr) ucp_cleanup(ucp_->context);
  // What UCX never finished (a rendezvous whose peer never answered).
  for (Ucp::Sending* sending : ucp_->sends) {
    if (sending->done) sending->done(CancelledError("ucx worker closed"));
    delete sending;
  }
  for (Ucp::Receiving* receiving : ucp_->receives) delete receiving;
  for (Ucp::Rma* rma : ucp_->rmas) {
    if (rma->done) rma->done(CancelledError("ucx worker closed"));
    delete rma;
  }
}

Result<transport::NetAddress> UcpWorker::Listen(const transport::NetAddress& address) {
  if (ucp_->listener != nullptr) return FailedPreconditionError("ucx: listening already");
  sockaddr_storage storage{};
  const size_t length = address.ToSockaddr(&storage);
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&storage);
  params.sockaddr.addrlen = static_cast<socklen_t>(length);
  params.conn_handler.cb = Ucp::OnConnectRequest;
  params.conn_handler.arg = this;
  if (ucs_status_t s = ucp_listener_create(ucp_->worker, &params, &ucp_->listener); s != UCS_OK) {
    return UcxError("ucx listen on " + address.ToString(), s);
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (ucs_status_t s = ucp_listener_query(ucp_->listener, &attr); s != UCS_OK) {
    return UcxError("ucp_listener_query", s);
  }
  return transport::NetAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&attr.sockaddr),
                                             sizeof(attr.sockaddr));
}

Result<UcpWorker::PeerId> UcpWorker::Connect(const transport::NetAddress& address) {
  sockaddr_storage storage{};
  const size_t length = address.ToSockaddr(&storage);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&storage);
  params.sockaddr.addrlen = static_cast<socklen_t>(length);
  params.err_mode = static_cast<ucp_err_handling_mode_t>(err_mode_);
  params.err_handler.cb = Ucp::OnPeerError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = ucp_ep_create(ucp_->worker, &params, &ep); s != UCS_OK) {
    return UcxError("ucx connect to " + address.ToString(), s);
  }
  return PeerOf(ep, address);
}

void UcpWorker::Send(PeerId peer, std::string_view header, Buffer message,
                     std::function<void(const Status&)> done) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) {
    if (done) done(UnavailableError("ucx: no peer " + std::to_string(peer)));
    return;
  }
  if (header.size() > kMaxUcpHeaderBytes) {
    if (done) done(InvalidArgumentError("ucx: header of " + std::to_string(header.size()) + " bytes"));
    return;
  }
  auto* sending = new Ucp::Sending{this, {}, std::move(message), std::move(done)};
  std::memcpy(sending->header.data(), header.data(), header.size());
  ucp_->sends.insert(sending);
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS;
  params.cb.send = Ucp::OnSent;
  params.user_data = sending;
  params.flags = UCP_AM_SEND_FLAG_REPLY;  // the receiver learns who sent it
  ucs_status_ptr_t request =
      ucp_am_send_nbx(static_cast<ucp_ep_h>(it->second.ep), kMessageId, sending->header.data(),
                      header.size(), sending->message.data(), sending->message.size(), &params);
  if (request == nullptr) {
    Ucp::OnSent(nullptr, UCS_OK, sending);  // done at once
  } else if (UCS_PTR_IS_ERR(request)) {
    Ucp::OnSent(nullptr, UCS_PTR_STATUS(request), sending);
  }
}

Result<UcpWorker::MappedMemory> UcpWorker::MapMemory(void* base, size_t bytes, bool remote_write) {
  if (base == nullptr || bytes == 0) return InvalidArgumentError("ucx: mapping no memory");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_PROT;
  params.address = base;
  params.length = bytes;
  params.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
                UCP_MEM_MAP_PROT_REMOTE_READ | (remote_write ? UCP_MEM_MAP_PROT_REMOTE_WRITE : 0);
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(ucp_->context, &params, &memh); s != UCS_OK) {
    return UcxError("ucp_mem_map of " + std::to_string(bytes) + " bytes", s);
  }
  void* packed = nullptr;
  size_t packed_size = 0;
  if (ucs_status_t s = ucp_rkey_pack(ucp_->context, memh, &packed, &packed_size); s != UCS_OK) {
    ucp_mem_unmap(ucp_->context, memh);
    return UcxError("ucp_rkey_pack", s);
  }
  MappedMemory mapped{next_mapped_++, reinterpret_cast<uint64_t>(base),
                      std::string(static_cast<const char*>(packed), packed_size)};
  ucp_rkey_buffer_release(packed);
  mapped_[mapped.id] = memh;
  return mapped;
}

bool UcpWorker::UnmapMemory(uint64_t id) {
  auto it = mapped_.find(id);
  if (it == mapped_.end()) return false;
  ucp_mem_unmap(ucp_->context, static_cast<ucp_mem_h>(it->second));
  mapped_.erase(it);
  return true;
}

Result<uint64_t> UcpWorker::ImportKey(PeerId peer, std::string_view packed) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return UnavailableError("ucx: no peer " + std::to_string(peer));
  if (packed.empty()) return InvalidArgumentError("ucx: an empty remote key");
  ucp_rkey_h rkey = nullptr;
  if (ucs_status_t s = ucp_ep_rkey_unpack(static_cast<ucp_ep_h>(it->second.ep), packed.data(), &rkey);
      s != UCS_OK) {
    return InvalidArgumentError(std::string("ucx: a remote key UCX cannot read: ") +
                                ucs_status_string(s));
  }
  const uint64_t id = next_key_++;
  keys_[id] = KeyEntry{peer, rkey};
  return id;
}

void UcpWorker::DropKey(uint64_t key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  ucp_rkey_destroy(static_cast<ucp_rkey_h>(it->second.rkey));
  keys_.erase(it);
}

std::optional<UcpWorker::RmaTarget> UcpWorker::TargetOf(PeerId peer, uint64_t key) const {
  auto p = peers_.find(peer);
  auto k = keys_.find(key);
  if (p == peers_.end() || k == keys_.end() || k->second.peer != peer) return std::nullopt;
  return RmaTarget{p->second.ep, k->second.rkey};
}

namespace {

// A put's or get's completion as UcpWorker's Rma reports it.
std::function<void(Result<uint64_t>)> StatusOnly(UcpWorker::RmaDone done) {
  return [done = std::move(done)](Result<uint64_t> r) {
    if (done) done(r.status());
  };
}

Status NoTarget() { return UnavailableError("ucx: no such peer or key"); }

}  // namespace

void UcpWorker::Put(PeerId peer, uint64_t key, uint64_t remote_address,
                    std::span<const std::byte> from, RmaDone done) {
  const std::optional<RmaTarget> target = TargetOf(peer, key);
  if (!target) {
    if (done) done(NoTarget());
    return;
  }
  // A put's own completion only frees `from`; the flush after it completes
  // once the data is in the target's memory, and that is what `done` says.
  const auto ep = static_cast<ucp_ep_h>(target->ep);
  ucp_request_param_t put_params{};
  put_params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  put_params.cb.send = [](void* request, ucs_status_t, void*) { ucp_request_free(request); };
  ucs_status_ptr_t put = ucp_put_nbx(ep, from.data(), from.size(), remote_address,
                                     static_cast<ucp_rkey_h>(target->rkey), &put_params);
  if (UCS_PTR_IS_ERR(put)) {
    if (done) done(UcxError("ucx put", UCS_PTR_STATUS(put)));
    return;
  }
  Ucp::Start(this, new Ucp::Rma{this, StatusOnly(std::move(done))}, false,
             [&](const ucp_request_param_t& params) { return ucp_ep_flush_nbx(ep, &params); });
}

void UcpWorker::Get(PeerId peer, uint64_t key, uint64_t remote_address, std::span<std::byte> into,
                    RmaDone done) {
  const std::optional<RmaTarget> target = TargetOf(peer, key);
  if (!target) {
    if (done) done(NoTarget());
    return;
  }
  Ucp::Start(this, new Ucp::Rma{this, StatusOnly(std::move(done))}, false,
             [&](const ucp_request_param_t& params) {
               return ucp_get_nbx(static_cast<ucp_ep_h>(target->ep), into.data(), into.size(),
                                  remote_address, static_cast<ucp_rkey_h>(target->rkey), &params);
             });
}

void UcpWorker::Atomic(PeerId peer, uint64_t key, uint64_t remote_address, AtomicOp op,
                       uint64_t value, uint64_t compare,
                       std::function<void(Result<uint64_t>)> done) {
  const std::optional<RmaTarget> target = TargetOf(peer, key);
  if (!target || remote_address % 8 != 0) {
    if (done) done(target ? InvalidArgumentError("ucx: an atomic on an unaligned word") : NoTarget());
    return;
  }
  auto* rma = new Ucp::Rma{this, std::move(done)};
  // UCX's compare-and-swap compares with `buffer` and writes the reply
  // buffer's word, then returns the old word in it; fetch-add adds `buffer`.
  rma->value = op == AtomicOp::kCompareSwap ? compare : value;
  rma->reply = op == AtomicOp::kCompareSwap ? value : 0;
  const ucp_atomic_op_t opcode = op == AtomicOp::kCompareSwap ? UCP_ATOMIC_OP_CSWAP : UCP_ATOMIC_OP_ADD;
  Ucp::Start(this, rma, true, [&](const ucp_request_param_t& params) {
    return ucp_atomic_op_nbx(static_cast<ucp_ep_h>(target->ep), opcode, &rma->value, 1,
                             remote_address, static_cast<ucp_rkey_h>(target->rkey), &params);
  });
}

unsigned UcpWorker::Progress() {
  unsigned total = 0;
  while (unsigned n = ucp_worker_progress(ucp_->worker)) total += n;
  return total;
}

bool UcpWorker::Arm() { return ucp_worker_arm(ucp_->worker) == UCS_OK; }

std::string UcpWorker::Describe(PeerId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return "";
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return "";
  ucp_ep_print_info(static_cast<ucp_ep_h>(it->second.ep), stream);
  std::fclose(stream);
  std::string out(text, size);
  std::free(text);
  return out;
}

std::string UcpWorker::Lanes(PeerId peer) const {
  // ucp_ep_print_info writes a line per lane:
  //   "lane[1]:  2:tcp/lo.0 md[1]  -> md[1]/tcp/sysdev[255] rma_bw#0 am am_bw#0 wireup"
  // (and "lane[0]: cm rdmacm" for the connection manager, left out here).
  std::istringstream info(Describe(peer));
  std::string out;
  for (std::string line; std::getline(info, line);) {
    const size_t lane = line.find("lane[");
    const size_t arrow = line.find("->");
    if (lane == std::string::npos || arrow == std::string::npos) continue;
    std::istringstream head(line.substr(line.find(':', lane) + 1));
    std::string resource;
    head >> resource;  // "2:tcp/lo.0"
    if (size_t index = resource.find(':'); index != std::string::npos) resource.erase(0, index + 1);
    if (size_t path = resource.rfind('.'); path != std::string::npos) resource.erase(path);
    std::istringstream tail(line.substr(arrow + 2));
    std::string word, roles;
    tail >> word;  // the remote "md[1]/tcp/sysdev[255]"
    while (tail >> word) {
      if (size_t hash = word.find('#'); hash != std::string::npos) word.erase(hash);
      if (word == "wireup" || roles.find(word) != std::string::npos) continue;
      roles += (roles.empty() ? "" : ",") + word;
    }
    out += (out.empty() ? "" : " ") + resource + "(" + roles + ")";
  }
  return out;
}

transport::NetAddress UcpWorker::AddressOf(PeerId peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? transport::NetAddress() : it->second.address;
}

Buffer UcpWorker::Allocate(size_t bytes) {
  if (handlers_.allocate) {
    Buffer given = handlers_.allocate(bytes);
    if (given.size() == bytes && (bytes == 0 || given.data() != nullptr)) return given;
  }
  return Buffer::Allocate(bytes);
}

UcpWorker::PeerId UcpWorker::PeerOf(void* ep, const transport::NetAddress& address) {
  if (auto it = peer_ids_.find(ep); it != peer_ids_.end()) return it->second;
  const PeerId id = next_peer_++;
  peers_[id] = PeerEntry{ep, address};
  peer_ids_[ep] = id;
  return id;
}

void UcpWorker::Drop(PeerId peer, bool force) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  void* ep = it->second.ep;
  peers_.erase(it);
  peer_ids_.erase(ep);
  // Its keys die with it (UCX ties an unpacked key to its endpoint).
  for (auto k = keys_.begin(); k != keys_.end();) {
    if (k->second.peer == peer) {
      ucp_rkey_destroy(static_cast<ucp_rkey_h>(k->second.rkey));
      k = keys_.erase(k);
    } else {
      ++k;
    }
  }
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  // Not waited for: it completes in later progress. Kept until then (the
  // destructor finishes what is still pending); the finished ones go here.
  PruneClosing();
  ucs_status_ptr_t request = ucp_ep_close_nbx(static_cast<ucp_ep_h>(ep), &params);
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) ucp_->closing.push_back(request);
}

void UcpWorker::PruneClosing() {
  std::erase_if(ucp_->closing, [](void* r) {
    if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
    ucp_request_free(r);
    return true;
  });
}

size_t UcpWorker::closing() {
  PruneClosing();
  return ucp_->closing.size();
}

void UcpWorker::Close(PeerId peer) { Drop(peer, /*force=*/false); }

void UcpWorker::Fail(PeerId peer, const Status& why) {
  if (!peers_.contains(peer)) return;
  // The endpoint is of no use any more: close it without waiting.
  Drop(peer, /*force=*/true);
  if (handlers_.peer_failed) handlers_.peer_failed(peer, why);
}

}  // namespace wharf::ucx
