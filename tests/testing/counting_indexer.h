// SPDX-License-Identifier: Apache-2.0

// An Indexer that forwards to another and counts the objects read through
// its iterators: how many objects a query touched.

#ifndef KCACHE_TESTS_TESTING_COUNTING_INDEXER_H_
#define KCACHE_TESTS_TESTING_COUNTING_INDEXER_H_

#include <atomic>
#include <memory>

#include "kcache/indexer.h"

namespace kcache::testing {

class CountingIndexer final : public Indexer {
 public:
  explicit CountingIndexer(std::shared_ptr<Indexer> inner) : inner_(std::move(inner)) {}

  // Objects read since construction: through NewIterator (a scan), through
  // NewIndexIterator, and one by one through GetByKey.
  size_t scanned() const { return scanned_; }
  size_t indexed() const { return indexed_; }
  size_t fetched() const { return fetched_; }

  Status Add(ObjectPtr o) override { return inner_->Add(std::move(o)); }
  Status Update(ObjectPtr o) override { return inner_->Update(std::move(o)); }
  Status Delete(const ObjectPtr& o) override { return inner_->Delete(o); }
  Status DeleteKey(std::string_view k) override { return inner_->DeleteKey(k); }
  Status Commit(const Transaction& t, TransactionResult* r) override {
    return inner_->Commit(t, r);
  }
  StatusOr<ReplaceResult> Replace(std::vector<ObjectPtr> o, std::string rv) override {
    return inner_->Replace(std::move(o), std::move(rv));
  }
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(ChangeSink sink) override {
    return inner_->BeginReplace(std::move(sink));
  }
  StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const override {
    return inner_->GetCutShortRelist();
  }
  StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace(ChangeSink sink) override {
    return inner_->ContinueReplace(std::move(sink));
  }
  StatusOr<ObjectPtr> Get(const Object& o) const override { return inner_->Get(o); }
  StatusOr<ObjectPtr> GetByKey(std::string_view k) const override {
    ++fetched_;
    return inner_->GetByKey(k);
  }
  StatusOr<std::vector<ObjectPtr>> List() const override { return inner_->List(); }
  StatusOr<std::vector<std::string>> ListKeys() const override { return inner_->ListKeys(); }
  std::unique_ptr<ObjectIterator> NewIterator() const override {
    return std::make_unique<Counted>(inner_->NewIterator(), &scanned_);
  }
  std::unique_ptr<ObjectIterator> NewIteratorFrom(std::string_view start) const override {
    return std::make_unique<Counted>(inner_->NewIteratorFrom(start), &scanned_);
  }
  StatusOr<size_t> Size() const override { return inner_->Size(); }
  std::string LastSyncResourceVersion() const override { return inner_->LastSyncResourceVersion(); }
  Status Resync() override { return inner_->Resync(); }
  StatusOr<std::string> KeyOf(const Object& o) const override { return inner_->KeyOf(o); }
  StatusOr<std::vector<ObjectPtr>> Index(std::string_view n, const Object& o) const override {
    return inner_->Index(n, o);
  }
  StatusOr<std::vector<std::string>> IndexKeys(std::string_view n,
                                               std::string_view v) const override {
    return inner_->IndexKeys(n, v);
  }
  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view n, std::string_view v) const override {
    return inner_->ByIndex(n, v);
  }
  std::unique_ptr<ObjectIterator> NewIndexIterator(std::string_view n,
                                                   std::string_view v) const override {
    return std::make_unique<Counted>(inner_->NewIndexIterator(n, v), &indexed_);
  }
  StatusOr<std::vector<std::string>> ListIndexFuncValues(std::string_view n) const override {
    return inner_->ListIndexFuncValues(n);
  }
  Indexers GetIndexers() const override { return inner_->GetIndexers(); }
  Status AddIndexers(const Indexers& i) override { return inner_->AddIndexers(i); }

 private:
  class Counted final : public ObjectIterator {
   public:
    Counted(std::unique_ptr<ObjectIterator> it, std::atomic<size_t>* n)
        : it_(std::move(it)), n_(n) {
      if (it_->Valid()) ++*n_;
    }
    bool Valid() const override { return it_->Valid(); }
    void Next() override {
      it_->Next();
      if (it_->Valid()) ++*n_;
    }
    const std::string& key() const override { return it_->key(); }
    const ObjectPtr& object() const override { return it_->object(); }
    Status status() const override { return it_->status(); }

   private:
    std::unique_ptr<ObjectIterator> it_;
    std::atomic<size_t>* n_;
  };

  std::shared_ptr<Indexer> inner_;
  mutable std::atomic<size_t> scanned_{0};
  mutable std::atomic<size_t> indexed_{0};
  mutable std::atomic<size_t> fetched_{0};
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_COUNTING_INDEXER_H_
