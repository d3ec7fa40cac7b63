// RenderMatrixText: names, cells, alignment and colour of the terminal table.
#include "mesh/matrix_text.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/text.h"

namespace wharf::mesh {
namespace {

// ANSI SGR sequences; orange is of the 256-colour palette.
constexpr std::string_view kGreen = "\033[32m";
constexpr std::string_view kYellow = "\033[33m";
constexpr std::string_view kOrange = "\033[38;5;208m";
constexpr std::string_view kRed = "\033[31m";
constexpr std::string_view kGrey = "\033[90m";
constexpr std::string_view kMagenta = "\033[35m";
constexpr std::string_view kBoldRed = "\033[1;31m";
constexpr std::string_view kReset = "\033[0m";

constexpr std::string_view kCorner = "from \\ to";
constexpr size_t kColumnGap = 2;
// The narrowest data column: "DOWN", "FAIL".
constexpr size_t kMinColumnWidth = 4;

bool IsLoss(Metric m) { return m == Metric::kLoss; }

std::string_view MetricTitle(Metric m) {
  switch (m) {
    case Metric::kP50:
      return "p50 round trip";
    case Metric::kP99:
      return "p99 round trip";
    case Metric::kLoss:
      return "loss";
    case Metric::kNetworkP50:
      return "p50 network time";
    case Metric::kNetworkP99:
      return "p99 network time";
    case Metric::kAppP50:
      return "applications' p50 round trip";
    case Metric::kAppP99:
      return "applications' p99 round trip";
  }
  return "?";
}

const std::optional<double>& MetricValue(const MatrixCell& c, Metric m) {
  switch (m) {
    case Metric::kP50:
      return c.p50_us;
    case Metric::kP99:
      return c.p99_us;
    case Metric::kLoss:
      return c.loss_ratio;
    case Metric::kNetworkP50:
      return c.network_p50_us;
    case Metric::kNetworkP99:
      return c.network_p99_us;
    case Metric::kAppP50:
      return c.app_p50_us;
    case Metric::kAppP99:
      return c.app_p99_us;
  }
  return c.p50_us;
}

std::string Format(const char* format, double v) {
  char out[32];
  std::snprintf(out, sizeof out, format, v);
  return out;
}

// Microseconds as "4.2us", "52us", "1.3ms", "250ms", "2.1s".
std::string FormatMicros(double us) {
  if (us < 9.95) return Format("%.1fus", us);
  if (us < 999.5) return Format("%.0fus", us);
  const double ms = us / 1000;
  if (ms < 99.95) return Format("%.1fms", ms);
  if (ms < 999.5) return Format("%.0fms", ms);
  const double s = ms / 1000;
  if (s < 99.95) return Format("%.1fs", s);
  return Format("%.0fs", s);
}

// A ratio as "0%", "<0.1%", "0.5%", "12%".
std::string FormatLoss(double ratio) {
  if (ratio <= 0) return "0%";
  const double pct = ratio * 100;
  if (pct < 0.1) return "<0.1%";
  if (pct < 9.95) return Format("%.1f%%", pct);
  return Format("%.0f%%", pct);
}

// The dashboard's thresholds (dashboard.html, level()).
std::string_view Level(Metric m, double v) {
  if (IsLoss(m)) {
    if (v <= 0) return kGreen;
    return v < 0.01 ? kYellow : v < 0.1 ? kOrange : kRed;
  }
  return v < 100 ? kGreen : v < 1000 ? kYellow : v < 10000 ? kOrange : kRed;
}

struct Look {
  std::string text;
  std::string_view colour;  // "" for none
};

bool IsApp(Metric m) { return m == Metric::kAppP50 || m == Metric::kAppP99; }

Look CellLook(const MatrixCell& c, Metric m) {
  if (c.state == kCellUnreachable) return {"DOWN", kBoldRed};
  if (IsApp(m)) {
    // The probes' state does not say whether applications talk here.
    if (const std::optional<double>& v = MetricValue(c, m)) return {FormatMicros(*v), Level(m, *v)};
    if (c.app_unanswered > 0) return {"FAIL", kMagenta};
    return {"--", kGrey};
  }
  if (c.state == kCellAllFailed) return {"FAIL", kMagenta};
  if (c.state == kCellNoData) return {"--", kGrey};
  if (c.state != kCellOk) return {"?", kGrey};
  const std::optional<double>& v = MetricValue(c, m);
  if (!v) return {"--", kGrey};
  return {IsLoss(m) ? FormatLoss(*v) : FormatMicros(*v), Level(m, *v)};
}

// Characters a terminal shows for printable UTF-8 (one column each; wide
// characters are not told apart).
size_t Width(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string Pad(std::string_view text, size_t width, bool right) {
  const size_t w = Width(text);
  const std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + std::string(text) : std::string(text) + fill;
}

std::string Paint(std::string_view text, std::string_view colour, bool on) {
  if (!on || colour.empty() || text.empty()) return std::string(text);
  return std::string(colour) + std::string(text) + std::string(kReset);
}

// Printable labels for names, cut to a width with a numbered "~N" when
// longer; remembers what it cut, for the legend.
class Labels {
 public:
  std::string Get(const std::string& name, size_t max_width) {
    std::string printable = PrintableText(name, 256);
    if (Width(printable) <= max_width) return printable;
    auto it = cut_.find(name);
    if (it != cut_.end()) return it->second;
    const std::string suffix = "~" + std::to_string(cut_.size() + 1);
    // At most that many bytes, so at most that many characters.
    std::string label = std::string(Utf8Prefix(printable, kMaxColumnName - suffix.size())) + suffix;
    cut_.emplace(name, label);
    order_.push_back(name);
    return label;
  }
  // "  label  full name" per cut name, in the order cut.
  std::vector<std::pair<std::string, std::string>> Legend() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& name : order_)
      out.emplace_back(cut_.at(name), PrintableText(name, 256));
    return out;
  }

 private:
  std::map<std::string, std::string> cut_;
  std::vector<std::string> order_;
};

void AppendLine(std::string& out, std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

}  // namespace

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kP50:
      return "p50";
    case Metric::kP99:
      return "p99";
    case Metric::kLoss:
      return "loss";
    case Metric::kNetworkP50:
      return "network_p50";
    case Metric::kNetworkP99:
      return "network_p99";
    case Metric::kAppP50:
      return "app_p50";
    case Metric::kAppP99:
      return "app_p99";
  }
  return "?";
}

Result<Metric> ParseMetric(std::string_view text) {
  for (Metric m : {Metric::kP50, Metric::kP99, Metric::kLoss, Metric::kNetworkP50,
                   Metric::kNetworkP99, Metric::kAppP50, Metric::kAppP99}) {
    if (MetricName(m) == text) return m;
  }
  return InvalidArgumentError(
      "metric '" + PrintableText(text, 64) +
      "': expected p50, p99, loss, network_p50, network_p99, app_p50 or app_p99");
}

std::string RenderMatrixText(const ClusterMatrix& m, Metric metric, std::string_view transport,
                             bool colour) {
  std::set<std::string> transports;
  for (const MatrixCell& c : m.cells) {
    if (c.state != kCellUnreachable) transports.insert(c.transport);
  }
  if (transports.empty()) {
    for (const MatrixCell& c : m.cells) transports.insert(c.transport);
  }
  const std::string shown = !transport.empty()   ? std::string(transport)
                            : transports.empty() ? std::string()
                                                 : *transports.begin();

  // Rows: each source once, then any other source the cells name (a
  // collector's sources, read through another collector). A source without
  // a name that answered with no row of its own is such a collector: its
  // rows are the ones it relays.
  std::set<std::string> froms;
  for (const MatrixCell& c : m.cells) froms.insert(c.from);
  std::vector<std::string> rows;
  std::map<std::string, bool> down;  // row -> its source did not answer
  for (const SourceState& s : m.sources) {
    const std::string row = SourceRowName(s);
    if (s.reachable && s.name.empty() && !froms.contains(row) && !froms.empty()) continue;
    if (down.emplace(row, !s.reachable).second) rows.push_back(row);
  }
  std::map<std::pair<std::string, std::string>, const MatrixCell*> cells;
  for (const MatrixCell& c : m.cells) {
    if (down.emplace(c.from, false).second) rows.push_back(c.from);
    if (c.transport == shown) cells.emplace(std::make_pair(c.from, c.to), &c);
  }

  Labels labels;
  std::vector<std::string> column_labels;
  for (const std::string& h : m.hosts) column_labels.push_back(labels.Get(h, kMaxColumnName));
  std::vector<std::string> row_labels;
  size_t row_width = Width(kCorner);
  for (const std::string& r : rows) {
    row_labels.push_back(labels.Get(r, kMaxRowName));
    row_width = std::max(row_width, Width(row_labels.back()));
  }

  // Every cell's look, then the widths.
  std::vector<std::vector<Look>> grid(rows.size(), std::vector<Look>(m.hosts.size()));
  std::vector<size_t> widths(m.hosts.size(), kMinColumnWidth);
  for (size_t j = 0; j < m.hosts.size(); ++j)
    widths[j] = std::max(widths[j], Width(column_labels[j]));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < m.hosts.size(); ++j) {
      Look& look = grid[i][j];
      if (rows[i] == m.hosts[j]) {
        look = {".", ""};
      } else if (down[rows[i]]) {
        look = {"DOWN", kBoldRed};
      } else if (auto it = cells.find({rows[i], m.hosts[j]}); it != cells.end()) {
        look = CellLook(*it->second, metric);
      }
      widths[j] = std::max(widths[j], Width(look.text));
    }
  }

  std::string out;
  std::string line = Pad(kCorner, row_width, false);
  for (size_t j = 0; j < m.hosts.size(); ++j) {
    line += std::string(kColumnGap, ' ') + Pad(column_labels[j], widths[j], true);
  }
  AppendLine(out, std::move(line));
  for (size_t i = 0; i < rows.size(); ++i) {
    line = Pad(row_labels[i], row_width, false);
    for (size_t j = 0; j < m.hosts.size(); ++j) {
      const Look& look = grid[i][j];
      const std::string fill(widths[j] - Width(look.text), ' ');
      line += std::string(kColumnGap, ' ') + fill + Paint(look.text, look.colour, colour);
    }
    AppendLine(out, std::move(line));
  }
  if (rows.empty()) AppendLine(out, "(no sources)");

  // The footer.
  out += '\n';
  line = std::string(MetricTitle(metric)) + " over " +
         (shown.empty() ? std::string("(no transport)") : PrintableText(shown, 64)) + ", window " +
         PrintableText(m.window, 16) + "; rows are sources, columns destinations";
  AppendLine(out, std::move(line));
  std::string others;
  for (const std::string& t : transports) {
    if (t != shown) others += (others.empty() ? "" : ", ") + PrintableText(t, 64);
  }
  if (!others.empty()) AppendLine(out, "other transports: " + others);
  if (colour) {
    line = "scale: ";
    if (IsLoss(metric)) {
      line += Paint("0", kGreen, true) + " " + Paint("<1%", kYellow, true) + " " +
              Paint("<10%", kOrange, true) + " " + Paint(">=10%", kRed, true);
    } else {
      line += Paint("<100us", kGreen, true) + " " + Paint("<1ms", kYellow, true) + " " +
              Paint("<10ms", kOrange, true) + " " + Paint(">=10ms", kRed, true);
    }
    AppendLine(out, std::move(line));
  }
  AppendLine(out,
             "-- no data, FAIL every probe failed, DOWN source did not answer, . itself, "
             "blank not probed");

  if (!m.sources.empty()) AppendLine(out, "sources:");
  size_t name_width = 0;
  size_t url_width = 0;
  for (const SourceState& s : m.sources) {
    name_width = std::max(name_width, Width(labels.Get(SourceRowName(s), kMaxRowName)));
    url_width = std::max(url_width, Width(PrintableText(s.url, 256)));
  }
  for (const SourceState& s : m.sources) {
    line = "  " + Pad(labels.Get(SourceRowName(s), kMaxRowName), name_width, false) + "  " +
           Pad(PrintableText(s.url, 256), url_width, false) + "  ";
    if (s.reachable) {
      line += "pinglist " + (s.pinglist_version.empty() ? std::string("(none)")
                                                        : PrintableText(s.pinglist_version, 64));
    } else {
      line += Paint("DOWN", kBoldRed, colour) + ": " + PrintableText(s.error, 300);
      if (s.fetched_ns != 0) {
        const double age_s = static_cast<double>(m.taken_ns - s.fetched_ns) / kNsPerSec;
        line += "; last answer " + Format("%.0f", age_s) + "s ago";
      }
    }
    AppendLine(out, std::move(line));
  }
  const auto legend = labels.Legend();
  if (!legend.empty()) {
    AppendLine(out, "names:");
    size_t w = 0;
    for (const auto& [label, name] : legend) w = std::max(w, Width(label));
    for (const auto& [label, name] : legend)
      AppendLine(out, "  " + Pad(label, w, false) + "  " + name);
  }
  return out;
}

}  // namespace wharf::mesh
