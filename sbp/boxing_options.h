// What a boxing may do to the bytes on the wire: dense or compressed.
//
// PlanBoxing takes a BoxingOptions per edge: the graph compiler picks the codecs by what
// the tensor is (sbp/compression_policy.h) and every BoxingStep records the codec its
// bytes were counted with, so the cost model, the plan and `oneflow inspect` agree.
//
// What the options mean (docs/sbp_and_boxing.md, "Compressed and sparse boxing"):
//  - Only the step kinds with a compressed form compress: all_reduce and reduce_scatter
//    (the reductions) and all_gather. Their other kinds, local steps and send/recv move
//    dense bytes.
//  - A reduction whose group lies in one node uses `reduce_in_node`; one whose group
//    crosses nodes uses `reduce_cross_node`, or, with `two_level` and a group made of
//    the same number (> 1) of devices on each of several nodes listed node by node, both:
//    `reduce_in_node` for the exchange inside each node and `reduce_cross_node` for the
//    one across nodes (SDP4Bit's TLq-HS, ZeRO++'s qgZ). An all_gather uses `gather`.
//  - Steps inside a node compress only with `compress_intra_node`.
//  - With `automatic`, a step compresses only where that is modelled faster, both sides
//    priced as the runtime runs them (sbp/collective_cost.h for dense,
//    sbp/boxing/step_compression.h for compressed: latency, wire, codec passes). Without
//    it, every eligible step compresses.
//  - Bytes are counted by CountWireBytes (sbp/compression.h); an encoding that would not
//    shrink the step leaves it dense.
//  - Sparse (only the used rows travel) is not an option here: the compiler decides which
//    boxings are row-sparse itself (compiler/sparse_boxing.h: embedding gradients, MoE
//    dispatch) and marks the planned step sparse (proto::Sparsity in the plan).
#ifndef SBP_BOXING_OPTIONS_H_
#define SBP_BOXING_OPTIONS_H_

#include <cstdint>
#include <string>

#include "sbp/codec_throughput.h"
#include "sbp/compression.h"

namespace oneflow {

struct BoxingOptions {
  // The codecs of the compressible step kinds (the top of this file); kNone everywhere
  // (the default) is dense.
  CompressionChoice reduce_in_node;
  CompressionChoice reduce_cross_node;
  bool two_level = false;
  CompressionChoice gather;
  // Compress steps whose devices share a node too (default: only node-crossing hops).
  bool compress_intra_node = false;
  // Compress only where it pays (see the top of this file).
  bool automatic = false;
  // An all_reduce or reduce_scatter of this tensor would join a gradient bucket
  // (compiler/passes/gradient_bucketing_pass.h), dense or compressed, so the calls'
  // latency is shared and the automatic decision compares the two sides without it.
  bool dense_in_bucket = false;
  // With dense_in_bucket: the most bytes a bucket holds (CompileOptions::bucket_mb). The
  // bucket's collective runs the algorithm of the bucket's size, not of one member's: a
  // flat all-reduce of more than kFlatOneRoundAllReduceBytes (sbp/collective_cost.h) runs
  // two rounds, so a small gradient in a larger bucket adds 2(n-1)/n of its bytes to the
  // wire, not the (n-1) x its bytes of the one round it would run alone.
  int64_t bucket_bytes_limit = 0;
  // A compressed all_reduce or reduce_scatter of this tensor carries error feedback (the
  // plan's Compression.error_feedback: CompileOptions::error_feedback on a gradient,
  // compiler/passes/plan_emission_pass.cc). It changes the passes the runtime makes, so
  // the price: each encoding is decoded once more for the residual, where without it the
  // encoder meters its error as it encodes (sbp/boxing/step_compression.h).
  bool error_feedback = false;
  // The encoder a compressed step of this tensor runs, which plan emission writes into
  // its Compression and which costs more per element than the plain one
  // (sbp/codec_throughput.h EncoderVariant): stochastic rounding
  // (CompileOptions::codec_rounding) on a step whose every codec rounds stochastically,
  // else on a gradient int4's fitted scale (CompileOptions::fit_int4_gradient_scale).
  bool stochastic_rounding = false;
  bool fitted_int4_scale = false;
  CodecThroughput codec_throughput = CodecThroughput::Defaults();
  // A slot's more compact codec `auto` did not use (sbp/codec_accuracy.h: its measured
  // training gap for this role exceeds the bound) and why, e.g. codec int4 G=128 hadamard,
  // note "accuracy: not int4 G=128 hadamard on gradients under adaptive (AdamW) without
  // error feedback: measured final-loss gap +1.73% ... > bound 0.50%; so int8 G=128
  // (...)". kNone when the slot's first candidate was used. A step's decision
  // ends with the note where the refused codec would have paid (`oneflow inspect`'s
  // "decision:" line), and only there.
  struct AccuracyRefusal {
    CompressionChoice codec{CompressionKind::kNone, 128, false};
    std::string note;
  };
  AccuracyRefusal reduce_in_node_refused;
  AccuracyRefusal reduce_cross_node_refused;
  AccuracyRefusal gather_refused;

  // True when some step could compress.
  bool compresses() const {
    return reduce_in_node.compressed() || reduce_cross_node.compressed() || gather.compressed();
  }

  // `choice` on every compressible step, inside nodes too, whether or not it pays: the
  // forced modes (--compression=fp8|int8|int4) and per-tensor hints.
  static BoxingOptions Everywhere(const CompressionChoice& choice);
};

// The codec choices and switches as one line, e.g. "reduce in-node int8 G=512 hadamard,
// cross-node int4 G=128 hadamard, two-level; gather int8 G=128; intra-node; automatic",
// or "dense": a cache key for options that share one codec throughput table. Every switch
// that changes a price is in it (error feedback, stochastic rounding, the fitted int4
// scale), each only when set, so keys of options without it read as before.
std::string BoxingOptionsKey(const BoxingOptions& options);

// What the compiler's options make of a tensor's compressed steps beyond their codecs, as
// plan emission writes it into each step's Compression (compiler/passes/plan_emission_pass.cc):
// the passes the runtime then makes, so the price.
struct EncoderSettings {
  bool error_feedback = false;           // CompileOptions::error_feedback
  bool stochastic_rounding = false;      // CompileOptions::codec_rounding is STOCHASTIC
  bool fit_int4_gradient_scale = false;  // CompileOptions::fit_int4_gradient_scale
};

// Sets options' error_feedback and fitted_int4_scale (a variable's gradient only) and
// stochastic_rounding (every tensor) from `settings`: the compiler's boxings
// (compiler/compilation.cc) and the auto-parallel search's (compiler/auto_parallel) alike.
void ApplyEncoderSettings(const EncoderSettings& settings, bool variable_gradient, BoxingOptions* options);

}  // namespace oneflow

#endif  // SBP_BOXING_OPTIONS_H_
