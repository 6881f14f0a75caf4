// SPDX-License-Identifier: Apache-2.0

// `kcache get --postgres URL`: the objects of a fleet database (what
// kcache sync --postgres feeds) printed as kubectl prints a cluster's, with
// a CLUSTER column first.

#include "tools/kcache/fleet_get.h"

#include <ostream>
#include <set>

#include "core/json_text.h"
#include "fleet/pg.h"
#include "fleet/schema.h"
#include "kcache/field_selector.h"
#include "kcache/fleet.h"
#include "kcache/label_selector.h"
#include "persist/encoding.h"
#include "tools/kcache/kubectl/go_format.h"
#include "tools/kcache/kubectl/printers.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/kubectl/yaml.h"
#include "tools/kcache/source.h"
#include "util/strings.h"

namespace kcache::tool {
namespace {

using fleet::PgConn;
using fleet::PgParams;
using fleet::PgResult;
using json = nlohmann::json;

// The annotation -o json and -o yaml add to each object: its cluster.
constexpr const char* kClusterAnnotation = "kcache.io/cluster";

struct Row {
  std::string cluster;
  ObjectPtr object;
};

class FleetGetter {
 public:
  FleetGetter(const GetOptions& o, std::ostream& out, std::ostream& err)
      : o_(o), out_(out), err_(err) {}

  StatusOr<int> Run() {
    KCACHE_RETURN_IF_ERROR(Check());
    KCACHE_ASSIGN_OR_RETURN(conn_, PgConn::Connect(o_.postgres, "kcache get"));
    KCACHE_ASSIGN_OR_RETURN(int version, fleet::SchemaVersion(*conn_));
    const std::string where = RedactConninfo(o_.postgres);
    if (version == 0) {
      return Status::NotFound(where +
                              " holds no kcache schema: feed it with kcache sync --postgres");
    }
    if (version > kFleetSchemaVersion) {
      return Status::Unimplemented(where + " holds kcache schema version " +
                                   std::to_string(version) + ", newer than this kcache's " +
                                   std::to_string(kFleetSchemaVersion) + ": upgrade kcache");
    }
    // One snapshot of the database for the whole command: the passes over
    // the rows (widths, then rows) see the same rows.
    KCACHE_RETURN_IF_ERROR(conn_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    KCACHE_RETURN_IF_ERROR(PickClusters(where));
    KCACHE_RETURN_IF_ERROR(Resolve(where));
    KCACHE_RETURN_IF_ERROR(BuildQuery());
    int rc = 0;
    switch (format_) {
      case Format::kTable:
      case Format::kWide:
        KCACHE_RETURN_IF_ERROR(PrintTable());
        break;
      case Format::kName:
        KCACHE_RETURN_IF_ERROR(Visit([&](const Row& r) {
          out_ << (clusters_.size() > 1 ? r.cluster + " " : "") << KindString(info_, *r.object)
               << "/" << r.object->name() << "\n";
          return Status::OK();
        }));
        break;
      case Format::kJson:
      case Format::kYaml:
        KCACHE_RETURN_IF_ERROR(PrintList());
        break;
    }
    if (rows_ == 0 && o_.args.size() == 1) {
      if (info_.namespaced && !o_.all_namespaces) {
        err_ << "No resources found in " << o_.namespace_ << " namespace.\n";
      } else {
        err_ << "No resources found\n";
      }
    }
    for (const std::string& name : names_) {
      if (!found_.count(name)) {
        err_ << "Error from server (NotFound): " << info_.resource
             << (info_.group.empty() ? "" : "." + info_.group) << " \"" << name << "\" not found\n";
        rc = 1;
      }
    }
    conn_->Exec("COMMIT").IgnoreError();
    return rc;
  }

 private:
  enum class Format { kTable, kWide, kName, kJson, kYaml };

  Status Check() {
    static const std::map<std::string, Format> kFormats = {{"", Format::kTable},
                                                           {"wide", Format::kWide},
                                                           {"name", Format::kName},
                                                           {"json", Format::kJson},
                                                           {"yaml", Format::kYaml}};
    auto f = kFormats.find(o_.output);
    if (f == kFormats.end()) {
      return Status::InvalidArgument(
          "--postgres prints tables and -o wide, name, json and yaml; -o " + o_.output +
          " reads a cache (--cache) or a snapshot");
    }
    format_ = f->second;
    if (o_.watch || o_.watch_only) {
      return Status::InvalidArgument(
          "--watch follows a cache (--cache); a fleet database is read as of now");
    }
    if (!o_.index.empty()) return Status::InvalidArgument("--index reads a cache (--cache)");
    if (!o_.sort_by.empty()) return Status::InvalidArgument("--sort-by reads a cache (--cache)");
    if (!o_.cluster.empty() && o_.all_clusters) {
      return Status::InvalidArgument("give --cluster NAME or --all-clusters, not both");
    }
    if (o_.args.empty()) {
      return Status::InvalidArgument(
          "you must specify the type of resource to get, e.g. kcache get pods --postgres URL");
    }
    type_ = o_.args[0];
    if (type_.find(',') != std::string::npos || type_.find('/') != std::string::npos) {
      return Status::InvalidArgument("--postgres reads one resource type: TYPE [NAME...], not \"" +
                                     type_ + "\"");
    }
    names_.assign(o_.args.begin() + 1, o_.args.end());
    KCACHE_ASSIGN_OR_RETURN(labels_, LabelSelector::Parse(o_.label_selector));
    KCACHE_ASSIGN_OR_RETURN(fields_, FieldSelector::Parse(o_.field_selector));
    return Status::OK();
  }

  Status PickClusters(const std::string& where) {
    KCACHE_ASSIGN_OR_RETURN(PgResult all,
                            conn_->Query("SELECT name FROM kcache.clusters ORDER BY name"));
    std::vector<std::string> names;
    for (int i = 0; i < all.rows(); ++i) names.emplace_back(all.get(i, 0));
    std::string have;
    for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
    if (!o_.cluster.empty()) {
      if (std::find(names.begin(), names.end(), o_.cluster) == names.end()) {
        return Status::NotFound(where + " has no cluster \"" + o_.cluster +
                                "\" (it has: " + (have.empty() ? "none yet" : have) + ")");
      }
      clusters_ = {o_.cluster};
    } else if (o_.all_clusters || names.size() == 1) {
      clusters_ = names;
    } else {
      return Status::InvalidArgument(where + " holds " + std::to_string(names.size()) +
                                     " clusters" + (have.empty() ? "" : " (" + have + ")") +
                                     ": give --cluster NAME or --all-clusters");
    }
    return Status::OK();
  }

  // The clusters as a text[] literal; names are [A-Za-z0-9._-] only.
  std::string ClusterArray() const {
    std::string a = "{";
    for (const std::string& c : clusters_)
      a += (a.size() > 1 ? "," : "") + std::string("\"") + c + "\"";
    return a + "}";
  }

  Status Resolve(const std::string& where) {
    KCACHE_ASSIGN_OR_RETURN(
        PgResult rs, conn_->Query("SELECT DISTINCT ON (resource) resource, info FROM "
                                  "kcache.resources WHERE cluster = ANY($1::text[]) ORDER BY "
                                  "resource, cluster",
                                  {ClusterArray()}));
    std::vector<KeyspaceStats> keyspaces;
    for (int i = 0; i < rs.rows(); ++i) {
      KeyspaceStats ks;
      ks.name = rs.get(i, 0);
      json info = json::parse(rs.get(i, 1), nullptr, false);
      if (!info.is_discarded()) ks.resource = storage::ResourceInfoFromJson(info);
      keyspaces.push_back(std::move(ks));
    }
    KCACHE_ASSIGN_OR_RETURN(keyspace_, ResolveKeyspace(type_, keyspaces, where));
    for (const KeyspaceStats& ks : keyspaces) {
      if (ks.name == keyspace_ && ks.resource) info_ = *ks.resource;
    }
    if (info_.resource.empty()) info_.resource = keyspace_;
    return Status::OK();
  }

  Status BuildQuery() {
    // A sealed object's row prints as its metadata, which left in clear.
    const std::string api_version = info_.api_version();
    sql_ = "SELECT cluster, coalesce(object, jsonb_strip_nulls(jsonb_build_object('apiVersion', " +
           conn_->Literal(api_version) + ", 'kind', " + conn_->Literal(info_.kind) +
           ", 'metadata', jsonb_build_object('name', name, 'namespace', nullif(namespace, ''), "
           "'uid', uid, 'resourceVersion', resource_version, 'labels', labels, "
           "'creationTimestamp', to_char(created_at AT TIME ZONE 'UTC', "
           "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')))))::text FROM kcache.objects WHERE cluster = ANY(" +
           conn_->Literal(ClusterArray()) + "::text[]) AND resource = " + conn_->Literal(keyspace_);
    if (info_.namespaced && !o_.all_namespaces)
      sql_ += " AND namespace = " + conn_->Literal(o_.namespace_);
    if (!names_.empty()) {
      sql_ += " AND name IN (";
      for (size_t i = 0; i < names_.size(); ++i)
        sql_ += (i ? ", " : "") + conn_->Literal(names_[i]);
      sql_ += ")";
    }
    // Requirements of one value go to the label index (jsonb containment);
    // the selector as a whole is applied to each row below.
    json pinned = json::object();
    for (const Requirement& r : labels_.requirements()) {
      if (auto v = labels_.RequiresExactMatch(r.key())) pinned[r.key()] = *v;
    }
    if (!pinned.empty())
      sql_ += " AND labels @> " + conn_->Literal(kcache::json::Dump(pinned)) + "::jsonb";
    sql_ += " ORDER BY cluster, namespace, name";
    return Status::OK();
  }

  // Every matching row, in order; may run more than once (same snapshot).
  Status Visit(const std::function<Status(const Row&)>& fn) {
    KCACHE_RETURN_IF_ERROR(conn_->Exec("DECLARE kcache_rows NO SCROLL CURSOR FOR " + sql_));
    rows_ = 0;
    for (;;) {
      KCACHE_ASSIGN_OR_RETURN(PgResult page, conn_->Query("FETCH 1000 FROM kcache_rows"));
      if (page.rows() == 0) break;
      for (int i = 0; i < page.rows(); ++i) {
        Row r;
        r.cluster = page.get(i, 0);
        KCACHE_ASSIGN_OR_RETURN(r.object, Object::Parse(std::string(page.get(i, 1))));
        if (!labels_.Matches(r.object->labels()) || !fields_.Matches(*r.object)) continue;
        found_.insert(r.object->name());
        ++rows_;
        KCACHE_RETURN_IF_ERROR(fn(r));
      }
    }
    return conn_->Exec("CLOSE kcache_rows");
  }

  Status PrintTable() {
    const bool wide = format_ == Format::kWide;
    KCACHE_ASSIGN_OR_RETURN(TableSpec spec, TableSpec::For(info_));
    const bool with_namespace = info_.namespaced && o_.all_namespaces;
    std::vector<std::string> header = {"CLUSTER"};
    if (with_namespace) header.push_back("NAMESPACE");
    AppendTableHeader(spec, wide, o_, &header);
    const auto now = o_.now == std::chrono::system_clock::time_point{}
                         ? std::chrono::system_clock::now()
                         : o_.now;
    std::vector<std::string> row;
    auto row_of = [&](const Row& r) -> Status {
      KCACHE_ASSIGN_OR_RETURN(json doc, r.object->Document());
      KCACHE_ASSIGN_OR_RETURN(std::vector<json> cells, spec.Cells(doc, now));
      row = {r.cluster};
      if (with_namespace) row.push_back(r.object->namespace_());
      AppendTableCells(spec, wide, o_, cells, r.object->labels(), &row);
      return Status::OK();
    };
    TabWriter tab(kKubectlMinWidth);
    if (!o_.no_headers) tab.Measure(header);
    if (Status st = Visit([&](const Row& r) -> Status {
          KCACHE_RETURN_IF_ERROR(row_of(r));
          tab.Measure(row);
          return Status::OK();
        });
        !st.ok())
      return st;
    if (rows_ == 0) return Status::OK();
    std::string text;
    if (!o_.no_headers) tab.Write(header, &text);
    if (Status st = Visit([&](const Row& r) -> Status {
          KCACHE_RETURN_IF_ERROR(row_of(r));
          tab.Write(row, &text);
          if (text.size() >= (size_t{1} << 16)) {
            out_ << text;
            text.clear();
          }
          return Status::OK();
        });
        !st.ok())
      return st;
    out_ << text;
    return Status::OK();
  }

  // A List of the objects, each annotated with its cluster.
  Status PrintList() {
    const bool as_json = format_ == Format::kJson;
    std::string text = ListOpening(as_json);
    bool first = true;
    Status visited = Visit([&](const Row& r) -> Status {
      KCACHE_ASSIGN_OR_RETURN(json doc, r.object->Document());
      if (!o_.show_managed_fields && doc["metadata"].is_object())
        doc["metadata"].erase("managedFields");
      doc["metadata"]["annotations"][kClusterAnnotation] = r.cluster;
      AppendListItem(doc, as_json, first, &text);
      first = false;
      if (text.size() >= (size_t{1} << 16)) {
        out_ << text;
        text.clear();
      }
      return Status::OK();
    });
    if (!visited.ok()) return visited;
    AppendListClosing(as_json, !first, &text);
    out_ << text;
    return Status::OK();
  }

  const GetOptions& o_;
  std::ostream& out_;
  std::ostream& err_;
  Format format_ = Format::kTable;
  std::string type_;
  std::vector<std::string> names_;
  LabelSelector labels_;
  FieldSelector fields_;
  std::unique_ptr<PgConn> conn_;
  std::vector<std::string> clusters_;
  std::string keyspace_;
  ResourceInfo info_;
  std::string sql_;
  size_t rows_ = 0;
  std::set<std::string> found_;
};

}  // namespace

StatusOr<int> RunFleetGet(const GetOptions& options, std::ostream& out, std::ostream& err) {
  return FleetGetter(options, out, err).Run();
}

}  // namespace kcache::tool
