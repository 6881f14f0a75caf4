// SPDX-License-Identifier: Apache-2.0

// A ResourceEventHandler that records each call as a line:
// "add NAME" (plus " initial" or " live" when asked), "update NAME OLD>NEW"
// (the configmaps' data.k values), "delete NAME" or "delete NAME tombstone".
#ifndef KCACHE_TESTS_TESTING_RECORDING_HANDLER_H_
#define KCACHE_TESTS_TESTING_RECORDING_HANDLER_H_

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/informer.h"

namespace kcache::testing {

class RecordingHandler final : public ResourceEventHandler {
 public:
  explicit RecordingHandler(bool show_initial = true) : show_initial_(show_initial) {}

  void OnAdd(const ObjectPtr& o, bool initial) override {
    Record("add " + o->name() + (show_initial_ ? (initial ? " initial" : " live") : ""));
  }
  void OnUpdate(const ObjectPtr& a, const ObjectPtr& b) override {
    Record("update " + b->name() + " " + Value(a) + ">" + Value(b));
  }
  void OnDelete(const DeletedObject& d) override {
    if (auto* t = std::get_if<DeletedFinalStateUnknown>(&d)) {
      Record("delete " + t->key.substr(t->key.find('/') + 1) + " tombstone");
    } else {
      Record("delete " + std::get<ObjectPtr>(d)->name());
    }
  }
  std::vector<std::string> calls() const {
    std::lock_guard l(mu_);
    return calls_;
  }
  size_t size() const {
    std::lock_guard l(mu_);
    return calls_.size();
  }
  // Called with each line, on the handler's thread, before it is recorded.
  std::function<void(const std::string&)> on_call;

 private:
  static std::string Value(const ObjectPtr& o) {
    auto doc = o->Document();
    return doc.ok() && doc->contains("data") ? (*doc)["data"].value("k", "") : "";
  }
  void Record(std::string s) {
    if (on_call) on_call(s);
    std::lock_guard l(mu_);
    calls_.push_back(std::move(s));
  }
  const bool show_initial_;
  mutable std::mutex mu_;
  std::vector<std::string> calls_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_RECORDING_HANDLER_H_
