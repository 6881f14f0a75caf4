// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/get.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>
#include "tools/kcache/command.h"

#include <nlohmann/json.hpp>

#include "kcache/field_selector.h"
#include "kcache/label_selector.h"
#include "kcache/lister.h"
#include "tools/kcache/fleet_get.h"
#include "tools/kcache/kubectl/go_format.h"
#include "tools/kcache/kubectl/go_template.h"
#include "tools/kcache/kubectl/jsonpath.h"
#include "tools/kcache/kubectl/printers.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/kubectl/yaml.h"
#include "tools/kcache/source.h"
#include "util/strings.h"

namespace kcache::tool {

using json = nlohmann::json;

std::string KindString(const ResourceInfo& info, const Object& o) {
  std::string kind = info.kind.empty() ? o.kind() : info.kind;
  return AsciiLower(info.group.empty() ? kind : kind + "." + info.group);
}

std::string CellText(const json& cell) {
  if (cell.is_null()) return "";
  if (!cell.is_string()) return GoValue(cell);
  std::string s = cell.get<std::string>();
  size_t cut = s.find_first_of("\f\n\r");
  if (cut != std::string::npos) s = s.substr(0, cut) + "...";
  std::string out;
  for (char c : s) {
    if (c == '\x1b') {
      out += "^[";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string LabelHeader(const std::string& key) {
  return AsciiUpper(key.substr(key.rfind('/') + 1));
}

std::string LabelsText(const Labels& labels) {
  std::vector<std::string> pairs;
  for (const auto& [k, v] : labels) pairs.push_back(k + "=" + v);
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const std::string& p : pairs) out += (out.empty() ? "" : ",") + p;
  return out.empty() ? "<none>" : out;
}

void AppendTableHeader(const TableSpec& spec, bool wide, const GetOptions& o,
                       std::vector<std::string>* header) {
  for (const TableColumn& c : spec.columns()) {
    if (wide || c.priority == 0) header->push_back(AsciiUpper(c.name));
  }
  for (const std::string& l : o.label_columns) header->push_back(LabelHeader(l));
  if (o.show_labels) header->push_back("LABELS");
}

void AppendTableCells(const TableSpec& spec, bool wide, const GetOptions& o,
                      const std::vector<json>& cells, const Labels& labels,
                      std::vector<std::string>* row) {
  for (size_t i = 0; i < cells.size() && i < spec.columns().size(); ++i) {
    if (wide || spec.columns()[i].priority == 0) row->push_back(CellText(cells[i]));
  }
  for (const std::string& l : o.label_columns) {
    auto it = labels.find(l);
    row->push_back(it == labels.end() ? "" : it->second);
  }
  if (o.show_labels) row->push_back(LabelsText(labels));
}

std::string ListOpening(bool as_json) {
  return as_json ? "{\n    \"apiVersion\": \"v1\",\n    \"items\": [" : "apiVersion: v1\nitems:";
}

void AppendListItem(const json& doc, bool as_json, bool first, std::string* text) {
  if (as_json) {
    *text += first ? "\n        " : ",\n        ";
    AppendGoJson(doc, 4, 2, text);
  } else {
    *text += "\n";
    AppendYamlItem(doc, text);
    text->pop_back();  // the item's newline; the next one adds it
  }
}

void AppendListClosing(bool as_json, bool any, std::string* text) {
  if (as_json) {
    *text += any ? "\n    ]" : "]";
    *text +=
        ",\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    "
        "}\n}\n";
  } else {
    *text += any ? "\n" : " []\n";
    *text += "kind: List\nmetadata:\n  resourceVersion: \"\"\n";
  }
}

namespace {

enum class Format {
  kTable,
  kWide,
  kJson,
  kYaml,
  kName,
  kJsonPath,
  kJsonPathAsJson,
  kGoTemplate,
  kColumns
};

struct Column {
  std::string header;
  JsonPath path;
};

struct Printing {
  Format format = Format::kTable;
  std::optional<JsonPath> jsonpath;
  std::optional<GoTemplate> go_template;
  std::string template_text;    // as given, for messages
  std::vector<Column> columns;  // custom-columns
};

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("open " + path + ": no such file or directory");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

StatusOr<Column> MakeColumn(const std::string& header, const std::string& spec) {
  KCACHE_ASSIGN_OR_RETURN(std::string relaxed, JsonPath::Relaxed(spec));
  KCACHE_ASSIGN_OR_RETURN(JsonPath path, JsonPath::Parse(relaxed));
  return Column{header, std::move(path)};
}

// -o as kubectl reads it.
StatusOr<Printing> ParseOutput(const GetOptions& o) {
  Printing p;
  const std::string& out = o.output;
  const size_t eq = out.find('=');
  const std::string name = out.substr(0, eq);
  std::string arg = eq == std::string::npos ? o.template_ : out.substr(eq + 1);
  static const std::map<std::string, Format> kPlain = {{"", Format::kTable},
                                                       {"wide", Format::kWide},
                                                       {"json", Format::kJson},
                                                       {"yaml", Format::kYaml},
                                                       {"name", Format::kName}};
  if (auto it = kPlain.find(out); it != kPlain.end()) {
    p.format = it->second;
    return p;
  }
  // A template's text: `arg`, or the file it names; never empty.
  auto template_text = [&](bool from_file) -> Status {
    if (from_file) {
      StatusOr<std::string> text = ReadFile(arg);
      if (!text.ok())
        return Status::InvalidArgument("error reading --template " + arg + ", " +
                                       std::string(text.status().message()));
      arg = *std::move(text);
    }
    if (arg.empty())
      return Status::InvalidArgument("template format specified but no template given");
    return Status::OK();
  };
  if (name == "jsonpath" || name == "jsonpath-file" || name == "jsonpath-as-json") {
    KCACHE_RETURN_IF_ERROR(template_text(name == "jsonpath-file"));
    StatusOr<JsonPath> path = JsonPath::Parse(arg);
    if (!path.ok()) {
      return Status::InvalidArgument("error parsing jsonpath " + arg + ", " +
                                     std::string(path.status().message()));
    }
    p.format = name == "jsonpath-as-json" ? Format::kJsonPathAsJson : Format::kJsonPath;
    p.jsonpath = *std::move(path);
    return p;
  }
  if (name == "custom-columns" || name == "custom-columns-file") {
    p.format = Format::kColumns;
    if (name == "custom-columns-file") {
      StatusOr<std::string> read = ReadFile(arg);
      if (!read.ok())
        return Status::InvalidArgument("error reading template " + arg + ", " +
                                       std::string(read.status().message()));
      const std::string& text = *read;
      std::istringstream lines(text);
      std::string header_line, spec_line;
      if (!std::getline(lines, header_line)) {
        return Status::InvalidArgument(
            "invalid template, missing header line. Expected format is one line of space "
            "separated headers, one line of space separated column specs.");
      }
      if (!std::getline(lines, spec_line)) {
        return Status::InvalidArgument(
            "invalid template, missing spec line. Expected format is one line of space "
            "separated headers, one line of space separated column specs.");
      }
      std::vector<std::string> headers = Words(header_line), specs = Words(spec_line);
      if (headers.size() != specs.size()) {
        return Status::InvalidArgument("number of headers (" + std::to_string(headers.size()) +
                                       ") and field specifications (" +
                                       std::to_string(specs.size()) + ") don't match");
      }
      for (size_t i = 0; i < headers.size(); ++i) {
        KCACHE_ASSIGN_OR_RETURN(Column c, MakeColumn(headers[i], specs[i]));
        p.columns.push_back(std::move(c));
      }
      return p;
    }
    if (arg.empty())
      return Status::InvalidArgument("custom-columns format specified but no custom columns given");
    size_t from = 0;
    for (;;) {
      size_t comma = arg.find(',', from);
      std::string part = arg.substr(from, comma == std::string::npos ? comma : comma - from);
      size_t colon = part.find(':');
      if (colon == std::string::npos) {
        return Status::InvalidArgument("unexpected custom-columns spec: " + part +
                                       ", expected <header>:<json-path-expr>");
      }
      KCACHE_ASSIGN_OR_RETURN(Column c, MakeColumn(part.substr(0, colon), part.substr(colon + 1)));
      p.columns.push_back(std::move(c));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    return p;
  }
  if (name == "go-template" || name == "go-template-file" || name == "template" ||
      name == "templatefile") {
    KCACHE_RETURN_IF_ERROR(template_text(name == "go-template-file" || name == "templatefile"));
    StatusOr<GoTemplate> parsed = GoTemplate::Parse(arg);
    if (!parsed.ok()) {
      return Status::InvalidArgument("error parsing template " + arg + ", " +
                                     std::string(parsed.status().message()));
    }
    p.format = Format::kGoTemplate;
    p.go_template = *std::move(parsed);
    p.template_text = arg;
    return p;
  }
  return Status::InvalidArgument(
      "unable to match a printer suitable for the output format \"" + out +
      "\", allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,"
      "json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml");
}

// What one argument asks for: a resource's objects, all or by name.
struct Target {
  std::string keyspace;
  ResourceInfo info;
  std::vector<std::string> names;  // empty: every object that matches
  bool list = true;
  std::vector<ObjectPtr> found;  // names: the objects that exist, in order
};

// kubectl's "pods" or `deployments.apps` for messages.
std::string ResourceString(const ResourceInfo& r) { return r.group_resource().String(); }

StatusOr<std::vector<Target>> ParseTargets(const std::vector<std::string>& args, Source& source,
                                           bool* single_item) {
  std::vector<std::pair<std::string, std::string>> pairs;  // (type, name)
  std::vector<Target> targets;
  const bool slash_form = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.find('/') != std::string::npos;
  });
  auto resolve = [&](const std::string& type) -> StatusOr<Target> {
    Target t;
    KCACHE_ASSIGN_OR_RETURN(t.keyspace, source.Resolve(type));
    t.info = source.Info(t.keyspace);
    return t;
  };
  if (slash_form) {
    for (const std::string& a : args) {
      size_t slash = a.find('/');
      if (slash == std::string::npos) {
        return Status::InvalidArgument(
            "there is no need to specify a resource type as a separate argument when passing "
            "arguments in resource/name form (e.g. 'kcache get resource/<resource_name>' instead "
            "of 'kcache get resource resource/<resource_name>'");
      }
      if (slash == 0 || slash + 1 == a.size())
        return Status::InvalidArgument(
            "arguments in resource/name form must have a single "
            "resource and name");
      KCACHE_ASSIGN_OR_RETURN(Target t, resolve(a.substr(0, slash)));
      // Consecutive names of one resource are one target, printed as one
      // table, as kubectl groups them.
      if (!targets.empty() && targets.back().keyspace == t.keyspace) {
        targets.back().names.push_back(a.substr(slash + 1));
        continue;
      }
      t.list = false;
      t.names.push_back(a.substr(slash + 1));
      targets.push_back(std::move(t));
    }
    *single_item = args.size() == 1;
    return targets;
  }
  for (std::string_view type : Split(args[0], ',')) {
    if (type.empty()) continue;
    // A category ("all") is expanded first, as kubectl expands it before
    // resolving resources.
    std::vector<std::string> types = source.Category(std::string(type));
    if (types.size() > 1 && args.size() > 1) {
      return Status::InvalidArgument("you must specify only one resource");
    }
    if (types.empty()) types.push_back(std::string(type));
    for (const std::string& name : types) {
      KCACHE_ASSIGN_OR_RETURN(Target t, resolve(name));
      t.names.assign(args.begin() + 1, args.end());
      t.list = t.names.empty();
      targets.push_back(std::move(t));
    }
  }
  *single_item = targets.size() == 1 && targets[0].names.size() == 1;
  return targets;
}

struct Selection {
  LabelSelector labels;
  FieldSelector fields;
  std::string index_name, index_value;
};

using Each = std::function<Status(const Target&, const ObjectPtr&)>;

// The objects of a list target, in key order (kubectl's order: the API
// server lists by key too).
Status VisitList(Source& source, const Target& t, const std::string& ns, const Selection& sel,
                 const Each& fn) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, source.Keyspace(t.keyspace));
  const std::string scope = t.info.namespaced ? ns : "";
  if (!sel.index_name.empty()) {
    KCACHE_ASSIGN_OR_RETURN(std::vector<ObjectPtr> found,
                            indexer->ByIndex(sel.index_name, sel.index_value));
    for (const ObjectPtr& o : found) {
      if ((scope.empty() || o->namespace_() == scope) && sel.labels.Matches(o->meta().labels) &&
          sel.fields.Matches(*o)) {
        KCACHE_RETURN_IF_ERROR(fn(t, o));
      }
    }
    return Status::OK();
  }
  Status inner;
  KCACHE_RETURN_IF_ERROR(ListAllByNamespace(*indexer, scope, sel.labels, [&](const ObjectPtr& o) {
    if (!sel.fields.Matches(*o)) return true;
    inner = fn(t, o);
    return inner.ok();
  }));
  return inner;
}

// A run of objects printed together: one target, or (sorted) a run of
// consecutive objects of one resource. Visit may run more than once.
struct Group {
  const Target* target;
  std::function<Status(const Each&)> visit;
};

class Getter {
 public:
  Getter(const GetOptions& o, Source& source, std::ostream& out, std::ostream& err)
      : o_(o), source_(source), out_(out), err_(err) {}

  // Everything the flags alone decide, checked before anything is opened.
  static Status Check(const GetOptions& o, Printing* printing, Selection* sel) {
    KCACHE_ASSIGN_OR_RETURN(*printing, ParseOutput(o));
    KCACHE_ASSIGN_OR_RETURN(sel->labels, LabelSelector::Parse(o.label_selector));
    KCACHE_ASSIGN_OR_RETURN(sel->fields, FieldSelector::Parse(o.field_selector));
    if (!o.index.empty()) {
      size_t eq = o.index.find('=');
      if (eq == std::string::npos || eq == 0)
        return Status::InvalidArgument("--index wants INDEX=VALUE, got \"" + o.index + "\"");
      sel->index_name = o.index.substr(0, eq);
      sel->index_value = o.index.substr(eq + 1);
    }
    if (o.args.empty()) {
      return Status::InvalidArgument(
          "you must specify the type of resource to get, e.g. kcache get pods (kcache stats "
          "lists the resources a cache holds)");
    }
    if (!o.sort_by.empty()) {
      KCACHE_ASSIGN_OR_RETURN(std::string field, JsonPath::Relaxed(o.sort_by));
      KCACHE_RETURN_IF_ERROR(JsonPath::Parse(field).status());
    }
    return Status::OK();
  }

  // kubectl get -w / --watch-only: the objects (unless --watch-only or a
  // resourceVersion to start after is given), then each change the cache's
  // journal records, as kubectl prints a watch's events.
  StatusOr<int> Watch(Printing printing, Selection sel) {
    printing_ = std::move(printing);
    sel_ = std::move(sel);
    // kubectl refuses several types as written, before resolving them.
    std::set<std::string> types;
    for (const std::string& a : o_.args) {
      size_t slash = a.find('/');
      if (slash != std::string::npos) types.insert(a.substr(0, slash));
    }
    if (types.empty()) types.insert(o_.args[0]);
    if (types.size() > 1 || types.begin()->find(',') != std::string::npos) {
      return Status::InvalidArgument("you may only specify a single resource type");
    }
    KCACHE_ASSIGN_OR_RETURN(targets_, ParseTargets(o_.args, source_, &single_item_));
    ns_ = o_.all_namespaces ? "" : o_.namespace_;
    WarnOfIncompleteLists();
    std::set<std::string> names;
    for (const Target& t : targets_) {
      if (t.keyspace != targets_[0].keyspace) {
        return Status::InvalidArgument(
            "watch is only supported on individual resources and resource collections - more "
            "than 1 resource was found");
      }
      names.insert(t.names.begin(), t.names.end());
    }
    KCACHE_RETURN_IF_ERROR(CheckNamed());
    if (!sel_.index_name.empty()) return Status::InvalidArgument("--index cannot be watched");
    if (!o_.sort_by.empty()) {
      err_ << "warning: --watch requested, --sort-by will be ignored for watch events received\n";
    }
    const Target& target = targets_[0];
    Cache& cache = source_.cache();
    std::string rv = o_.resource_version;
    watch_ =
        std::make_unique<WatchState>(target, o_.all_namespaces, printing_.format == Format::kWide);
    if (rv.empty()) {
      // The objects and the resume point from one view of the cache.
      KCACHE_RETURN_IF_ERROR(cache.Refresh());
      if (!o_.watch_only) {
        KCACHE_RETURN_IF_ERROR(LookUpNames());
        if (!errors_.empty()) {
          for (const std::string& e : errors_) err_ << e << "\n";
          return 1;
        }
        KCACHE_RETURN_IF_ERROR(MakeGroups());
        KCACHE_RETURN_IF_ERROR(PrintWatchList());
      }
      KCACHE_ASSIGN_OR_RETURN(KeyspaceStats stats, cache.Stats(target.keyspace));
      rv = stats.resource_version;
      if (rv.empty()) {
        return Status::FailedPrecondition("keyspace " + target.keyspace +
                                          " has no resume point yet: it was never synced");
      }
    }
    const std::string scope = target.info.namespaced ? ns_ : "";
    auto passes = [&](const ObjectPtr& o) {
      return o && (scope.empty() || o->namespace_() == scope) &&
             (names.empty() || names.count(o->name())) && sel_.labels.Matches(o->meta().labels) &&
             sel_.fields.Matches(*o);
    };
    using Clock = std::chrono::steady_clock;
    const auto deadline = o_.request_timeout.count() > 0 ? Clock::now() + o_.request_timeout
                                                         : Clock::time_point::max();
    for (;;) {
      KCACHE_ASSIGN_OR_RETURN(JournalRead read, cache.ReadJournal(target.keyspace, rv, 1000));
      std::string text;
      for (const JournalEvent& e : read.events) {
        // As the API server filters a watch: a change that enters the
        // selection is an addition, one that leaves it a deletion.
        const bool now_in = passes(e.object);
        const bool was_in = e.type == JournalEvent::Type::kModified
                                ? (e.previous ? passes(e.previous) : now_in)
                                : now_in;
        if (e.type == JournalEvent::Type::kAdded && now_in) {
          KCACHE_RETURN_IF_ERROR(PrintEvent("ADDED", e.object, &text));
        } else if (e.type == JournalEvent::Type::kDeleted && now_in) {
          KCACHE_RETURN_IF_ERROR(PrintEvent("DELETED", e.object, &text));
        } else if (e.type == JournalEvent::Type::kModified) {
          if (now_in && was_in) {
            KCACHE_RETURN_IF_ERROR(PrintEvent("MODIFIED", e.object, &text));
          } else if (now_in) {
            KCACHE_RETURN_IF_ERROR(PrintEvent("ADDED", e.object, &text));
          } else if (was_in) {
            KCACHE_RETURN_IF_ERROR(PrintEvent("DELETED", e.previous, &text));
          }
        }
      }
      out_ << text << std::flush;
      rv = read.resource_version;
      if (read.more) continue;
      const auto now = Clock::now();
      if (now >= deadline) return 0;
      std::this_thread::sleep_for(std::min<Clock::duration>(o_.poll, deadline - now));
      KCACHE_RETURN_IF_ERROR(cache.Refresh());
    }
  }

  StatusOr<int> Run(Printing printing, Selection sel) {
    printing_ = std::move(printing);
    sel_ = std::move(sel);
    KCACHE_ASSIGN_OR_RETURN(targets_, ParseTargets(o_.args, source_, &single_item_));
    ns_ = o_.all_namespaces ? "" : o_.namespace_;
    WarnOfIncompleteLists();
    KCACHE_RETURN_IF_ERROR(CheckNamed());
    KCACHE_RETURN_IF_ERROR(LookUpNames());
    KCACHE_RETURN_IF_ERROR(MakeGroups());
    if (printing_.format == Format::kTable || printing_.format == Format::kWide) {
      KCACHE_RETURN_IF_ERROR(PrintTables());
    } else {
      KCACHE_RETURN_IF_ERROR(PrintGeneric());
    }
    for (const std::string& e : errors_) err_ << e << "\n";
    return errors_.empty() ? 0 : 1;
  }

 private:
  Status CheckNamed() const {
    bool named = false;
    for (const Target& t : targets_) named = named || !t.list;
    if (named && o_.all_namespaces)
      return Status::InvalidArgument(
          "a resource cannot be retrieved by name across all namespaces");
    if (named && (!o_.label_selector.empty() || !o_.field_selector.empty() || !o_.index.empty()))
      return Status::InvalidArgument("name cannot be provided when a selector is specified");
    return Status::OK();
  }

  // --- watch ---

  // The rows of one resource's table, and its header once a row is made.
  struct TableRows {
    TableRows(const Target& t, bool kind, bool all_namespaces, bool wide_)
        : info(t.info),
          with_kind(kind),
          with_namespace(all_namespaces && t.info.namespaced),
          wide(wide_) {}
    ResourceInfo info;
    const bool with_kind, with_namespace, wide;
    std::optional<TableSpec> spec;
    std::vector<std::string> header;
  };

  // What a watch keeps between events: kubectl's printers remember whether
  // they printed a header, how many documents they wrote, and (its
  // tabwriter) the widest cell seen in each column.
  struct WatchState {
    WatchState(const Target& t, bool all_namespaces, bool wide)
        : rows(t, false, all_namespaces, wide), tab(kKubectlMinWidth) {}
    TableRows rows;
    TabWriter tab;
    bool header_printed = false;
    size_t documents = 0;
  };

  // The objects a watch starts with: laid out together, as one batch.
  Status PrintWatchList() {
    const std::string added = "ADDED";
    // Tables and columns measure every row first, as kubectl's tabwriter
    // sees the whole list before its first flush.
    if (Tabular()) {
      std::vector<std::string> row;
      bool any = false;
      Status measured = VisitAll([&](const Target&, const ObjectPtr& o) -> Status {
        KCACHE_RETURN_IF_ERROR(WatchRow(added, o, &row));
        watch_->tab.Measure(row);
        any = true;
        return Status::OK();
      });
      if (!measured.ok()) return measured;
      if (any) MeasureWatchHeader();
    }
    std::string text;
    Status printed = VisitAll([&](const Target&, const ObjectPtr& o) -> Status {
      KCACHE_RETURN_IF_ERROR(PrintEvent(added, o, &text, /*measured=*/true));
      if (text.size() >= kFlushBytes) {
        out_ << text;
        text.clear();
      }
      return Status::OK();
    });
    if (!printed.ok()) return printed;
    out_ << text << std::flush;
    return Status::OK();
  }

  bool Tabular() const {
    return printing_.format == Format::kTable || printing_.format == Format::kWide ||
           printing_.format == Format::kColumns;
  }

  std::vector<std::string> WatchHeader() const {
    std::vector<std::string> header;
    if (o_.output_watch_events && printing_.format != Format::kColumns) header.push_back("EVENT");
    if (printing_.format == Format::kColumns) {
      for (const Column& c : printing_.columns) header.push_back(c.header);
    } else {
      header.insert(header.end(), watch_->rows.header.begin(), watch_->rows.header.end());
    }
    return header;
  }

  void MeasureWatchHeader() {
    if (!o_.no_headers && !watch_->header_printed) watch_->tab.Measure(WatchHeader());
  }

  // A table or custom-columns row of a watch event.
  Status WatchRow(const std::string& type, const ObjectPtr& o, std::vector<std::string>* row) {
    if (printing_.format == Format::kColumns) {
      KCACHE_ASSIGN_OR_RETURN(json doc, WatchDoc(type, o));
      return ColumnsRow(doc, row);
    }
    KCACHE_RETURN_IF_ERROR(TableRow(&watch_->rows, o, row));
    if (o_.output_watch_events) {
      // kubectl pads the event type to the width of MODIFIED.
      std::string padded = type;
      padded.resize(std::max<size_t>(padded.size(), 8), ' ');
      row->insert(row->begin(), padded);
    }
    return Status::OK();
  }

  // The document a watch prints: the object, or with --output-watch-events
  // the event {"type", "object"}.
  // kubectl leaves managedFields in events' objects.
  StatusOr<json> WatchDoc(const std::string& type, const ObjectPtr& o) {
    if (!o_.output_watch_events) return Doc(o);
    KCACHE_ASSIGN_OR_RETURN(json doc, o->Document());
    return json{{"type", type}, {"object", std::move(doc)}};
  }

  // Prints one object of a watch to `text`. Tables and columns measure the
  // row first unless `measured` (the starting list measured them all).
  Status PrintEvent(const std::string& type, const ObjectPtr& o, std::string* text,
                    bool measured = false) {
    WatchState& w = *watch_;
    if (Tabular()) {
      std::vector<std::string> row;
      KCACHE_RETURN_IF_ERROR(WatchRow(type, o, &row));
      if (!measured) {
        MeasureWatchHeader();
        w.tab.Measure(row);
      }
      if (!o_.no_headers && !w.header_printed) w.tab.Write(WatchHeader(), text);
      w.header_printed = true;
      w.tab.Write(row, text);
      return Status::OK();
    }
    switch (printing_.format) {
      case Format::kName:
        *text += KindString(w.rows.info, *o) + "/" + o->name() + "\n";
        break;
      case Format::kJson: {
        KCACHE_ASSIGN_OR_RETURN(json doc, WatchDoc(type, o));
        if (o_.output_watch_events) {
          // Go writes the event's fields in their declared order.
          *text +=
              "{\"type\":" + GoJson(doc["type"]) + ",\"object\":" + GoJson(doc["object"]) + "}\n";
        } else {
          *text += GoJson(doc, 4) + "\n";
        }
        break;
      }
      case Format::kYaml: {
        KCACHE_ASSIGN_OR_RETURN(json doc, WatchDoc(type, o));
        if (w.documents++ > 0) *text += "---\n";
        AppendYaml(doc, text);
        break;
      }
      case Format::kJsonPath:
      case Format::kJsonPathAsJson:
      case Format::kGoTemplate: {
        KCACHE_ASSIGN_OR_RETURN(json doc, WatchDoc(type, o));
        KCACHE_RETURN_IF_ERROR(ExecuteTemplate(doc, text));
        break;
      }
      default:
        break;
    }
    return Status::OK();
  }

  // A keyspace whose last list was cut short holds only part of what the
  // server had: said on stderr, as kubectl says its warnings, once each.
  void WarnOfIncompleteLists() {
    std::set<std::string> said;
    for (const Target& t : targets_) {
      for (const KeyspaceStats& ks : source_.keyspaces()) {
        if (ks.name != t.keyspace || !ks.relist_in_progress || !said.insert(ks.name).second) {
          continue;
        }
        err_ << "Warning: the cache's " << ks.name
             << " may be incomplete: their last list was cut short (kcache stats says \"relist "
                "incomplete\"); the next kcache sync lists them again\n";
      }
    }
  }

  // Named objects are looked up once: which exist decides the layout.
  Status LookUpNames() {
    for (Target& t : targets_) {
      if (t.list) continue;
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, source_.Keyspace(t.keyspace));
      for (const std::string& name : t.names) {
        const std::string key = t.info.namespaced ? ns_ + "/" + name : name;
        KCACHE_ASSIGN_OR_RETURN(ObjectPtr o, indexer->GetByKey(key));
        if (!o) {
          if (!o_.ignore_not_found) {
            errors_.push_back("Error from server (NotFound): " + ResourceString(t.info) + " \"" +
                              name + "\" not found");
          }
          continue;
        }
        t.found.push_back(std::move(o));
      }
    }
    return Status::OK();
  }

  Status VisitTarget(const Target& t, const Each& fn) {
    if (t.list) return VisitList(source_, t, ns_, sel_, fn);
    for (const ObjectPtr& o : t.found) KCACHE_RETURN_IF_ERROR(fn(t, o));
    return Status::OK();
  }

  Status MakeGroups() {
    if (o_.sort_by.empty()) {
      for (const Target& t : targets_) {
        groups_.push_back({&t, [this, &t](const Each& fn) { return VisitTarget(t, fn); }});
      }
      return Status::OK();
    }
    // kubectl sorts everything it got, then prints runs of one resource.
    KCACHE_ASSIGN_OR_RETURN(std::string field, JsonPath::Relaxed(o_.sort_by));
    KCACHE_ASSIGN_OR_RETURN(JsonPath path, JsonPath::Parse(field));
    struct Keyed {
      std::optional<json> key;
      const Target* target;
      ObjectPtr obj;
    };
    std::vector<Keyed> all;
    bool found_once = false;
    for (const Target& t : targets_) {
      if (Status visited = VisitTarget(t,
                                       [&](const Target& tt, const ObjectPtr& o) -> Status {
                                         KCACHE_ASSIGN_OR_RETURN(json doc, o->Document());
                                         KCACHE_ASSIGN_OR_RETURN(
                                             std::vector<JsonPath::Values> values,
                                             path.FindResults(doc));
                                         std::optional<json> key;
                                         if (!values.empty() && !values[0].empty())
                                           key = *values[0][0];
                                         found_once = found_once || key.has_value();
                                         all.push_back({std::move(key), &tt, o});
                                         return Status::OK();
                                       });
          !visited.ok())
        return visited;
    }
    if (!all.empty() && !found_once) {
      return Status::InvalidArgument("couldn't find any field with path \"" + field +
                                     "\" in the list of objects");
    }
    Status bad;
    std::stable_sort(all.begin(), all.end(), [&](const Keyed& a, const Keyed& b) {
      if (!a.key || !b.key) return !a.key && b.key;
      StatusOr<bool> less = SortLess(*a.key, *b.key);
      if (!less.ok()) {
        if (bad.ok()) bad = less.status();
        return false;
      }
      return *less;
    });
    if (!bad.ok()) return bad.WithContext("--sort-by " + o_.sort_by);
    sorted_ = std::make_shared<std::vector<std::pair<const Target*, ObjectPtr>>>();
    for (Keyed& k : all) sorted_->emplace_back(k.target, std::move(k.obj));
    for (size_t i = 0; i < sorted_->size();) {
      size_t j = i;
      while (j < sorted_->size() && (*sorted_)[j].first->keyspace == (*sorted_)[i].first->keyspace)
        ++j;
      auto run = sorted_;
      groups_.push_back({(*sorted_)[i].first, [run, i, j](const Each& fn) -> Status {
                           for (size_t k = i; k < j; ++k)
                             KCACHE_RETURN_IF_ERROR(fn(*(*run)[k].first, (*run)[k].second));
                           return Status::OK();
                         }});
      i = j;
    }
    if (all.empty()) {
      for (const Target& t : targets_)
        groups_.push_back({&t, [](const Each&) { return Status::OK(); }});
    }
    return Status::OK();
  }

  // kubectl's order for --sort-by values: numbers by value, strings as
  // quantities when both are ("100m" < "1"), else bytewise.
  static StatusOr<bool> SortLess(const json& a, const json& b) {
    if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
    if (a.is_string() && b.is_string()) {
      std::optional<long double> qa = Quantity(a.get<std::string>());
      std::optional<long double> qb = Quantity(b.get<std::string>());
      if (qa && qb) return *qa < *qb;
      return a.get<std::string>() < b.get<std::string>();
    }
    if (a.is_structured() || b.is_structured() || a.type() != b.type())
      return Status::InvalidArgument("unsortable type: " + std::string(a.type_name()));
    return GoValue(a) < GoValue(b);
  }

  // A Kubernetes quantity ("100m", "1.5Gi", "2e3") as a number.
  static std::optional<long double> Quantity(const std::string& s) {
    size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t digits = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == digits) return std::nullopt;
    long double v;
    try {
      v = std::stold(s.substr(0, i));
    } catch (...) {
      return std::nullopt;
    }
    const std::string suffix = s.substr(i);
    static const std::map<std::string, long double> kSuffix = {{"", 1},
                                                               {"n", 1e-9},
                                                               {"u", 1e-6},
                                                               {"m", 1e-3},
                                                               {"k", 1e3},
                                                               {"M", 1e6},
                                                               {"G", 1e9},
                                                               {"T", 1e12},
                                                               {"P", 1e15},
                                                               {"E", 1e18},
                                                               {"Ki", 1024.0L},
                                                               {"Mi", 1048576.0L},
                                                               {"Gi", 1073741824.0L},
                                                               {"Ti", 1099511627776.0L},
                                                               {"Pi", 1125899906842624.0L},
                                                               {"Ei", 1152921504606846976.0L}};
    if (auto it = kSuffix.find(suffix); it != kSuffix.end()) return v * it->second;
    if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
      size_t j = 1;
      if (suffix[j] == '+' || suffix[j] == '-') ++j;
      if (j < suffix.size() && suffix.find_first_not_of("0123456789", j) == std::string::npos)
        return v * std::pow(10.0L, std::stold(suffix.substr(1)));
    }
    return std::nullopt;
  }

  // --- tables (-o wide too) ---

  Status TableRow(TableRows* t, const ObjectPtr& o, std::vector<std::string>* row) {
    if (!t->spec) {
      if (t->info.kind.empty()) t->info.kind = o->kind();
      KCACHE_ASSIGN_OR_RETURN(TableSpec s, TableSpec::For(t->info));
      t->spec = std::move(s);
      if (t->with_namespace) t->header.push_back("NAMESPACE");
      AppendTableHeader(*t->spec, t->wide, o_, &t->header);
    }
    KCACHE_ASSIGN_OR_RETURN(json doc, o->Document());
    KCACHE_ASSIGN_OR_RETURN(std::vector<json> cells, t->spec->Cells(doc, Now()));
    if (t->with_kind && t->spec->name_column() < cells.size()) {
      json& name = cells[t->spec->name_column()];
      name = KindString(t->info, *o) + "/" + CellText(name);
    }
    row->clear();
    if (t->with_namespace) row->push_back(o->namespace_());
    AppendTableCells(*t->spec, t->wide, o_, cells, o->meta().labels, row);
    return Status::OK();
  }

  // The time AGE counts to: fixed by the options, else the clock now (a
  // watch prints rows over time).
  std::chrono::system_clock::time_point Now() const {
    return o_.now == std::chrono::system_clock::time_point{} ? std::chrono::system_clock::now()
                                                             : o_.now;
  }

  Status PrintTables() {
    // kubectl prefixes names with their kind when it got more than one
    // resource.
    std::vector<std::string> kinds;
    for (const Target& t : targets_) {
      if (t.list || !t.found.empty()) kinds.push_back(t.keyspace);
    }
    std::sort(kinds.begin(), kinds.end());
    // kubectl always names kinds for "all", whatever it found.
    const bool with_kind = o_.show_kind || (o_.args.size() == 1 && o_.args[0] == "all") ||
                           std::unique(kinds.begin(), kinds.end()) - kinds.begin() > 1;
    bool all_namespaced = !o_.all_namespaces;
    for (const Target& t : targets_) all_namespaced = all_namespaced && t.info.namespaced;
    size_t written = 0;
    for (const Group& g : groups_) {
      TableRows rows_of(*g.target, with_kind, o_.all_namespaces, printing_.format == Format::kWide);
      std::vector<std::string>& header = rows_of.header;
      TabWriter tab(kKubectlMinWidth);
      size_t rows = 0;
      auto row_of = [&](const ObjectPtr& o, std::vector<std::string>* row) {
        return TableRow(&rows_of, o, row);
      };
      // Two passes over the store: widths, then rows. Nothing is held but
      // the column widths, whatever the number of objects.
      std::vector<std::string> row;
      if (Status visited = g.visit([&](const Target&, const ObjectPtr& o) -> Status {
            KCACHE_RETURN_IF_ERROR(row_of(o, &row));
            tab.Measure(row);
            ++rows;
            return Status::OK();
          });
          !visited.ok())
        return visited;
      if (rows == 0) continue;  // kubectl prints no header for no rows
      if (!o_.no_headers) tab.Measure(header);
      std::string text;
      if (written > 0 && !o_.no_headers) text += "\n";
      if (!o_.no_headers) tab.Write(header, &text);
      if (Status visited = g.visit([&](const Target&, const ObjectPtr& o) -> Status {
            KCACHE_RETURN_IF_ERROR(row_of(o, &row));
            tab.Write(row, &text);
            if (text.size() >= kFlushBytes) Flush(&text, &written);
            return Status::OK();
          });
          !visited.ok())
        return visited;
      Flush(&text, &written);
    }
    if (written == 0 && errors_.empty() && !o_.ignore_not_found) {
      if (all_namespaced) {
        err_ << "No resources found in " << o_.namespace_ << " namespace.\n";
      } else {
        err_ << "No resources found\n";
      }
    }
    return Status::OK();
  }

  void Flush(std::string* text, size_t* written) {
    out_ << *text;
    *written += text->size();
    text->clear();
  }

  // --- json, yaml, name, jsonpath, custom-columns ---

  StatusOr<json> Doc(const ObjectPtr& o) {
    KCACHE_ASSIGN_OR_RETURN(json doc, o->Document());
    const bool strip = !o_.show_managed_fields &&
                       (printing_.format == Format::kJson || printing_.format == Format::kYaml);
    if (strip && doc.contains("metadata") && doc["metadata"].is_object())
      doc["metadata"].erase("managedFields");
    return doc;
  }

  Status VisitAll(const Each& fn) {
    for (const Group& g : groups_) KCACHE_RETURN_IF_ERROR(g.visit(fn));
    return Status::OK();
  }

  // Whether anything is to be printed; reads up to the first object.
  StatusOr<bool> AnyObject() {
    bool any = false;
    Status visited = VisitAll([&](const Target&, const ObjectPtr&) {
      any = true;
      return Status::Cancelled("found one");  // stops the visit
    });
    if (!visited.ok() && !any) return visited;
    return any;
  }

  Status PrintGeneric() {
    // One object named alone prints as itself, anything else as a List.
    const ObjectPtr single =
        single_item_ && !targets_[0].found.empty() ? targets_[0].found[0] : nullptr;
    if (single_item_ && !single) return Status::OK();  // only the NotFound error
    if (o_.ignore_not_found) {
      // Nothing found prints nothing at all, not even an empty List.
      KCACHE_ASSIGN_OR_RETURN(bool any, AnyObject());
      if (!any) return Status::OK();
    }
    std::string text;
    size_t written = 0;
    switch (printing_.format) {
      case Format::kName:
        if (Status visited = VisitAll([&](const Target& t, const ObjectPtr& o) {
              text += KindString(t.info, *o) + "/" + o->name() + "\n";
              if (text.size() >= kFlushBytes) Flush(&text, &written);
              return Status::OK();
            });
            !visited.ok())
          return visited;
        break;
      case Format::kJson:
      case Format::kYaml:
        if (single) {
          KCACHE_ASSIGN_OR_RETURN(json doc, Doc(single));
          if (printing_.format == Format::kJson) {
            text = GoJson(doc, 4) + "\n";
          } else {
            AppendYaml(doc, &text);
          }
          break;
        }
        {
          const bool as_json = printing_.format == Format::kJson;
          bool any = false;
          text = ListOpening(as_json);
          if (Status visited = VisitAll([&](const Target&, const ObjectPtr& o) -> Status {
                KCACHE_ASSIGN_OR_RETURN(json doc, Doc(o));
                AppendListItem(doc, as_json, !any, &text);
                any = true;
                if (text.size() >= kFlushBytes) Flush(&text, &written);
                return Status::OK();
              });
              !visited.ok())
            return visited;
          AppendListClosing(as_json, any, &text);
        }
        break;
      case Format::kJsonPath:
      case Format::kJsonPathAsJson:
      case Format::kGoTemplate: {
        // A template may reach anywhere in the list, so the list is built
        // whole (docs/inspection.md gives the memory this takes).
        json doc;
        if (single) {
          KCACHE_ASSIGN_OR_RETURN(doc, Doc(single));
        } else {
          doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}};
          doc["items"] = json::array();
          if (Status visited = VisitAll([&](const Target&, const ObjectPtr& o) -> Status {
                KCACHE_ASSIGN_OR_RETURN(json item, Doc(o));
                doc["items"].push_back(std::move(item));
                return Status::OK();
              });
              !visited.ok())
            return visited;
        }
        KCACHE_RETURN_IF_ERROR(ExecuteTemplate(doc, &text));
        break;
      }
      case Format::kColumns:
        KCACHE_RETURN_IF_ERROR(PrintColumns(single, &text, &written));
        break;
      default:
        break;
    }
    Flush(&text, &written);
    return Status::OK();
  }

  static std::string Quoted(const std::string& s) { return GoJson(json(s)); }

  // -o jsonpath or go-template over `doc`, with kubectl's wording for a
  // failure.
  Status ExecuteTemplate(const json& doc, std::string* text) const {
    if (printing_.format == Format::kGoTemplate) return ExecuteGoTemplate(doc, text);
    return ExecuteJsonPath(doc, text);
  }

  Status ExecuteGoTemplate(const json& doc, std::string* text) const {
    Status st = printing_.go_template->Execute(doc, text);
    if (st.ok()) return st;
    // kubectl writes what the template wrote, then this, to standard
    // output.
    *text += "Error executing template: " + std::string(st.message()) +
             ". Printing more information for debugging the template:\n\ttemplate was:\n\t\t" +
             printing_.template_text + "\n\traw data was:\n\t\t" + GoJson(doc) +
             "\n\tobject given to template engine was:\n\t\t" + GoValue(doc) + "\n\n";
    out_ << *text;
    text->clear();
    return Status::InvalidArgument("error executing template " + Quoted(printing_.template_text) +
                                   ": " + std::string(st.message()));
  }

  Status ExecuteJsonPath(const json& doc, std::string* text) const {
    Status st = printing_.jsonpath->Execute(doc, text, printing_.format == Format::kJsonPathAsJson);
    if (st.ok()) return st;
    return Status::InvalidArgument("error executing jsonpath " +
                                   Quoted(o_.output.substr(o_.output.find('=') + 1)) + ": " +
                                   std::string(st.message()));
  }

  Status PrintColumns(const ObjectPtr& single, std::string* text, size_t* written) {
    TabWriter tab(kKubectlMinWidth);
    std::vector<std::string> header;
    for (const Column& c : printing_.columns) header.push_back(c.header);
    std::vector<std::string> row;
    auto row_of = [&](const ObjectPtr& o) -> Status {
      KCACHE_ASSIGN_OR_RETURN(json doc, Doc(o));
      return ColumnsRow(doc, &row);
    };
    auto each = [&](const Each& fn) -> Status {
      if (single) return fn(targets_[0], single);
      return VisitAll(fn);
    };
    if (!o_.no_headers) tab.Measure(header);
    if (Status visited = each([&](const Target&, const ObjectPtr& o) -> Status {
          KCACHE_RETURN_IF_ERROR(row_of(o));
          tab.Measure(row);
          return Status::OK();
        });
        !visited.ok())
      return visited;
    if (!o_.no_headers) tab.Write(header, text);
    return each([&](const Target&, const ObjectPtr& o) -> Status {
      KCACHE_RETURN_IF_ERROR(row_of(o));
      tab.Write(row, text);
      if (text->size() >= kFlushBytes) Flush(text, written);
      return Status::OK();
    });
  }

  // A custom-columns row: each column's values, comma-separated, with Go's
  // %v; "<none>" when the path finds nothing.
  Status ColumnsRow(const json& doc, std::vector<std::string>* row) const {
    row->clear();
    for (const Column& c : printing_.columns) {
      KCACHE_ASSIGN_OR_RETURN(std::vector<JsonPath::Values> values, c.path.FindResults(doc));
      std::string cell;
      if (values.empty() || values[0].empty()) cell = "<none>";
      for (const JsonPath::Values& vs : values) {
        for (const json* v : vs) cell += (cell.empty() ? "" : ",") + GoValue(*v);
      }
      row->push_back(cell);
    }
    return Status::OK();
  }

  static constexpr size_t kFlushBytes = 1 << 16;

  const GetOptions& o_;
  Source& source_;
  std::ostream& out_;
  std::ostream& err_;
  Printing printing_;
  Selection sel_;
  std::vector<Target> targets_;
  bool single_item_ = false;
  std::string ns_;
  std::vector<Group> groups_;
  std::shared_ptr<std::vector<std::pair<const Target*, ObjectPtr>>> sorted_;
  std::vector<std::string> errors_;
  std::unique_ptr<WatchState> watch_;
};

}  // namespace

StatusOr<int> RunGet(const GetOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.postgres.empty()) {
    if (!options.cache_dir.empty() || !options.snapshot.empty()) {
      return Status::InvalidArgument("give one of --cache, --snapshot and --postgres");
    }
    return RunFleetGet(options, out, err);
  }
  if (!options.cluster.empty() || options.all_clusters) {
    return Status::InvalidArgument(
        "--cluster and --all-clusters read a fleet database: give --postgres URL");
  }
  Printing printing;
  Selection sel;
  KCACHE_RETURN_IF_ERROR(Getter::Check(options, &printing, &sel));
  const bool watch = options.watch || options.watch_only;
  if (options.output_watch_events && !watch) {
    return Status::InvalidArgument(
        "--output-watch-events option can only be used with --watch or --watch-only");
  }
  if (!options.resource_version.empty() && !watch) {
    return Status::InvalidArgument("--resource-version can only be used with --watch");
  }
  if (watch && !options.snapshot.empty()) {
    return Status::InvalidArgument(
        "--watch follows a cache directory as a sync writes it; a snapshot does not change");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source,
                          Source::Open(options.cache_dir, options.snapshot));
  Getter getter(options, *source, out, err);
  if (watch) return getter.Watch(std::move(printing), std::move(sel));
  return getter.Run(std::move(printing), std::move(sel));
}

}  // namespace kcache::tool
