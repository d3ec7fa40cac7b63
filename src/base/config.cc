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
#include <optional>
#include <sstream>
#include <utility>

#include "base/config_value.h"

namespace wharf {
namespace {

// Finds the first YAML anchor or alias from parser events alone, before any
// node is built. Config files have no use for them, and yaml-cpp turns a
// self-referencing alias (`a: &x [*x]`) into a cycle of shared nodes that is
// never freed and that expands without end: refusing them up front keeps a
// hostile or mistaken file from exhausting memory (found by config_fuzzer).
class AnchorFinder final : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> found;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Check(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Check(mark, 1); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Check(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Check(mark, anchor);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Check(mark, anchor);
  }
  void OnMapEnd() override {}

 private:
  void Check(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor && !found) found = mark;
  }
};

// yaml-cpp 0.7 can loop forever on a ',' that begins a line outside any flow
// collection (e.g. a file that is just ","; found by config_fuzzer). In
// block context such a line is never valid YAML (',' is a flow indicator
// and cannot start a plain scalar), so refusing it loses nothing. Tracks
// flow depth ([ { ... } ]) outside quotes and comments; returns the 1-based
// line and column of the first such ',', or nullopt.
std::optional<std::pair<int, int>> FindLineStartingWithComma(std::string_view text) {
  int depth = 0;
  int line = 1;
  int col = 1;
  bool line_start = true;  // only blanks seen on this line so far
  char quote = 0;          // inside '...' or "..." when set
  char prev = 0;           // last non-blank character on this line (0: none)
  size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // UTF-8 byte order mark
  for (size_t i = start; i < text.size(); ++i, ++col) {
    char c = text[i];
    // A document marker at the start of a line leaves the line "empty".
    if (col == 1 && quote == 0 && (text.substr(i, 3) == "---" || text.substr(i, 3) == "...")) {
      i += 2, col += 2;
      continue;
    }
    if (c == '\n') {
      ++line, col = 0, line_start = true, prev = 0;
      continue;
    }
    if (quote != 0) {
      if (quote == '"' && c == '\\') {
        ++i, ++col;  // the escaped character
      } else if (c == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i, ++col;  // '' is an escaped quote
        } else {
          quote = 0;
        }
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '#' && (line_start || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i, ++col;
      continue;
    }
    if (line_start && c == ',' && depth == 0) return std::make_pair(line, col);
    line_start = false;
    // A quote starts a quoted scalar only where a scalar can start; inside a
    // plain scalar (it's, a"b) it is an ordinary character.
    const bool scalar_start = prev == 0 || std::string_view(":-?[{,").find(prev) != std::string_view::npos;
    prev = c;
    if ((c == '"' || c == '\'') && scalar_start) {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
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
  // Bounds on the flattened tree. YAML aliases can make a file describe a
  // cycle ("a: &x [*x]") or an exponential tree (nested lists of aliases),
  // so both depth and size are capped rather than trusted.
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxEntries = 100'000;

  explicit ConfigFlattener(ConfigDoc& doc) : doc_(doc) {}

  // Adds `node` under `key` ("" for the root, at depth 0), then its children.
  Status Add(const YAML::Node& node, const std::string& key, int line, int depth = 0) {
    if (depth > kMaxDepth || doc_.entries_.size() >= kMaxEntries) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: {}: nested deeper than {} levels or more than {} keys (a recursive alias?)",
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

Result<ConfigDoc> ConfigDoc::LoadFile(const std::string& path) {
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
  return Parse(text, path);
}

Result<ConfigDoc> ConfigDoc::Parse(std::string_view text, std::string source_name) {
  ConfigDoc doc(std::move(source_name));
  const std::string& src = doc.source_name_;
  if (auto comma = FindLineStartingWithComma(text)) {
    return InvalidArgumentError(fmt::format("{}:{}:{}: YAML syntax error: a line cannot start "
                                            "with ',' outside [...] or {{...}}",
                                            src, comma->first, comma->second));
  }
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      AnchorFinder finder;
      while (!finder.found && parser.HandleNextDocument(finder)) {
      }
      if (finder.found) {
        return InvalidArgumentError(fmt::format(
            "{}:{}:{}: YAML anchors and aliases (&name, *name) are not supported in wharf "
            "config files; write the values out",
            src, finder.found->line + 1, finder.found->column + 1));
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
  } catch (const std::exception& e) {
    // yaml-cpp may also throw std:: exceptions (bad_alloc on huge input).
    return InvalidArgumentError(fmt::format("{}: cannot load YAML: {}", src, e.what()));
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
