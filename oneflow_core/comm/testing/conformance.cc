#include "oneflow_core/comm/testing/conformance.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace comm_testing {

float Value(int64_t rank, int64_t element) {
  return static_cast<float>((element * 7919 + rank * 104729) % 10007) * 0.013f - 61.0f;
}

uint8_t Byte(int64_t rank, int64_t index) {
  return static_cast<uint8_t>(rank * 31 + index * 7 + 1);
}

std::vector<float> RankFloats(int64_t rank, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = Value(rank, i);
  return values;
}

std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale) {
  std::vector<int64_t> counts(ranks);
  for (int64_t r = 0; r < ranks; ++r) counts[r] = ((r * 5 + 3) % 7 % 6) * scale;
  if (ranks > 1) counts[1] = 0;
  return counts;
}

std::vector<float> ReferenceReduction(const GroupShape& shape, ReduceOp op, int64_t first,
                                      int64_t count) {
  auto combine = [op](float a, float b) {
    return op == ReduceOp::kSum ? a + b : op == ReduceOp::kMax ? std::max(a, b) : std::min(a, b);
  };
  std::vector<float> result(count);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t element = first + i;
    float total = 0.0f;
    for (int64_t node = 0; node < shape.nodes; ++node) {
      float partial = Value(node * shape.local_size, element);
      for (int64_t local = 1; local < shape.local_size; ++local) {
        partial = combine(partial, Value(node * shape.local_size + local, element));
      }
      total = node == 0 ? partial : combine(total, partial);
    }
    result[i] = total;
  }
  return result;
}

std::string Description(int64_t rank) {
  return absl::StrCat("actor 'h/boxing_3/all_reduce' on rank ", rank, " collective 12 iteration 7");
}

CollectiveOptions Options(int64_t rank, absl::Duration timeout) {
  CollectiveOptions options;
  options.timeout = timeout;
  options.description = Description(rank);
  return options;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const std::vector<std::string>& AllKinds() {
  static const std::vector<std::string>* const kinds = new std::vector<std::string>{
      "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"};
  return *kinds;
}

absl::Status CallCollective(Communicator& communicator, absl::string_view kind,
                            const CollectiveOptions& options) {
  const int64_t n = communicator.size();
  std::vector<float> input(4 * n * n, 1.0f);
  std::vector<float> output(4 * n * n, 0.0f);
  const std::vector<int64_t> counts(n, 4);
  const std::vector<int64_t> matrix(n * n, 4);
  if (kind == "all_reduce") {
    return communicator.AllReduce(input.data(), output.data(), 4 * n, options);
  }
  if (kind == "reduce_scatter") {
    return communicator.ReduceScatter(input.data(), output.data(), counts, options);
  }
  if (kind == "all_gather") {
    return communicator.AllGather(input.data(), output.data(), counts, options);
  }
  if (kind == "all_to_all") {
    return communicator.AllToAll(input.data(), output.data(), matrix, options);
  }
  EXPECT_EQ(kind, "broadcast");
  return communicator.Broadcast(output.data(), 64, /*root=*/0, options);
}

void Connect(TestGroup& group) {
  RunOnRankThreads(group.size(), [&](int64_t rank) {
    for (const char* kind : {"all_reduce", "broadcast"}) {
      const absl::Status status =
          CallCollective(group[rank], kind, Options(rank, absl::Seconds(30)));
      EXPECT_TRUE(status.ok()) << status;
    }
  });
}

std::vector<int64_t> RankNumbers(const GroupShape& shape, int64_t rank) {
  std::vector<int64_t> numbers = {rank};
  if (shape.nodes > 1) {
    numbers.push_back(rank / shape.local_size);
    numbers.push_back(rank % shape.local_size);
  }
  return numbers;
}

bool NamesWaitFor(absl::string_view message, const std::vector<int64_t>& numbers) {
  // Each "rank N" or "ranks N, M" followed by " to arrive" or " to join the group".
  for (size_t at = message.find("rank"); at != absl::string_view::npos;
       at = message.find("rank", at + 1)) {
    absl::string_view rest = message.substr(at + 4);
    if (absl::StartsWith(rest, "s")) rest.remove_prefix(1);
    if (!absl::StartsWith(rest, " ")) continue;
    rest.remove_prefix(1);
    std::vector<int64_t> named;
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) {
      size_t digits = 0;
      while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) {
        ++digits;
      }
      int64_t number = 0;
      if (!absl::SimpleAtoi(rest.substr(0, digits), &number)) break;
      named.push_back(number);
      rest.remove_prefix(digits);
      if (!absl::StartsWith(rest, ", ")) break;
      rest.remove_prefix(2);
    }
    if (!absl::StartsWith(rest, " to arrive") && !absl::StartsWith(rest, " to join the group")) {
      continue;
    }
    for (int64_t number : named) {
      if (std::find(numbers.begin(), numbers.end(), number) != numbers.end()) return true;
    }
  }
  return false;
}

}  // namespace comm_testing
}  // namespace oneflow
