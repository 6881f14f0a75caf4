// SPDX-License-Identifier: Apache-2.0

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>

#include "core/json_text.h"
#include "core/resource_version.h"
#include "crypto/aead.h"
#include "fleet/pg.h"
#include "fleet/schema.h"
#include "kcache/cache.h"
#include "kcache/fleet.h"
#include "persist/encoding.h"

namespace kcache {
namespace {

using fleet::PgConn;
using fleet::PgParams;
using fleet::PgResult;

using Row = std::vector<std::optional<std::string_view>>;

// Where a row's columns come from. `sealed` holds the object sealed under
// the key-encryption key, for sealed keyspaces (object then null).
struct RowText {
  std::string labels, sealed;
};

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool ValidClusterName(const std::string& name) {
  return !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), NameChar);
}

class FeedImpl final : public FleetFeed {
 public:
  FeedImpl(FleetFeedOptions o, std::shared_ptr<Cache> view, std::optional<crypto::Key> kek)
      : o_(std::move(o)), view_(std::move(view)), kek_(std::move(kek)) {}

  ~FeedImpl() override { Stop().IgnoreError(); }

  void Begin() {
    thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
  }

  Status Stop() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      // Under mu_, so that a Sleep between its check and its wait is woken.
      { std::lock_guard l(mu_); }
      cv_.notify_all();
      thread_.join();
    }
    std::lock_guard l(mu_);
    return fatal_;
  }

  Status WaitCaughtUp(std::chrono::milliseconds timeout) override {
    std::unique_lock l(mu_);
    // A round that began before this call may have read the cache before
    // the caller's commits: wait for one that begins after it.
    const uint64_t want = rounds_begun_ + 1;
    const bool done =
        cv_.wait_for(l, timeout, [&] { return caught_up_round_ >= want || stopped_; });
    if (!fatal_.ok()) return fatal_;
    if (caught_up_round_ >= want) return Status::OK();
    if (stopped_) return Status::Cancelled("the fleet feed was stopped");
    (void)done;
    return Status::DeadlineExceeded(
        "the fleet feed did not catch up with the cache within " + std::to_string(timeout.count()) +
        " ms" + (last_error_.empty() ? "" : " (last error: " + last_error_ + ")"));
  }

  FleetFeedStats Stats() const override {
    std::lock_guard l(mu_);
    return stats_;
  }

 private:
  void Log(const std::string& line) const {
    if (o_.log) o_.log("postgres: " + line);
  }

  // Sleeps up to `d`; false once a stop is requested.
  bool Sleep(std::stop_token& stop, std::chrono::milliseconds d) {
    std::unique_lock l(mu_);
    cv_.wait_for(l, d, [&] { return stop.stop_requested(); });
    return !stop.stop_requested();
  }

  void Run(std::stop_token stop) {
    std::chrono::milliseconds backoff = o_.retry_initial;
    bool failing = false;
    std::string last_message;
    while (!stop.stop_requested()) {
      {
        std::lock_guard l(mu_);
        ++rounds_begun_;
      }
      const uint64_t round = rounds_begun_;
      bool caught_up = false;
      Status st = Round(stop, &caught_up);
      if (!refusal_.ok()) {
        Log("stopping: " + std::string(refusal_.message()));
        conn_.reset();
        // Before the waiters learn of it: whoever waits sees its effects.
        if (o_.on_fatal) o_.on_fatal(refusal_);
        {
          std::lock_guard l(mu_);
          fatal_ = refusal_;
          stopped_ = true;
        }
        cv_.notify_all();
        return;
      }
      if (stop.stop_requested()) break;
      if (!st.ok()) {
        {
          std::lock_guard l(mu_);
          ++stats_.errors;
          stats_.connected = conn_ != nullptr && conn_->alive();
          last_error_ = std::string(st.message());
        }
        const std::string message(st.message());
        if (!failing || message != last_message) {
          Log(message + ": retrying; the cache goes on, and the feed catches up from its journal");
        }
        failing = true;
        last_message = message;
        if (!conn_ || !conn_->alive() || st.code() == StatusCode::kUnavailable) conn_.reset();
        if (!Sleep(stop, backoff)) break;
        backoff = std::min(backoff * 2, o_.retry_max);
        continue;
      }
      if (failing) Log("the database is back: feeding again");
      failing = false;
      backoff = o_.retry_initial;
      {
        std::lock_guard l(mu_);
        stats_.connected = true;
        if (caught_up) caught_up_round_ = round;
      }
      if (caught_up) {
        cv_.notify_all();
        if (!Sleep(stop, o_.poll)) break;
      }
    }
    conn_.reset();
    std::lock_guard l(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

  // One look at the cache: every keyspace fed up to the view's resume
  // point, or some way there (*caught_up false).
  Status Round(std::stop_token& stop, bool* caught_up) {
    if (!conn_) KCACHE_RETURN_IF_ERROR(Connect(stop));
    KCACHE_RETURN_IF_ERROR(view_->Refresh());
    KCACHE_ASSIGN_OR_RETURN(std::optional<ClusterInfo> info, view_->GetClusterInfo());
    if (info && !info->uid.empty() && info->uid != registered_uid_) {
      KCACHE_RETURN_IF_ERROR(Register());
    }
    KCACHE_ASSIGN_OR_RETURN(EncryptionStatus enc, GetEncryptionStatus(*view_));
    sealed_ = std::set<std::string>(enc.keyspaces.begin(), enc.keyspaces.end());
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keyspaces, view_->ListKeyspaces());
    *caught_up = true;
    // A keyspace that fails does not hold the others back: its error is
    // the round's, after the others had their turn.
    Status first_error;
    for (const std::string& ks : keyspaces) {
      if (stop.stop_requested()) return Status::OK();
      if (ks == "secrets" && !o_.include_secrets) continue;
      if (sealed_.count(ks) && !kek_) {
        if (quiet_.insert(ks).second) {
          Log(ks + ": sealed, and the feed was given no key-encryption key: not fed");
        }
        continue;
      }
      bool done = false;
      Status st = FeedKeyspace(ks, &done).WithContext(ks);
      if (!st.ok()) {
        if (!conn_->alive()) return st;
        if (first_error.ok()) first_error = st;
        done = false;
      }
      *caught_up = *caught_up && done;
    }
    if (!first_error.ok()) return first_error;
    return TrimChanges();
  }

  Status Connect(std::stop_token& stop) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string app =
        "kcache feed " + o_.cluster + " " + host + " pid " + std::to_string(getpid());
    KCACHE_ASSIGN_OR_RETURN(conn_, PgConn::Connect(o_.conninfo, app));
    locked_ = false;
    registered_uid_.clear();
    resources_written_.clear();
    Status st = fleet::UpgradeSchema(*conn_, kFleetSchemaVersion);
    if (st.code() == StatusCode::kUnimplemented) return Refuse(st);
    KCACHE_RETURN_IF_ERROR(st);
    KCACHE_RETURN_IF_ERROR(conn_->Exec(
        "CREATE TEMP TABLE IF NOT EXISTS kcache_stage (namespace text COLLATE \"C\", name text "
        "COLLATE \"C\", uid text, resource_version text, labels jsonb, object jsonb, sealed bytea, "
        "created_at timestamptz, deleted boolean) ON COMMIT DELETE ROWS;"
        "CREATE TEMP TABLE IF NOT EXISTS kcache_keys (namespace text COLLATE \"C\", name text "
        "COLLATE \"C\", uid text, resource_version text) ON COMMIT DELETE ROWS"));
    KCACHE_RETURN_IF_ERROR(Register());
    KCACHE_RETURN_IF_ERROR(Lock(stop));
    KCACHE_ASSIGN_OR_RETURN(
        PgResult fed,
        conn_->Query("SELECT resource, resource_version FROM kcache.feed_state WHERE cluster = $1",
                     {o_.cluster}));
    fed_.clear();
    for (int i = 0; i < fed.rows(); ++i) fed_[std::string(fed.get(i, 0))] = fed.get(i, 1);
    return Status::OK();
  }

  // Records the cluster under its name, or refuses another cluster's cache
  // under a name that is taken (kube-system uids differ).
  Status Register() {
    KCACHE_ASSIGN_OR_RETURN(std::optional<ClusterInfo> info, view_->GetClusterInfo());
    const ClusterInfo cluster = info.value_or(ClusterInfo{});
    KCACHE_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    Status st = [&]() -> Status {
      KCACHE_RETURN_IF_ERROR(conn_->Exec("SELECT pg_advisory_xact_lock(" +
                                         std::to_string(fleet::kLockClass) + ", 0)"));
      KCACHE_ASSIGN_OR_RETURN(
          PgResult held, conn_->Query("SELECT id, uid, server FROM kcache.clusters WHERE name = $1",
                                      {o_.cluster}));
      if (held.rows() == 0) {
        KCACHE_ASSIGN_OR_RETURN(
            PgResult added,
            conn_->Query("INSERT INTO kcache.clusters (name, uid, server, "
                         "version) VALUES ($1, $2, $3, $4) RETURNING id",
                         {o_.cluster, cluster.uid, cluster.server, cluster.version}));
        cluster_id_ = std::stoi(std::string(added.get(0, 0)));
        Log("cluster " + o_.cluster + " registered" +
            (cluster.uid.empty() ? "" : " (kube-system uid " + cluster.uid + ")"));
      } else {
        cluster_id_ = std::stoi(std::string(held.get(0, 0)));
        const std::string uid(held.get(0, 1));
        if (!uid.empty() && !cluster.uid.empty() && uid != cluster.uid) {
          return Refuse(Status::FailedPrecondition("the database's cluster \"" + o_.cluster +
                                                   "\" is the cluster whose kube-system "
                                                   "namespace has uid " +
                                                   uid + " (server " + std::string(held.get(0, 2)) +
                                                   "); this cache holds the one with uid " +
                                                   cluster.uid + " (server " + cluster.server +
                                                   "): give it another --cluster name"));
        }
        KCACHE_RETURN_IF_ERROR(
            conn_
                ->Query("UPDATE kcache.clusters SET uid = CASE WHEN $2 = '' THEN uid ELSE $2 END, "
                        "server = $3, version = $4, fed_at = now() WHERE name = $1",
                        {o_.cluster, cluster.uid, cluster.server, cluster.version})
                .status());
      }
      KCACHE_ASSIGN_OR_RETURN(int version, fleet::SchemaVersion(*conn_));
      return fleet::CreatePartitions(*conn_, version, cluster_id_, o_.cluster);
    }();
    if (!st.ok()) {
      if (conn_->alive()) conn_->Exec("ROLLBACK").IgnoreError();
      return st;
    }
    KCACHE_RETURN_IF_ERROR(conn_->Exec("COMMIT"));
    registered_uid_ = cluster.uid;
    return Status::OK();
  }

  // Takes the session lock that makes this the cluster's one feed. A
  // predecessor killed a moment ago holds it until PostgreSQL notices.
  Status Lock(std::stop_token& stop) {
    const std::string key = std::to_string(fleet::kLockClass) + ", " + std::to_string(cluster_id_);
    const auto deadline = std::chrono::steady_clock::now() + o_.lock_wait;
    for (;;) {
      KCACHE_ASSIGN_OR_RETURN(PgResult got,
                              conn_->Query("SELECT pg_try_advisory_lock(" + key + ")"));
      if (got.get(0, 0) == "t") {
        locked_ = true;
        return Status::OK();
      }
      if (std::chrono::steady_clock::now() >= deadline || stop.stop_requested()) break;
      if (!Sleep(stop, std::chrono::milliseconds(250))) return Status::Cancelled("stopping");
    }
    std::string holder = "another session";
    StatusOr<PgResult> who = conn_->Query(
        "SELECT a.application_name, a.client_addr, a.backend_start FROM pg_locks l JOIN "
        "pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND "
        "l.classid = " +
        std::to_string(fleet::kLockClass) + " AND l.objid = " + std::to_string(cluster_id_) +
        " LIMIT 1");
    if (who.ok() && who->rows() > 0) {
      holder =
          "\"" + std::string(who->get(0, 0)) + "\"" +
          (who->null(0, 1) ? std::string(" (local)") : " from " + std::string(who->get(0, 1))) +
          ", connected since " + std::string(who->get(0, 2));
    }
    return Refuse(Status::Busy("cluster \"" + o_.cluster +
                               "\" is being fed by another kcache: " + holder +
                               ": stop it, or feed this cache under another --cluster name"));
  }

  // A failure that retrying cannot end: the feed stops with it.
  Status Refuse(Status st) {
    refusal_ = st;
    return st;
  }

  Status WriteResourceInfo(const std::string& ks) {
    KCACHE_ASSIGN_OR_RETURN(std::optional<ResourceInfo> info, view_->GetResourceInfo(ks));
    if (!info) return Status::OK();
    const std::string text = json::Dump(storage::ResourceInfoToJson(*info));
    auto it = resources_written_.find(ks);
    if (it != resources_written_.end() && it->second == text) return Status::OK();
    KCACHE_RETURN_IF_ERROR(
        conn_
            ->Query("INSERT INTO kcache.resources (cluster, resource, info) VALUES ($1, $2, $3) "
                    "ON CONFLICT (cluster, resource) DO UPDATE SET info = EXCLUDED.info",
                    {o_.cluster, ks, text})
            .status());
    resources_written_[ks] = text;
    return Status::OK();
  }

  StatusOr<std::shared_ptr<Indexer>> Keyspace(const std::string& ks) {
    auto it = open_.find(ks);
    if (it != open_.end()) return it->second;
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, view_->OpenKeyspace(ks));
    open_[ks] = indexer;
    return indexer;
  }

  Status FeedKeyspace(const std::string& ks, bool* done) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, Keyspace(ks));
    const std::string rv = indexer->LastSyncResourceVersion();
    // No resume point: never synced, or a relist under way. Nothing
    // consistent to feed until it ends.
    *done = true;
    if (rv.empty()) return Status::OK();
    auto fed = fed_.find(ks);
    if (fed != fed_.end() && fed->second == rv) return Status::OK();
    // Looked at only when there is something to feed, not at every poll.
    KCACHE_RETURN_IF_ERROR(WriteResourceInfo(ks));
    if (fed == fed_.end()) return Copy(ks, *indexer, rv, "");
    const std::optional<int> order = CompareResourceVersions(fed->second, rv);
    if (order && *order > 0) {
      return Copy(ks, *indexer, rv,
                  "the database is at resourceVersion " + fed->second + ", past the cache's " + rv +
                      " (a cache restored from an older copy?)");
    }
    // A few transactions per keyspace a round, so that one busy keyspace
    // does not hold the others back.
    for (int i = 0; i < 8; ++i) {
      StatusOr<JournalRead> read = view_->ReadJournal(ks, fed->second, o_.batch);
      if (!read.ok()) {
        if (read.status().code() != StatusCode::kExpired &&
            read.status().code() != StatusCode::kInvalidArgument) {
          return read.status();
        }
        std::string why = "its journal no longer reaches resourceVersion " + fed->second;
        if (sealed_.count(ks)) why = "a sealed keyspace keeps no journal";
        return Copy(ks, *indexer, rv, why);
      }
      KCACHE_RETURN_IF_ERROR(Apply(ks, *read));
      if (fed->second == rv) return Status::OK();
      if (!read->more) break;
    }
    *done = fed->second == rv;
    return Status::OK();
  }

  // The columns of one object's row.
  StatusOr<Row> ObjectRow(const std::string& ks, const Object& o, RowText* text) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : o.labels()) labels[k] = v;
    text->labels = json::Dump(labels);
    std::optional<std::string_view> object(o.json());
    std::optional<std::string_view> sealed;
    if (sealed_.count(ks)) {
      if (!kek_) {
        return Status::FailedPrecondition(
            "the keyspace is sealed: feeding it needs the cache's key-encryption key");
      }
      const std::string context = SealContext(ks, o.namespace_(), o.name());
      KCACHE_ASSIGN_OR_RETURN(std::string s, crypto::Seal(*kek_, 0, o.json(), context));
      text->sealed = fleet::ByteaHex(s);
      object.reset();
      sealed = text->sealed;
    }
    const std::string& created = o.meta().creation_timestamp;
    return Row{
        o.namespace_(), o.name(),
        o.meta().uid,   o.resource_version(),
        text->labels,   object,
        sealed,         created.empty() ? std::nullopt : std::optional<std::string_view>(created)};
  }

  std::string SealContext(const std::string& ks, const std::string& ns, const std::string& name) {
    std::string c = "kcache fleet";
    for (const std::string* part : {&o_.cluster, &ks, &ns, &name}) {
      c += '\0';
      c += *part;
    }
    return c;
  }

  // Moves the staged rows into kcache.objects: deletions, then upserts.
  Status MergeStage(const std::string& ks) {
    KCACHE_RETURN_IF_ERROR(
        conn_
            ->Query("DELETE FROM kcache.objects o USING kcache_stage s WHERE o.cluster = $1 AND "
                    "o.resource = $2 AND o.namespace = s.namespace AND o.name = s.name AND "
                    "s.deleted",
                    {o_.cluster, ks})
            .status());
    KCACHE_RETURN_IF_ERROR(
        conn_
            ->Query("INSERT INTO kcache.objects (cluster, resource, namespace, name, uid, "
                    "resource_version, labels, object, sealed, created_at, updated_at) SELECT $1, "
                    "$2, namespace, name, uid, resource_version, labels, object, sealed, "
                    "created_at, clock_timestamp() FROM kcache_stage WHERE NOT deleted ON "
                    "CONFLICT (cluster, resource, namespace, name) DO UPDATE SET uid = "
                    "EXCLUDED.uid, resource_version = EXCLUDED.resource_version, labels = "
                    "EXCLUDED.labels, object = EXCLUDED.object, sealed = EXCLUDED.sealed, "
                    "created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at",
                    {o_.cluster, ks})
            .status());
    return conn_->Exec("DELETE FROM kcache_stage");
  }

  Status SetFed(const std::string& ks, const std::string& rv) {
    return conn_
        ->Query(
            "INSERT INTO kcache.feed_state (cluster, resource, resource_version) VALUES ($1, "
            "$2, $3) ON CONFLICT (cluster, resource) DO UPDATE SET resource_version = "
            "EXCLUDED.resource_version, fed_at = now()",
            {o_.cluster, ks, rv})
        .status();
  }

  // Runs `body` in a transaction; rolled back on any error.
  Status Transaction(const std::function<Status()>& body) {
    KCACHE_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    Status st = body();
    if (st.ok()) st = conn_->Exec("COMMIT");
    if (!st.ok() && conn_->alive()) conn_->Exec("ROLLBACK").IgnoreError();
    return st;
  }

  // One journal read, and the resume point after it, in one transaction.
  Status Apply(const std::string& ks, const JournalRead& read) {
    static const char* kTypes[] = {"ADDED", "MODIFIED", "DELETED"};
    // The last change of each key decides its row.
    std::map<std::string, size_t> last;
    for (size_t i = 0; i < read.events.size(); ++i) {
      // The journal keeps every change's object (a deletion's last state).
      if (!read.events[i].object) {
        return Status::Corruption("journal change " + read.events[i].resource_version + " of " +
                                  read.events[i].key + " has no object");
      }
      last[read.events[i].key] = i;
    }
    Status done = Transaction([&]() -> Status {
      if (!read.events.empty()) {
        KCACHE_RETURN_IF_ERROR(conn_->CopyBegin(
            "COPY kcache_stage (namespace, name, uid, resource_version, labels, object, sealed, "
            "created_at, deleted) FROM STDIN"));
        for (const auto& [key, i] : last) {
          const JournalEvent& e = read.events[i];
          RowText text;
          KCACHE_ASSIGN_OR_RETURN(Row row, ObjectRow(ks, *e.object, &text));
          row.push_back(e.type == JournalEvent::Type::kDeleted ? "t" : "f");
          conn_->CopyRow(row);
        }
        KCACHE_RETURN_IF_ERROR(conn_->CopyEnd());
        KCACHE_RETURN_IF_ERROR(MergeStage(ks));
        KCACHE_RETURN_IF_ERROR(conn_->CopyBegin(
            "COPY kcache.changes (cluster, resource, resource_version, namespace, name, type) "
            "FROM STDIN"));
        for (const JournalEvent& e : read.events) {
          conn_->CopyRow({o_.cluster, ks, e.resource_version, e.object->namespace_(),
                          e.object->name(), kTypes[static_cast<int>(e.type)]});
        }
        KCACHE_RETURN_IF_ERROR(conn_->CopyEnd());
      }
      return SetFed(ks, read.resource_version);
    });
    if (!done.ok()) return done;
    fed_[ks] = read.resource_version;
    std::lock_guard l(mu_);
    ++stats_.transactions;
    stats_.changes += read.events.size();
    return Status::OK();
  }

  // Makes the keyspace's rows the view's objects at `rv`, in one
  // transaction: straight in by COPY if it has none, else by comparing
  // (namespace, name, uid, resourceVersion) and writing only what differs.
  Status Copy(const std::string& ks, Indexer& indexer, const std::string& rv,
              const std::string& why) {
    uint64_t written = 0, deleted = 0, unchanged = 0;
    Status done = Transaction([&]() -> Status {
      KCACHE_ASSIGN_OR_RETURN(
          PgResult any, conn_->Query("SELECT EXISTS (SELECT 1 FROM kcache.objects WHERE cluster = "
                                     "$1 AND resource = $2)",
                                     {o_.cluster, ks}));
      std::unique_ptr<ObjectIterator> it = indexer.NewIterator();
      if (any.get(0, 0) != "t") {
        KCACHE_RETURN_IF_ERROR(conn_->CopyBegin(
            "COPY kcache.objects (namespace, name, uid, resource_version, labels, object, sealed, "
            "created_at, cluster, resource) FROM STDIN"));
        for (; it->Valid(); it->Next()) {
          RowText text;
          KCACHE_ASSIGN_OR_RETURN(Row row, ObjectRow(ks, *it->object(), &text));
          row.push_back(o_.cluster);
          row.push_back(ks);
          conn_->CopyRow(row);
          ++written;
        }
        KCACHE_RETURN_IF_ERROR(it->status());
        KCACHE_RETURN_IF_ERROR(conn_->CopyEnd());
        return SetFed(ks, rv);
      }
      // The cache's keys, uids and versions: small beside the objects.
      KCACHE_RETURN_IF_ERROR(
          conn_->CopyBegin("COPY kcache_keys (namespace, name, uid, resource_version) FROM STDIN"));
      uint64_t total = 0;
      for (; it->Valid(); it->Next()) {
        const Object& o = *it->object();
        conn_->CopyRow({o.namespace_(), o.name(), o.meta().uid, o.resource_version()});
        ++total;
      }
      KCACHE_RETURN_IF_ERROR(it->status());
      KCACHE_RETURN_IF_ERROR(conn_->CopyEnd());
      KCACHE_RETURN_IF_ERROR(conn_->Exec("ANALYZE kcache_keys"));
      KCACHE_ASSIGN_OR_RETURN(
          PgResult gone,
          conn_->Query("WITH d AS (DELETE FROM kcache.objects o WHERE o.cluster = $1 AND "
                       "o.resource = $2 AND NOT EXISTS (SELECT 1 FROM kcache_keys k WHERE "
                       "k.namespace = o.namespace AND k.name = o.name) RETURNING 1) SELECT "
                       "count(*) FROM d",
                       {o_.cluster, ks}));
      deleted = std::stoull(std::string(gone.get(0, 0)));
      KCACHE_RETURN_IF_ERROR(conn_->Exec(
          "DECLARE kcache_differ NO SCROLL CURSOR FOR SELECT k.namespace, k.name FROM kcache_keys "
          "k LEFT JOIN kcache.objects o ON o.cluster = " +
          conn_->Literal(o_.cluster) + " AND o.resource = " + conn_->Literal(ks) +
          " AND o.namespace = k.namespace AND o.name = k.name WHERE o.uid IS DISTINCT FROM k.uid "
          "OR o.resource_version IS DISTINCT FROM k.resource_version"));
      for (;;) {
        KCACHE_ASSIGN_OR_RETURN(PgResult keys, conn_->Query("FETCH 1000 FROM kcache_differ"));
        if (keys.rows() == 0) break;
        // The objects are read before the COPY starts: a statement cannot
        // run inside one.
        std::vector<ObjectPtr> objects;
        for (int i = 0; i < keys.rows(); ++i) {
          const std::string ns(keys.get(i, 0)), name(keys.get(i, 1));
          KCACHE_ASSIGN_OR_RETURN(ObjectPtr o,
                                  indexer.GetByKey(ns.empty() ? name : ns + "/" + name));
          if (o) objects.push_back(std::move(o));
        }
        KCACHE_RETURN_IF_ERROR(conn_->CopyBegin(
            "COPY kcache_stage (namespace, name, uid, resource_version, labels, object, sealed, "
            "created_at, deleted) FROM STDIN"));
        for (const ObjectPtr& o : objects) {
          RowText text;
          KCACHE_ASSIGN_OR_RETURN(Row row, ObjectRow(ks, *o, &text));
          row.push_back("f");
          conn_->CopyRow(row);
        }
        KCACHE_RETURN_IF_ERROR(conn_->CopyEnd());
        KCACHE_RETURN_IF_ERROR(MergeStage(ks));
        written += objects.size();
      }
      KCACHE_RETURN_IF_ERROR(conn_->Exec("CLOSE kcache_differ"));
      unchanged = total - written;
      return SetFed(ks, rv);
    });
    if (!done.ok()) return done;
    fed_[ks] = rv;
    {
      std::lock_guard l(mu_);
      ++stats_.transactions;
      ++stats_.copies;
      stats_.rows_copied += written;
      stats_.rows_unchanged += unchanged;
    }
    if (why.empty()) {
      Log(ks + ": copied " + std::to_string(written) + " objects at resourceVersion " + rv);
    } else if (!sealed_.count(ks) || quiet_.insert(ks).second) {
      Log(ks + ": copied again at resourceVersion " + rv + ", since " + why + ": " +
          std::to_string(written) + " rows written, " + std::to_string(deleted) + " deleted, " +
          std::to_string(unchanged) + " unchanged" +
          (sealed_.count(ks) ? " (and so at each change)" : ""));
    }
    return Status::OK();
  }

  Status TrimChanges() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_trim_) return Status::OK();
    next_trim_ = now + std::chrono::minutes(1);
    const double seconds = std::chrono::duration<double>(o_.changes_retention).count();
    return conn_
        ->Query(
            "DELETE FROM kcache.changes WHERE cluster = $1 AND at < now() - make_interval(secs "
            "=> $2::double precision)",
            {o_.cluster, std::to_string(seconds)})
        .status();
  }

  const FleetFeedOptions o_;
  std::shared_ptr<Cache> view_;
  const std::optional<crypto::Key> kek_;

  // The feed thread's own.
  std::unique_ptr<PgConn> conn_;
  int cluster_id_ = 0;
  bool locked_ = false;
  std::string registered_uid_;
  std::map<std::string, std::string> fed_;                // keyspace -> the database's resume point
  std::map<std::string, std::string> resources_written_;  // keyspace -> its info as written
  std::map<std::string, std::shared_ptr<Indexer>> open_;
  std::set<std::string> sealed_, quiet_;
  std::chrono::steady_clock::time_point next_trim_{};
  Status refusal_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  uint64_t rounds_begun_ = 0;     // guarded by mu_
  uint64_t caught_up_round_ = 0;  // guarded by mu_
  bool stopped_ = false;          // guarded by mu_
  Status fatal_;                  // guarded by mu_
  std::string last_error_;        // guarded by mu_
  FleetFeedStats stats_;          // guarded by mu_

  std::jthread thread_;
};

}  // namespace

std::string DefaultFleetClusterName(const std::string& server) {
  std::string host = server;
  if (size_t scheme = host.find("://"); scheme != std::string::npos) host = host.substr(scheme + 3);
  if (size_t path = host.find('/'); path != std::string::npos) host.resize(path);
  for (char& c : host) {
    if (!NameChar(c)) c = '-';
  }
  if (host.size() > 63) host.resize(63);
  return host.empty() ? "cluster" : host;
}

StatusOr<std::unique_ptr<FleetFeed>> FleetFeed::Start(const std::string& cache_dir,
                                                      FleetFeedOptions options) {
  if (options.conninfo.empty()) {
    return Status::InvalidArgument("fleet feed: a PostgreSQL connection string is required");
  }
  if (!ValidClusterName(options.cluster)) {
    return Status::InvalidArgument(
        "fleet feed: cluster name \"" + options.cluster +
        "\" is not 1 to 63 characters of letters, digits, '.', '_' and '-'");
  }
  if (options.batch == 0) return Status::InvalidArgument("fleet feed: batch must be above 0");
  CacheOptions co;
  co.create_if_missing = false;
  co.block_cache_bytes = options.block_cache_bytes;
  co.encryption.key_encryption_key = options.key_encryption_key;
  co.encryption.keyspaces.clear();
  std::optional<crypto::Key> kek;
  if (!options.key_encryption_key.empty()) {
    KCACHE_ASSIGN_OR_RETURN(crypto::Key k, crypto::Key::FromBytes(options.key_encryption_key));
    kek = std::move(k);
  }
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> view, Cache::OpenReadOnly(cache_dir, co));
  auto feed = std::make_unique<FeedImpl>(std::move(options), std::move(view), std::move(kek));
  feed->Begin();
  return std::unique_ptr<FleetFeed>(std::move(feed));
}

}  // namespace kcache
