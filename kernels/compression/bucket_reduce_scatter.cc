#include "kernels/compression/bucket_reduce_scatter.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/compression/compressed_exchange.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

namespace oneflow {

using compressed_exchange::CheckResidual;
using compressed_exchange::ElementsOf;
using compressed_exchange::ExchangeAndReduce;
using compressed_exchange::Invalid;
using compressed_exchange::Layout;
using compressed_exchange::Piece;
using compressed_exchange::Split;
using compressed_exchange::SplitOf;

absl::StatusOr<CompressedTraffic> CompressedBucketReduceScatter(
    Communicator& communicator, const CodecOptions& codec, float* data, int64_t chunk,
    absl::Span<const CompressedScatterBucketMember> members, const CollectiveOptions& options) {
  constexpr absl::string_view kCall = "compressed bucket reduce_scatter";
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  absl::Status status = CheckCodecOptions(codec);
  if (status.ok() && chunk < 0) status = absl::InvalidArgumentError(absl::StrCat("chunk is ", chunk, " floats"));
  if (status.ok()) status = CheckBuffer("data", data, size * chunk);
  if (!status.ok()) return Invalid(options, kCall, status.message());
  int64_t end = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    const CompressedScatterBucketMember& member = members[m];
    const std::string who = absl::StrCat("member ", m);
    if (absl::Status counts = CheckCounts(absl::StrCat(who, " counts"), member.counts, size); !counts.ok()) {
      return Invalid(options, kCall, counts.message());
    }
    const int64_t largest = *std::max_element(member.counts.begin(), member.counts.end());
    if (member.offset < end || member.offset + largest > chunk) {
      return Invalid(options, kCall,
                     absl::StrCat(who, " covers [", member.offset, ", ", member.offset + largest,
                                  ") of each chunk of ", chunk,
                                  " floats; members must be in order, apart and inside the chunk"));
    }
    end = member.offset + largest;
    OF_RETURN_IF_ERROR(CheckResidual(options, absl::StrCat(kCall, " ", who), member.residual,
                                     ReduceScatterResidualElements(member.counts)));
  }
  // Rank d receives every member's part d, in member order. Each piece is encoded as the
  // member's own call encodes its chunk d: its logical index is the chunk's place in the
  // member's packed input, and so is its residual's.
  Layout layout(size);
  for (const CompressedScatterBucketMember& member : members) {
    const Split split = SplitOf(member.counts);
    for (int64_t d = 0; d < size; ++d) {
      Piece piece{d * chunk + member.offset, member.counts[d], split.offsets[d]};
      if (!member.residual.empty()) piece.residual = member.residual.data() + split.offsets[d];
      piece.encoding_seed = MixSeed(member.seed, rank);
      piece.traffic = member.traffic;
      layout[d].push_back(piece);
    }
  }
  // The reduction lands in scratch (the exchange reads this rank's own parts from `data`
  // while it sums), then each part moves to its place in this rank's chunk.
  std::vector<float> reduced(ElementsOf(layout[rank]));
  OF_ASSIGN_OR_RETURN(CompressedTraffic traffic,
                      ExchangeAndReduce(communicator, codec, MixSeed(codec.seed, rank), data, layout,
                                        reduced.data(), options));
  int64_t position = 0;
  for (const CompressedScatterBucketMember& member : members) {
    const int64_t count = member.counts[rank];
    if (count > 0) {
      std::memcpy(data + rank * chunk + member.offset, reduced.data() + position, count * sizeof(float));
    }
    position += count;
  }
  return traffic;
}

}  // namespace oneflow
