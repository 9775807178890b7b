// The tensor-parallel edges of a search priced once: with --compression other than off,
// each tp all-reduce is priced by the compiler's boxing planner (PlanBoxing, a search over
// the codecs and routes of the edge), which is most of a layout's pricing time. Many
// layouts of one search box the same edge: the ZeRO stages and recomputation modes of one
// dp x tp x pp x micro-batches leave every tp edge as it is, and layouts of one dp x tp
// with other micro-batch counts often give an edge the same rows. The search keeps one
// cache for all its layouts (compiler/auto_parallel/search.h), so each distinct edge is
// planned once.
//
// What an edge's price depends on, and so the key: the tensor (its f32 elements), the
// boxing (P -> B over one hierarchy axis: that axis), the group (the stage placement's
// devices and hierarchy, which fix the route over the links), the links and the codec
// set (the cluster and the compression policy). The last two are those of the
// PriceOptions the cache was made for, one object for the whole search: PriceLayout
// refuses a cache made for other options (a bug of the caller).
#ifndef COMPILER_AUTO_PARALLEL_EDGE_PRICE_CACHE_H_
#define COMPILER_AUTO_PARALLEL_EDGE_PRICE_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace oneflow::auto_parallel {

struct PriceOptions;

// One edge as the planner priced it (per micro-batch), collective call costs excluded.
struct PricedEdge {
  double seconds = 0;        // the plan's time: dense or with the codec it chose
  double dense_seconds = 0;  // the same steps dense
  int64_t steps = 0;         // collective calls the plan makes
  std::string codec;         // "" when dense; "a + b" for several compressed steps
  std::string decision;      // the planner's comparison per step, "; "-joined
  // Of `seconds`, the latency of the calls a gradient bucket's collective makes once for
  // all its members: its reduction steps' (a compressed all-reduce: its reduce-scatter's
  // and its all-gather's call). Set for data-parallel gradient reductions only.
  double bucket_latency_seconds = 0;
};

class EdgePriceCache {
 public:
  // A cache for every PriceLayout call given exactly `options` (the same object).
  explicit EdgePriceCache(const PriceOptions& options) : options_(&options) {}

  const PriceOptions* options() const { return options_; }

  // "cpu{0:0-7}[2, 4]|axis 1|elements 4096": the group, the boxed axis and the tensor.
  static std::string Key(const std::string& placement, int64_t axis, int64_t elements);

  // nullptr on a miss (counted as one).
  const PricedEdge* Find(const std::string& key);
  // The stored edge; valid until the next Insert.
  const PricedEdge& Insert(std::string key, PricedEdge edge);

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  const PriceOptions* options_;
  absl::flat_hash_map<std::string, PricedEdge> edges_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_EDGE_PRICE_CACHE_H_
