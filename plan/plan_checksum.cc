#include "plan/plan_checksum.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The encoding of Plan.checksum (field 10, fixed32): the one-byte tag (10 << 3 | 5) and
// four bytes of value. proto3 writes it only when it is not zero.
constexpr unsigned char kChecksumTag = (10 << 3) | 5;
constexpr int kChecksumFieldBytes = 5;

// CRC-32 of a plan's serialization without its checksum field, fed the serialization in
// pieces as protobuf writes it.
//
// Equal to the CRC of the serialization of a copy with the checksum cleared: each field
// of a message is written on its own, so clearing one only removes its bytes. Those bytes
// are found by walking the plan's top-level fields (tag, then a varint, a length-prefixed
// payload or a fixed-size value), which holds whatever the other fields' numbers are;
// the payloads themselves (devices, job, ...) are only summed, never parsed. The
// serialization comes from protobuf, so its tags are canonical (field 10 as fixed32 is
// the single byte kChecksumTag) and it holds no groups.
class UnsealedCrc {
 public:
  void Feed(const unsigned char* data, size_t size) {
    size_t i = 0;
    while (i < size) {
      if (skip_ > 0) {  // The checksum field: left out.
        const size_t n = std::min(skip_, size - i);
        i += n;
        skip_ -= n;
      } else if (payload_ > 0) {  // A field's value: summed as is.
        const size_t n = std::min(payload_, size - i);
        Sum(data + i, n);
        i += n;
        payload_ -= n;
      } else if (state_ == State::kTag && shift_ == 0 && data[i] == kChecksumTag) {
        skip_ = kChecksumFieldBytes;
      } else {
        ReadVarintByte(data[i]);
        Sum(data + i, 1);
        ++i;
      }
    }
  }

  // False when the bytes ended inside a field or held a group (not from protobuf's
  // serializer of a Plan).
  bool Complete() const {
    return state_ == State::kTag && shift_ == 0 && skip_ == 0 && payload_ == 0 && !malformed_;
  }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }

 private:
  enum class State { kTag, kLength, kVarintValue };

  void Sum(const unsigned char* data, size_t size) {
    crc_ = crc32(crc_, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(size));
  }

  void ReadVarintByte(unsigned char byte) {
    if (shift_ < 64) value_ |= static_cast<uint64_t>(byte & 0x7f) << shift_;
    shift_ += 7;
    if (byte & 0x80) return;
    const uint64_t value = value_;
    value_ = 0;
    shift_ = 0;
    switch (state_) {
      case State::kTag:
        switch (value & 7) {
          case 0:
            state_ = State::kVarintValue;
            break;
          case 1:
            payload_ = 8;
            break;
          case 2:
            state_ = State::kLength;
            break;
          case 5:
            payload_ = 4;
            break;
          default:
            malformed_ = true;
        }
        break;
      case State::kLength:
        payload_ = static_cast<size_t>(value);
        state_ = State::kTag;
        break;
      case State::kVarintValue:
        state_ = State::kTag;
        break;
    }
  }

  uLong crc_ = crc32(0L, Z_NULL, 0);
  State state_ = State::kTag;
  uint64_t value_ = 0;
  int shift_ = 0;
  size_t skip_ = 0;
  size_t payload_ = 0;
  bool malformed_ = false;
};

// A protobuf output stream that hands what is written to an UnsealedCrc through one small
// buffer, so checksumming a plan allocates no copy of the plan or of its bytes.
class CrcOutputStream : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit CrcOutputStream(UnsealedCrc* crc) : crc_(crc) {}
  ~CrcOutputStream() override { Flush(); }

  bool Next(void** data, int* size) override {
    Flush();
    *data = buffer_;
    *size = kBufferBytes;
    pending_ = kBufferBytes;
    return true;
  }
  void BackUp(int count) override { pending_ -= count; }
  int64_t ByteCount() const override { return written_ + pending_; }

  // Hands the bytes written so far to the CRC.
  void Flush() {
    crc_->Feed(buffer_, static_cast<size_t>(pending_));
    written_ += pending_;
    pending_ = 0;
  }

 private:
  static constexpr int kBufferBytes = 64 << 10;  // Stays in the core's cache.
  UnsealedCrc* crc_;
  unsigned char buffer_[kBufferBytes];
  int64_t written_ = 0;
  int pending_ = 0;
};

// Protobuf's wire format written backwards, last byte first, so that a message's length
// is known when its prefix is written: one walk over the message, no sizes computed
// beforehand. What is written reads forwards from data().
class ReverseWriter {
 public:
  void Clear() { begin_ = buffer_.size(); }
  const unsigned char* data() const { return buffer_.data() + begin_; }
  size_t size() const { return buffer_.size() - begin_; }

  void Varint(uint64_t value) {
    Reserve(10);
    int n = 1;
    for (uint64_t rest = value >> 7; rest != 0; rest >>= 7) ++n;
    begin_ -= n;
    unsigned char* out = buffer_.data() + begin_;
    for (int i = 0; i < n - 1; ++i, value >>= 7) out[i] = static_cast<unsigned char>(value | 0x80);
    out[n - 1] = static_cast<unsigned char>(value);
  }
  void Bytes(const std::string& bytes) {
    Reserve(bytes.size());
    begin_ -= bytes.size();
    std::memcpy(buffer_.data() + begin_, bytes.data(), bytes.size());
  }
  void Tag(int field, int wire_type) { Varint(static_cast<uint64_t>(field) << 3 | wire_type); }

 private:
  void Reserve(size_t bytes) {
    if (ABSL_PREDICT_TRUE(begin_ >= bytes)) return;
    Grow(bytes);
  }
  ABSL_ATTRIBUTE_NOINLINE void Grow(size_t bytes) {
    const size_t used = size();
    const size_t capacity = std::max(2 * buffer_.size(), used + bytes + (64 << 10));
    std::vector<unsigned char> larger(capacity);
    std::memcpy(larger.data() + capacity - used, data(), used);
    buffer_.swap(larger);
    begin_ = capacity - used;
  }

  std::vector<unsigned char> buffer_;
  size_t begin_ = 0;
};

// The fields of a message the DeviceEncoder below writes, as protobuf describes them.
struct FieldShape {
  int number;
  google::protobuf::FieldDescriptor::Type type;
  bool repeated;
  bool presence;  // Written when set, even to 0 (proto3 `optional`, messages).
};

bool HasShape(const google::protobuf::Descriptor* message, std::initializer_list<FieldShape> fields) {
  if (message->field_count() != static_cast<int>(fields.size()) || message->real_oneof_decl_count() > 0 ||
      message->extension_range_count() > 0) {
    return false;
  }
  for (const FieldShape& shape : fields) {
    const google::protobuf::FieldDescriptor* field = message->FindFieldByNumber(shape.number);
    if (field == nullptr || field->type() != shape.type || field->is_repeated() != shape.repeated ||
        field->has_presence() != shape.presence ||
        (field->is_repeated() && field->is_packable() && !field->is_packed())) {
      return false;
    }
  }
  return true;
}

// Whether a map field's entries are string keys to int64 values.
bool IsStringToInt64Map(const google::protobuf::FieldDescriptor* field) {
  return field != nullptr && field->is_map() &&
         field->message_type()->map_key()->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
         field->message_type()->map_value()->type() == google::protobuf::FieldDescriptor::TYPE_INT64;
}

// Whether the device messages have exactly the fields DeviceEncoder writes: a field
// added to plan.proto without teaching it makes every plan take protobuf's serializer.
bool DeviceEncoderKnowsSchema() {
  using F = google::protobuf::FieldDescriptor;
  static const bool known = [] {
    const google::protobuf::Descriptor* kernel = proto::KernelDef::descriptor();
    return HasShape(proto::DevicePlan::descriptor(),
                    {{1, F::TYPE_MESSAGE, false, true},
                     {2, F::TYPE_MESSAGE, true, false},
                     {3, F::TYPE_MESSAGE, true, false},
                     {4, F::TYPE_MESSAGE, true, false},
                     {5, F::TYPE_INT64, true, false},
                     {6, F::TYPE_INT64, false, false},
                     {7, F::TYPE_INT64, false, false},
                     {8, F::TYPE_INT64, false, false},
                     {9, F::TYPE_INT64, false, false},
                     {10, F::TYPE_INT64, false, false},
                     {11, F::TYPE_INT64, false, true}}) &&
           proto::DevicePlan::descriptor()->FindFieldByNumber(1)->message_type() == proto::DeviceId::descriptor() &&
           proto::DevicePlan::descriptor()->FindFieldByNumber(2)->message_type() == proto::ActorDef::descriptor() &&
           proto::DevicePlan::descriptor()->FindFieldByNumber(3)->message_type() == proto::RegisterDef::descriptor() &&
           proto::DevicePlan::descriptor()->FindFieldByNumber(4)->message_type() == proto::MemoryBlock::descriptor() &&
           HasShape(proto::DeviceId::descriptor(), {{1, F::TYPE_INT64, false, false}, {2, F::TYPE_INT64, false, false}}) &&
           HasShape(proto::ActorDef::descriptor(),
                    {{1, F::TYPE_INT64, false, false},
                     {2, F::TYPE_STRING, false, false},
                     {3, F::TYPE_ENUM, false, false},
                     {4, F::TYPE_ENUM, false, false},
                     {5, F::TYPE_MESSAGE, true, false},
                     {6, F::TYPE_INT64, true, false},
                     {7, F::TYPE_INT64, true, false},
                     {8, F::TYPE_INT64, false, false},
                     {9, F::TYPE_INT64, true, false},
                     {10, F::TYPE_INT64, false, false},
                     {11, F::TYPE_INT64, false, false},
                     {12, F::TYPE_BOOL, false, false},
                     {13, F::TYPE_BOOL, false, false},
                     {20, F::TYPE_INT64, false, true}}) &&
           proto::ActorDef::descriptor()->FindFieldByNumber(5)->message_type() == kernel &&
           HasShape(kernel,
                    {{1, F::TYPE_STRING, false, false},
                     {2, F::TYPE_STRING, false, false},
                     {3, F::TYPE_MESSAGE, true, false},
                     {4, F::TYPE_MESSAGE, true, false},
                     {5, F::TYPE_MESSAGE, true, false}}) &&
           kernel->FindFieldByNumber(3)->is_map() && IsStringToInt64Map(kernel->FindFieldByNumber(4)) &&
           IsStringToInt64Map(kernel->FindFieldByNumber(5)) &&
           HasShape(proto::RegisterDef::descriptor(),
                    {{1, F::TYPE_INT64, false, false},
                     {2, F::TYPE_STRING, false, false},
                     {3, F::TYPE_INT64, false, false},
                     {4, F::TYPE_INT64, true, false},
                     {5, F::TYPE_INT64, false, false},
                     {6, F::TYPE_INT64, false, false},
                     {7, F::TYPE_INT64, true, false},
                     {8, F::TYPE_ENUM, false, false},
                     {9, F::TYPE_INT64, false, false},
                     {10, F::TYPE_INT64, false, false},
                     {11, F::TYPE_BOOL, false, false},
                     {12, F::TYPE_INT64, false, true},
                     {13, F::TYPE_BOOL, false, false},
                     {20, F::TYPE_INT64, false, false}}) &&
           HasShape(proto::MemoryBlock::descriptor(),
                    {{1, F::TYPE_INT64, false, false},
                     {2, F::TYPE_INT64, false, false},
                     {3, F::TYPE_BOOL, false, false},
                     {4, F::TYPE_INT64, false, false}});
  }();
  return known;
}

bool HasUnknownFields(const google::protobuf::Message& message) {
  return !message.GetReflection()->GetUnknownFields(message).empty();
}

// Writes a DevicePlan as protobuf's deterministic serializer does (fields in number
// order, proto3 defaults left out, repeated int64 packed, map entries sorted by key with
// both key and value written), backwards. Gives up (returns false) on what it does not
// write: unknown fields and kernel attributes; protobuf's serializer then writes the
// plan. Only valid while DeviceEncoderKnowsSchema().
class DeviceEncoder {
 public:
  const unsigned char* data() const { return out_.data(); }
  size_t size() const { return out_.size(); }

  // The record of `device` as field `field` of its Plan.
  bool Encode(int field, const proto::DevicePlan& device) {
    out_.Clear();
    if (HasUnknownFields(device)) return false;
    if (device.has_pipeline_stage()) Int64(11, device.pipeline_stage(), true);
    Int64(10, device.register_count());
    Int64(9, device.bytes_received_per_iter());
    Int64(8, device.bytes_sent_per_iter());
    Int64(7, device.lower_bound_bytes());
    Int64(6, device.peak_bytes());
    Packed(5, device.collective_order());
    for (int b = device.memory_blocks_size() - 1; b >= 0; --b) {
      if (!Block(device.memory_blocks(b))) return false;
    }
    // The messages lie apart in memory: each is fetched ahead of its turn.
    for (int r = device.registers_size() - 1; r >= 0; --r) {
      if (r >= 2 * kAhead) Prefetch(&device.registers(r - 2 * kAhead));
      if (r >= kAhead) PrefetchParts(device.registers(r - kAhead));
      if (!Register(device.registers(r))) return false;
    }
    for (int a = device.actors_size() - 1; a >= 0; --a) {
      if (a >= 2 * kAhead) Prefetch(&device.actors(a - 2 * kAhead));
      if (a >= kAhead) PrefetchParts(device.actors(a - kAhead));
      if (!Actor(device.actors(a))) return false;
    }
    if (device.has_device()) {
      const proto::DeviceId& id = device.device();
      if (HasUnknownFields(id)) return false;
      const size_t end = out_.size();
      Int64(2, id.device());
      Int64(1, id.node());
      Close(1, end);
    }
    Close(field, 0);
    return true;
  }

 private:
  // Messages are fetched 2 * kAhead steps ahead of their turn, what they point to kAhead.
  static constexpr int kAhead = 4;
  template <typename T>
  static void Prefetch(const T* object) {
    const char* bytes = reinterpret_cast<const char*>(object);
    for (size_t line = 0; line < sizeof(T); line += 64) __builtin_prefetch(bytes + line);
  }
  static void PrefetchParts(const proto::RegisterDef& reg) {
    __builtin_prefetch(reg.consumer_actors().data());
    __builtin_prefetch(reg.shape().data());
    Prefetch(&reg.tensor());
  }
  static void PrefetchParts(const proto::ActorDef& actor) {
    __builtin_prefetch(actor.consumed_registers().data());
    __builtin_prefetch(actor.produced_registers().data());
    __builtin_prefetch(actor.control_predecessors().data());
    Prefetch(&actor.name());
    for (const proto::KernelDef& kernel : actor.kernels()) Prefetch(&kernel);
  }

  // Ends a message begun when out_ held `end` bytes: its length, then its tag.
  void Close(int field, size_t end) {
    out_.Varint(out_.size() - end);
    out_.Tag(field, 2);
  }
  void Int64(int field, int64_t value, bool present = false) {
    if (value == 0 && !present) return;
    out_.Varint(static_cast<uint64_t>(value));
    out_.Tag(field, 0);
  }
  void Enum(int field, int value) { Int64(field, value); }  // Sign-extended, as protobuf writes enums.
  void Bool(int field, bool value) { Int64(field, value ? 1 : 0); }
  void String(int field, const std::string& value) {
    if (value.empty()) return;
    out_.Bytes(value);
    out_.Varint(value.size());
    out_.Tag(field, 2);
  }
  void Packed(int field, const google::protobuf::RepeatedField<int64_t>& values) {
    if (values.empty()) return;
    const size_t end = out_.size();
    for (int i = values.size() - 1; i >= 0; --i) out_.Varint(static_cast<uint64_t>(values.Get(i)));
    Close(field, end);
  }
  void Map(int field, const google::protobuf::Map<std::string, int64_t>& map) {
    entries_.clear();
    for (const auto& entry : map) entries_.push_back(&entry);
    std::sort(entries_.begin(), entries_.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      const size_t end = out_.size();
      out_.Varint(static_cast<uint64_t>((*it)->second));
      out_.Tag(2, 0);
      out_.Bytes((*it)->first);
      out_.Varint((*it)->first.size());
      out_.Tag(1, 2);
      Close(field, end);
    }
  }

  bool Block(const proto::MemoryBlock& block) {
    if (HasUnknownFields(block)) return false;
    const size_t end = out_.size();
    Int64(4, block.slot_stride_bytes());
    Bool(3, block.persistent());
    Int64(2, block.size_bytes());
    Int64(1, block.id());
    Close(4, end);
    return true;
  }

  bool Register(const proto::RegisterDef& reg) {
    if (HasUnknownFields(reg)) return false;
    const size_t end = out_.size();
    Int64(20, reg.alias_offset_bytes());
    Bool(13, reg.per_iteration());
    if (reg.has_alias_of()) Int64(12, reg.alias_of(), true);
    Bool(11, reg.persistent());
    Int64(10, reg.offset());
    Int64(9, reg.memory_block());
    Enum(8, reg.dtype());
    Packed(7, reg.shape());
    Int64(6, reg.size_bytes());
    Int64(5, reg.count());
    Packed(4, reg.consumer_actors());
    Int64(3, reg.producer_actor());
    String(2, reg.tensor());
    Int64(1, reg.id());
    Close(3, end);
    return true;
  }

  bool Kernel(const proto::KernelDef& kernel) {
    if (!kernel.attrs().empty() || HasUnknownFields(kernel)) return false;
    const size_t end = out_.size();
    Map(5, kernel.outputs());
    Map(4, kernel.inputs());
    String(2, kernel.op_name());
    String(1, kernel.name());
    Close(5, end);
    return true;
  }

  bool Actor(const proto::ActorDef& actor) {
    if (HasUnknownFields(actor)) return false;
    const size_t end = out_.size();
    if (actor.has_bucket_id()) Int64(20, actor.bucket_id(), true);
    Bool(13, actor.after_micro_batches());
    Bool(12, actor.per_iteration());
    Int64(11, actor.boxing_step());
    Int64(10, actor.boxing_id());
    Packed(9, actor.control_predecessors());
    Int64(8, actor.collective_id());
    Packed(7, actor.produced_registers());
    Packed(6, actor.consumed_registers());
    for (int k = actor.kernels_size() - 1; k >= 0; --k) {
      if (!Kernel(actor.kernels(k))) return false;
    }
    Enum(4, actor.thread());
    Enum(3, actor.kind());
    String(2, actor.name());
    Int64(1, actor.id());
    Close(2, end);
    return true;
  }

  ReverseWriter out_;
  std::vector<const google::protobuf::Map<std::string, int64_t>::value_type*> entries_;
};

absl::Status CheckSize(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan is ", bytes, " bytes, over protobuf's 2 GiB limit"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializePlanDeterministically(const proto::Plan& plan) {
  OF_RETURN_IF_ERROR(CheckSize(plan.ByteSizeLong()));
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // Maps otherwise serialize in hash order, and plans must be byte-identical.
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded) || coded.HadError()) {
      return absl::InternalError("protobuf failed to serialize the plan");
    }
  }  // The coded stream trims `bytes` to what was written when it goes out of scope.
  return bytes;
}

namespace {

// PlanChecksum with the device plans written by DeviceEncoder and the other fields by
// protobuf, one by one in number order; nullopt when the encoder gives up or the plan
// may be over the size limit (PlanChecksumByProtobuf then decides).
std::optional<uint32_t> FastPlanChecksum(const proto::Plan& plan) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormat;
  if (!DeviceEncoderKnowsSchema() || HasUnknownFields(plan)) return std::nullopt;
  static const std::vector<const FieldDescriptor*>* const fields = [] {
    auto* sorted = new std::vector<const FieldDescriptor*>;
    const google::protobuf::Descriptor* descriptor = proto::Plan::descriptor();
    for (int f = 0; f < descriptor->field_count(); ++f) sorted->push_back(descriptor->field(f));
    std::sort(sorted->begin(), sorted->end(),
              [](const FieldDescriptor* a, const FieldDescriptor* b) { return a->number() < b->number(); });
    return sorted;
  }();
  const FieldDescriptor* devices = proto::Plan::descriptor()->FindFieldByName("devices");
  const FieldDescriptor* checksum = proto::Plan::descriptor()->FindFieldByName("checksum");
  if (devices == nullptr || !devices->is_repeated() || devices->message_type() != proto::DevicePlan::descriptor() ||
      checksum == nullptr || checksum->number() != 10 || checksum->type() != FieldDescriptor::TYPE_FIXED32) {
    return std::nullopt;
  }
  // The other fields' sizes, which also caches those their serialization below uses.
  size_t total = plan.checksum() != 0 ? kChecksumFieldBytes : 0;
  for (const FieldDescriptor* field : *fields) {
    if (field == devices || field == checksum) continue;
    total += WireFormat::FieldByteSize(field, plan);
    if (total > static_cast<size_t>(INT_MAX)) return std::nullopt;
  }
  DeviceEncoder encoder;
  UnsealedCrc crc;
  {
    CrcOutputStream stream(&crc);
    {
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      for (const FieldDescriptor* field : *fields) {
        if (field == checksum) continue;  // Left out of the CRC.
        if (field != devices) {
          WireFormat::SerializeFieldWithCachedSizes(field, plan, &coded);
          continue;
        }
        for (const proto::DevicePlan& device : plan.devices()) {
          if (!encoder.Encode(devices->number(), device)) return std::nullopt;
          total += encoder.size();
          if (total > static_cast<size_t>(INT_MAX)) return std::nullopt;
          coded.WriteRaw(encoder.data(), static_cast<int>(encoder.size()));
        }
      }
      if (coded.HadError()) return std::nullopt;
    }  // The coded stream backs up what it did not use.
    stream.Flush();
  }
  if (!crc.Complete()) return std::nullopt;
  return crc.crc();
}

// PlanChecksum by protobuf's own deterministic serializer.
absl::StatusOr<uint32_t> PlanChecksumByProtobuf(const proto::Plan& plan) {
  // Serializes the plan as it is (deterministically, like SerializePlanDeterministically)
  // and leaves its checksum field's bytes out of the CRC: the same CRC as serializing a
  // copy with the field cleared, without the copy or a buffer the plan's size.
  OF_RETURN_IF_ERROR(CheckSize(plan.ByteSizeLong()));  // Also caches the sizes written below.
  UnsealedCrc crc;
  {
    CrcOutputStream stream(&crc);
    {
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      plan.SerializeWithCachedSizes(&coded);
      if (coded.HadError()) return absl::InternalError("protobuf failed to serialize the plan");
    }  // The coded stream backs up what it did not use.
    stream.Flush();
  }
  if (!crc.Complete()) return absl::InternalError("the plan's serialization ended inside a field");
  return crc.crc();
}

}  // namespace

absl::StatusOr<uint32_t> PlanChecksum(const proto::Plan& plan) {
  if (std::optional<uint32_t> crc = FastPlanChecksum(plan)) return *crc;
  return PlanChecksumByProtobuf(plan);
}

absl::Status SealPlan(proto::Plan* plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t checksum, PlanChecksum(*plan));
  plan->set_checksum(checksum);
  return absl::OkStatus();
}

absl::Status VerifyPlanChecksum(const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t expected, PlanChecksum(plan));
  if (plan.checksum() == expected) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "plan checksum 0x%08x does not match its contents (0x%08x): the plan was damaged or "
      "edited after it was compiled",
      plan.checksum(), expected));
}

}  // namespace oneflow
