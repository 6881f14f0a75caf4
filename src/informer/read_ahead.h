// SPDX-License-Identifier: Apache-2.0

// ReadAheadStream: reads and decodes a watch stream's events on a thread of
// its own (a fiber when created on one), a bounded number of bytes ahead of the consumer, so that
// framing and parsing overlap with the consumer's commits. Events come out in the order the inner
// stream gave them; its end or error comes after the events before it.
//
// Thread-safety: as WatchStream: one consumer thread; Cancel() from any.
#ifndef KCACHE_SRC_INFORMER_READ_AHEAD_H_
#define KCACHE_SRC_INFORMER_READ_AHEAD_H_

#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "exec/fiber.h"
#include "kcache/watch.h"

namespace kcache::informer {

class ReadAheadStream final : public WatchStream {
 public:
  // Starts reading `inner`. Reading pauses while the objects decoded and not
  // yet taken hold `max_bytes` or more (one event is always read ahead).
  ReadAheadStream(std::unique_ptr<WatchStream> inner, size_t max_bytes);
  // Cancels the inner stream and waits for the reader.
  ~ReadAheadStream() override;

  StatusOr<std::optional<WatchEvent>> Next() override;
  bool Ready() override;
  void Cancel() override;

 private:
  using Item = StatusOr<std::optional<WatchEvent>>;
  void Run();

  const std::unique_ptr<WatchStream> inner_;
  const size_t max_bytes_;
  std::mutex mu_;
  exec::CondVar cv_;
  std::deque<Item> queue_;    // guarded by mu_
  size_t bytes_ = 0;          // guarded by mu_: objects' bytes in queue_
  bool cancelled_ = false;    // guarded by mu_
  std::optional<Item> last_;  // consumer only: the end or error, once taken
  // Last: starts once the rest is built. One of the two.
  std::thread thread_;
  std::shared_ptr<exec::FiberHandle> fiber_;
};

}  // namespace kcache::informer

#endif  // KCACHE_SRC_INFORMER_READ_AHEAD_H_
