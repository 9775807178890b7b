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
  // A refusal only when there is one, so that keys of options without one read as before.
  std::string notes;
  for (const auto& [slot, refused] : {std::pair{"in-node", &options.reduce_in_node_refused},
                                      std::pair{"cross-node", &options.reduce_cross_node_refused},
                                      std::pair{"gather", &options.gather_refused}}) {
    if (refused->codec.compressed()) {
      absl::StrAppend(&notes, "; ", slot, " refused ", CompressionChoiceText(refused->codec), ": ", refused->note);
    }
  }
  // A bucket's limit changes how a dense gradient all-reduce is priced (the bucket's
  // algorithm): keys of options without buckets read as before.
  const std::string bucket =
      options.dense_in_bucket ? absl::StrCat("; in a bucket of at most ", options.bucket_bytes_limit, " B") : "";
  if (!options.compresses()) return absl::StrCat("dense", bucket, notes);
  return absl::StrCat("reduce in-node ", CompressionChoiceText(options.reduce_in_node), ", cross-node ",
                      CompressionChoiceText(options.reduce_cross_node), options.two_level ? ", two-level" : "",
                      "; gather ", CompressionChoiceText(options.gather),
                      options.compress_intra_node ? "; intra-node" : "", options.automatic ? "; automatic" : "",
                      options.dense_in_bucket ? "; dense in a bucket" : "", bucket,
                      options.error_feedback ? "; error feedback" : "",
                      options.stochastic_rounding ? "; stochastic rounding" : "",
                      options.fitted_int4_scale ? "; fitted int4 scale" : "", notes);
}

void ApplyEncoderSettings(const EncoderSettings& settings, bool variable_gradient, BoxingOptions* options) {
  options->error_feedback = settings.error_feedback && variable_gradient;
  options->stochastic_rounding = settings.stochastic_rounding;
  options->fitted_int4_scale = settings.fit_int4_gradient_scale && variable_gradient;
}

}  // namespace oneflow
