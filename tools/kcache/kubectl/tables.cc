// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/tables.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/json_text.h"
#include "tools/kcache/kubectl/go_format.h"
#include "tools/kcache/kubectl/printers.h"
#include "util/rfc3339.h"
#include "util/strings.h"

namespace kcache::tool {

using json = nlohmann::json;

namespace {

using ::kcache::json::At;
std::string Str(const json& v) { return ::kcache::json::String(v); }
// A float out of int64's range would be undefined behaviour to convert.
int64_t Int(const json& v, int64_t otherwise = 0) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::abs(v.get<double>()) < 9.2e18) {
    return static_cast<int64_t>(v.get<double>());
  }
  return otherwise;
}
size_t Size(const json& v) { return v.is_structured() ? v.size() : 0; }
const json& Items(const json& v) {
  static const json empty = json::array();
  return v.is_array() ? v : empty;
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// metav1.LabelSelectorAsSelector(s).String(): requirements sorted by key,
// set values sorted; "" for a missing or empty selector.
std::string SelectorString(const json& s) {
  std::vector<std::pair<std::string, std::string>> reqs;
  if (const json& ml = At(s, {"matchLabels"}); ml.is_object()) {
    for (const auto& [k, v] : ml.items()) reqs.emplace_back(k, k + "=" + Str(v));
  }
  for (const json& e : Items(At(s, {"matchExpressions"}))) {
    const std::string key = Str(At(e, {"key"})), op = Str(At(e, {"operator"}));
    std::vector<std::string> values;
    for (const json& v : Items(At(e, {"values"}))) values.push_back(Str(v));
    std::sort(values.begin(), values.end());
    if (op == "In" || op == "NotIn") {
      reqs.emplace_back(key, key + (op == "In" ? " in (" : " notin (") + Join(values, ",") + ")");
    } else if (op == "Exists") {
      reqs.emplace_back(key, key);
    } else if (op == "DoesNotExist") {
      reqs.emplace_back(key, "!" + key);
    }
  }
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> parts;
  for (auto& r : reqs) parts.push_back(std::move(r.second));
  return Join(parts, ",");
}

// labels.FormatLabels: "k=v" pairs sorted as strings, "<none>" if empty.
std::string LabelsString(const json& labels) {
  std::vector<std::string> parts;
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) parts.push_back(k + "=" + Str(v));
  }
  std::sort(parts.begin(), parts.end());
  return parts.empty() ? "<none>" : Join(parts, ",");
}

void ContainerCells(const json& containers, json* names, json* images) {
  std::vector<std::string> n, i;
  for (const json& c : Items(containers)) {
    n.push_back(Str(At(c, {"name"})));
    i.push_back(Str(At(c, {"image"})));
  }
  *names = Join(n, ",");
  *images = Join(i, ",");
}

std::vector<json> PodCells(const json& pod, std::chrono::system_clock::time_point now) {
  const json& status = At(pod, {"status"});
  const json& spec = At(pod, {"spec"});
  int64_t restarts = 0, ready = 0;
  std::string reason = Str(At(status, {"phase"}));
  if (!Str(At(status, {"reason"})).empty()) reason = Str(At(status, {"reason"}));
  bool initializing = false;
  const json& inits = Items(At(status, {"initContainerStatuses"}));
  for (size_t i = 0; i < inits.size(); ++i) {
    const json& c = inits[i];
    restarts += Int(At(c, {"restartCount"}));
    const json& terminated = At(c, {"state", "terminated"});
    const json& waiting = At(c, {"state", "waiting"});
    if (terminated.is_object() && Int(At(terminated, {"exitCode"})) == 0) continue;
    if (terminated.is_object()) {
      const std::string r = Str(At(terminated, {"reason"}));
      if (!r.empty()) {
        reason = "Init:" + r;
      } else if (int64_t sig = Int(At(terminated, {"signal"})); sig != 0) {
        reason = "Init:Signal:" + std::to_string(sig);
      } else {
        reason = "Init:ExitCode:" + std::to_string(Int(At(terminated, {"exitCode"})));
      }
    } else if (waiting.is_object() && !Str(At(waiting, {"reason"})).empty() &&
               Str(At(waiting, {"reason"})) != "PodInitializing") {
      reason = "Init:" + Str(At(waiting, {"reason"}));
    } else {
      reason =
          "Init:" + std::to_string(i) + "/" + std::to_string(Size(At(spec, {"initContainers"})));
    }
    initializing = true;
    break;
  }
  if (!initializing) {
    restarts = 0;
    bool has_running = false;
    const json& statuses = Items(At(status, {"containerStatuses"}));
    for (size_t i = statuses.size(); i-- > 0;) {
      const json& c = statuses[i];
      restarts += Int(At(c, {"restartCount"}));
      const json& waiting = At(c, {"state", "waiting"});
      const json& terminated = At(c, {"state", "terminated"});
      if (waiting.is_object() && !Str(At(waiting, {"reason"})).empty()) {
        reason = Str(At(waiting, {"reason"}));
      } else if (terminated.is_object() && !Str(At(terminated, {"reason"})).empty()) {
        reason = Str(At(terminated, {"reason"}));
      } else if (terminated.is_object()) {
        int64_t sig = Int(At(terminated, {"signal"}));
        reason = sig != 0 ? "Signal:" + std::to_string(sig)
                          : "ExitCode:" + std::to_string(Int(At(terminated, {"exitCode"})));
      } else if (At(c, {"ready"}) == true && At(c, {"state", "running"}).is_object()) {
        has_running = true;
        ++ready;
      }
    }
    if (reason == "Completed" && has_running) {
      bool pod_ready = false;
      for (const json& cond : Items(At(status, {"conditions"}))) {
        if (Str(At(cond, {"type"})) == "Ready" && Str(At(cond, {"status"})) == "True")
          pod_ready = true;
      }
      reason = pod_ready ? "Running" : "NotReady";
    }
  }
  if (!At(pod, {"metadata", "deletionTimestamp"}).is_null()) {
    reason = Str(At(status, {"reason"})) == "NodeLost" ? "Unknown" : "Terminating";
  }
  std::vector<json> cells = {
      Str(At(pod, {"metadata", "name"})),
      std::to_string(ready) + "/" + std::to_string(Size(At(spec, {"containers"}))), reason,
      restarts, TimestampAge(At(pod, {"metadata", "creationTimestamp"}), now)};
  std::string ip;
  if (const json& ips = Items(At(status, {"podIPs"})); !ips.empty()) ip = Str(At(ips[0], {"ip"}));
  auto or_none = [](std::string s) { return s.empty() ? std::string("<none>") : s; };
  std::string gates = "<none>";
  if (const json& rg = Items(At(spec, {"readinessGates"})); !rg.empty()) {
    int true_conditions = 0;
    for (const json& g : rg) {
      for (const json& cond : Items(At(status, {"conditions"}))) {
        if (At(cond, {"type"}) == At(g, {"conditionType"})) {
          if (Str(At(cond, {"status"})) == "True") ++true_conditions;
          break;
        }
      }
    }
    gates = std::to_string(true_conditions) + "/" + std::to_string(rg.size());
  }
  cells.insert(cells.end(), {or_none(ip), or_none(Str(At(spec, {"nodeName"}))),
                             or_none(Str(At(status, {"nominatedNodeName"}))), gates});
  return cells;
}

std::vector<json> NodeCells(const json& node, std::chrono::system_clock::time_point now) {
  std::vector<std::string> status;
  for (const json& cond : Items(At(node, {"status", "conditions"}))) {
    if (Str(At(cond, {"type"})) != "Ready") continue;
    // The last Ready condition wins, as a map keyed by type would keep it.
    status.assign(1, Str(At(cond, {"status"})) == "True" ? "Ready" : "NotReady");
  }
  if (status.empty()) status.push_back("Unknown");
  if (At(node, {"spec", "unschedulable"}) == true) status.push_back("SchedulingDisabled");
  std::set<std::string> roles;
  const json& labels = At(node, {"metadata", "labels"});
  if (labels.is_object()) {
    static const std::string kPrefix = "node-role.kubernetes.io/";
    for (const auto& [k, v] : labels.items()) {
      if (k.compare(0, kPrefix.size(), kPrefix) == 0) {
        if (k.size() > kPrefix.size()) roles.insert(k.substr(kPrefix.size()));
      } else if (k == "kubernetes.io/role" && !Str(v).empty()) {
        roles.insert(Str(v));
      }
    }
  }
  const json& info = At(node, {"status", "nodeInfo"});
  auto address = [&](const char* type) {
    for (const json& a : Items(At(node, {"status", "addresses"}))) {
      if (Str(At(a, {"type"})) == type) return Str(At(a, {"address"}));
    }
    return std::string("<none>");
  };
  auto or_unknown = [](std::string s) { return s.empty() ? std::string("<unknown>") : s; };
  return {Str(At(node, {"metadata", "name"})),
          Join(status, ","),
          roles.empty() ? "<none>" : Join({roles.begin(), roles.end()}, ","),
          TimestampAge(At(node, {"metadata", "creationTimestamp"}), now),
          Str(At(info, {"kubeletVersion"})),
          address("InternalIP"),
          address("ExternalIP"),
          or_unknown(Str(At(info, {"osImage"}))),
          or_unknown(Str(At(info, {"kernelVersion"}))),
          or_unknown(Str(At(info, {"containerRuntimeVersion"})))};
}

std::vector<json> ServiceCells(const json& svc, std::chrono::system_clock::time_point now) {
  const json& spec = At(svc, {"spec"});
  const std::string type = Str(At(spec, {"type"}));
  std::string cluster_ip = "<none>";
  if (const json& ips = Items(At(spec, {"clusterIPs"})); !ips.empty()) {
    cluster_ip = Str(ips[0]);
  } else if (!Str(At(spec, {"clusterIP"})).empty()) {
    cluster_ip = Str(At(spec, {"clusterIP"}));
  }
  std::vector<std::string> external;
  for (const json& ip : Items(At(spec, {"externalIPs"}))) external.push_back(Str(ip));
  std::string external_ip;
  if (type == "ClusterIP" || type == "NodePort") {
    external_ip = external.empty() ? "<none>" : Join(external, ",");
  } else if (type == "LoadBalancer") {
    std::set<std::string> lb;
    for (const json& in : Items(At(svc, {"status", "loadBalancer", "ingress"}))) {
      if (!Str(At(in, {"ip"})).empty()) {
        lb.insert(Str(At(in, {"ip"})));
      } else if (!Str(At(in, {"hostname"})).empty()) {
        lb.insert(Str(At(in, {"hostname"})));
      }
    }
    std::vector<std::string> all(lb.begin(), lb.end());
    all.insert(all.end(), external.begin(), external.end());
    external_ip = !all.empty() ? Join(all, ",") : "<pending>";
  } else if (type == "ExternalName") {
    external_ip = Str(At(spec, {"externalName"}));
  } else {
    external_ip = "<unknown>";
  }
  std::vector<std::string> ports;
  for (const json& p : Items(At(spec, {"ports"}))) {
    std::string proto = Str(At(p, {"protocol"}));
    int64_t node_port = Int(At(p, {"nodePort"}));
    ports.push_back(std::to_string(Int(At(p, {"port"}))) +
                    (node_port > 0 ? ":" + std::to_string(node_port) : "") + "/" + proto);
  }
  return {Str(At(svc, {"metadata", "name"})),
          type,
          cluster_ip,
          external_ip,
          ports.empty() ? "<none>" : Join(ports, ","),
          TimestampAge(At(svc, {"metadata", "creationTimestamp"}), now),
          LabelsString(At(spec, {"selector"}))};
}

std::vector<json> EventCells(const json& ev, std::chrono::system_clock::time_point now) {
  std::string first = TimestampAge(At(ev, {"firstTimestamp"}), now);
  if (At(ev, {"firstTimestamp"}).is_null()) first = TimestampAge(At(ev, {"eventTime"}), now);
  std::string last = TimestampAge(At(ev, {"lastTimestamp"}), now);
  if (At(ev, {"lastTimestamp"}).is_null()) last = first;
  int64_t count = Int(At(ev, {"count"}));
  if (const json& series = At(ev, {"series"}); series.is_object()) {
    last = TimestampAge(At(series, {"lastObservedTime"}), now);
    count = Int(At(series, {"count"})) + 1;
  } else if (count == 0) {
    count = 1;
  }
  const json& obj = At(ev, {"involvedObject"});
  const std::string kind = AsciiLower(Str(At(obj, {"kind"})));
  const std::string name = Str(At(obj, {"name"}));
  std::string component = Str(At(ev, {"source", "component"}));
  if (component.empty()) component = Str(At(ev, {"reportingComponent"}));
  std::string host = Str(At(ev, {"source", "host"}));
  if (host.empty()) host = Str(At(ev, {"reportingInstance"}));
  std::string message = Str(At(ev, {"message"}));
  size_t b = message.find_first_not_of(" \t\r\n\v\f");
  size_t e = message.find_last_not_of(" \t\r\n\v\f");
  message = b == std::string::npos ? "" : message.substr(b, e - b + 1);
  return {last,
          Str(At(ev, {"type"})),
          Str(At(ev, {"reason"})),
          name.empty() ? kind : kind + "/" + name,
          Str(At(obj, {"fieldPath"})),
          host.empty() ? component : component + ", " + host,
          message,
          first,
          count,
          Str(At(ev, {"metadata", "name"}))};
}

// A custom resource column's cell, as the server's table convertor makes
// it from the first value its JSONPath finds.
json CustomCell(const PrinterColumn& column, const JsonPath& path, const json& object,
                std::chrono::system_clock::time_point now) {
  StatusOr<std::vector<JsonPath::Values>> found = path.FindResults(object);
  if (!found.ok() || found->empty() || found->front().empty()) return nullptr;
  const json& v = *found->front().front();
  if (column.type == "string") {
    return v.is_structured() ? GoJson(v) : GoValue(v);
  }
  if (v.is_null()) return nullptr;
  if (column.type == "integer" && v.is_number()) return Int(v);
  if (column.type == "number" && v.is_number()) return v.get<double>();
  if (column.type == "boolean" && v.is_boolean()) return v;
  if (column.type == "date" && v.is_string()) {
    auto t = util::ParseRfc3339(v.get<std::string>());
    return t ? HumanDuration(now - *t) : "<invalid>";
  }
  return nullptr;
}

}  // namespace

std::string HumanDuration(std::chrono::system_clock::duration d) {
  using namespace std::chrono;
  const int64_t seconds = duration_cast<std::chrono::seconds>(d).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    return std::to_string(minutes) + "m" + (s ? std::to_string(s) + "s" : "");
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    int64_t m = minutes % 60;
    return std::to_string(hours) + "h" + (m ? std::to_string(m) + "m" : "");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return std::to_string(hours / 24) + "d" + (h ? std::to_string(h) + "h" : "");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (dy ? std::to_string(dy) + "d" : "");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::string TimestampAge(const json& timestamp, std::chrono::system_clock::time_point now) {
  return timestamp.is_string() ? Age(timestamp.get<std::string>(), now) : "<unknown>";
}

StatusOr<TableSpec> TableSpec::For(const ResourceInfo& info) {
  TableSpec t;
  const std::string& g = info.group;
  const std::string& k = info.kind;
  auto cols = [&](std::initializer_list<TableColumn> c) { t.columns_ = c; };
  if (info.custom) {
    t.kind_ = Kind::kCustom;
    t.custom_ = info.printer_columns;
    // A definition without columns gets the server's default: Age.
    if (t.custom_.empty())
      t.custom_.push_back({"Age", "date", "", ".metadata.creationTimestamp", 0});
    t.columns_.push_back({"Name", 0});
    for (const PrinterColumn& c : t.custom_) {
      StatusOr<JsonPath> path = JsonPath::Parse("{" + c.json_path + "}");
      if (!path.ok()) {
        return Status::InvalidArgument("column " + c.name + " of " + info.resource + "." + g +
                                       ": unrecognized column definition \"" + c.json_path + "\"");
      }
      t.paths_.push_back(*std::move(path));
      t.columns_.push_back({c.name, c.priority});
    }
  } else if (g.empty() && k == "Pod") {
    t.kind_ = Kind::kPod;
    cols({{"Name"},
          {"Ready"},
          {"Status"},
          {"Restarts"},
          {"Age"},
          {"IP", 1},
          {"Node", 1},
          {"Nominated Node", 1},
          {"Readiness Gates", 1}});
  } else if (g.empty() && k == "Node") {
    t.kind_ = Kind::kNode;
    cols({{"Name"},
          {"Status"},
          {"Roles"},
          {"Age"},
          {"Version"},
          {"Internal-IP", 1},
          {"External-IP", 1},
          {"OS-Image", 1},
          {"Kernel-Version", 1},
          {"Container-Runtime", 1}});
  } else if (g.empty() && k == "Namespace") {
    t.kind_ = Kind::kNamespace;
    cols({{"Name"}, {"Status"}, {"Age"}});
  } else if (g == "apps" && k == "Deployment") {
    t.kind_ = Kind::kDeployment;
    cols({{"Name"},
          {"Ready"},
          {"Up-to-date"},
          {"Available"},
          {"Age"},
          {"Containers", 1},
          {"Images", 1},
          {"Selector", 1}});
  } else if (g == "apps" && k == "ReplicaSet") {
    t.kind_ = Kind::kReplicaSet;
    cols({{"Name"},
          {"Desired"},
          {"Current"},
          {"Ready"},
          {"Age"},
          {"Containers", 1},
          {"Images", 1},
          {"Selector", 1}});
  } else if (g.empty() && k == "Service") {
    t.kind_ = Kind::kService;
    cols({{"Name"},
          {"Type"},
          {"Cluster-IP"},
          {"External-IP"},
          {"Port(s)"},
          {"Age"},
          {"Selector", 1}});
  } else if (g.empty() && k == "ConfigMap") {
    t.kind_ = Kind::kConfigMap;
    cols({{"Name"}, {"Data"}, {"Age"}});
  } else if (g.empty() && k == "Secret") {
    t.kind_ = Kind::kSecret;
    cols({{"Name"}, {"Type"}, {"Data"}, {"Age"}});
  } else if (g.empty() && k == "Event") {
    t.kind_ = Kind::kEvent;
    cols({{"Last Seen"},
          {"Type"},
          {"Reason"},
          {"Object"},
          {"Subobject", 1},
          {"Source", 1},
          {"Message"},
          {"First Seen", 1},
          {"Count", 1},
          {"Name", 1}});
  } else {
    cols({{"Name"}, {"Age"}});
  }
  return t;
}

StatusOr<std::vector<json>> TableSpec::Cells(const json& o,
                                             std::chrono::system_clock::time_point now) const {
  const std::string name = Str(At(o, {"metadata", "name"}));
  const std::string age = TimestampAge(At(o, {"metadata", "creationTimestamp"}), now);
  switch (kind_) {
    case Kind::kPod:
      return PodCells(o, now);
    case Kind::kNode:
      return NodeCells(o, now);
    case Kind::kNamespace:
      return std::vector<json>{name, Str(At(o, {"status", "phase"})), age};
    case Kind::kDeployment: {
      const json& st = At(o, {"status"});
      json containers, images;
      ContainerCells(At(o, {"spec", "template", "spec", "containers"}), &containers, &images);
      return std::vector<json>{name,
                               std::to_string(Int(At(st, {"readyReplicas"}))) + "/" +
                                   std::to_string(Int(At(o, {"spec", "replicas"}), 1)),
                               Int(At(st, {"updatedReplicas"})),
                               Int(At(st, {"availableReplicas"})),
                               age,
                               containers,
                               images,
                               SelectorString(At(o, {"spec", "selector"}))};
    }
    case Kind::kReplicaSet: {
      json containers, images;
      ContainerCells(At(o, {"spec", "template", "spec", "containers"}), &containers, &images);
      std::string selector = SelectorString(At(o, {"spec", "selector"}));
      return std::vector<json>{name,
                               Int(At(o, {"spec", "replicas"}), 1),
                               Int(At(o, {"status", "replicas"})),
                               Int(At(o, {"status", "readyReplicas"})),
                               age,
                               containers,
                               images,
                               selector.empty() ? "<none>" : selector};
    }
    case Kind::kService:
      return ServiceCells(o, now);
    case Kind::kConfigMap:
      return std::vector<json>{
          name, static_cast<int64_t>(Size(At(o, {"data"})) + Size(At(o, {"binaryData"}))), age};
    case Kind::kSecret:
      return std::vector<json>{name, Str(At(o, {"type"})),
                               static_cast<int64_t>(Size(At(o, {"data"}))), age};
    case Kind::kEvent:
      return EventCells(o, now);
    case Kind::kCustom: {
      std::vector<json> cells = {name};
      for (size_t i = 0; i < custom_.size(); ++i)
        cells.push_back(CustomCell(custom_[i], paths_[i], o, now));
      return cells;
    }
    case Kind::kDefault:
      break;
  }
  return std::vector<json>{name, age};
}

}  // namespace kcache::tool
