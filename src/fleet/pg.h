// SPDX-License-Identifier: Apache-2.0

// A thin layer over libpq: a connection whose every failure is a Status
// naming the statement and carrying the server's message and SQLSTATE, text
// parameters, and COPY FROM STDIN fed row by row.

#ifndef KCACHE_SRC_FLEET_PG_H_
#define KCACHE_SRC_FLEET_PG_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/status_or.h"

struct pg_conn;
struct pg_result;

namespace kcache::fleet {

// A query's rows, text format. Thread-compatible.
class PgResult {
 public:
  explicit PgResult(pg_result* r);
  int rows() const;
  bool null(int row, int col) const;
  std::string_view get(int row, int col) const;

 private:
  std::shared_ptr<pg_result> r_;
};

// A NULL parameter is nullopt.
using PgParams = std::vector<std::optional<std::string>>;

// One connection. Thread-compatible: one thread at a time.
class PgConn {
 public:
  // Unavailable if the server cannot be reached, Unauthenticated if it
  // refuses the credentials; the message names the redacted conninfo.
  static StatusOr<std::unique_ptr<PgConn>> Connect(const std::string& conninfo,
                                                   const std::string& application_name);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs `sql` (one or more statements without parameters).
  Status Exec(std::string_view sql);
  // One statement with $1.. parameters; its rows, if any.
  StatusOr<PgResult> Query(const std::string& sql, const PgParams& params = {});

  // COPY ... FROM STDIN: rows are added with CopyRow (text format) and
  // sent in large writes; CopyEnd finishes the COPY.
  Status CopyBegin(const std::string& sql);
  void CopyRow(const std::vector<std::optional<std::string_view>>& fields);
  Status CopyEnd();

  // Whether the connection is still usable (a failed statement inside a
  // transaction leaves it usable; a lost server does not).
  bool alive() const;
  // 'string' as an SQL literal; "name" as an identifier.
  std::string Literal(std::string_view s) const;

 private:
  explicit PgConn(pg_conn* c) : c_(c) {}
  Status Error(std::string_view what, pg_result* r) const;
  Status Flush();

  pg_conn* c_;
  std::string copy_buf_;
};

// Bytes as bytea's hex text ("\x0a1b").
std::string ByteaHex(std::string_view bytes);

}  // namespace kcache::fleet

#endif  // KCACHE_SRC_FLEET_PG_H_
