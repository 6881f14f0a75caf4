#include "tools/kcache/get.h"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "kcache/field_selector.h"
#include "kcache/label_selector.h"
#include "kcache/lister.h"
#include "tools/kcache/printers.h"
#include "tools/kcache/source.h"

namespace kcache::tool {
namespace {

using Row = std::vector<std::string>;

// Pod columns: READY, STATUS and RESTARTS as kubectl derives them.
void PodColumns(const nlohmann::json& pod, Row* row, Row* wide) {
  const nlohmann::json& status = pod.value("status", nlohmann::json::object());
  size_t containers =
      pod.contains("spec") ? pod["spec"].value("containers", nlohmann::json::array()).size() : 0;
  size_t ready = 0;
  int64_t restarts = 0;
  std::string reason = status.value("phase", "");
  if (status.contains("reason")) reason = status["reason"].get<std::string>();
  for (const nlohmann::json& c : status.value("containerStatuses", nlohmann::json::array())) {
    if (c.value("ready", false)) ++ready;
    restarts += c.value("restartCount", int64_t{0});
    if (c.contains("state") && c["state"].contains("waiting") &&
        c["state"]["waiting"].contains("reason")) {
      reason = c["state"]["waiting"]["reason"].get<std::string>();
    }
  }
  if (pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp"))
    reason = "Terminating";
  row->push_back(std::to_string(ready) + "/" + std::to_string(containers));
  row->push_back(reason);
  row->push_back(std::to_string(restarts));
  wide->push_back(status.value("podIP", "<none>"));
  wide->push_back(pod.contains("spec") ? pod["spec"].value("nodeName", "<none>") : "<none>");
}

Status PrintTable(const std::vector<ObjectPtr>& objects, bool show_ns, bool wide,
                  std::ostream& out) {
  const std::string kind = objects.front()->kind();
  auto now = std::chrono::system_clock::now();
  std::vector<Row> rows;
  Row header;
  if (show_ns) header.push_back("NAMESPACE");
  header.push_back("NAME");
  if (kind == "Pod") header.insert(header.end(), {"READY", "STATUS", "RESTARTS"});
  if (kind == "ConfigMap" || kind == "Secret") header.push_back("DATA");
  header.push_back("AGE");
  if (wide && kind == "Pod") header.insert(header.end(), {"IP", "NODE"});
  if (wide && kind != "Pod") header.push_back("LABELS");
  rows.push_back(std::move(header));
  for (const ObjectPtr& o : objects) {
    Row row, extra;
    if (show_ns) row.push_back(o->namespace_());
    row.push_back(o->name());
    if (kind == "Pod" || kind == "ConfigMap" || kind == "Secret") {
      KCACHE_ASSIGN_OR_RETURN(nlohmann::json doc, o->Document());
      if (kind == "Pod") {
        PodColumns(doc, &row, &extra);
      } else {
        row.push_back(std::to_string(doc.value("data", nlohmann::json::object()).size() +
                                     doc.value("binaryData", nlohmann::json::object()).size()));
      }
    }
    if (wide && kind != "Pod") {
      std::string labels;
      for (const auto& [k, v] : o->meta().labels)
        labels += (labels.empty() ? "" : ",") + k + "=" + v;
      extra.push_back(labels.empty() ? "<none>" : labels);
    }
    row.push_back(Age(o->meta().creation_timestamp, now));
    if (wide) row.insert(row.end(), extra.begin(), extra.end());
    rows.push_back(std::move(row));
  }
  tool::PrintTable(rows, out);
  return Status::OK();
}

// Sorts by the field at `path`: numbers by value, strings bytewise, objects
// without the field first, as kubectl --sort-by does.
Status SortBy(const std::string& path, std::vector<ObjectPtr>* objects) {
  KCACHE_ASSIGN_OR_RETURN(nlohmann::json::json_pointer ptr, ParseFieldPath(path));
  std::vector<std::pair<nlohmann::json, ObjectPtr>> keyed;
  for (ObjectPtr& o : *objects) {
    KCACHE_ASSIGN_OR_RETURN(nlohmann::json doc, o->Document());
    nlohmann::json v = doc.contains(ptr) ? doc[ptr] : nlohmann::json();
    if (v.is_structured())
      return Status::InvalidArgument("--sort-by " + path +
                                     " names an object or a list, not a value");
    keyed.emplace_back(std::move(v), std::move(o));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first.is_null() || b.first.is_null()) return a.first.is_null() && !b.first.is_null();
    if (a.first.is_number() && b.first.is_number())
      return a.first.template get<double>() < b.first.template get<double>();
    return a.first.dump() < b.first.dump();
  });
  objects->clear();
  for (auto& [v, o] : keyed) objects->push_back(std::move(o));
  return Status::OK();
}

}  // namespace

Status RunGet(const GetOptions& options, std::ostream& out) {
  static const char* kFormats[] = {"", "wide", "json", "yaml", "name"};
  if (std::find(std::begin(kFormats), std::end(kFormats), options.output) == std::end(kFormats)) {
    return Status::InvalidArgument("unable to match a printer suitable for the output format \"" +
                                   options.output + "\", allowed formats are: json,name,wide,yaml");
  }
  if (!options.name.empty() && !options.index.empty())
    return Status::InvalidArgument("--index lists objects: give no NAME");
  KCACHE_ASSIGN_OR_RETURN(LabelSelector labels, LabelSelector::Parse(options.label_selector));
  KCACHE_ASSIGN_OR_RETURN(FieldSelector fields, FieldSelector::Parse(options.field_selector));
  if (!options.sort_by.empty()) KCACHE_RETURN_IF_ERROR(ParseFieldPath(options.sort_by).status());
  std::string index_name, index_value;
  if (!options.index.empty()) {
    size_t eq = options.index.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--index wants INDEX=VALUE, got \"" + options.index + "\"");
    index_name = options.index.substr(0, eq);
    index_value = options.index.substr(eq + 1);
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source,
                          Source::Open(options.cache_dir, options.snapshot));
  KCACHE_ASSIGN_OR_RETURN(std::string ks, source->Resolve(options.resource));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, source->Keyspace(ks));
  const bool namespaced = source->Namespaced(ks);
  const std::string ns = options.all_namespaces || !namespaced ? "" : options.namespace_;

  std::vector<ObjectPtr> objects;
  if (!options.name.empty()) {
    std::string key = ns.empty() ? options.name : ns + "/" + options.name;
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr o, indexer->GetByKey(key));
    if (!o) return Status::NotFound(ks + " \"" + options.name + "\" not found");
    objects.push_back(std::move(o));
  } else if (!index_name.empty()) {
    KCACHE_ASSIGN_OR_RETURN(std::vector<ObjectPtr> found,
                            indexer->ByIndex(index_name, index_value));
    for (ObjectPtr& o : found) {
      if ((ns.empty() || o->namespace_() == ns) && labels.Matches(o->meta().labels) &&
          fields.Matches(*o)) {
        objects.push_back(std::move(o));
      }
    }
  } else {
    KCACHE_RETURN_IF_ERROR(ListAllByNamespace(*indexer, ns, labels, [&](const ObjectPtr& o) {
      if (fields.Matches(*o)) objects.push_back(o);
      return true;
    }));
  }
  if (!options.sort_by.empty()) KCACHE_RETURN_IF_ERROR(SortBy(options.sort_by, &objects));

  if (options.output == "name") {
    for (const ObjectPtr& o : objects) out << KindPath(*o) << "/" << o->name() << "\n";
  } else if (options.output == "json" || options.output == "yaml") {
    nlohmann::json doc;
    if (!options.name.empty()) {
      KCACHE_ASSIGN_OR_RETURN(doc, objects[0]->Document());
    } else {
      doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}};
      doc["items"] = nlohmann::json::array();
      for (const ObjectPtr& o : objects) {
        KCACHE_ASSIGN_OR_RETURN(nlohmann::json item, o->Document());
        doc["items"].push_back(std::move(item));
      }
    }
    if (options.output == "json") {
      out << doc.dump(4) << "\n";
    } else {
      PrintYaml(doc, out);
    }
  } else if (objects.empty()) {
    out << (ns.empty() ? "No resources found\n" : "No resources found in " + ns + " namespace.\n");
  } else {
    KCACHE_RETURN_IF_ERROR(
        PrintTable(objects, ns.empty() && namespaced, options.output == "wide", out));
  }
  return Status::OK();
}

}  // namespace kcache::tool
