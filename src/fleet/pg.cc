// SPDX-License-Identifier: Apache-2.0

#include "fleet/pg.h"

#include <libpq-fe.h>

#include <cstring>
#include <regex>

#include "kcache/fleet.h"

namespace kcache {

std::string RedactConninfo(const std::string& conninfo) {
  std::string out = conninfo;
  // postgresql://user:secret@host/db
  static const std::regex uri_password(R"(^(postgres(?:ql)?://[^:/@?#]*):[^@/?#]*@)");
  out = std::regex_replace(out, uri_password, "$1:***@");
  // ...?password=secret&... in a URI
  static const std::regex query_password(R"(([?&]password=)[^&#]*)");
  out = std::regex_replace(out, query_password, "$1***");
  // password=secret or password = 'a secret' in key=value form
  static const std::regex kv_password(R"((\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*))");
  if (out.find("://") == std::string::npos) out = std::regex_replace(out, kv_password, "$1***");
  return out;
}

namespace fleet {

PgResult::PgResult(pg_result* r) : r_(r, PQclear) {}
int PgResult::rows() const { return PQntuples(r_.get()); }
bool PgResult::null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
std::string_view PgResult::get(int row, int col) const {
  return {PQgetvalue(r_.get(), row, col), static_cast<size_t>(PQgetlength(r_.get(), row, col))};
}

namespace {

std::string Trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  // libpq's multi-line messages read better on one line.
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& conninfo,
                                                  const std::string& application_name) {
  // A dead peer is noticed within seconds, not at the kernel's two hours:
  // a successor feed waits for the lock of a predecessor's session.
  const char* keys[] = {
      "dbname",          "fallback_application_name", "connect_timeout",  "keepalives",
      "keepalives_idle", "keepalives_interval",       "keepalives_count", nullptr};
  const char* values[] = {conninfo.c_str(), application_name.c_str(), "10", "1", "5", "2", "3",
                          nullptr};
  pg_conn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return Status::Internal("postgres: out of memory connecting");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string message = Trimmed(PQerrorMessage(c));
    PQfinish(c);
    const std::string text =
        "postgres: cannot connect to " + RedactConninfo(conninfo) + ": " + message;
    if (message.find("authentication failed") != std::string::npos ||
        message.find("no password supplied") != std::string::npos) {
      return Status::Unauthenticated(text);
    }
    if (message.find("does not exist") != std::string::npos) return Status::NotFound(text);
    return Status::Unavailable(text);
  }
  // Rows are written as text; the client's encoding must be the objects'.
  PQsetClientEncoding(c, "UTF8");
  auto conn = std::unique_ptr<PgConn>(new PgConn(c));
  KCACHE_RETURN_IF_ERROR(conn->Exec("SET client_min_messages = warning"));
  return conn;
}

PgConn::~PgConn() { PQfinish(c_); }

bool PgConn::alive() const { return PQstatus(c_) == CONNECTION_OK; }

Status PgConn::Error(std::string_view what, pg_result* r) const {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string sqlstate = state ? state : "";
  std::string message = Trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(c_));
  if (message.empty()) message = Trimmed(PQerrorMessage(c_));
  std::string text = "postgres: " + std::string(what) + ": " + message;
  if (!sqlstate.empty()) text += " (SQLSTATE " + sqlstate + ")";
  if (!alive() || sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0) {
    return Status::Unavailable(text);
  }
  if (sqlstate == "40001" || sqlstate == "40P01") return Status::Aborted(text);
  if (sqlstate == "23505") return Status::AlreadyExists(text);
  if (sqlstate.rfind("28", 0) == 0 || sqlstate == "42501") return Status::PermissionDenied(text);
  return Status::FailedPrecondition(text);
}

namespace {

// The statement's first words, to name it in errors.
std::string What(std::string_view sql) {
  size_t start = sql.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) return "an empty statement";
  sql.remove_prefix(start);
  std::string s(sql.substr(0, 60));
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return s.size() < sql.size() ? s + "..." : s;
}

}  // namespace

Status PgConn::Exec(std::string_view sql) {
  std::string text(sql);
  pg_result* r = PQexec(c_, text.c_str());
  PgResult owned(r);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error(What(sql), r);
  return Status::OK();
}

StatusOr<PgResult> PgConn::Query(const std::string& sql, const PgParams& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::optional<std::string>& p : params) values.push_back(p ? p->c_str() : nullptr);
  pg_result* r = PQexecParams(c_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                              values.data(), nullptr, nullptr, 0);
  PgResult owned(r);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error(What(sql), r);
  return owned;
}

Status PgConn::CopyBegin(const std::string& sql) {
  copy_buf_.clear();
  pg_result* r = PQexec(c_, sql.c_str());
  PgResult owned(r);
  if (!r || PQresultStatus(r) != PGRES_COPY_IN) return Error(What(sql), r);
  return Status::OK();
}

void PgConn::CopyRow(const std::vector<std::optional<std::string_view>>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) copy_buf_ += '\t';
    if (!fields[i]) {
      copy_buf_ += "\\N";
      continue;
    }
    for (char c : *fields[i]) {
      switch (c) {
        case '\\':
          copy_buf_ += "\\\\";
          break;
        case '\t':
          copy_buf_ += "\\t";
          break;
        case '\n':
          copy_buf_ += "\\n";
          break;
        case '\r':
          copy_buf_ += "\\r";
          break;
        default:
          copy_buf_ += c;
      }
    }
  }
  copy_buf_ += '\n';
  if (copy_buf_.size() >= (size_t{1} << 20)) {
    // An error is kept by libpq and reported by CopyEnd.
    Flush().IgnoreError();
  }
}

Status PgConn::Flush() {
  if (copy_buf_.empty()) return Status::OK();
  int rc = PQputCopyData(c_, copy_buf_.data(), static_cast<int>(copy_buf_.size()));
  copy_buf_.clear();
  if (rc != 1) return Error("COPY", nullptr);
  return Status::OK();
}

Status PgConn::CopyEnd() {
  Status flushed = Flush();
  if (PQputCopyEnd(c_, flushed.ok() ? nullptr : "kcache: sending rows failed") != 1) {
    return Error("COPY", nullptr);
  }
  Status st;
  while (pg_result* r = PQgetResult(c_)) {
    PgResult owned(r);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && st.ok()) st = Error("COPY", r);
  }
  if (!flushed.ok()) return flushed;
  return st;
}

std::string PgConn::Literal(std::string_view s) const {
  char* q = PQescapeLiteral(c_, s.data(), s.size());
  std::string out = q ? q : "''";
  PQfreemem(q);
  return out;
}

std::string ByteaHex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace fleet
}  // namespace kcache
