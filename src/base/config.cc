// ConfigDoc: the yaml-cpp adapter (the only file that includes yaml-cpp),
// flattening into dotted keys, typed getters, and the unknown-key check.
// Every yaml-cpp exception is caught here and turned into a Status that
// names the file and line.
#include "base/config.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <sstream>
#include <utility>

#include "base/config_subprocess.h"
#include "base/config_value.h"

namespace wharf {
namespace {

// Why parsing runs in a child process. yaml-cpp 0.7 (Debian 12) does not
// finish on some malformed documents, allocating as it loops (found by
// config_fuzzer; fuzz/known_hangs/). The ones understood so far are refused
// up front by DocumentChecker, but yaml-cpp is too large to prove that no
// other input loops: its scanner and parser are ~4000 lines of state. The
// ways to bound code that may not terminate are: (a) refuse the inputs that
// loop, which needs that proof; (b) run it in a process that can be killed;
// (c) a thread with a watchdog, which cannot stop a thread that loops. So
// Parse forks a child that runs yaml-cpp under an address-space limit and
// sends back the flattened entries (or the error), and the parent kills it
// when the time limit passes (base/config_subprocess.h; that file says why
// running yaml-cpp in the child of a multi-threaded process is sound with
// glibc). Costs: a fork per document, which copies the caller's page tables
// (under a millisecond for a small process, about 20 ms per 500 MB resident;
// configs are read at startup), and Parse fails, with kInternal, where fork
// is not allowed.
// The only in-process shortcut is a document of blanks and comments, which
// needs no parser at all (IsBlankOrComments).

// Reads parser events alone, before any node is built, and stops the parse
// (by throwing Stop) at the first thing that would make yaml-cpp loop for
// ever or build without bound:
// - Anchors and aliases. Config files have no use for them, and yaml-cpp
//   turns a self-referencing alias (`a: &x [*x]`) into a cycle of shared
//   nodes that is never freed and that expands without end.
// - A document that starts where the previous one started. yaml-cpp's
//   SingleDocParser::HandleNode returns a null, without consuming it, for a
//   token no value can start with (a ',' outside [...] or {...}); at the top
//   level that ends the document, Parser::HandleNextDocument starts the next
//   one at the same token, and so on for ever (every known hang). A
//   document that consumed nothing is exactly that loop; since a config is a
//   single document anyway, refusing a second one that makes no progress
//   loses nothing.
// - More nodes than a config can hold: each key is two nodes (name and
//   value), plus the root, so past 2 * kMaxEntries + 1 the flattener would
//   refuse the document anyway; stopping here keeps yaml-cpp from building
//   millions of nodes first.
class DocumentChecker final : public YAML::EventHandler {
 public:
  enum class Problem { kNone, kAnchor, kNoProgress, kTooManyNodes };
  struct Stop {};

  explicit DocumentChecker(size_t max_nodes) : max_nodes_(max_nodes) {}

  Problem problem = Problem::kNone;
  YAML::Mark where;  // of the problem

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_ > 0 && mark.pos == last_start_.pos && mark.line == last_start_.line &&
        mark.column == last_start_.column) {
      Fail(Problem::kNoProgress, mark);
    }
    last_start_ = mark;
    ++documents_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Node(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Fail(Problem::kAnchor, mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Node(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Node(mark, anchor);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Node(mark, anchor);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) Fail(Problem::kAnchor, mark);
    if (++nodes_ > max_nodes_) Fail(Problem::kTooManyNodes, mark);
  }
  [[noreturn]] void Fail(Problem p, const YAML::Mark& mark) {
    problem = p;
    where = mark;
    throw Stop{};
  }

  const size_t max_nodes_;
  size_t nodes_ = 0;
  size_t documents_ = 0;
  YAML::Mark last_start_;
};

// True if `text` is only blank lines and comments, in printable ASCII: an
// empty document for any YAML parser, so Parse answers it without running
// one (the engine parses "" whenever no config file is given). Each line is
// spaces, then optionally '#' and printable characters or tabs.
bool IsBlankOrComments(std::string_view text) {
  bool comment = false;
  for (const char c : text) {
    if (c == '\n') {
      comment = false;
    } else if (comment) {
      if (c != '\t' && (c < 0x20 || c > 0x7e)) return false;
    } else if (c == '#') {
      comment = true;
    } else if (c != ' ') {
      return false;
    }
  }
  return true;
}

// The byte at a yaml-cpp mark (0-based line and column, counted in bytes
// for UTF-8 after any byte order mark), or 0 if there is none.
char CharAt(std::string_view text, const YAML::Mark& mark) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  size_t at = 0;
  for (int line = 0; line < mark.line; ++line) {
    at = text.find('\n', at);
    if (at == std::string_view::npos) return 0;
    ++at;
  }
  at += static_cast<size_t>(std::max(0, mark.column));
  return at < text.size() ? text[at] : 0;
}

// yaml-cpp marks are 0-based; people and editors count lines from 1.
int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

// The parent of a dotted key ("" for a top-level key) and its last segment.
std::string_view ParentOf(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}
std::string_view LastSegment(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}
std::string Join(std::string_view parent, std::string_view child) {
  return parent.empty() ? std::string(child) : fmt::format("{}.{}", parent, child);
}

// Edit distance counting an adjacent transposition as one edit (optimal
// string alignment), since "prot" for "port" is the typo people make.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

// Walks a parsed YAML tree into ConfigDoc entries. A class (rather than free
// functions) only so that ConfigDoc can befriend it.
class ConfigFlattener {
 public:
  // Bounds on the flattened tree: a config is small and shallow, and both
  // depth and size are capped rather than trusted.
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxEntries = 100'000;

  explicit ConfigFlattener(ConfigDoc& doc) : doc_(doc) {}

  // Adds `node` under `key` ("" for the root, at depth 0), then its children.
  Status Add(const YAML::Node& node, const std::string& key, int line, int depth = 0) {
    if (depth > kMaxDepth || doc_.entries_.size() >= kMaxEntries) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: {}: nested deeper than {} levels or more than {} keys",
          doc_.source_name_, line, key, kMaxDepth, kMaxEntries));
    }
    ConfigDoc::Entry& entry = doc_.entries_[key];
    entry.line = line;
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        entry.kind = ConfigDoc::Kind::kScalar;
        entry.scalar = node.Scalar();
        return OkStatus();
      case YAML::NodeType::Sequence: {
        entry.kind = ConfigDoc::Kind::kList;
        for (size_t i = 0; i < node.size(); ++i) {
          entry.children.push_back(std::to_string(i));
          const YAML::Node item = node[i];
          WHARF_RETURN_IF_ERROR(
              Add(item, Join(key, entry.children.back()), LineOf(item), depth + 1));
        }
        return OkStatus();
      }
      case YAML::NodeType::Map:
        entry.kind = ConfigDoc::Kind::kMap;
        return AddMap(node, key, depth);
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        break;
    }
    entry.kind = ConfigDoc::Kind::kNull;
    return OkStatus();
  }

 private:
  Status AddMap(const YAML::Node& node, const std::string& key, int depth) {
    for (const auto& pair : node) {
      // Copies (cheap handles): yaml-cpp's iterator yields a temporary pair.
      const YAML::Node name_node = pair.first;
      const YAML::Node value_node = pair.second;
      const int line = LineOf(name_node);
      if (!name_node.IsScalar() || name_node.Scalar().empty()) {
        return InvalidArgumentError(fmt::format("{}:{}: {}: keys must be non-empty plain names",
                                                doc_.source_name_, line,
                                                key.empty() ? "top level" : key));
      }
      const std::string& name = name_node.Scalar();
      const std::string child = Join(key, name);
      // A dot inside a name would make "a.b" mean two different keys.
      if (name.find('.') != std::string::npos) {
        return InvalidArgumentError(
            fmt::format("{}:{}: {}: key names must not contain '.'; nest maps instead",
                        doc_.source_name_, line, QuoteForError(child)));
      }
      // yaml-cpp keeps both pairs of a duplicated key; a reader would see only
      // one of them, so a duplicate is an error rather than a silent pick.
      if (auto prev = doc_.entries_.find(child); prev != doc_.entries_.end()) {
        return InvalidArgumentError(fmt::format("{}:{}: {}: duplicate key (first set on line {})",
                                                doc_.source_name_, line, child, prev->second.line));
      }
      doc_.entries_[key].children.push_back(name);
      WHARF_RETURN_IF_ERROR(Add(value_node, child, line, depth + 1));
    }
    return OkStatus();
  }

  ConfigDoc& doc_;
};

// Carries a parse result from the parser process to the caller: 'E', the
// status code and message; or 'D' and every entry. Both ends are this
// binary, so integers go in native byte order; the reader still checks every
// length and value, since it is input from another process.
class ConfigCodec {
 public:
  static std::string Encode(const Result<ConfigDoc>& result) {
    std::string out;
    if (!result.ok()) {
      out += 'E';
      PutU32(out, static_cast<uint32_t>(result.status().code()));
      PutString(out, result.status().message());
      return out;
    }
    out += 'D';
    PutU32(out, static_cast<uint32_t>(result->entries_.size()));
    for (const auto& [key, entry] : result->entries_) {
      PutString(out, key);
      out += static_cast<char>(entry.kind);
      PutU32(out, static_cast<uint32_t>(entry.line));
      PutString(out, entry.scalar);
      PutU32(out, static_cast<uint32_t>(entry.children.size()));
      for (const std::string& child : entry.children) PutString(out, child);
    }
    return out;
  }

  static Result<ConfigDoc> Decode(std::string_view in, std::string source_name) {
    Reader r{in};
    ConfigDoc doc(std::move(source_name));
    const char tag = r.Byte();
    if (tag == 'E') {
      const uint32_t code = r.U32();
      std::string message(r.String());
      if (r.ok && r.rest.empty() && code != 0 && code <= static_cast<uint32_t>(StatusCode::kDataLoss)) {
        return Status(static_cast<StatusCode>(code), std::move(message));
      }
    } else if (tag == 'D') {
      for (uint32_t n = r.U32(); r.ok && n > 0; --n) {
        std::string key(r.String());
        ConfigDoc::Entry entry;
        const auto kind = static_cast<uint8_t>(r.Byte());
        entry.kind = static_cast<ConfigDoc::Kind>(kind);
        entry.line = static_cast<int>(r.U32());
        entry.scalar = std::string(r.String());
        for (uint32_t c = r.U32(); r.ok && c > 0; --c) entry.children.emplace_back(r.String());
        if (kind > static_cast<uint8_t>(ConfigDoc::Kind::kList)) r.ok = false;
        if (r.ok) doc.entries_.emplace_hint(doc.entries_.end(), std::move(key), std::move(entry));
      }
      if (r.ok && r.rest.empty()) return doc;
    }
    return InternalError(fmt::format("{}: YAML parser process sent a malformed result",
                                     doc.source_name_));
  }

 private:
  static void PutU32(std::string& out, uint32_t v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  static void PutString(std::string& out, std::string_view s) {
    PutU32(out, static_cast<uint32_t>(s.size()));
    out += s;
  }
  // Reads from `rest`; on running short, sets ok = false and reads zeros.
  struct Reader {
    std::string_view rest;
    bool ok = true;
    std::string_view Take(size_t n) {
      if (!ok || n > rest.size()) {
        ok = false;
        return {};
      }
      std::string_view got = rest.substr(0, n);
      rest.remove_prefix(n);
      return got;
    }
    char Byte() {
      const std::string_view b = Take(1);
      return b.empty() ? '\0' : b[0];
    }
    uint32_t U32() {
      uint32_t v = 0;
      const std::string_view b = Take(sizeof(v));
      if (!b.empty()) std::memcpy(&v, b.data(), sizeof(v));
      return v;
    }
    std::string_view String() { return Take(U32()); }
  };
};

Result<ConfigDoc> ConfigDoc::LoadFile(const std::string& path, const ConfigParseLimits& limits) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, fmt::format("config file {}", path));
  std::string text;
  Status status;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    status = ErrnoToStatus(errno, fmt::format("config file {}", path));
  } else if (!S_ISREG(st.st_mode)) {
    status = InvalidArgumentError(fmt::format("config file {}: not a regular file", path));
  } else if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    status = InvalidArgumentError(fmt::format(
        "config file {}: {} bytes, larger than the {} allowed", path, st.st_size, kMaxFileBytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = ErrnoToStatus(errno, fmt::format("config file {}", path));
        break;
      }
      if (n == 0) break;  // the file shrank under us: parse what is there
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  ::close(fd);
  WHARF_RETURN_IF_ERROR(status);
  return Parse(text, path, limits);
}

Result<ConfigDoc> ConfigDoc::Parse(std::string_view text, std::string source_name,
                                   const ConfigParseLimits& limits) {
  if (IsBlankOrComments(text)) return ConfigDoc(std::move(source_name));
  SubprocessLimits sub;
  sub.time_limit_ms = limits.time_limit_ms;
  sub.memory_limit_bytes = limits.memory_limit_bytes;
  sub.in_child = limits.in_parser_process;
  Result<std::string> reply = RunInSubprocess(
      sub, [&] { return ConfigCodec::Encode(ParseHere(text, source_name)); });
  if (reply.ok()) return ConfigCodec::Decode(*reply, std::move(source_name));
  switch (reply.status().code()) {
    case StatusCode::kDeadlineExceeded:
      return InvalidArgumentError(
          fmt::format("{}: YAML parser did not finish within {} ms (malformed document?)",
                      source_name, limits.time_limit_ms));
    case StatusCode::kResourceExhausted:
      if (limits.memory_limit_bytes == 0) {
        return InvalidArgumentError(fmt::format("{}: YAML parser ran out of memory", source_name));
      }
      return InvalidArgumentError(
          fmt::format("{}: YAML parser needed more than {} MiB of memory (malformed document?)",
                      source_name, limits.memory_limit_bytes >> 20));
    default:
      return InternalError(
          fmt::format("{}: YAML parser failed: {}", source_name, reply.status().message()));
  }
}

Result<ConfigDoc> ConfigDoc::ParseHere(std::string_view text, std::string source_name) {
  ConfigDoc doc(std::move(source_name));
  const std::string& src = doc.source_name_;
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      DocumentChecker checker(2 * ConfigFlattener::kMaxEntries + 1);
      try {
        while (parser.HandleNextDocument(checker)) {
        }
      } catch (const DocumentChecker::Stop&) {
      }
      const YAML::Mark& at = checker.where;
      switch (checker.problem) {
        case DocumentChecker::Problem::kNone:
          break;
        case DocumentChecker::Problem::kAnchor:
          return InvalidArgumentError(fmt::format(
              "{}:{}:{}: YAML anchors and aliases (&name, *name) are not supported in wharf "
              "config files; write the values out",
              src, at.line + 1, at.column + 1));
        case DocumentChecker::Problem::kNoProgress: {
          const char c = CharAt(text, at);
          return InvalidArgumentError(
              c == ','
                  ? fmt::format("{}:{}:{}: YAML syntax error: unexpected ',' outside [...] or {{...}}",
                                src, at.line + 1, at.column + 1)
                  : fmt::format("{}:{}:{}: YAML syntax error: no value can start here", src,
                                at.line + 1, at.column + 1));
        }
        case DocumentChecker::Problem::kTooManyNodes:
          return InvalidArgumentError(fmt::format("{}:{}: more than {} keys", src, at.line + 1,
                                                  ConfigFlattener::kMaxEntries));
      }
    }
    const std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    if (docs.size() > 1) {
      return InvalidArgumentError(fmt::format("{}:{}: expected one YAML document, found {}", src,
                                              LineOf(docs[1]), docs.size()));
    }
    if (docs.empty() || docs[0].IsNull()) return doc;  // empty or comments only: all defaults
    const YAML::Node& root = docs[0];
    if (!root.IsMap()) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: expected a map of settings at the top level, got {}", src, LineOf(root),
          root.IsSequence() ? std::string("a list") : QuoteForError(root.Scalar())));
    }
    WHARF_RETURN_IF_ERROR(ConfigFlattener(doc).Add(root, "", LineOf(root)));
  } catch (const YAML::ParserException& e) {
    return InvalidArgumentError(fmt::format("{}:{}:{}: YAML syntax error: {}", src, e.mark.line + 1,
                                            e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null())
      return InvalidArgumentError(fmt::format("{}: YAML error: {}", src, e.msg));
    return InvalidArgumentError(
        fmt::format("{}:{}:{}: YAML error: {}", src, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::bad_alloc&) {
    throw;  // the memory limit: RunInSubprocess reports it
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: cannot load YAML: {}", src, e.what()));
  }
  return doc;
}

Result<ConfigDoc> ConfigDoc::FromSettings(
    const std::vector<std::pair<std::string, std::string>>& settings, std::string source_name) {
  ConfigDoc doc(std::move(source_name));
  doc.entries_[""].kind = Kind::kMap;
  for (size_t i = 0; i < settings.size(); ++i) {
    const auto& [key, value] = settings[i];
    const int line = static_cast<int>(i) + 1;
    std::string parent;
    size_t start = 0;
    while (true) {
      size_t dot = key.find('.', start);
      std::string name = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (name.empty()) {
        return InvalidArgumentError(fmt::format("{}:{}: '{}': expected dotted names, e.g. a.b",
                                                doc.source_name_, line, key));
      }
      std::string path = parent.empty() ? name : parent + "." + name;
      Entry& parent_entry = doc.entries_[parent];
      if (parent_entry.kind != Kind::kMap) {
        return InvalidArgumentError(fmt::format("{}:{}: '{}': '{}' is set as a value already",
                                                doc.source_name_, line, key, parent));
      }
      auto [it, added] = doc.entries_.try_emplace(path);
      if (added) parent_entry.children.push_back(name);
      Entry& entry = it->second;
      entry.line = line;
      if (dot == std::string::npos) {
        if (entry.kind == Kind::kMap) {
          return InvalidArgumentError(fmt::format("{}:{}: '{}': is a section, not a value",
                                                  doc.source_name_, line, key));
        }
        entry.kind = Kind::kScalar;
        entry.scalar = value;
        break;
      }
      if (added) entry.kind = Kind::kMap;
      parent = std::move(path);
      start = dot + 1;
    }
  }
  return doc;
}

Status ConfigDoc::ErrorAt(int line, std::string_view key, std::string_view message) const {
  return InvalidArgumentError(fmt::format("{}:{}: {}: {}", source_name_, line, key, message));
}

Result<const ConfigDoc::Entry*> ConfigDoc::Find(std::string_view key) const {
  known_.emplace(key);
  for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.', dot + 1)) {
    const std::string_view ancestor = key.substr(0, dot);
    auto it = entries_.find(ancestor);
    if (it != entries_.end() && it->second.kind == Kind::kScalar) {
      return ErrorAt(it->second.line, ancestor,
                     fmt::format("expected a map holding '{}', got {}", key.substr(dot + 1),
                                 QuoteForError(it->second.scalar)));
    }
  }
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.kind == Kind::kNull) return nullptr;
  return &it->second;
}

Result<const ConfigDoc::Entry*> ConfigDoc::FindScalar(std::string_view key,
                                                      std::string_view what) const {
  WHARF_ASSIGN_OR_RETURN(const Entry* entry, Find(key));
  if (entry == nullptr || entry->kind == Kind::kScalar) return entry;
  return ErrorAt(
      entry->line, key,
      fmt::format("expected {}, got a {}", what, entry->kind == Kind::kMap ? "map" : "list"));
}

template <typename T, typename ParseFn>
Result<T> ConfigDoc::GetParsed(std::string_view key, T default_value, std::string_view what,
                               ParseFn parse) const {
  WHARF_ASSIGN_OR_RETURN(const Entry* entry, FindScalar(key, what));
  if (entry == nullptr) return default_value;
  Result<T> value = parse(entry->scalar);
  if (!value.ok()) return ErrorAt(entry->line, key, value.status().message());
  return value;
}

Result<int64_t> ConfigDoc::GetInt(std::string_view key, int64_t default_value, int64_t min,
                                  int64_t max) const {
  return GetParsed<int64_t>(key, default_value, "an integer",
                            [&](std::string_view text) { return ParseInt(text, min, max); });
}

Result<uint64_t> ConfigDoc::GetUint(std::string_view key, uint64_t default_value,
                                    uint64_t max) const {
  return GetParsed<uint64_t>(key, default_value, "a non-negative integer",
                             [&](std::string_view text) { return ParseUint(text, max); });
}

Result<bool> ConfigDoc::GetBool(std::string_view key, bool default_value) const {
  return GetParsed<bool>(key, default_value, "true or false", ParseBool);
}

Result<double> ConfigDoc::GetDouble(std::string_view key, double default_value) const {
  return GetParsed<double>(key, default_value, "a number", ParseDouble);
}

Result<std::string> ConfigDoc::GetString(std::string_view key, std::string default_value) const {
  return GetParsed<std::string>(key, std::move(default_value), "a string",
                                [](std::string_view text) { return Result<std::string>(text); });
}

Result<DurationNs> ConfigDoc::GetDuration(std::string_view key, DurationNs default_value) const {
  return GetParsed<DurationNs>(key, default_value, "a duration like '5ms'", ParseDuration);
}

Result<uint64_t> ConfigDoc::GetBytes(std::string_view key, uint64_t default_value) const {
  return GetParsed<uint64_t>(key, default_value, "a size like '64MiB'", ParseBytes);
}

Result<uint64_t> ConfigDoc::GetRate(std::string_view key, uint64_t default_bps) const {
  return GetParsed<uint64_t>(key, default_bps, "a rate like '10Gbps'", ParseRate);
}

Result<std::vector<std::string>> ConfigDoc::GetStringList(
    std::string_view key, std::vector<std::string> default_value) const {
  WHARF_ASSIGN_OR_RETURN(const Entry* entry, Find(key));
  if (entry == nullptr) return default_value;
  if (entry->kind == Kind::kScalar) {
    return ErrorAt(entry->line, key,
                   fmt::format("expected a list of strings, got {}", QuoteForError(entry->scalar)));
  }
  if (entry->kind == Kind::kMap)
    return ErrorAt(entry->line, key, "expected a list of strings, got a map");
  std::vector<std::string> items;
  for (const std::string& index : entry->children) {
    const std::string item_key = Join(key, index);
    known_.insert(item_key);
    const Entry& item = entries_.find(item_key)->second;
    if (item.kind != Kind::kScalar) {
      return ErrorAt(
          item.line, item_key,
          fmt::format("expected a string, got {}", item.kind == Kind::kMap    ? "a map"
                                                   : item.kind == Kind::kList ? "a list"
                                                                              : "an empty item"));
    }
    items.push_back(item.scalar);
  }
  return items;
}

bool ConfigDoc::Has(std::string_view key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.kind != Kind::kNull;
}

Result<std::vector<std::string>> ConfigDoc::ChildKeys(std::string_view key) const {
  WHARF_ASSIGN_OR_RETURN(const Entry* entry, Find(key));
  if (entry == nullptr) return std::vector<std::string>();
  if (entry->kind == Kind::kScalar) {
    return ErrorAt(entry->line, key,
                   fmt::format("expected a map or a list, got {}", QuoteForError(entry->scalar)));
  }
  return entry->children;
}

std::string ConfigDoc::Suggest(std::string_view unknown) const {
  const std::string_view parent = ParentOf(unknown);
  const std::string_view name = LastSegment(unknown);
  // A list index is not a spelling: "peers.0" is not a typo of "peers.1".
  if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) return "";
  // A typo keeps the section: compare against the known names under the same
  // parent, allowing about one edit per three characters (at most three).
  const size_t max_edits = std::min<size_t>(3, std::max<size_t>(1, name.size() / 3));
  std::string best;
  size_t best_edits = max_edits + 1;
  const std::string prefix = parent.empty() ? std::string() : fmt::format("{}.", parent);
  for (auto it = known_.lower_bound(prefix); it != known_.end() && it->starts_with(prefix); ++it) {
    std::string_view rest = *it;
    rest.remove_prefix(prefix.size());
    const std::string_view candidate = rest.substr(0, rest.find('.'));
    const size_t edits = EditDistance(name, candidate);
    if (edits < best_edits) {
      best_edits = edits;
      best = Join(parent, candidate);
    }
  }
  if (!best.empty()) return best;
  // A right name in the wrong section: "port" at the top level for "homa.port".
  for (const std::string& known : known_) {
    if (known != unknown && LastSegment(known) == name) return known;
  }
  return "";
}

Status ConfigDoc::CheckNoUnknownKeys() const {
  // A key is known if a getter asked for it or for something below it (so a
  // section is known once any of its keys is read).
  auto is_known = [&](std::string_view key) {
    if (key.empty() || known_.contains(key)) return true;
    auto below = known_.lower_bound(fmt::format("{}.", key));
    return below != known_.end() && below->starts_with(key) && (*below)[key.size()] == '.';
  };
  std::vector<std::pair<int, std::string>> unknown;  // (line, message)
  for (const auto& [key, entry] : entries_) {
    // Report only the topmost unknown key: a misspelled section is one
    // mistake, not one per key inside it.
    if (is_known(key) || !is_known(ParentOf(key))) continue;
    std::string message = fmt::format("{}:{}: unknown key '{}'", source_name_, entry.line, key);
    if (std::string match = Suggest(key); !match.empty()) {
      message += fmt::format(" (did you mean '{}'?)", match);
    }
    unknown.emplace_back(entry.line, std::move(message));
  }
  if (unknown.empty()) return OkStatus();
  std::sort(unknown.begin(), unknown.end());
  std::string all;
  for (const auto& [line, message] : unknown) {
    if (!all.empty()) all += "; ";
    all += message;
  }
  return InvalidArgumentError(std::move(all));
}

}  // namespace wharf
