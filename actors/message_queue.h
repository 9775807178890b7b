// A device thread's inbox: many producers (any thread), one consumer (its thread).
#ifndef ACTORS_MESSAGE_QUEUE_H_
#define ACTORS_MESSAGE_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "actors/message.h"

namespace oneflow::actors {

class MessageQueue {
 public:
  void Push(const Message& message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      messages_.push_back(message);
    }
    ready_.notify_one();
  }

  // The next message, or nullopt when none arrived within `timeout`.
  std::optional<Message> Pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !messages_.empty(); })) return std::nullopt;
    Message message = messages_.front();
    messages_.pop_front();
    return message;
  }

  // Moves every queued message into `out` without waiting (batching keeps the lock
  // traffic per act low).
  void DrainInto(std::deque<Message>* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!messages_.empty()) {
      out->push_back(messages_.front());
      messages_.pop_front();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Message> messages_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_MESSAGE_QUEUE_H_
