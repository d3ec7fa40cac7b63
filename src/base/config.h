// base/config.h: ConfigDoc, a YAML configuration file read through typed
// getters by dotted key ("homa.unsched_bytes"), with errors that say where
// and what: "wharfd.yaml:12: policy.rate: expected a rate like '10Gbps'
// (...), got 'fast'". config.cc is the only file in wharf that includes
// libyaml; value syntax (units, bounds) lives in base/config_value.h. Which
// keys exist and what they default to belongs to the modules that read them.
//
// The file is flattened at load time into one entry per key: maps nest with
// '.', list items are numbered ("peers.0.host"). An empty file, or one with
// only comments, is a valid config in which every getter returns its default
// (that is what a commented-out example config is); a top level that is not a
// map is an error. A key given with no value ("rate:") also means the default.
//
// Typical use:
//   WHARF_ASSIGN_OR_RETURN(ConfigDoc doc, ConfigDoc::LoadFile(path));
//   WHARF_ASSIGN_OR_RETURN(uint64_t unsched, doc.GetBytes("homa.unsched_bytes", 60000));
//   ...every module reads its keys...
//   WHARF_RETURN_IF_ERROR(doc.CheckNoUnknownKeys());  // typos fail startup
//
// Parsing runs in the calling thread and is bounded by the document: libyaml
// reads it as a stream of events, which config.cc turns into entries as they
// come, refusing anchors and aliases, a second document, nesting deeper than
// 64 levels and more than 100,000 keys at the first event that shows them
// (config.cc says why that bounds time and memory). Nothing here forks,
// starts threads or touches global state, so any thread may parse.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf {

// Owned by the code that loads the config (wharfd startup, a tool). Getters
// are const but record which keys were read, for CheckNoUnknownKeys; that
// bookkeeping makes a ConfigDoc unsafe to share between threads.
class ConfigDoc {
 public:
  // Largest config file LoadFile reads: far above any real config, small
  // enough that a wrong path (a log, a device) fails fast instead of paging.
  static constexpr size_t kMaxFileBytes = 4 << 20;

  // Reads and parses `path`. A missing file is kNotFound naming the path.
  static Result<ConfigDoc> LoadFile(const std::string& path);
  // The bytes of `path`, as LoadFile reads them: a regular file of at most
  // kMaxFileBytes; errors start with "<what> <path>" ("config file x.yaml:
  // not a regular file"). For readers that need the bytes too (a hash).
  static Result<std::string> ReadFile(const std::string& path, std::string_view what);
  // Parses `text`, which must be UTF-8; `source_name` (usually the path)
  // starts every message. A YAML error is "<source>:<line>:<column>: YAML
  // syntax error: <what>" (columns count characters, from 1); when a
  // document has several problems, the first in the text is reported. Errors
  // are kInvalidArgument, except kResourceExhausted if memory runs out.
  static Result<ConfigDoc> Parse(std::string_view text, std::string source_name);
  // Settings given as ("section.name", value) pairs (`--set`, options in
  // code), built directly: no YAML, so no parser and nothing a value could
  // inject. Pair i is "line" i + 1 in errors; a later pair for the same
  // key wins. InvalidArgument for an empty key part, or a key that is both a
  // value and a section ("a.b" and "a.b.c").
  static Result<ConfigDoc> FromSettings(
      const std::vector<std::pair<std::string, std::string>>& settings, std::string source_name);

  // Typed getters. A key that is absent (or has no value) gives the default;
  // a present one must parse as the type, or the result is kInvalidArgument
  // "<source>:<line>: <key>: expected <what>, got <found>". Each call records
  // `key` as known, whether or not the file sets it.
  Result<int64_t> GetInt(std::string_view key, int64_t default_value, int64_t min = INT64_MIN,
                         int64_t max = INT64_MAX) const;
  Result<uint64_t> GetUint(std::string_view key, uint64_t default_value,
                           uint64_t max = UINT64_MAX) const;
  Result<bool> GetBool(std::string_view key, bool default_value) const;
  Result<double> GetDouble(std::string_view key, double default_value) const;
  Result<std::string> GetString(std::string_view key, std::string default_value) const;
  // Nanoseconds, from "250ns", "100us", "5ms", "2s".
  Result<DurationNs> GetDuration(std::string_view key, DurationNs default_value) const;
  // Bytes, from "1500", "40KB" (40000), "64MiB" (64 * 2^20).
  Result<uint64_t> GetBytes(std::string_view key, uint64_t default_value) const;
  // Bits per second, from "500Mbps", "10Gbps".
  Result<uint64_t> GetRate(std::string_view key, uint64_t default_bps) const;
  // A list of scalars: "[a, b]" or one "- item" per line.
  Result<std::vector<std::string>> GetStringList(std::string_view key,
                                                 std::vector<std::string> default_value) const;

  // True if the file gives `key` a value (or a map or list). Does not mark
  // the key as known: a check alone is not a use.
  bool Has(std::string_view key) const;
  // The child names of a map (or the indices "0", "1", ... of a list) at
  // `key`, in file order; empty if absent. For sections whose keys are data
  // (e.g. one entry per application). Marks `key` itself as known; children
  // become known as they are read.
  Result<std::vector<std::string>> ChildKeys(std::string_view key) const;

  // Fails if the file sets any key that no getter asked for, listing each as
  // "<source>:<line>: unknown key '<key>'" plus "(did you mean '<known>'?)"
  // when a known key is a close match. Call after every reader has run.
  Status CheckNoUnknownKeys() const;

  const std::string& source_name() const { return source_name_; }
  // The 1-based line of `key` in the file (of the item, for a list item), or
  // 0 when the file does not have it. For readers whose own checks name the
  // place ("pinglist.yaml:14: arrows.0.to: no group 'x'"). Does not mark the
  // key as known.
  int LineOf(std::string_view key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? 0 : it->second.line;
  }

 private:
  // What a key holds in the file.
  enum class Kind { kNull, kScalar, kMap, kList };
  struct Entry {
    Kind kind = Kind::kNull;
    std::string scalar;  // the text, for kScalar
    int line = 0;        // 1-based line of the key (or of the list item)
    // Keys of direct children in file order, for kMap and kList.
    std::vector<std::string> children;
  };
  friend class ConfigFlattener;

  explicit ConfigDoc(std::string source_name) : source_name_(std::move(source_name)) {}

  // The entry for `key`, or nullptr when the getter should use its default.
  // Marks `key` as known. Errors when an ancestor of `key` is a scalar, since
  // then the file and the reader disagree about the shape.
  Result<const Entry*> Find(std::string_view key) const;
  // Find, then require a scalar; `what` completes "expected <what>" when the
  // entry is a map or a list.
  Result<const Entry*> FindScalar(std::string_view key, std::string_view what) const;
  // FindScalar, then convert with `parse` (text -> Result<T>), prefixing its
  // error with the place. Defined and instantiated only in config.cc.
  template <typename T, typename ParseFn>
  Result<T> GetParsed(std::string_view key, T default_value, std::string_view what,
                      ParseFn parse) const;
  Status ErrorAt(int line, std::string_view key, std::string_view message) const;
  // The close match for an unknown key among the known ones, or "".
  std::string Suggest(std::string_view unknown) const;

  std::string source_name_;
  std::map<std::string, Entry, std::less<>> entries_;  // every key in the file
  // Keys a getter asked for, present or not: what this program understands.
  mutable std::set<std::string, std::less<>> known_;
};

}  // namespace wharf
