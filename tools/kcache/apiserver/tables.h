// SPDX-License-Identifier: Apache-2.0

// Server-side tables (meta.k8s.io Table) for both servers of kcache serve:
// what a request asks for (its Accept header and includeObject), and the
// rows kubectl's printers give each object (tools/kcache/kubectl/tables.h,
// the columns of kube-apiserver's own printers).

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_TABLES_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_TABLES_H_

#include <optional>
#include <string>

#include "kcache/object.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/api_serve.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/kubectl/tables.h"

namespace kcache::serve {

// The Table version an Accept header asks for ("" for none): kubectl asks
// "application/json;as=Table;v=v1;g=meta.k8s.io, ...".
std::string TableVersion(const std::string& accept);

// How a request wants objects written: as themselves, or as Table rows.
struct Output {
  std::string table_version;         // "" for objects
  std::string include_object;        // Table rows: "Metadata", "Object" or "None"
  bool drop_managed_fields = false;  // objects without metadata.managedFields
  bool tables() const { return !table_version.empty(); }
};

// Reads `req`'s Accept header and includeObject; a 400 for an includeObject
// kube-apiserver does not know.
std::optional<Reply> ParseOutput(const serve::http::Request& req, Output* out);

// Table rows of one resource, as one request asks for them. `spec` null:
// rows without cells (a resource whose printer is unknown).
//
// Thread-safety: one request uses it at a time.
class TableRows : public TableWriter {
 public:
  TableRows(const tool::TableSpec* spec, const Output& out) : spec_(spec), out_(out) {}

  std::string Head(const std::string& metadata, bool columns) const override;
  std::string Row(const Object& o) const override;

 private:
  const tool::TableSpec* spec_;
  const Output& out_;
};

// A GET's answer: `o` itself, or its one-row Table.
void SendObject(serve::http::ResponseWriter& w, const ObjectPtr& o, const tool::TableSpec* spec,
                const Output& out);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_TABLES_H_
