// Encoding and bounds-checked decoding of control-socket messages.
#include "shm/attach_protocol.h"

#include <cstring>

namespace wharf::shm {
namespace {

class Writer {
 public:
  explicit Writer(ControlType type) {
    U32(kControlMagic);
    U16(kControlVersion);
    U16(static_cast<uint16_t>(type));
  }
  void U16(uint16_t v) { Raw(&v, sizeof v); }
  void U32(uint32_t v) { Raw(&v, sizeof v); }
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
  std::vector<std::byte> Take() { return std::move(out_); }

 private:
  // resize + memcpy rather than insert: GCC 12 at -O3 reports a false
  // -Wstringop-overflow for vector::insert of a byte range.
  void Raw(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  std::vector<std::byte> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  Status Int(const char* field, T* out) {
    if (in_.size() - pos_ < sizeof(T)) return Short(field);
    std::memcpy(out, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }
  Status Str(const char* field, std::string* out, uint32_t max = kMaxControlString) {
    uint32_t n = 0;
    WHARF_RETURN_IF_ERROR(Int(field, &n));
    if (n > max) {
      return InvalidArgumentError(std::string("control message: ") + field + " is " +
                                  std::to_string(n) + " bytes, over the limit of " +
                                  std::to_string(max));
    }
    if (in_.size() - pos_ < n) return Short(field);
    out->assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return OkStatus();
  }
  Status End() const {
    if (pos_ != in_.size()) {
      return InvalidArgumentError("control message: " + std::to_string(in_.size() - pos_) +
                                  " trailing bytes");
    }
    return OkStatus();
  }

 private:
  Status Short(const char* field) const {
    return InvalidArgumentError(std::string("control message: truncated at ") + field);
  }
  std::span<const std::byte> in_;
  size_t pos_ = 0;
};

void PutGeometry(Writer& w, const Geometry& g) {
  w.U32(g.command_entries);
  w.U32(g.completion_entries);
  w.U64(g.heap_bytes);
}

Status GetGeometry(Reader& r, Geometry* g) {
  WHARF_RETURN_IF_ERROR(r.Int("command_entries", &g->command_entries));
  WHARF_RETURN_IF_ERROR(r.Int("completion_entries", &g->completion_entries));
  return r.Int("heap_bytes", &g->heap_bytes);
}

Status GetStatus(Reader& r, Status* out) {
  uint32_t code = 0;
  std::string message;
  WHARF_RETURN_IF_ERROR(r.Int("status code", &code));
  WHARF_RETURN_IF_ERROR(r.Str("status message", &message));
  if (code > static_cast<uint32_t>(StatusCode::kDataLoss)) {
    return InvalidArgumentError("control message: unknown status code " + std::to_string(code));
  }
  *out = code == 0 ? OkStatus() : Status(static_cast<StatusCode>(code), std::move(message));
  return OkStatus();
}

void PutStatus(Writer& w, const Status& s) {
  w.U32(static_cast<uint32_t>(s.code()));
  w.Str(std::string_view(s.message()).substr(0, kMaxControlString));
}

}  // namespace

std::vector<std::byte> EncodeHello(const HelloMsg& hello) {
  Writer w(ControlType::kHello);
  w.Str(hello.address);
  PutGeometry(w, hello.geometry);
  w.Str(hello.program);
  return w.Take();
}

std::vector<std::byte> EncodeWelcome(const WelcomeMsg& welcome) {
  Writer w(ControlType::kWelcome);
  PutStatus(w, welcome.status);
  w.U64(welcome.app_id);
  PutGeometry(w, welcome.geometry);
  w.U64(welcome.max_message_bytes);
  w.Str(welcome.address);
  return w.Take();
}

std::vector<std::byte> EncodeStatsReply(const std::vector<Counter>& stats) {
  Writer w(ControlType::kStatsReply);
  w.U32(static_cast<uint32_t>(stats.size()));
  for (const Counter& c : stats) {
    w.Str(c.name);
    w.U64(c.value);
  }
  return w.Take();
}

std::vector<std::byte> EncodeStatusReply(const std::string& json) {
  Writer w(ControlType::kStatusReply);
  w.Str(json);
  return w.Take();
}

std::vector<std::byte> EncodeFault(const Status& why) {
  Writer w(ControlType::kFault);
  PutStatus(w, why);
  return w.Take();
}

std::vector<std::byte> EncodeRequest(ControlType type) { return Writer(type).Take(); }

Result<AttachMessage> DecodeAttach(std::span<const std::byte> bytes) {
  Reader r(bytes);
  uint32_t magic = 0;
  uint16_t version = 0, type = 0;
  WHARF_RETURN_IF_ERROR(r.Int("magic", &magic));
  WHARF_RETURN_IF_ERROR(r.Int("version", &version));
  WHARF_RETURN_IF_ERROR(r.Int("type", &type));
  if (magic != kControlMagic) return InvalidArgumentError("control message: bad magic");
  if (version != kControlVersion) {
    return InvalidArgumentError("control message: version " + std::to_string(version) +
                                ", expected " + std::to_string(kControlVersion) +
                                " (libwharf and wharfd from different releases?)");
  }
  AttachMessage m;
  m.type = static_cast<ControlType>(type);
  switch (m.type) {
    case ControlType::kHello:
      WHARF_RETURN_IF_ERROR(r.Str("address", &m.hello.address));
      WHARF_RETURN_IF_ERROR(GetGeometry(r, &m.hello.geometry));
      WHARF_RETURN_IF_ERROR(r.Str("program", &m.hello.program));
      break;
    case ControlType::kWelcome:
      WHARF_RETURN_IF_ERROR(GetStatus(r, &m.welcome.status));
      WHARF_RETURN_IF_ERROR(r.Int("app_id", &m.welcome.app_id));
      WHARF_RETURN_IF_ERROR(GetGeometry(r, &m.welcome.geometry));
      WHARF_RETURN_IF_ERROR(r.Int("max_message_bytes", &m.welcome.max_message_bytes));
      WHARF_RETURN_IF_ERROR(r.Str("address", &m.welcome.address));
      break;
    case ControlType::kStatsReply: {
      uint32_t n = 0;
      WHARF_RETURN_IF_ERROR(r.Int("count", &n));
      if (n > 100'000) return InvalidArgumentError("control message: too many counters");
      for (uint32_t i = 0; i < n; ++i) {
        Counter c;
        WHARF_RETURN_IF_ERROR(r.Str("counter name", &c.name));
        WHARF_RETURN_IF_ERROR(r.Int("counter value", &c.value));
        m.stats.push_back(std::move(c));
      }
      break;
    }
    case ControlType::kStatusReply:
      WHARF_RETURN_IF_ERROR(r.Str("status", &m.text, UINT32_MAX));
      break;
    case ControlType::kFault:
      WHARF_RETURN_IF_ERROR(GetStatus(r, &m.fault));
      break;
    case ControlType::kStatsRequest:
    case ControlType::kStatusRequest:
    case ControlType::kWake:
      break;
    default:
      return InvalidArgumentError("control message: unknown type " + std::to_string(type));
  }
  WHARF_RETURN_IF_ERROR(r.End());
  return m;
}

}  // namespace wharf::shm
