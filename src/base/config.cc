// ConfigDoc: the libyaml adapter (the only file that includes libyaml),
// which flattens the parser's events into dotted keys as they arrive; the
// typed getters; and the unknown-key check. Every libyaml error becomes a
// Status naming the file, line and column.
#include "base/config.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "base/config_value.h"

namespace wharf {
namespace {

// Why parsing needs no time or memory limit around it (yaml-cpp, the parser
// before, looped for ever on some inputs, fuzz/known_hangs/):
// - libyaml (the parser under PyYAML, fuzzed continuously in OSS-Fuzz) reads
//   the text strictly forwards, and each yaml_parser_parse call returns one
//   event after looking at most about 1024 characters ahead (as far as a key
//   may be from its ':'); its state grows only with that window and with
//   the nesting depth.
// - The event loop ends: every event but those of the stream and of
//   documents starts or ends a node; nodes are counted over all documents and
//   refused past kMaxNodes, and each document has a node (its root, if only
//   an empty one), so no stream yields more than about 4 * kMaxNodes events.
// - Nesting is refused past kMaxDepth, at the event that goes deeper, so
//   neither the flattener's stack nor libyaml's grows further.
// - Anchors and aliases are refused at the first one. An alias stands for a
//   copy of its anchor's node, so ten levels of ten aliases flatten into
//   10^10 keys; config files have no use for them.
// So time is linear in the text, and memory linear in the text and the
// entries kept. Parsing touches no global state: threads may parse at once.

// libyaml positions are 0-based; people and editors count from 1.
int OneBased(size_t n) {
  return n >= static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(n) + 1;
}

// Bytes of the character at text[i], as libyaml reads UTF-8, and whether it
// ends a line: "\r\n", "\r", "\n", U+0085, U+2028 and U+2029 do.
size_t CharWidth(std::string_view text, size_t i, bool& is_break) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c == '\r' || c == '\n') {
    is_break = true;
    return c == '\r' && i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
  }
  size_t width = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 1;
  width = std::min(width, text.size() - i);
  const std::string_view ch = text.substr(i, width);
  is_break = ch == "\xC2\x85" || ch == "\xE2\x80\xA8" || ch == "\xE2\x80\xA9";
  return width;
}

// The byte at a libyaml mark (line, and column in characters), or 0 if the
// mark is past its line or the text.
char ByteAt(std::string_view text, const yaml_mark_t& mark) {
  size_t line = 0, column = 0;
  for (size_t i = 0;;) {
    if (line == mark.line && column == mark.column) return i < text.size() ? text[i] : '\0';
    if (i >= text.size() || line > mark.line) return '\0';
    bool is_break = false;
    i += CharWidth(text, i, is_break);
    if (is_break) {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
}

// The 0-based line and column (in characters) of a byte offset.
std::pair<size_t, size_t> PositionOf(std::string_view text, size_t offset) {
  size_t line = 0, column = 0;
  for (size_t i = 0; i < offset && i < text.size();) {
    bool is_break = false;
    i += CharWidth(text, i, is_break);
    if (is_break) {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// True for a scalar that YAML reads as null: an empty or "~"/"null" plain
// scalar without a tag (what "key:" with no value gives), or one tagged !!null.
bool IsNullScalar(const yaml_event_t& event) {
  const auto& s = event.data.scalar;
  if (s.tag != nullptr)
    return std::strcmp(reinterpret_cast<const char*>(s.tag), YAML_NULL_TAG) == 0;
  if (s.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const std::string_view value(reinterpret_cast<const char*>(s.value), s.length);
  return value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL";
}

// Owns a libyaml parser reading `text`, which must outlive it.
class YamlParser {
 public:
  explicit YamlParser(std::string_view text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (!ok_) return;
    // UTF-8 only: libyaml would otherwise take a UTF-16 byte order mark to
    // mean UTF-16, and positions would no longer be offsets into `text`.
    yaml_parser_set_encoding(&parser_, YAML_UTF8_ENCODING);
    static constexpr unsigned char kEmpty[] = "";
    yaml_parser_set_input_string(
        &parser_, text.empty() ? kEmpty : reinterpret_cast<const unsigned char*>(text.data()),
        text.size());
  }
  ~YamlParser() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  YamlParser(const YamlParser&) = delete;
  YamlParser& operator=(const YamlParser&) = delete;

  bool ok() const { return ok_; }
  // The next event, or false with state().error saying why not.
  bool Next(yaml_event_t& event) { return yaml_parser_parse(&parser_, &event) != 0; }
  const yaml_parser_t& state() const { return parser_; }

 private:
  yaml_parser_t parser_{};
  bool ok_ = false;
};

// Owns one event (libyaml allocates its strings).
class YamlEvent {
 public:
  YamlEvent() = default;
  ~YamlEvent() { yaml_event_delete(&event_); }
  YamlEvent(const YamlEvent&) = delete;
  YamlEvent& operator=(const YamlEvent&) = delete;
  yaml_event_t& get() { return event_; }

 private:
  yaml_event_t event_{};
};

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

// Turns libyaml's events into ConfigDoc entries as they arrive, refusing at
// the first event whatever config files may not hold (see the top of this
// file for why that bounds the parse). One per Parse call; a class
// (rather than free functions) only so that ConfigDoc can befriend it.
class ConfigFlattener {
 public:
  // Bounds on the flattened tree: a config is small and shallow, and both
  // depth and size are capped rather than trusted.
  static constexpr size_t kMaxDepth = 64;
  static constexpr size_t kMaxEntries = 100'000;
  // Each key is two nodes (name and value), plus the root: past this many,
  // the entries would be too many anyway.
  static constexpr size_t kMaxNodes = 2 * kMaxEntries + 1;
  // Every entry stores its whole dotted key, so a long name in a section
  // with many keys would cost its length once per key (a 1 MiB name over
  // 100,000 keys is 100 GB); real keys are tens of bytes.
  static constexpr size_t kMaxKeyBytes = 512;

  // `text` must outlive the flattener.
  ConfigFlattener(ConfigDoc& doc, std::string_view text) : doc_(doc), text_(text) {}

  // Parses the whole text into doc's entries.
  Status Run() {
    YamlParser parser(text_);
    if (!parser.ok()) return OutOfMemory();
    while (true) {
      YamlEvent event;
      if (!parser.Next(event.get())) return ParseError(parser.state());
      const yaml_event_type_t type = event.get().type;
      // libyaml answers "no event" after the end of the stream or an error.
      if (type == YAML_STREAM_END_EVENT || type == YAML_NO_EVENT) break;
      WHARF_RETURN_IF_ERROR(OnEvent(event.get()));
    }
    if (documents_ > 1) {
      return InvalidArgumentError(fmt::format("{}:{}: expected one YAML document, found {}", src(),
                                              second_document_line_, documents_));
    }
    return OkStatus();
  }

 private:
  // An open map or list of the first document.
  struct Frame {
    std::string key;                    // its dotted key, "" for the top level
    ConfigDoc::Entry* entry = nullptr;  // its entry (std::map never moves them)
    bool is_map = false;
    // For a map: true between a child's name and its value; the name and
    // the line it is on.
    bool awaiting_value = false;
    std::string name;
    int name_line = 0;
    size_t next_index = 0;  // for a list: the next item's index
  };

  const std::string& src() const { return doc_.source_name_; }

  Status OnEvent(const yaml_event_t& event) {
    switch (event.type) {
      case YAML_DOCUMENT_START_EVENT:
        ++documents_;
        return OkStatus();
      case YAML_ALIAS_EVENT:
        return AnchorError(event.start_mark);
      case YAML_SCALAR_EVENT:
        return OnNode(event,
                      IsNullScalar(event) ? ConfigDoc::Kind::kNull : ConfigDoc::Kind::kScalar,
                      event.data.scalar.anchor);
      case YAML_SEQUENCE_START_EVENT:
        return OnNode(event, ConfigDoc::Kind::kList, event.data.sequence_start.anchor);
      case YAML_MAPPING_START_EVENT:
        return OnNode(event, ConfigDoc::Kind::kMap, event.data.mapping_start.anchor);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        if (documents_ == 1 && !stack_.empty()) stack_.pop_back();
        return OkStatus();
      default:  // the stream's start, a document's end
        return OkStatus();
    }
  }

  // A scalar, or the start of a map or a list.
  Status OnNode(const yaml_event_t& event, ConfigDoc::Kind kind, const yaml_char_t* anchor) {
    const int line = OneBased(event.start_mark.line);
    if (anchor != nullptr) return AnchorError(event.start_mark);
    if (++nodes_ > kMaxNodes) {
      if (documents_ > 1) {
        return InvalidArgumentError(
            fmt::format("{}:{}: expected one YAML document, found {} or more", src(),
                        second_document_line_, documents_));
      }
      return InvalidArgumentError(
          fmt::format("{}:{}: more than {} keys", src(), line, kMaxEntries));
    }
    if (documents_ > 1) {  // only counted, for the error at the end
      if (second_document_line_ == 0) second_document_line_ = line;
      return OkStatus();
    }
    std::string_view scalar;
    if (event.type == YAML_SCALAR_EVENT) {
      scalar = std::string_view(reinterpret_cast<const char*>(event.data.scalar.value),
                                event.data.scalar.length);
    }
    if (stack_.empty()) return OnRoot(kind, scalar, line);
    Frame& parent = stack_.back();
    if (parent.is_map && !parent.awaiting_value) return OnName(parent, kind, scalar, line);

    std::string key;
    int key_line = line;  // a map value's is its name's line; a list item's its own
    if (parent.is_map) {
      key = Join(parent.key, parent.name);
      key_line = parent.name_line;
      parent.awaiting_value = false;
    } else {
      std::string index = std::to_string(parent.next_index++);
      key = Join(parent.key, index);
      parent.entry->children.push_back(std::move(index));
    }
    if (key.size() > kMaxKeyBytes) return KeyTooLong(key, key_line);
    if (stack_.size() > kMaxDepth) {
      return InvalidArgumentError(
          fmt::format("{}:{}: {}: nested deeper than {} levels", src(), key_line, key, kMaxDepth));
    }
    if (doc_.entries_.size() >= kMaxEntries) {
      return InvalidArgumentError(
          fmt::format("{}:{}: more than {} keys", src(), key_line, kMaxEntries));
    }
    ConfigDoc::Entry& entry = doc_.entries_[key];
    entry.kind = kind;
    entry.line = key_line;
    if (kind == ConfigDoc::Kind::kScalar) entry.scalar = scalar;
    if (kind == ConfigDoc::Kind::kMap || kind == ConfigDoc::Kind::kList) {
      stack_.push_back(
          Frame{.key = std::move(key), .entry = &entry, .is_map = kind == ConfigDoc::Kind::kMap});
    }
    return OkStatus();
  }

  // The first document's root: a map, or nothing at all (an empty document).
  Status OnRoot(ConfigDoc::Kind kind, std::string_view scalar, int line) {
    switch (kind) {
      case ConfigDoc::Kind::kNull:
        return OkStatus();  // empty, comments only, or "~": all defaults
      case ConfigDoc::Kind::kScalar:
      case ConfigDoc::Kind::kList:
        return InvalidArgumentError(fmt::format(
            "{}:{}: expected a map of settings at the top level, got {}", src(), line,
            kind == ConfigDoc::Kind::kList ? std::string("a list") : QuoteForError(scalar)));
      case ConfigDoc::Kind::kMap:
        break;
    }
    ConfigDoc::Entry& root = doc_.entries_[""];
    root.kind = ConfigDoc::Kind::kMap;
    root.line = line;
    stack_.push_back(Frame{.entry = &root, .is_map = true});
    return OkStatus();
  }

  // A node in a map where a child's name belongs.
  Status OnName(Frame& map, ConfigDoc::Kind kind, std::string_view name, int line) {
    if (kind != ConfigDoc::Kind::kScalar || name.empty()) {
      return InvalidArgumentError(fmt::format("{}:{}: {}: keys must be non-empty plain names",
                                              src(), line,
                                              map.key.empty() ? "top level" : map.key));
    }
    const std::string child = Join(map.key, name);
    if (child.size() > kMaxKeyBytes) return KeyTooLong(child, line);
    // A dot inside a name would make "a.b" mean two different keys.
    if (name.find('.') != std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("{}:{}: {}: key names must not contain '.'; nest maps instead", src(), line,
                      QuoteForError(child)));
    }
    // YAML forbids it, and a reader would see only one of the two values.
    if (auto prev = doc_.entries_.find(child); prev != doc_.entries_.end()) {
      return InvalidArgumentError(fmt::format("{}:{}: {}: duplicate key (first set on line {})",
                                              src(), line, child, prev->second.line));
    }
    map.entry->children.emplace_back(name);
    map.name = name;
    map.name_line = line;
    map.awaiting_value = true;
    return OkStatus();
  }

  Status KeyTooLong(std::string_view key, int line) const {
    return InvalidArgumentError(fmt::format("{}:{}: {}: key longer than {} bytes", src(), line,
                                            QuoteForError(key), kMaxKeyBytes));
  }

  Status AnchorError(const yaml_mark_t& at) const {
    return InvalidArgumentError(fmt::format(
        "{}:{}:{}: YAML anchors and aliases (&name, *name) are not supported in wharf config "
        "files; write the values out",
        src(), OneBased(at.line), OneBased(at.column)));
  }

  Status OutOfMemory() const {
    return ResourceExhaustedError(fmt::format("{}: YAML parser ran out of memory", src()));
  }

  Status ParseError(const yaml_parser_t& parser) const {
    const std::string problem = parser.problem != nullptr ? parser.problem : "unknown problem";
    switch (parser.error) {
      case YAML_MEMORY_ERROR:
        return OutOfMemory();
      case YAML_READER_ERROR: {
        // Not UTF-8, or a control character; problem_offset is in bytes.
        const auto [line, column] = PositionOf(text_, parser.problem_offset);
        const std::string value =
            parser.problem_value >= 0 ? fmt::format(" (0x{:02X})", parser.problem_value) : "";
        return InvalidArgumentError(
            fmt::format("{}:{}:{}: YAML syntax error: {}{}; a config file must be UTF-8 text "
                        "without control characters",
                        src(), OneBased(line), OneBased(column), problem, value));
      }
      case YAML_SCANNER_ERROR:
      case YAML_PARSER_ERROR: {
        const yaml_mark_t& at = parser.problem_mark;
        const std::string where =
            fmt::format("{}:{}:{}", src(), OneBased(at.line), OneBased(at.column));
        const char c = ByteAt(text_, at);
        // The mistakes people make, in their words rather than the parser's.
        if (c == ',' && parser.flow_level == 0) {
          return InvalidArgumentError(
              fmt::format("{}: YAML syntax error: unexpected ',' outside [...] or {{...}}", where));
        }
        if (c == '\t') {
          return InvalidArgumentError(fmt::format(
              "{}: YAML syntax error: a tab where YAML allows only spaces (indent with spaces)",
              where));
        }
        std::string message = fmt::format("{}: YAML syntax error: {}", where, problem);
        if (parser.context != nullptr) {
          message +=
              fmt::format(" ({} started at {}:{})", parser.context,
                          OneBased(parser.context_mark.line), OneBased(parser.context_mark.column));
        }
        return InvalidArgumentError(std::move(message));
      }
      default:
        return InvalidArgumentError(fmt::format("{}: YAML error: {}", src(), problem));
    }
  }

  ConfigDoc& doc_;
  const std::string_view text_;
  std::vector<Frame> stack_;      // open maps and lists, outermost first
  size_t nodes_ = 0;              // in every document
  size_t documents_ = 0;          // started so far
  int second_document_line_ = 0;  // of the second document's root
};

Result<std::string> ConfigDoc::ReadFile(const std::string& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, fmt::format("{} {}", what, path));
  std::string text;
  Status status;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    status = ErrnoToStatus(errno, fmt::format("{} {}", what, path));
  } else if (!S_ISREG(st.st_mode)) {
    status = InvalidArgumentError(fmt::format("{} {}: not a regular file", what, path));
  } else if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    status = InvalidArgumentError(fmt::format("{} {}: {} bytes, larger than the {} allowed", what,
                                              path, st.st_size, kMaxFileBytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = ErrnoToStatus(errno, fmt::format("{} {}", what, path));
        break;
      }
      if (n == 0) break;  // the file shrank under us: parse what is there
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  ::close(fd);
  WHARF_RETURN_IF_ERROR(status);
  return text;
}

Result<ConfigDoc> ConfigDoc::LoadFile(const std::string& path) {
  WHARF_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "config file"));
  return Parse(text, path);
}

Result<ConfigDoc> ConfigDoc::Parse(std::string_view text, std::string source_name) {
  ConfigDoc doc(std::move(source_name));
  // A UTF-8 byte order mark is not part of the text; told the encoding,
  // libyaml would count it as a column.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  WHARF_RETURN_IF_ERROR(ConfigFlattener(doc, text).Run());
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
      std::string name =
          key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
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
          return InvalidArgumentError(
              fmt::format("{}:{}: '{}': is a section, not a value", doc.source_name_, line, key));
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
