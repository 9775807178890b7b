#include "sbp/boxing_options.h"

#include "absl/strings/str_cat.h"

namespace oneflow {

BoxingOptions BoxingOptions::Everywhere(const CompressionChoice& choice) {
  BoxingOptions options;
  options.reduce_in_node = choice;
  options.reduce_cross_node = choice;
  options.gather = choice;
  options.compress_intra_node = true;
  return options;
}

std::string BoxingOptionsKey(const BoxingOptions& options) {
  if (!options.compresses()) return "dense";
  return absl::StrCat("reduce in-node ", CompressionChoiceText(options.reduce_in_node), ", cross-node ",
                      CompressionChoiceText(options.reduce_cross_node), options.two_level ? ", two-level" : "",
                      "; gather ", CompressionChoiceText(options.gather),
                      options.compress_intra_node ? "; intra-node" : "", options.automatic ? "; automatic" : "",
                      options.dense_in_bucket ? "; dense in a bucket" : "");
}

}  // namespace oneflow
