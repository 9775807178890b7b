// The gradient reduction of a replicated embedding table (P -> B), row-sparse against
// dense, as JSON lines: one per (distribution, case), the dense all-reduce measured in the
// same run as the reference.
//   {"bench":"sparse_embedding_grad","distribution":"zipf","case":"sparse","ranks":4,
//    "vocab":50000,"hidden":256,"tokens_per_rank":2048,"unique_rows_per_rank":...,
//    "density":...,"crossover_density":...,"ran":"sparse","payload_bytes_per_rank":...,
//    "metadata_bytes_per_rank":...,"bytes_per_rank":...,"dense_bytes_per_rank":...,
//    "bytes_ratio":...,"seconds":...,"dense_seconds":...,"speedup":...,"ok":true}
// Cases: "sparse" is SparseAllReduceRows with kSparse, "auto" with kAuto (`ran` says which
// side it picked), "dense" the communicator's AllReduce of the whole [vocab, hidden]
// table. Bytes are what a rank sends, as sparse_rows.h counts them (payload: (P-1) x its
// touched rows x (4 + row bytes); metadata: (P-1) x 8; dense: a ring's 2(P-1)/P x the
// table), averaged over ranks; bytes_ratio = dense_bytes_per_rank / bytes_per_rank (goal
// of the issue: >= 10 at this density). density = mean unique rows per rank / vocab;
// crossover_density = rho*, below which kAuto goes sparse.
//
// Each rank draws `tokens` ids from its own stream: "zipf", P(id = k) proportional to
// 1 / (k + 1)^s (s = --zipf_exponent, 1.0), or "uniform". Its gradient is the whole
// table, zero outside its ids' rows. `seconds` is the median over rounds of one call as
// rank 0 sees it; each round times the three cases back to back (drift on a shared
// machine hits all alike). The ranks are threads of one process, so the times measure
// memory traffic on this machine, not a network: the dense all-reduce moves the
// 51 MB table through memory several times per rank, the sparse one zeroes the output
// table once and sums the touched rows. `ok`: the sparse and auto outputs equal the
// dense all-reduce's bit for bit (exit status 1 otherwise).
//
//   bazel run -c opt //bench/sparse:sparse_embedding_bench
//   bazel run -c opt //bench/sparse:sparse_embedding_bench -- --distribution=uniform
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "bench/lib/statistics.h"
#include "kernels/boxing/sparse_rows.h"
#include "oneflow_core/comm/in_process/communicator.h"

ABSL_FLAG(int64_t, vocab, 50000, "rows of the embedding table");
ABSL_FLAG(int64_t, hidden, 256, "f32 elements per row");
ABSL_FLAG(int64_t, ranks, 4, "ranks (threads) of the group");
ABSL_FLAG(int64_t, tokens, 2048, "ids per rank");
ABSL_FLAG(std::vector<std::string>, distribution, std::vector<std::string>({"zipf", "uniform"}),
          "id distributions to measure: zipf, uniform");
ABSL_FLAG(double, zipf_exponent, 1.0, "s of the Zipf distribution");
ABSL_FLAG(int, repetitions, 5, "rounds; the line gives the median");
ABSL_FLAG(int, iterations, 3, "calls per case per round");
ABSL_FLAG(uint64_t, seed, 1, "seed of the ids");

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;

enum class Case { kSparse, kAuto, kDense };
const char* CaseName(Case c) {
  return c == Case::kSparse ? "sparse" : c == Case::kAuto ? "auto" : "dense";
}

std::vector<int64_t> DrawIds(const std::string& distribution, int64_t rank) {
  const int64_t vocab = absl::GetFlag(FLAGS_vocab);
  std::mt19937_64 engine(absl::GetFlag(FLAGS_seed) * 1000003 + rank);
  std::vector<int64_t> ids(absl::GetFlag(FLAGS_tokens));
  if (distribution == "uniform") {
    std::uniform_int_distribution<int64_t> uniform(0, vocab - 1);
    for (int64_t& id : ids) id = uniform(engine);
    return ids;
  }
  std::vector<double> cdf(vocab);
  double sum = 0;
  for (int64_t k = 0; k < vocab; ++k) {
    sum += 1.0 / std::pow(static_cast<double>(k + 1), absl::GetFlag(FLAGS_zipf_exponent));
    cdf[k] = sum;
  }
  std::uniform_real_distribution<double> uniform(0, sum);
  for (int64_t& id : ids) {
    id = std::min<int64_t>(std::lower_bound(cdf.begin(), cdf.end(), uniform(engine)) - cdf.begin(),
                           vocab - 1);
  }
  return ids;
}

struct Rank {
  RowSet touched;
  std::vector<float> gradient;  // [vocab, hidden], zero outside `touched`
  std::vector<float> output;
  RowSparseTraffic traffic[3];  // per Case
};

// Runs `iterations` calls of case `c` on every rank; returns seconds per call on rank 0.
double Run(InProcessGroup& group, std::vector<Rank>& ranks, Case c, int iterations) {
  const int64_t vocab = absl::GetFlag(FLAGS_vocab);
  const int64_t hidden = absl::GetFlag(FLAGS_hidden);
  std::atomic<bool> failed{false};
  double seconds = 0;
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < group.size(); ++rank) {
    threads.emplace_back([&, rank] {
      Communicator& communicator = group.communicator(rank);
      Rank& r = ranks[rank];
      CollectiveOptions options;
      options.description = "sparse_embedding_bench";
      const RowSparseArgs args{vocab, hidden * 4, DType::kF32, &communicator,
                               c == Case::kSparse ? SparseDecision::kSparse : SparseDecision::kAuto};
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < iterations; ++i) {
        const absl::Status status =
            c == Case::kDense
                ? communicator.AllReduce(r.gradient.data(), r.output.data(), vocab * hidden, options)
                : SparseAllReduceRows(args, r.touched, r.gradient.data(), r.output.data(), options,
                                      &r.traffic[static_cast<int>(c)]);
        if (!status.ok()) {
          std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
          failed = true;
          return;
        }
      }
      if (rank == 0) seconds = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (failed) std::exit(1);
  return seconds / iterations;
}

bool Measure(const std::string& distribution) {
  const int64_t ranks = absl::GetFlag(FLAGS_ranks);
  const int64_t vocab = absl::GetFlag(FLAGS_vocab);
  const int64_t hidden = absl::GetFlag(FLAGS_hidden);
  const int64_t row_bytes = hidden * 4;
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(ranks, "bench")).value();
  std::vector<Rank> state(ranks);
  double unique_rows = 0;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    const std::vector<int64_t> ids = DrawIds(distribution, rank);
    Rank& r = state[rank];
    r.touched = *RowSet::FromRows(ids, vocab);
    r.gradient.assign(vocab * hidden, 0.0f);
    r.output.assign(vocab * hidden, 0.0f);
    // Each occurrence of an id adds a small pseudo-random vector to its row.
    for (size_t t = 0; t < ids.size(); ++t) {
      float* row = r.gradient.data() + ids[t] * hidden;
      for (int64_t e = 0; e < hidden; ++e) {
        row[e] += static_cast<float>(((t * 131 + e * 17 + rank * 7) % 199) - 99) * 1e-3f;
      }
    }
    unique_rows += static_cast<double>(r.touched.size());
  }
  unique_rows /= ranks;

  // Correctness first: the sparse and auto outputs against the dense all-reduce's bits.
  bool ok = true;
  Run(*group, state, Case::kDense, 1);
  std::vector<std::vector<float>> dense_outputs;
  for (Rank& r : state) dense_outputs.push_back(r.output);
  for (Case c : {Case::kSparse, Case::kAuto}) {
    Run(*group, state, c, 1);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      ok &= std::memcmp(state[rank].output.data(), dense_outputs[rank].data(),
                        dense_outputs[rank].size() * sizeof(float)) == 0;
    }
  }

  const Case cases[] = {Case::kSparse, Case::kAuto, Case::kDense};
  std::vector<double> seconds[3];
  for (Rank& r : state) {
    for (RowSparseTraffic& t : r.traffic) t = RowSparseTraffic();
  }
  int64_t calls = 0;
  for (int round = 0; round < std::max(1, absl::GetFlag(FLAGS_repetitions)); ++round) {
    for (int i = 0; i < 3; ++i) {
      seconds[i].push_back(Run(*group, state, cases[i], absl::GetFlag(FLAGS_iterations)));
    }
    calls += absl::GetFlag(FLAGS_iterations);
  }
  // A ring all-reduce's bytes per rank: what the dense case sends.
  const double dense_ring = 2.0 * (ranks - 1) / ranks * vocab * row_bytes;
  const double dense_seconds = Median(seconds[2]);
  for (int i = 0; i < 3; ++i) {
    // One call's traffic per rank, the mean over ranks.
    double payload = 0, metadata = 0, dense = 0;
    int64_t sparse_calls = 0;
    for (const Rank& r : state) {
      payload += r.traffic[i].payload_bytes;
      metadata += r.traffic[i].metadata_bytes;
      dense += r.traffic[i].dense_bytes;
      sparse_calls += r.traffic[i].sparse_calls;
    }
    const double per_call_and_rank = 1.0 / static_cast<double>(ranks * calls);
    const bool ran_sparse = sparse_calls > 0;
    if (cases[i] == Case::kDense) {
      payload = dense_ring;
      dense = dense_ring;
    } else {
      payload *= per_call_and_rank;
      metadata *= per_call_and_rank;
      dense *= per_call_and_rank;
    }
    const double bytes = payload + metadata;
    std::printf(
        "{\"bench\":\"sparse_embedding_grad\",\"distribution\":\"%s\",\"case\":\"%s\","
        "\"ranks\":%lld,\"vocab\":%lld,\"hidden\":%lld,\"tokens_per_rank\":%lld,"
        "\"unique_rows_per_rank\":%.1f,\"density\":%.5f,\"crossover_density\":%.5f,"
        "\"ran\":\"%s\",\"payload_bytes_per_rank\":%.0f,\"metadata_bytes_per_rank\":%.0f,"
        "\"bytes_per_rank\":%.0f,\"dense_bytes_per_rank\":%.0f,\"bytes_ratio\":%.2f,"
        "\"seconds\":%.6f,\"dense_seconds\":%.6f,\"speedup\":%.2f,\"ok\":%s}\n",
        distribution.c_str(), CaseName(cases[i]), static_cast<long long>(ranks),
        static_cast<long long>(vocab), static_cast<long long>(hidden),
        static_cast<long long>(absl::GetFlag(FLAGS_tokens)), unique_rows, unique_rows / vocab,
        AllReduceCrossoverDensity(ranks, row_bytes), ran_sparse ? "sparse" : "dense", payload,
        metadata, bytes, dense, dense / bytes, Median(seconds[i]), dense_seconds,
        dense_seconds / Median(seconds[i]), ok ? "true" : "false");
  }
  std::fflush(stdout);
  return ok;
}

int Main() {
  std::fprintf(stderr, "sparse_embedding_bench: %u hardware threads\n",
               std::thread::hardware_concurrency());
  bool all_ok = true;
  for (const std::string& distribution : absl::GetFlag(FLAGS_distribution)) {
    if (distribution != "zipf" && distribution != "uniform") {
      std::fprintf(stderr, "unknown --distribution '%s'; valid: zipf, uniform\n",
                   distribution.c_str());
      return 1;
    }
    all_ok &= Measure(distribution);
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::Main();
}
