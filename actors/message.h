// Messages between actors. Each actor belongs to one device thread; every change of
// another actor's view (a register slot became readable, a slot was returned, a
// predecessor finished an iteration) travels as a message to the owning thread's queue,
// so an actor's state is only ever touched by its own thread.
#ifndef ACTORS_MESSAGE_H_
#define ACTORS_MESSAGE_H_

#include <cstdint>

namespace oneflow::actors {

enum class MessageKind {
  // `from` produced iteration `iteration` of register `register_index`: readable now.
  kRegisterReadable,
  // `from` (a consumer) is done reading iteration `iteration` of `register_index`.
  kRegisterReturned,
  // `from` (a control predecessor) acted on iteration `iteration`.
  kPredecessorActed,
  // The device of the receiving thread finished iteration `iteration` (gate moved).
  kDeviceIterationDone,
  // `from` will act on `iteration` iterations in all: nothing after that comes.
  kEndOfData,
  // Stop now (another thread failed).
  kAbort,
};

struct Message {
  MessageKind kind = MessageKind::kAbort;
  int32_t to = -1;    // Actor index in the runtime.
  int32_t from = -1;  // Actor index, or -1.
  int32_t register_index = -1;
  int64_t iteration = 0;
};

}  // namespace oneflow::actors

#endif  // ACTORS_MESSAGE_H_
