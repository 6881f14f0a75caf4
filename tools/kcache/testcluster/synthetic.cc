// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/synthetic.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "tools/kcache/testcluster/pods.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;

serve::synth::PodOptions PodOptionsOf(const SyntheticOptions& o) {
  serve::synth::PodOptions p;
  p.seed = o.seed;
  p.namespaces = static_cast<int>(std::max<int64_t>(1, o.namespaces));
  p.nodes = static_cast<int>(std::max<int64_t>(1, o.nodes));
  return p;
}

uint64_t Next(uint64_t& state) {  // SplitMix64
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

enum Kind { kCreate, kUpdate, kRelabel, kDelete };

}  // namespace

std::string StampResourceVersion(std::string json, uint64_t rv) {
  constexpr std::string_view kKey = R"("resourceVersion":")";
  size_t at = json.find(kKey);
  if (at == std::string::npos) return json;
  at += kKey.size();
  size_t end = json.find('"', at);
  json.replace(at, end - at, std::to_string(rv));
  return json;
}

Status LoadSyntheticCluster(ClusterState& state, const SyntheticOptions& o) {
  const serve::synth::PodOptions p = PodOptionsOf(o);
  auto type = [&](const char* group, const char* resource) -> StatusOr<int> {
    int t = state.Find(group, resource);
    if (t < 0) return Status::Internal(std::string("the server has no type ") + resource);
    return t;
  };
  StatusOr<int> ns = type("", "namespaces");
  StatusOr<int> nodes = type("", "nodes");
  StatusOr<int> pods = type("", "pods");
  StatusOr<int> widgets = type("demo.kcache.io", "widgets");
  for (const StatusOr<int>* t : {&ns, &nodes, &pods, &widgets}) {
    if (!t->ok()) return t->status();
  }
  std::vector<std::string> names = {"default", "kube-system"};
  for (int i = 0; i < p.namespaces; ++i) names.push_back("ns-" + std::to_string(i));
  KCACHE_RETURN_IF_ERROR(state.Load(*ns, names.size(), [&](size_t i, uint64_t rv) {
    return serve::synth::NamespaceJson(p, names[i], rv);
  }));
  KCACHE_RETURN_IF_ERROR(state.Load(
      *nodes, static_cast<size_t>(p.nodes),
      [&](size_t i, uint64_t rv) { return serve::synth::NodeJson(p, static_cast<int>(i), rv); }));
  const size_t pod_bytes = static_cast<size_t>(std::max<int64_t>(0, o.object_bytes));
  KCACHE_RETURN_IF_ERROR(state.Load(
      *pods, static_cast<size_t>(std::max<int64_t>(0, o.pods)), [&](size_t i, uint64_t rv) {
        return serve::synth::PadJson(serve::synth::PodJson(p, i, rv), pod_bytes);
      }));
  const size_t apps =
      static_cast<size_t>((std::max<int64_t>(0, o.pods) + p.pods_per_app - 1) / p.pods_per_app);
  return state.Load(*widgets, apps,
                    [&](size_t i, uint64_t rv) { return serve::synth::WidgetJson(p, i, rv); });
}

Churn::Churn(ClusterState* state, SyntheticOptions synthetic, ChurnOptions options)
    : state_(state),
      synthetic_(synthetic),
      pod_options_(PodOptionsOf(synthetic)),
      options_(options),
      rng_(synthetic.seed * 0x2545f4914f6cdd1dULL) {}

Churn::~Churn() { Stop(); }

void Churn::Start() {
  pods_ = state_->Find("", "pods");
  if (pods_ < 0) return;
  StatusOr<ListResult> all = state_->List(pods_, {});
  if (all.ok()) {
    for (const StoredPtr& o : all->items) keys_.push_back(o->key);
  }
  next_index_ = static_cast<uint64_t>(std::max<int64_t>(0, synthetic_.pods));
  thread_ = std::thread([this] { Run(); });
}

void Churn::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Churn::Run() {
  using Clock = std::chrono::steady_clock;
  const int64_t rates[] = {options_.creates, options_.updates, options_.relabels, options_.deletes};
  double credit[4] = {0, 0, 0, 0};
  auto last = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
    if (stop_) break;
    auto now = Clock::now();
    double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    // Interleave the kinds, so a second's changes are not four runs.
    bool more = true;
    for (int k = 0; k < 4; ++k) credit[k] += static_cast<double>(rates[k]) * dt;
    while (more && !stop_) {
      more = false;
      for (int k = 0; k < 4; ++k) {
        if (credit[k] >= 1) {
          credit[k] -= 1;
          Step(k);
          more = true;
        }
      }
    }
  }
}

bool Churn::Step(int kind) {
  const serve::synth::PodOptions& p = pod_options_;
  StatusOr<StoredPtr> result = StoredPtr();
  if (kind == kCreate) {
    const uint64_t index = next_index_++;
    std::string json =
        serve::synth::PadJson(serve::synth::PodJson(p, index, 0),
                              static_cast<size_t>(std::max<int64_t>(0, synthetic_.object_bytes)));
    StatusOr<ObjectPtr> parsed = Object::Parse(json);
    if (!parsed.ok()) return false;
    std::string key = (*parsed)->namespace_() + "/" + (*parsed)->name();
    result =
        state_->Apply(pods_, key, [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
          if (current) return Change{};
          return Change{Change::kWrite, StampResourceVersion(json, rv)};
        });
    if (result.ok()) keys_.push_back(key);
  } else {
    if (keys_.empty()) return false;
    const size_t i = Next(rng_) % keys_.size();
    const std::string key = keys_[i];
    result =
        state_->Apply(pods_, key, [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
          if (!current) return Change{};
          if (kind == kDelete)
            return Change{Change::kDelete,
                          StampResourceVersion(std::string(current->object->json()), rv)};
          ojson j = ojson::parse(current->object->json(), nullptr, false);
          if (!j.is_object()) return Change{};
          if (kind == kUpdate) {
            ojson& status = j["status"]["containerStatuses"];
            if (status.is_array() && !status.empty()) {
              status[0]["restartCount"] = status[0].value("restartCount", 0) + 1;
            }
          } else {
            ojson& labels = j["metadata"]["labels"];
            labels["track"] = labels.value("track", "stable") == "stable" ? "canary" : "stable";
          }
          j["metadata"]["resourceVersion"] = std::to_string(rv);
          return Change{Change::kWrite, j.dump()};
        });
    if (kind == kDelete && result.ok()) {
      keys_[i] = keys_.back();
      keys_.pop_back();
    }
  }
  if (result.ok()) ++applied_;
  return result.ok();
}

}  // namespace kcache::serve
