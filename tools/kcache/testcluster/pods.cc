// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/pods.h"

#include <cstdio>
#include <string_view>

namespace kcache::serve::synth {
namespace {

// SplitMix64: a small, good, seedable generator.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string Hex(uint64_t v, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(digits, '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 15];
  return out;
}

// The pod-template-hash alphabet.
std::string Alnum(uint64_t v, int n) {
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < n; ++i, v /= 27) out += kChars[v % 27];
  return out;
}

std::string Uid(uint64_t v) {
  uint64_t a = Mix(v), b = Mix(a);
  return Hex(a >> 32, 8) + "-" + Hex(a >> 16, 4) + "-4" + Hex(a, 3) + "-a" + Hex(b >> 48, 3) + "-" +
         Hex(b, 12);
}

std::string Timestamp(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2025-%02d-%02dT%02d:%02d:%02dZ", int(1 + v % 12),
                int(1 + (v >> 4) % 28), int((v >> 9) % 24), int((v >> 14) % 60),
                int((v >> 20) % 60));
  return buf;
}

constexpr std::string_view kApps[] = {"frontend",  "checkout", "payments", "search", "catalog",
                                      "inventory", "shipping", "auth",     "ledger", "mailer"};
constexpr std::string_view kTiers[] = {"web", "api", "worker", "cache"};

}  // namespace

std::string PodJson(const PodOptions& o, uint64_t index, uint64_t resource_version) {
  const uint64_t h = Mix(o.seed * 1000003 + index);
  const uint64_t app_index = index / static_cast<uint64_t>(o.pods_per_app);
  const uint64_t app_hash = Mix(o.seed * 7919 + app_index);
  const std::string ns = "ns-" + std::to_string(app_index % static_cast<uint64_t>(o.namespaces));
  const std::string app = std::string(kApps[app_index % 10]) + "-" + std::to_string(app_index);
  const std::string tier(kTiers[app_hash % 4]);
  const std::string template_hash = Alnum(app_hash, 10);
  const std::string name = app + "-" + template_hash + "-" + Alnum(h, 5);
  const std::string rs = app + "-" + template_hash;
  const std::string node = "node-" + std::to_string(h % static_cast<uint64_t>(o.nodes));
  const std::string created = Timestamp(h);
  const std::string image = "registry.example.com/" + std::string(kApps[app_index % 10]) + ":v1." +
                            std::to_string(app_hash % 40) + "." + std::to_string(h % 7);
  const std::string ip = "10." + std::to_string(h % 250) + "." + std::to_string((h >> 8) % 250) +
                         "." + std::to_string((h >> 16) % 250);
  const std::string host_ip =
      "192.168." + std::to_string((h >> 24) % 250) + "." + std::to_string((h >> 32) % 250);
  const std::string version = "v1." + std::to_string(app_hash % 40);
  const std::string track = (h % 10 == 0) ? "canary" : "stable";

  std::string j;
  j.reserve(7000);
  j += R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name + R"(","generateName":")" +
       rs + R"(-","namespace":")" + ns + R"(","uid":")" + Uid(h) + R"(","resourceVersion":")" +
       std::to_string(resource_version) + R"(","creationTimestamp":")" + created +
       R"(","labels":{"app":")" + app + R"(","pod-template-hash":")" + template_hash +
       R"(","tier":")" + tier + R"(","track":")" + track + R"(","version":")" + version +
       R"("},"annotations":{"kubectl.kubernetes.io/restartedAt":")" + created +
       R"(","prometheus.io/port":"9090","prometheus.io/scrape":"true"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":")" +
       rs + R"(","uid":")" + Uid(app_hash) +
       R"(","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":")" + created + R"(","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{},"f:track":{},"f:version":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\")" + Uid(app_hash) + R"(\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"OTEL_EXPORTER_OTLP_ENDPOINT\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"GOMAXPROCS\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:resourceFieldRef":{}}},"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}}},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:name":{},"f:readinessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/etc/config\"}":{".":{},"f:mountPath":{},"f:name":{},"f:readOnly":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}}}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":")" + created + R"(","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\")" + ip +
       R"(\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},"spec":{"volumes":[{"name":"config","configMap":{"name":")" +
       app + R"(-config","defaultMode":420}},{"name":"kube-api-access-)" + Alnum(h >> 7, 5) +
       R"(","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],"containers":[{"name":"app","image":")" +
       image +
       R"(","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"OTEL_EXPORTER_OTLP_ENDPOINT","value":"http://otel-collector.observability.svc.cluster.local:4317"},{"name":"GOMAXPROCS","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1"}}},{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"config","readOnly":true,"mountPath":"/etc/config"},{"name":"kube-api-access-)" +
       Alnum(h >> 7, 5) +
       R"(","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"readinessProbe":{"httpGet":{"path":"/readyz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":5,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":")" +
       node +
       R"(","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":")" +
       created +
       R"("},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":")" +
       created +
       R"("},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":")" +
       created +
       R"("},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":")" +
       created + R"("}],"hostIP":")" + host_ip + R"(","podIP":")" + ip + R"(","podIPs":[{"ip":")" +
       ip + R"("}],"startTime":")" + created +
       R"(","containerStatuses":[{"name":"app","state":{"running":{"startedAt":")" + created +
       R"("}},"lastState":{},"ready":true,"restartCount":)" + std::to_string(h % 3) +
       R"(,"image":")" + image + R"(","imageID":")" + image + "@sha256:" + Hex(Mix(h), 16) +
       Hex(Mix(h + 1), 16) + Hex(Mix(h + 2), 16) + Hex(Mix(h + 3), 16) +
       R"(","containerID":"containerd://)" + Hex(Mix(h + 4), 16) + Hex(Mix(h + 5), 16) +
       Hex(Mix(h + 6), 16) + Hex(Mix(h + 7), 16) + R"(","started":true}],"qosClass":"Burstable"}})";
  return j;
}

std::string NamespaceJson(const PodOptions& options, const std::string& name,
                          uint64_t resource_version) {
  const uint64_t h = Mix(std::hash<std::string>{}(name) ^ Mix(options.seed));
  return R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":")" + name + R"(","uid":")" +
         Uid(h) + R"(","resourceVersion":")" + std::to_string(resource_version) +
         R"(","creationTimestamp":")" + Timestamp(h) +
         R"(","labels":{"kubernetes.io/metadata.name":")" + name +
         R"("},"annotations":{}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})";
}

std::string NodeJson(const PodOptions& o, int index, uint64_t resource_version) {
  const uint64_t h = Mix(o.seed * 31337 + static_cast<uint64_t>(index));
  const std::string name = "node-" + std::to_string(index);
  const std::string zone = "zone-" + std::string(1, static_cast<char>('a' + h % 3));
  const std::string ip =
      "192.168." + std::to_string((h >> 24) % 250) + "." + std::to_string((h >> 32) % 250);
  const std::string created = Timestamp(h);
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","uid":")" +
         Uid(h) + R"(","resourceVersion":")" + std::to_string(resource_version) +
         R"(","creationTimestamp":")" + created +
         R"(","labels":{"kubernetes.io/arch":"amd64","kubernetes.io/hostname":")" + name +
         R"(","kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m5.2xlarge","topology.kubernetes.io/zone":")" +
         zone + R"("},"annotations":{"node.alpha.kubernetes.io/ttl":"0"}},"spec":{"podCIDR":"10.)" +
         std::to_string(index % 250) + R"(.0.0/24","providerID":"demo://)" + name +
         R"("},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"},"allocatable":{"cpu":"7910m","memory":"31Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":")" +
         created + R"(","lastTransitionTime":")" + created +
         R"(","reason":"KubeletReady","message":"kubelet is posting ready status"}],"addresses":[{"type":"InternalIP","address":")" +
         ip + R"("},{"type":"Hostname","address":")" + name +
         R"("}],"nodeInfo":{"kubeletVersion":"v1.20.2","containerRuntimeVersion":"containerd://1.6.20","osImage":"Debian GNU/Linux 12 bookworm","architecture":"amd64","operatingSystem":"linux"}}})";
}

std::string WidgetJson(const PodOptions& o, uint64_t app_index, uint64_t resource_version) {
  const uint64_t app_hash = Mix(o.seed * 7919 + app_index);
  const std::string ns = "ns-" + std::to_string(app_index % static_cast<uint64_t>(o.namespaces));
  const std::string app = std::string(kApps[app_index % 10]) + "-" + std::to_string(app_index);
  return R"({"apiVersion":"demo.kcache.io/v1","kind":"Widget","metadata":{"name":")" + app +
         R"(","namespace":")" + ns + R"(","uid":")" + Uid(app_hash + 1) +
         R"(","resourceVersion":")" + std::to_string(resource_version) +
         R"(","generation":1,"creationTimestamp":")" + Timestamp(app_hash) +
         R"(","labels":{"app":")" + app + R"(","tier":")" + std::string(kTiers[app_hash % 4]) +
         R"("},"annotations":{}},"spec":{"replicas":)" + std::to_string(o.pods_per_app) +
         R"(,"image":"registry.example.com/)" + std::string(kApps[app_index % 10]) + R"(:v1.)" +
         std::to_string(app_hash % 40) + R"("},"status":{"readyReplicas":)" +
         std::to_string(o.pods_per_app) + "}}";
}

std::string PadJson(std::string json, size_t bytes) {
  constexpr std::string_view kAnchor = R"("annotations":{)";
  constexpr std::string_view kKey = R"("demo.kcache.io/padding":")";
  size_t at = json.find(kAnchor);
  const size_t overhead = kKey.size() + 2;  // closing quote and comma
  if (at == std::string::npos || json.size() + overhead >= bytes) return json;
  at += kAnchor.size();
  const bool empty = json[at] == '}';
  std::string filler(bytes - json.size() - overhead + (empty ? 1 : 0), 'x');
  for (size_t i = 0; i < filler.size(); ++i)
    filler[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[Mix(i) % 36];
  json.insert(at, std::string(kKey) + filler + (empty ? "\"" : "\","));
  return json;
}

}  // namespace kcache::serve::synth
