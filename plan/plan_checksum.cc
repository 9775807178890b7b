#include "plan/plan_checksum.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "oneflow_core/run_tasks.h"
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
// the payloads themselves (devices, job, ...) are only summed, never parsed. Protobuf
// writes canonical tags (field 10 as fixed32 is the single byte kChecksumTag) and no
// groups; bytes from elsewhere that spell the field another way are summed with it, so
// their checksum cannot match and the plan is refused, as a damaged one should be.
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

absl::Status CheckSize(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan is ", bytes, " bytes, over protobuf's 2 GiB limit"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializePlanDeterministically(const proto::Plan& plan) {
  // One size pass, then the bytes written straight into a buffer of that size: protobuf's
  // SerializeToCodedStream would walk the whole plan for its size a second time, and a
  // growing string would copy the (100 MB) bytes as it doubles.
  const size_t size = plan.ByteSizeLong();  // Also caches the sizes written below.
  OF_RETURN_IF_ERROR(CheckSize(size));
  std::string bytes(size, '\0');
  {
    google::protobuf::io::ArrayOutputStream array(bytes.data(), static_cast<int>(size));
    google::protobuf::io::CodedOutputStream coded(&array);
    // Maps otherwise serialize in hash order, and plans must be byte-identical.
    coded.SetSerializationDeterministic(true);
    plan.SerializeWithCachedSizes(&coded);
    if (coded.HadError() || static_cast<size_t>(coded.ByteCount()) != size) {
      return absl::InternalError("protobuf failed to serialize the plan");
    }
  }
  return bytes;
}

namespace {

// PlanChecksum of a plan in memory: the CRC of the bytes protobuf's deterministic
// serializer writes for it, fed to the CRC as they are written.
absl::StatusOr<uint32_t> StreamedPlanChecksum(const proto::Plan& plan) {
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

absl::StatusOr<uint32_t> PlanChecksum(const proto::Plan& plan) { return StreamedPlanChecksum(plan); }

absl::StatusOr<uint32_t> SerializedPlanChecksum(absl::string_view bytes) {
  UnsealedCrc crc;
  crc.Feed(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  if (!crc.Complete()) {
    return absl::InvalidArgumentError(
        "the plan's bytes end inside a field or hold a group: not a serialized plan");
  }
  return crc.crc();
}

absl::Status SealPlan(proto::Plan* plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t checksum, PlanChecksum(*plan));
  plan->set_checksum(checksum);
  return absl::OkStatus();
}

namespace {

// What a plan's bytes are made of, apart from its devices: the plan without its devices
// (the shell), serialized, and where in those bytes the devices (field 6) and the
// checksum field (10) go.
struct Shell {
  std::string bytes;
  size_t devices_at = 0;   // Before the first top-level field numbered above 6.
  size_t checksum_at = 0;  // The checksum field's tag byte.
};

// The top-level fields of `bytes` (a serialized message; the shell is a few MB at most):
// calls visit(number, offset of its tag) for each. False when they are not whole fields.
template <typename Visit>
bool ForEachTopLevelField(absl::string_view bytes, Visit visit) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  while (true) {
    const size_t at = static_cast<size_t>(input.CurrentPosition());
    const uint32_t tag = input.ReadTag();
    if (tag == 0) return at == bytes.size();
    visit(static_cast<int>(tag >> 3), at);
    uint64_t value = 0;
    switch (tag & 7) {
      case 0:
        if (!input.ReadVarint64(&value)) return false;
        break;
      case 1:
        if (!input.Skip(8)) return false;
        break;
      case 2: {
        uint32_t length = 0;
        if (!input.ReadVarint32(&length) || !input.Skip(static_cast<int>(length))) return false;
        break;
      }
      case 5:
        if (!input.Skip(4)) return false;
        break;
      default:
        return false;
    }
  }
}

uLong Crc(uLong crc, const char* data, size_t size) {
  return crc32_z(crc, reinterpret_cast<const Bytef*>(data), size);
}

}  // namespace

absl::StatusOr<std::string> SealAndSerializePlan(proto::Plan* plan) {
  // Any non-zero value makes protobuf write the field's five bytes where they belong
  // (between fields 9 and 20); the CRC leaves them out, so the value does not matter.
  plan->set_checksum(0xFFFFFFFFu);
  // The devices are nearly all of the bytes (99% for issue 29's gpt): each is sized,
  // serialized and summed on its own, on several threads, into its place. Protobuf writes
  // a message's fields in number order and each element of a repeated message field as
  // its tag, its length and its bytes, so the result is what its serializer gives for
  // the whole plan, whatever the number of threads.
  google::protobuf::RepeatedPtrField<proto::DevicePlan> devices;
  devices.Swap(plan->mutable_devices());
  Shell shell;
  absl::StatusOr<std::string> shell_bytes = SerializePlanDeterministically(*plan);
  devices.Swap(plan->mutable_devices());
  OF_RETURN_IF_ERROR(shell_bytes.status());
  shell.bytes = *std::move(shell_bytes);
  shell.devices_at = shell.bytes.size();
  int checksums = 0;
  const bool whole = ForEachTopLevelField(shell.bytes, [&](int number, size_t at) {
    if (number > 6 && shell.devices_at == shell.bytes.size()) shell.devices_at = at;
    if (number == 10) {
      shell.checksum_at = at;
      ++checksums;
    }
  });
  if (!whole || checksums != 1 || shell.checksum_at < shell.devices_at ||
      static_cast<unsigned char>(shell.bytes[shell.checksum_at]) != kChecksumTag) {
    return absl::InternalError("the plan's serialization has no whole checksum field");
  }

  const int count = plan->devices_size();
  const int threads = TaskThreads();
  std::vector<size_t> sizes(count);
  RunTasksOnThreads(count, threads, [&](int d) { sizes[d] = plan->devices(d).ByteSizeLong(); });
  // Device d's field starts at offsets[d]: the shell's head, then each device's tag
  // (one byte: field 6, length-delimited), length and bytes.
  constexpr unsigned char kDeviceTag = (6 << 3) | 2;
  std::vector<size_t> offsets(count + 1);
  offsets[0] = shell.devices_at;
  for (int d = 0; d < count; ++d) {
    offsets[d + 1] = offsets[d] + 1 + google::protobuf::io::CodedOutputStream::VarintSize64(sizes[d]) + sizes[d];
  }
  const size_t size = offsets[count] + (shell.bytes.size() - shell.devices_at);
  OF_RETURN_IF_ERROR(CheckSize(size));
  std::string bytes(size, '\0');
  char* const out = bytes.data();
  std::memcpy(out, shell.bytes.data(), shell.devices_at);
  std::memcpy(out + offsets[count], shell.bytes.data() + shell.devices_at, shell.bytes.size() - shell.devices_at);
  // Each device's CRC is summed while its bytes are still in cache, then the pieces are
  // combined in order (zlib's crc32_combine).
  std::vector<uLong> crcs(count);
  std::atomic<bool> failed{false};
  RunTasksOnThreads(count, threads, [&](int d) {
    uint8_t* at = reinterpret_cast<uint8_t*>(out + offsets[d]);
    *at++ = kDeviceTag;
    at = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(sizes[d], at);
    google::protobuf::io::ArrayOutputStream array(at, static_cast<int>(sizes[d]));
    google::protobuf::io::CodedOutputStream coded(&array);
    coded.SetSerializationDeterministic(true);
    plan->devices(d).SerializeWithCachedSizes(&coded);
    if (coded.HadError() || static_cast<size_t>(coded.ByteCount()) != sizes[d]) failed = true;
    crcs[d] = Crc(crc32(0L, Z_NULL, 0), out + offsets[d], offsets[d + 1] - offsets[d]);
  });
  if (failed) return absl::InternalError("protobuf failed to serialize the plan");
  uLong crc = Crc(crc32(0L, Z_NULL, 0), out, shell.devices_at);
  for (int d = 0; d < count; ++d) {
    crc = crc32_combine(crc, crcs[d], static_cast<z_off_t>(offsets[d + 1] - offsets[d]));
  }
  // The shell's tail, without the checksum field.
  const size_t at = offsets[count] + (shell.checksum_at - shell.devices_at);
  crc = Crc(crc, out + offsets[count], at - offsets[count]);
  crc = Crc(crc, out + at + kChecksumFieldBytes, size - at - kChecksumFieldBytes);
  const uint32_t checksum = static_cast<uint32_t>(crc);
  plan->set_checksum(checksum);
  if (checksum == 0) {
    // proto3 writes a zero fixed32 not at all: the bytes of the plan as it now is.
    bytes.erase(at, kChecksumFieldBytes);
  } else {
    for (int k = 0; k < 4; ++k) {  // fixed32: little-endian, after the tag byte
      bytes[at + 1 + k] = static_cast<char>((checksum >> (8 * k)) & 0xff);
    }
  }
  return bytes;
}

namespace {

absl::Status CompareChecksum(uint32_t carried, uint32_t expected) {
  if (carried == expected) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "plan checksum 0x%08x does not match its contents (0x%08x): the plan was damaged or "
      "edited after it was compiled",
      carried, expected));
}

}  // namespace

absl::Status VerifyPlanChecksum(const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t expected, PlanChecksum(plan));
  return CompareChecksum(plan.checksum(), expected);
}

absl::Status VerifySerializedPlanChecksum(const proto::Plan& plan, absl::string_view bytes) {
  absl::StatusOr<uint32_t> expected = SerializedPlanChecksum(bytes);
  if (!expected.ok()) return absl::FailedPreconditionError(expected.status().message());
  return CompareChecksum(plan.checksum(), *expected);
}

}  // namespace oneflow
