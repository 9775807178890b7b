#include "compiler/auto_parallel/edge_price_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace oneflow::auto_parallel {

std::string EdgePriceCache::Key(const std::string& placement, int64_t axis, int64_t elements) {
  return absl::StrCat(placement, "|axis ", axis, "|elements ", elements);
}

const PricedEdge* EdgePriceCache::Find(const std::string& key) {
  const auto it = edges_.find(key);
  if (it == edges_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return &it->second;
}

const PricedEdge& EdgePriceCache::Insert(std::string key, PricedEdge edge) {
  return edges_.insert_or_assign(std::move(key), std::move(edge)).first->second;
}

}  // namespace oneflow::auto_parallel
