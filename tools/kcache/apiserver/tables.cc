// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/tables.h"

#include <chrono>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kcache::serve {

using ojson = nlohmann::ordered_json;

std::string TableVersion(const std::string& accept) {
  size_t pos = 0;
  while (pos < accept.size()) {
    size_t end = accept.find(',', pos);
    if (end == std::string::npos) end = accept.size();
    std::string_view media(accept.data() + pos, end - pos);
    if (media.find("as=Table") != std::string_view::npos &&
        media.find("g=meta.k8s.io") != std::string_view::npos) {
      if (media.find("v=v1beta1") != std::string_view::npos) return "v1beta1";
      if (media.find("v=v1") != std::string_view::npos) return "v1";
    }
    pos = end + 1;
  }
  return "";
}

std::optional<Reply> ParseOutput(const serve::http::Request& req, Output* out) {
  out->table_version = TableVersion(req.Header("Accept"));
  out->drop_managed_fields = AcceptDropsManagedFields(req.Header("Accept"));
  out->include_object = req.Query("includeObject").value_or("Metadata");
  if (out->include_object.empty()) out->include_object = "Metadata";
  if (out->include_object != "Metadata" && out->include_object != "Object" &&
      out->include_object != "None") {
    return Reply{400, "BadRequest",
                 "unrecognized includeObject value: " + Quote(out->include_object), ""};
  }
  return std::nullopt;
}

std::string TableRows::Head(const std::string& metadata, bool columns) const {
  std::string head = R"({"kind":"Table","apiVersion":"meta.k8s.io/)" + out_.table_version +
                     R"(","metadata":)" + metadata;
  if (columns) {
    ojson defs = ojson::array();
    if (spec_) {
      for (size_t i = 0; i < spec_->columns().size(); ++i) {
        const tool::TableColumn& c = spec_->columns()[i];
        defs.push_back({{"name", c.name},
                        {"type", "string"},
                        {"format", i == spec_->name_column() ? "name" : ""},
                        {"description", ""},
                        {"priority", c.priority}});
      }
    }
    head += R"(,"columnDefinitions":)" + defs.dump();
  }
  return head + R"(,"rows":[)";
}

std::string TableRows::Row(const Object& o) const {
  nlohmann::json j = nlohmann::json::parse(o.json(), nullptr, false);
  ojson row = ojson::object();
  ojson cells = ojson::array();
  if (spec_ && j.is_object()) {
    // Ages as of now: a watch's rows are written as its events come.
    StatusOr<std::vector<nlohmann::json>> c = spec_->Cells(j, std::chrono::system_clock::now());
    if (c.ok()) {
      for (nlohmann::json& cell : *c) cells.push_back(ojson::parse(cell.dump()));
    }
  }
  row["cells"] = std::move(cells);
  if (out_.include_object == "Object") {
    row["object"] = ojson::parse(o.json(), nullptr, false);
  } else if (out_.include_object == "Metadata") {
    ojson meta = ojson::parse(o.json(), nullptr, false);
    row["object"] = {{"kind", "PartialObjectMetadata"},
                     {"apiVersion", "meta.k8s.io/" + out_.table_version},
                     {"metadata", meta.is_object() && meta.contains("metadata") ? meta["metadata"]
                                                                                : ojson::object()}};
  } else {
    row["object"] = nullptr;
  }
  return row.dump();
}

void SendObject(serve::http::ResponseWriter& w, const ObjectPtr& o, const tool::TableSpec* spec,
                const Output& out) {
  const serve::http::Headers json = {{"Content-Type", "application/json"}};
  if (!out.tables()) return (void)w.Send(200, json, Shown(o, out.drop_managed_fields)->json());
  TableRows rows(spec, out);
  w.Send(200, json,
         rows.Head(R"({"resourceVersion":")" + std::string(o->resource_version()) + "\"}", true) +
             rows.Row(*o) + "]}");
}

}  // namespace kcache::serve
