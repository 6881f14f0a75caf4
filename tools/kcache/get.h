// SPDX-License-Identifier: Apache-2.0

// `kcache get`: reads objects back from a cache directory (read-only, also
// while `kcache sync` writes it) or a snapshot file, and prints them as
// `kubectl get` would print the same objects from the API server: the same
// arguments (TYPE, TYPE NAME..., TYPE/NAME..., TYPE1,TYPE2), tables, output
// formats, flags, messages and exit codes. docs/inspection.md lists what
// differs and why.

#ifndef KCACHE_TOOLS_KCACHE_GET_H_
#define KCACHE_TOOLS_KCACHE_GET_H_

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache::tool {

struct GetOptions {
  std::string cache_dir;  // one of cache_dir, snapshot and postgres
  std::string snapshot;
  // A fleet database (fleet_get.h), and which of its clusters to read: one
  // by name, or all; neither reads the one cluster a database holds.
  std::string postgres;
  std::string cluster;
  bool all_clusters = false;
  // kubectl's arguments: "pods", "pods web-1 web-2", "pod/web-1 cm/x",
  // "pods,configmaps". Types are plurals, singulars, kinds, short names,
  // optionally with a group: "deployments.apps".
  std::vector<std::string> args;
  std::string namespace_ = "default";
  bool all_namespaces = false;
  std::string label_selector;
  std::string field_selector;
  // An index query "INDEX=VALUE", over any index recorded in the cache.
  std::string index;
  // "" (a table), wide, json, yaml, name, jsonpath=..., jsonpath-file=...,
  // jsonpath-as-json=..., custom-columns=..., custom-columns-file=...
  std::string output;
  std::string template_;  // --template: the template of -o jsonpath
  std::string sort_by;    // a JSONPath such as "{.metadata.name}"
  bool no_headers = false;
  bool show_labels = false;
  std::vector<std::string> label_columns;  // -L
  bool show_managed_fields = false;
  // A named object that is not there is no error, and an empty result
  // prints nothing: no "No resources found", no empty List.
  bool ignore_not_found = false;
  // Tables name objects KIND/NAME even for one resource type.
  bool show_kind = false;
  // kubectl's page size for reading from a server. Accepted and without
  // effect: a cache is read in place, one object at a time, and kubectl's
  // output does not depend on it (docs/inspection.md).
  int64_t chunk_size = 500;
  // The time AGE columns count to. Default (epoch): the system clock.
  std::chrono::system_clock::time_point now{};

  // -w: print the objects, then follow the cache while a sync writes it,
  // printing each change as kubectl prints a watch's events (a single
  // resource type; a cache directory, not a snapshot).
  bool watch = false;
  // --watch-only: follow without printing the objects first.
  bool watch_only = false;
  // Print each object as an event: an EVENT column, or {"type", "object"}.
  bool output_watch_events = false;
  // Follow from the changes after this resourceVersion, which must lie in
  // the cache's journal, instead of from now; no objects are printed first.
  std::string resource_version;
  // Stop following after this long, as kubectl's --request-timeout ends
  // its watch. 0: until interrupted.
  std::chrono::milliseconds request_timeout{0};
  // How often the journal is read while following.
  std::chrono::milliseconds poll{100};
};

// The table text kubectl prints, shared by the readers of caches and of
// fleet databases (fleet_get.h).
// "pod", "deployment.apps": kubectl's lower-cased GroupKind.
std::string KindString(const ResourceInfo& info, const Object& o);
// A table cell as kubectl writes it: strings cut at the first line break
// (with "..."), escape characters shown as ^[, null as nothing.
std::string CellText(const nlohmann::json& cell);
// -L KEY's header: the upper-cased last part of the key.
std::string LabelHeader(const std::string& key);
// labels.Set.String(): "k=v" pairs sorted as strings ("a.b=x" before "a=y").
std::string LabelsText(const Labels& labels);
// kubectl's tabwriter: no column narrower than 6 with its padding.
inline constexpr size_t kKubectlMinWidth = 6;

class TableSpec;
// A table's columns after its leading ones (NAMESPACE, or CLUSTER):
// `spec`'s (every one with -o wide, else those of priority 0), one per -L
// key, and LABELS with --show-labels. The header, then each object's cells.
void AppendTableHeader(const TableSpec& spec, bool wide, const GetOptions& o,
                       std::vector<std::string>* header);
void AppendTableCells(const TableSpec& spec, bool wide, const GetOptions& o,
                      const std::vector<nlohmann::json>& cells, const Labels& labels,
                      std::vector<std::string>* row);

// kubectl's List of several objects in -o json or -o yaml, built in
// pieces: its opening, each item (`first` for the first), and its closing
// (`any`: whether an item was written).
std::string ListOpening(bool as_json);
void AppendListItem(const nlohmann::json& doc, bool as_json, bool first, std::string* text);
void AppendListClosing(bool as_json, bool any, std::string* text);

// Prints to `out`, and "No resources found" and per-object errors to
// `err` as kubectl does. Returns the exit code (0, or 1 when some object
// was not found), or an error that stops the command before printing.
StatusOr<int> RunGet(const GetOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_GET_H_
