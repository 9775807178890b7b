// Final-loss gap of int4 against dense, with and without error feedback
// (kernels/compression/compressed_collectives.h, "Error feedback"; docs/sbp_and_boxing.md,
// "Error feedback"). The gpt (AdamW) on 2 nodes x 2 devices, dp=2 x tp=2, in one process:
// the plan `oneflow launch` runs on two nodes, its collectives through the in-process
// backend. Each seed trains --iterations times per mode:
//   dense          --compression=off: the reference, trained in the same run
//   int4           forced int4 (groups of 32, what --compression=int4 does) on every
//                  eligible step (activations and weight gathers too), no error feedback
//   int8           forced int8 (groups of 128, relative error ~0.65%): how far a near-lossless
//                  perturbation moves these trajectories, the floor any gap is read against
//   auto           --compression=auto's codecs (sbp/compression_policy.h) on every step
//                  they may take: the links are set to 1 MB/s so that every such step pays
//                  (gradient buckets off); with +fwd, +bwd, +grad one role's, and with
//                  +nobound without auto's accuracy bound (sbp/codec_accuracy.h), which is
//                  how the bound's table is measured (auto+grad+nobound: int4 G=128
//                  hadamard on the cross-node gradient reductions)
//   CODEC+OPT+...  a variant: CODEC int4 or int8, then any of gN (N values per scale),
//                  had (Hadamard rotation of each group), grad (only the gradient
//                  reductions compress, every other step dense), fwd (only the forward
//                  activations' steps compress), bwd (only backward's other tensors,
//                  the activation gradients; fwd, bwd and grad combine: int4+fwd+bwd is
//                  every step but the gradient reductions), ef (error feedback on
//                  the gradient reductions), sr (stochastic rounding on every compressed step,
//                  --codec_rounding=stochastic), srg (stochastic rounding on the
//                  gradient reductions only, nearest elsewhere), ln8 / lnd (the forward
//                  steps whose consumer is a layer norm, the heavy-tailed residual stream,
//                  run int8 G=128 / dense instead), chain8 (in a gradient's boxing every
//                  compressed step but the last runs int8 G=128: the partial sums travel
//                  finer, one int4 encoding at the end), lgd (the forward step of the
//                  logits, whose consumer is the loss, dense), dwN (the first N iterations
//                  every compressed step runs dense: --compression_warmup=N), dense:T1[:T2...] (the
//                  boxings of tensors T1, T2, ... run dense; e.g. int4+fwd+dw50+dense:add_61 is one
//                  tensor's share of the forward gap), agd (the all-gathers that end a gradient's
//                  chain, layer norms' and wpe's, run dense), agnf (they keep their codec
//                  without error feedback, as before session 47), xn (the forced codec
//                  on the hops that cross nodes only, CompressionPolicy::forced_intra_node
//                  false: on this layout the 24 cross-node gradient all-reduces), fit
//                  (the gradients' int4 groups scaled by the error they make,
//                  CompileOptions::fit_int4_gradient_scale), fv / fvN (AdamW's second
//                  moment frozen from the dense warm-up's end / from iteration N on: the
//                  job's AdamWOptimizer.variance_frozen_from, 1-bit Adam's frozen variance), init
//                  (the initial weights perturbed, as dense+init); e.g. int4+g128 is forced
//                  int4 as it was before groups of 32, int4+g32+grad+ef, int4+sr+ef,
//                  int4+grad+dw50+ef+fv.
//   dense+init     dense with every normal initializer's standard deviation x (1 + 1e-7):
//                  the initial weights move by about one f32 rounding, the size of a change
//                  of summation order (session 48's noise floor)
//   dense+1dev     the same job compiled for one device (its sums in another order)
//   dense+fvN      dense with AdamW's variance frozen from iteration N: the reference of
//                  every later mode that freezes it at N (their lines say "reference")
//                  int4_ef, int4_grad and int4_grad_ef are int4+ef, int4+grad and
//                  int4+grad+ef.
// --list_boxings first prints one line per compressed step of the first compressed mode's
// plan as compiled (forced on every eligible step), with the role its options select by:
//   {"boxing":"add_1","producer":"add_1","consumer":"layer_norm_2","step":"STEP_REDUCE_SCATTER",
//    "axis":1,"bytes_per_device":8192,"role":"fwd","codec":"INT4 G=32"}
// --model=tiny (the default: the gpt of every figure before session 48) or example (the gpt
// example's own defaults, examples::GptConfig{}: L2 h128 v512 seq 64, AdamW lr 3e-4, warm-up
// 100 then cosine); --batch, --seq, ... override one value each.
// One JSON line per seed and mode, then one per mode with the gaps averaged over seeds
// ("seed":"mean"):
//   {"bench":"error_feedback","model":"gpt L2 h64 b8 s16 v64 lr0.01 warmup 5 synthetic",
//    "layout":"2 nodes x 2 devices, dp=2 x tp=2","seed":1,"mode":"int4_ef","reference":"dense",
//    "iterations":200,"tail":20,"final_loss":..,"dense_final_loss":..,"final_loss_gap":..,
//    "mean_loss":..,"dense_mean_loss":..,"mean_loss_gap":..,"rel_l2":..,"seconds":..}
// With --dense_eval=K (default 20; 0: off) each run is checkpointed after its iterations
// and its weights are evaluated by one dense plan on the next K batches
// (examples/common/dense_evaluation.h): the lines add "dense_eval_loss",
// "dense_eval_dense_loss" (dense's weights, the same way) and "dense_eval_gap", the mean
// lines "dense_eval_gap". A mode whose codecs sit in the forward pass reports a training
// loss measured through them; the evaluated gap is what the run learnt.
// final_loss is the mean of the last --tail iterations' losses; gaps are relative,
// (mode - dense) / dense; rel_l2 is the relative L2 error of all the encodings the run
// made (the metrics' sums over iterations and codecs; 0 for dense). The mean lines add
// "rel_l2" averaged over seeds and "gap_curve": the relative gap of the mean loss over each
// window of --tail iterations (iterations 0-19, 20-39, ...), averaged over seeds, to see
// whether a gap grows with training. A dense trajectory does not part from itself under a
// perturbation of floating-point size (dense+init, dense+1dev: below 1e-5 of the final
// loss, session 48), but int4's gap moves by seed by more than the 0.5% bar, so compare
// the seeds' mean and its spread, not one seed.
//
//   bazel run //bench/compression:error_feedback_bench
//   bazel run //bench/compression:error_feedback_bench -- --modes=int4+g128,int4,int4+g32+grad,int8
//   bazel run //bench/compression:error_feedback_bench -- --modes=int4,int4+fwd,int4+bwd,int4+grad --list_boxings
//   bazel run //bench/compression:error_feedback_bench -- --optimizer=sgd --learning_rate=0.1 --modes=int4+grad+ef
//   bazel run //bench/compression:error_feedback_bench -- --seeds=1,2,3,4 --batch=16 --seq=64
//       --learning_rate=3e-3 --text_file=/usr/share/common-licenses/GPL-3   (one command)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "kernels/cpu/blas_core.h"
#include "plan/plan_checksum.h"
#include "oneflow_core/status.h"
#include "examples/common/dense_evaluation.h"
#include "examples/gpt/gpt_model.h"

ABSL_FLAG(int64_t, iterations, 200, "training iterations per mode");
ABSL_FLAG(int64_t, tail, 20, "final loss: mean over this many last iterations");
ABSL_FLAG(std::string, model, "tiny",
          "the gpt and its schedule: tiny (L2 h64 heads 4 v64, batch 8, seq 16, AdamW lr 1e-2, warm-up 5: "
          "every figure of sessions 38-47) or example (examples/gpt's own defaults, GptConfig{}: L2 h128 "
          "heads 4 v512, batch 8, seq 64, AdamW lr 3e-4, warm-up 100 then cosine); the flags below override "
          "one value each");
ABSL_FLAG(int64_t, batch, 0, "gpt batch (0: --model's)");
ABSL_FLAG(int64_t, seq, 0, "gpt sequence length (0: --model's)");
ABSL_FLAG(int64_t, layers, 0, "gpt layers (0: --model's)");
ABSL_FLAG(int64_t, hidden, 0, "gpt hidden size (0: --model's)");
ABSL_FLAG(int64_t, heads, 0, "gpt heads (0: --model's)");
ABSL_FLAG(int64_t, vocab, 0, "gpt vocabulary (0: --model's)");
ABSL_FLAG(double, learning_rate, 0,
          "learning rate (AdamW's, or SGD's with --optimizer=sgd; 0: --model's)");
ABSL_FLAG(std::string, optimizer, "adamw",
          "adamw (the gpt's own) or sgd (momentum --momentum, the same schedule): whether a mode's effect is "
          "the optimizer's (error feedback suits SGD's linear update, not Adam's per-element scaling)");
ABSL_FLAG(double, momentum, 0.9, "SGD momentum (--optimizer=sgd)");
ABSL_FLAG(int64_t, warmup_steps, -1, "linear learning-rate warmup steps (-1: --model's)");
ABSL_FLAG(int64_t, dense_eval, 20,
          "after training, evaluate each mode's trained weights with one dense plan on the next this many "
          "batches (examples/common/dense_evaluation.h; 0: off): the loss of what a mode learnt, without "
          "its codecs' noise in the forward pass that measures its training loss");
ABSL_FLAG(std::string, seeds, "1,2,3,4", "gpt seeds (initial weights and synthetic data), comma separated");
ABSL_FLAG(std::string, text_file, "",
          "train on this file's bytes (empty: the synthetic tokens, which the gpt learns to a loss near 0)");
ABSL_FLAG(std::string, modes, "int4+g128,int4,int4+ef,int4+grad,int8",
          "modes besides dense (which always runs first), comma separated");
ABSL_FLAG(bool, list_boxings, false,
          "print one JSON line per compressed step of the first compressed mode's plan, before the mode's "
          "options apply (tensor, producer, consumer, kind, role), before training");

namespace oneflow {
namespace {

struct Curve {
  std::vector<double> losses;
  double seconds = 0;
  // The compressed steps' encodings over the whole run, every codec together: their
  // relative L2 error (RelativeError) says how much the mode's steps perturb.
  actors::CodecMetrics encoded;
  // --dense_eval: the trained weights' losses under examples::DenseEvaluationPlan,
  // on the batches after training's.
  std::vector<double> evaluated;
};

// A mode: "dense", or a codec with options joined by '+': "int4", "int8", then any of
// gN (groups of N values per scale; default: what the forced codec uses), had (Hadamard rotation of each group),
// grad (only the gradient reductions compress), ef (error feedback on them), sr (stochastic
// rounding everywhere), srg (stochastic rounding on the gradient reductions). The old names
// int4_ef, int4_grad and int4_grad_ef are int4+ef, int4+grad and int4+grad+ef.
struct Mode {
  CompressionKind codec = CompressionKind::kNone;
  // --compression=auto's codecs (sbp/compression_policy.h) on every step they may take, the
  // links made slow enough (kAutoLinkBandwidth) that every such step pays: what auto puts
  // on a slow cluster, role by role.
  bool automatic = false;
  // auto's accuracy bound off (CompressionPolicy::accuracy_bound): auto's most compact
  // codec of each role whatever its measured gap, to measure that gap.
  bool no_bound = false;
  // xn: the forced codec on the hops that cross nodes only (CompressionPolicy::forced_intra_node).
  bool cross_node_only = false;
  // fit: the gradients' int4 groups scaled by the error they make
  // (CompileOptions::fit_int4_gradient_scale; int_quant.h, ChooseInt4Scale).
  bool fitted_scale = false;
  int64_t group_size = 0;  // 0: the policy's (int4 32, int8 128)
  bool hadamard = false;
  // Which compressed steps keep their codec, by the role of the tensor (RoleOf); the
  // others run dense. Empty: every one (no fwd / bwd / grad option given).
  std::set<std::string> roles;
  bool error_feedback = false;
  bool stochastic_rounding = false;
  bool stochastic_gradients_only = false;
  // The forward steps whose consumer is a layer norm (the residual stream): kInt4 keeps
  // them as the mode says, kInt8 runs them int8 G=128, kNone dense.
  CompressionKind layer_norm_inputs = CompressionKind::kInt4;
  bool gradient_chain_int8 = false;
  bool logits_dense = false;
  // dwN: the first N iterations every compressed step runs dense, the rest with the mode's
  // codecs (CompileOptions::compression_warmup_iterations; DeepSpeed 1-bit Adam's dense
  // warm-up stage). auto's accuracy bound then reads the rows measured with that warm-up.
  int64_t dense_warmup = 0;
  // dense:NAME[:NAME...]: the boxings of these tensors run dense, whatever their role (to
  // find which tensors carry a gap, one at a time).
  std::set<std::string> dense_tensors;
  // The all-gathers that end a gradient's chain (a layer norm's or wpe's gradient under
  // tp: reduce-scatter over tp, all-reduce over dp, all-gather over tp): agd runs them
  // dense, agnf keeps their codec without error feedback (what the runtime did before
  // session 47 gave the shard owner a residual there).
  bool gradient_gathers_dense = false;
  bool gradient_gathers_without_feedback = false;
  // The noise floor of one trajectory, dense or not: init scales every normal
  // initializer's standard deviation by 1 + 1e-7 (the initial weights move by about one
  // f32 rounding each), 1dev trains the same job compiled for one device (the sums run in
  // another order; only with dense).
  bool perturbed_initial_weights = false;
  bool one_device = false;
  // fv / fvN: AdamW's second moment frozen from iteration N on (fv: N = dwN's warm-up),
  // the job's AdamWOptimizer.variance_frozen_from (--adamw_freeze_variance_from on the
  // examples; the optimizer pass puts it on every adamw op): 1-bit Adam's frozen
  // variance, under which the step is linear in the gradient.
  bool freeze_variance = false;
  int64_t variance_frozen_from = 0;  // 0 with freeze_variance: the dense warm-up's end
};

// The relative change of the initial weights' standard deviation under +init: the size
// of one f32 rounding (2^-24 = 6e-8), so the trajectories part as they would under any
// change of summation order.
constexpr double kInitialWeightPerturbation = 1e-7;

// The step fv / fvN freeze AdamW's variance from (0: the mode does not freeze it).
int64_t FrozenFrom(const Mode& mode) {
  if (!mode.freeze_variance) return 0;
  return mode.variance_frozen_from > 0 ? mode.variance_frozen_from : mode.dense_warmup;
}

absl::StatusOr<Mode> ParseMode(const std::string& text) {
  std::string spec = text;
  if (text == "int4_ef") spec = "int4+ef";
  if (text == "int4_grad") spec = "int4+grad";
  if (text == "int4_grad_ef") spec = "int4+grad+ef";
  Mode mode;
  const std::vector<std::string> parts = absl::StrSplit(spec, '+');
  if (parts[0] == "dense") {
  } else if (parts[0] == "auto") {
    mode.automatic = true;
  } else if (parts[0] == "int4") {
    mode.codec = CompressionKind::kInt4;
  } else if (parts[0] == "int8") {
    mode.codec = CompressionKind::kInt8;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--modes: unknown mode '", text,
                     "'; valid: dense, dense+init, dense+1dev, or auto / int4 / int8 followed by +init, +gN, +had, +grad, +fwd, +bwd, +ef, +sr, +srg, +ln8, +lnd, +lgd, +chain8, +nobound, +dwN, +agd, +agnf, +xn, +dense:TENSOR (e.g. "
                     "int4+g32+had+grad), or int4_ef, int4_grad, int4_grad_ef"));
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part == "init") {
      mode.perturbed_initial_weights = true;
    } else if (part == "fv" || (part.size() > 2 && part.substr(0, 2) == "fv" &&
                                absl::SimpleAtoi(part.substr(2), &mode.variance_frozen_from) &&
                                mode.variance_frozen_from >= 1)) {
      mode.freeze_variance = true;
    } else if (part == "1dev" && parts[0] == "dense") {
      mode.one_device = true;
    } else if (parts[0] == "dense") {
      return absl::InvalidArgumentError(
          absl::StrCat("--modes: '", text, "': unknown option '", part, "' for dense; valid: init, 1dev, fvN"));
    } else if (part == "had") {
      mode.hadamard = true;
    } else if (part == "grad") {
      mode.roles.insert(part);
    } else if (part == "fwd" || part == "bwd") {
      mode.roles.insert(part);
    } else if (part == "ef") {
      mode.error_feedback = true;
    } else if (part == "sr") {
      mode.stochastic_rounding = true;
    } else if (part == "srg") {
      mode.stochastic_rounding = true;
      mode.stochastic_gradients_only = true;
    } else if (part == "ln8") {
      mode.layer_norm_inputs = CompressionKind::kInt8;
    } else if (part == "lnd") {
      mode.layer_norm_inputs = CompressionKind::kNone;
    } else if (part == "xn") {
      mode.cross_node_only = true;
    } else if (part == "fit") {
      mode.fitted_scale = true;
    } else if (part == "nobound") {
      mode.no_bound = true;
    } else if (part == "lgd") {
      mode.logits_dense = true;
    } else if (part == "chain8") {
      mode.gradient_chain_int8 = true;
    } else if (part == "agd") {
      mode.gradient_gathers_dense = true;
    } else if (part == "agnf") {
      mode.gradient_gathers_without_feedback = true;
    } else if (part.size() > 6 && part.substr(0, 6) == "dense:") {
      for (absl::string_view name : absl::StrSplit(part.substr(6), ':', absl::SkipEmpty())) {
        mode.dense_tensors.insert(std::string(name));
      }
    } else if (part.size() > 2 && part.substr(0, 2) == "dw" && absl::SimpleAtoi(part.substr(2), &mode.dense_warmup) &&
               mode.dense_warmup >= 1) {
    } else if (part.size() > 1 && part[0] == 'g' && absl::SimpleAtoi(part.substr(1), &mode.group_size) &&
               mode.group_size >= 1) {
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--modes: '", text, "': unknown option '", part,
                                                     "'; valid: init, fv, fvN (N >= 1), gN (N >= 1), had, fwd, bwd, grad, ef, sr, srg, ln8, lnd, xn, "
                                                     "chain8, lgd, agd, agnf, nobound, dwN (N >= 1), "
                                                     "dense:TENSOR[:TENSOR...]"));
    }
  }
  return mode;
}

// The role of a compressed step's tensor: "grad" for a variable's gradient (the compiler
// marks its compressed steps with error feedback, reductions and since session 47 the
// all-gathers that end its chain, which Run always asks for and then clears unless the
// mode has ef; before session 47 those all-gathers read "bwd"), "bwd" for another tensor of backward (autodiff names its ops
// "<forward op>_grad/<op>"), "fwd" for a forward activation.
std::string RoleOf(const proto::BoxingDef& boxing, const proto::BoxingStepDef& step) {
  if (step.compression().error_feedback()) return "grad";
  if (boxing.producer_op().find("_grad/") != std::string::npos) return "bwd";
  return "fwd";
}

// "int4 G=32", "int8 G=512 hadamard + int4 G=128 hadamard" (two-level: in-node + cross-node).
std::string CodecText(const proto::Compression& compression) {
  std::string text = absl::StrCat(proto::Compression::Kind_Name(compression.kind()), " G=", compression.block_size(),
                                  compression.hadamard() ? " hadamard" : "");
  if (compression.cross_node_kind() != proto::Compression::NONE) {
    absl::StrAppend(&text, " + ", proto::Compression::Kind_Name(compression.cross_node_kind()),
                    " G=", compression.cross_node_block_size(), compression.cross_node_hadamard() ? " hadamard" : "");
  }
  return text;
}

// The compressed steps of a plan, one JSON line each, to see which tensors compress.
void ListBoxings(const proto::Plan& plan) {
  static bool listed = false;
  if (listed) return;
  listed = true;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::NONE) continue;
      printf("{\"boxing\":\"%s\",\"producer\":\"%s\",\"consumer\":\"%s\",\"step\":\"%s\",\"axis\":%lld,"
             "\"bytes_per_device\":%lld,\"role\":\"%s\",\"codec\":\"%s\"}\n",
             boxing.tensor().c_str(), boxing.producer_op().c_str(), boxing.consumer_op().c_str(),
             proto::BoxingStepKind_Name(step.kind()).c_str(), static_cast<long long>(step.hierarchy_axis()),
             static_cast<long long>(step.dense_bytes_per_device()),
             RoleOf(boxing, step).c_str(), CodecText(step.compression()).c_str());
    }
  }
}

absl::StatusOr<Curve> Run(const proto::Job& trained_job, const proto::Cluster& cluster, const Mode& mode,
                          const proto::Plan* evaluation) {
  proto::Job job = trained_job;
  if (mode.freeze_variance) {
    if (FrozenFrom(mode) < 1) {
      return absl::InvalidArgumentError("--modes: fv freezes AdamW's variance at the dense warm-up's end: "
                                        "give dwN too, or fvN");
    }
    if (!job.optimizer().has_adamw()) {
      return absl::InvalidArgumentError("--modes: fv / fvN freeze AdamW's variance, but the job's optimizer is "
                                        "not AdamW (--optimizer=sgd)");
    }
    job.mutable_optimizer()->mutable_adamw()->set_variance_frozen_from(FrozenFrom(mode));
  }
  CompileOptions options;
  options.cluster = cluster;
  // Compressed gradient all-reduces share buckets, whose members must keep one format; the
  // modes below edit steps one by one (error feedback, roles, codecs), so every gradient
  // keeps its own call, in every mode, dense too (the same sums: a bucket encodes each
  // member as its own step would, and sums a dense member as alone).
  options.bucket_mb = 0;
  if (mode.automatic) {
    // Every compressible step pays at 1 MB/s, in nodes and across: auto's codec choice by
    // role is then all that decides.
    constexpr double kAutoLinkBandwidth = 1e6;
    options.cluster.set_intra_node_bandwidth(kAutoLinkBandwidth);
    options.cluster.set_inter_node_bandwidth(kAutoLinkBandwidth);
    options.compression.mode = CompressionMode::kAuto;
    if (mode.no_bound) options.compression.accuracy_bound = AccuracyBound{-1, -1, -1};
  } else if (mode.codec != CompressionKind::kNone) {
    options.compression.mode = CompressionMode::kForced;
    options.compression.forced = mode.codec;
    options.compression.forced_intra_node = !mode.cross_node_only;
    if (mode.group_size > 0) {
      options.compression.group_size = mode.group_size;
      options.compression.int4_group_size = mode.group_size;
    }
  }
  if (mode.stochastic_rounding) options.codec_rounding = proto::Compression::STOCHASTIC;
  options.fit_int4_gradient_scale = mode.fitted_scale;
  options.compression_warmup_iterations = mode.dense_warmup;
  // Always marked: the roles (RoleOf) and srg find the gradient reductions by the mark
  // error feedback puts on them; it is cleared below unless the mode has ef.
  options.error_feedback = true;
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  if (!plan.ok()) return plan.status();
  if (absl::GetFlag(FLAGS_list_boxings) && (mode.codec != CompressionKind::kNone || mode.automatic)) {
    ListBoxings(*plan);
  }
  const bool edits_steps = mode.layer_norm_inputs != CompressionKind::kInt4 || mode.gradient_chain_int8 ||
                            mode.logits_dense || !mode.dense_tensors.empty() || mode.gradient_gathers_dense ||
                            mode.gradient_gathers_without_feedback;
  if (!mode.roles.empty() || mode.hadamard || options.error_feedback != mode.error_feedback || edits_steps) {
    std::set<std::string> densified;  // the dense:TENSOR names that named a boxing
    for (proto::BoxingDef& boxing : *plan->mutable_boxings()) {
      // The last compressed step of the boxing (chain8 keeps its codec).
      int last_compressed = -1;
      for (int i = 0; i < boxing.steps_size(); ++i) {
        if (boxing.steps(i).compression().kind() != proto::Compression::NONE) last_compressed = i;
      }
      for (int i = 0; i < boxing.steps_size(); ++i) {
        proto::BoxingStepDef& step = *boxing.mutable_steps(i);
        const bool compressed = step.compression().kind() != proto::Compression::NONE;
        const std::string role = RoleOf(boxing, step);
        if (compressed && role == "fwd" && mode.layer_norm_inputs != CompressionKind::kInt4 &&
            boxing.consumer_op().find("layer_norm") != std::string::npos) {
          if (mode.layer_norm_inputs == CompressionKind::kNone) {
            step.clear_compression();
          } else {
            step.mutable_compression()->set_kind(proto::Compression::INT8);
            step.mutable_compression()->set_block_size(128);
          }
        }
        if (compressed && role == "fwd" && mode.logits_dense &&
            boxing.consumer_op().find("cross_entropy") != std::string::npos) {
          step.clear_compression();
        }
        const bool gradient_gather = compressed && role == "grad" && step.kind() == proto::STEP_ALL_GATHER;
        if (gradient_gather && mode.gradient_gathers_dense) step.clear_compression();
        if (gradient_gather && mode.gradient_gathers_without_feedback) {
          step.mutable_compression()->clear_error_feedback();
        }
        if (mode.dense_tensors.count(boxing.tensor()) > 0) {
          step.clear_compression();
          densified.insert(boxing.tensor());
        }
        if (compressed && role == "grad" && mode.gradient_chain_int8 && i != last_compressed) {
          step.mutable_compression()->set_kind(proto::Compression::INT8);
          step.mutable_compression()->set_block_size(128);
        }
        if (!mode.roles.empty() && step.compression().kind() != proto::Compression::NONE &&
            mode.roles.count(role) == 0) {
          step.clear_compression();
        }
        if (mode.stochastic_gradients_only && !step.compression().error_feedback()) {
          step.mutable_compression()->clear_rounding();
          step.mutable_compression()->clear_rounding_seed();
        }
        if (!mode.error_feedback) step.mutable_compression()->clear_error_feedback();
        if (mode.hadamard && step.compression().kind() != proto::Compression::NONE) {
          step.mutable_compression()->set_hadamard(true);
        }
      }
    }
    for (const std::string& tensor : mode.dense_tensors) {
      if (densified.count(tensor) == 0) {
        return absl::InvalidArgumentError(absl::StrCat("--modes: dense:", tensor, ": no boxing of a tensor '", tensor,
                                                       "' in this plan (--list_boxings lists the compressed ones)"));
      }
    }
    OF_RETURN_IF_ERROR(SealPlan(&*plan));
  }
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = absl::GetFlag(FLAGS_iterations);
  std::string checkpoint_dir;
  if (evaluation != nullptr) {
    char pattern[] = "/tmp/error_feedback_bench.XXXXXX";
    if (mkdtemp(pattern) == nullptr) return absl::InternalError("mkdtemp failed for the --dense_eval checkpoint");
    checkpoint_dir = pattern;
    train.checkpoint.dir = checkpoint_dir;
    train.checkpoint.every = train.iterations;
    train.checkpoint.synchronous = true;
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  Curve curve;
  curve.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.ok() && evaluation != nullptr) {
    absl::StatusOr<std::vector<double>> evaluated = examples::EvaluateCheckpoint(
        *evaluation, checkpoint_dir, train.iterations, absl::GetFlag(FLAGS_dense_eval));
    if (!evaluated.ok()) {
      std::filesystem::remove_all(checkpoint_dir);
      return absl::Status(evaluated.status().code(), absl::StrCat("--dense_eval: ", evaluated.status().message()));
    }
    curve.evaluated = *std::move(evaluated);
  }
  if (!checkpoint_dir.empty()) std::filesystem::remove_all(checkpoint_dir);
  if (!result.ok()) return result.status();
  for (const actors::IterationMetrics& m : result->iterations) {
    curve.losses.push_back(m.loss);
    for (const auto& [codec, metrics] : m.compression) curve.encoded += metrics;
  }
  return curve;
}

double MeanOf(const std::vector<double>& values, size_t first) {
  double sum = 0;
  for (size_t i = first; i < values.size(); ++i) sum += values[i];
  return values.size() > first ? sum / (values.size() - first) : 0;
}

struct Gaps {
  double final_gap = 0;
  double mean_gap = 0;
  double rel_l2 = 0;
  double eval_gap = 0;  // --dense_eval's gap
  std::vector<double> window_gaps;  // summed over seeds, one per --tail window
  int seeds = 0;
};

// --model: the gpt's configuration, then each flag given over it.
absl::StatusOr<examples::GptConfig> ModelConfig(const std::string& name) {
  examples::GptConfig config;  // example: the gpt example's own defaults
  if (name == "tiny") {
    config.seq = 16;
    config.hidden = 64;
    config.vocab = 64;
    config.learning_rate = 1e-2;
    config.warmup_steps = 5;
  } else if (name != "example") {
    return absl::InvalidArgumentError(absl::StrCat("--model=", name, ": valid: tiny, example"));
  }
  if (absl::GetFlag(FLAGS_batch) > 0) config.batch = absl::GetFlag(FLAGS_batch);
  if (absl::GetFlag(FLAGS_seq) > 0) config.seq = absl::GetFlag(FLAGS_seq);
  if (absl::GetFlag(FLAGS_layers) > 0) config.layers = absl::GetFlag(FLAGS_layers);
  if (absl::GetFlag(FLAGS_hidden) > 0) config.hidden = absl::GetFlag(FLAGS_hidden);
  if (absl::GetFlag(FLAGS_heads) > 0) config.heads = absl::GetFlag(FLAGS_heads);
  if (absl::GetFlag(FLAGS_vocab) > 0) config.vocab = absl::GetFlag(FLAGS_vocab);
  if (absl::GetFlag(FLAGS_learning_rate) > 0) config.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  if (absl::GetFlag(FLAGS_warmup_steps) >= 0) config.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  config.text_file = absl::GetFlag(FLAGS_text_file);
  return config;
}

// One seed's job as a mode trains it: on the bench's layout or one device, with the
// initial weights perturbed or not, and the dense plan that evaluates its checkpoints.
struct TrainedJob {
  proto::Job job;
  proto::Cluster cluster;
  std::optional<proto::Plan> evaluation;  // --dense_eval
};

absl::StatusOr<TrainedJob> BuildJob(const examples::GptConfig& config, const examples::ParallelLayout& layout,
                                    bool perturbed_initial_weights, bool sgd) {
  TrainedJob trained;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  if (!job.ok()) return job.status();
  trained.job = *std::move(job);
  trained.cluster = layout.cluster();
  if (sgd) trained.job.mutable_optimizer()->mutable_sgd()->set_momentum(absl::GetFlag(FLAGS_momentum));
  if (perturbed_initial_weights) {
    for (proto::VariableDef& variable : *trained.job.mutable_variables()) {
      proto::Initializer& initializer = *variable.mutable_initializer();
      if (initializer.kind() == proto::Initializer::NORMAL) {
        initializer.set_stddev(initializer.stddev() * (1 + kInitialWeightPerturbation));
      }
    }
  }
  if (absl::GetFlag(FLAGS_dense_eval) > 0) {
    absl::StatusOr<proto::Plan> plan = examples::DenseEvaluationPlan(trained.job, trained.cluster);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(), absl::StrCat("--dense_eval: ", plan.status().message()));
    }
    trained.evaluation = *std::move(plan);
  }
  return trained;
}

int Main() {
  examples::ParallelFlags flags;
  flags.nodes = 2;
  flags.devices_per_node = 2;
  flags.dp = 2;
  flags.tp = 2;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  // +1dev's layout: one node, one device.
  absl::StatusOr<examples::ParallelLayout> one_device = examples::ParallelLayout::Create(examples::ParallelFlags());
  if (!layout.ok() || !one_device.ok()) {
    fprintf(stderr, "%s\n", (layout.ok() ? one_device.status() : layout.status()).ToString().c_str());
    return 1;
  }
  absl::StatusOr<examples::GptConfig> chosen = ModelConfig(absl::GetFlag(FLAGS_model));
  if (!chosen.ok()) {
    fprintf(stderr, "%s\n", std::string(chosen.status().message()).c_str());
    return 1;
  }
  examples::GptConfig config = *chosen;
  const std::string model =
      absl::StrCat("gpt L", config.layers, " h", config.hidden, " b", config.batch, " s", config.seq, " v",
                   config.vocab, " lr", config.learning_rate, " warmup ", config.warmup_steps, " ",
                   absl::GetFlag(FLAGS_optimizer) == "sgd"
                       ? absl::StrCat("sgd momentum ", absl::GetFlag(FLAGS_momentum), " ")
                       : std::string(),
                   config.text_file.empty() ? std::string("synthetic") : config.text_file);
  const std::string optimizer = absl::GetFlag(FLAGS_optimizer);
  if (optimizer != "adamw" && optimizer != "sgd") {
    fprintf(stderr, "--optimizer=%s: valid: adamw, sgd\n", optimizer.c_str());
    return 1;
  }
  const bool sgd = optimizer == "sgd";
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  const int64_t tail = std::min(absl::GetFlag(FLAGS_tail), iterations);
  if (tail < 1) {
    fprintf(stderr, "--tail=%lld with --iterations=%lld: both must be >= 1\n",
            static_cast<long long>(absl::GetFlag(FLAGS_tail)), static_cast<long long>(iterations));
    return 1;
  }
  std::vector<std::string> modes = {"dense"};
  std::map<std::string, Mode> parsed = {{"dense", Mode()}};
  for (const std::string& mode :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty()))) {
    if (mode == "dense") continue;
    absl::StatusOr<Mode> one = ParseMode(mode);
    if (!one.ok()) {
      fprintf(stderr, "%s\n", std::string(one.status().message()).c_str());
      return 1;
    }
    parsed[mode] = *one;
    modes.push_back(mode);
  }
  std::vector<uint64_t> seeds;
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_seeds), ',', absl::SkipEmpty())) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(text, &seed)) {
      fprintf(stderr, "--seeds: '%s' is not a non-negative integer\n", std::string(text).c_str());
      return 1;
    }
    seeds.push_back(seed);
  }
  std::map<std::string, Gaps> gaps;
  for (const uint64_t seed : seeds) {
    config.seed = seed;
    // The job each mode trains, by (+1dev, +init): built once per seed.
    std::map<std::pair<bool, bool>, TrainedJob> jobs;
    Curve this_seed_dense;
    // dense+fvN's runs by N: a mode that freezes AdamW's variance at N is read against
    // dense+fvN when the run has it (the same optimizer without the codecs), else dense.
    std::map<int64_t, Curve> frozen_dense;
    for (const std::string& mode : modes) {
      const Mode& one = parsed[mode];
      const int64_t frozen_from = FrozenFrom(one);
      const std::pair<bool, bool> key(one.one_device, one.perturbed_initial_weights);
      if (jobs.count(key) == 0) {
        absl::StatusOr<TrainedJob> built =
            BuildJob(config, one.one_device ? *one_device : *layout, one.perturbed_initial_weights, sgd);
        if (!built.ok()) {
          fprintf(stderr, "%s: %s\n", mode.c_str(), built.status().ToString().c_str());
          return 1;
        }
        jobs[key] = *std::move(built);
      }
      const TrainedJob& job = jobs[key];
      absl::StatusOr<Curve> curve =
          Run(job.job, job.cluster, one, job.evaluation ? &*job.evaluation : nullptr);
      if (!curve.ok()) {
        fprintf(stderr, "%s: %s\n", mode.c_str(), curve.status().ToString().c_str());
        return 1;
      }
      if (mode == "dense") this_seed_dense = *curve;
      const bool frozen_reference = one.codec == CompressionKind::kNone && !one.automatic && !one.one_device &&
                                    !one.perturbed_initial_weights && frozen_from > 0;
      if (frozen_reference) frozen_dense[frozen_from] = *curve;
      const bool against_frozen = !frozen_reference && frozen_dense.count(frozen_from) > 0;
      const std::string reference = against_frozen ? absl::StrCat("dense+fv", frozen_from) : "dense";
      const Curve& dense = against_frozen ? frozen_dense[frozen_from] : this_seed_dense;
      const size_t first = curve->losses.size() - tail;
      const double final_loss = MeanOf(curve->losses, first), dense_final = MeanOf(dense.losses, first);
      const double mean_loss = MeanOf(curve->losses, 0), dense_mean = MeanOf(dense.losses, 0);
      Gaps& mode_gaps = gaps[mode];
      mode_gaps.final_gap += final_loss / dense_final - 1;
      mode_gaps.mean_gap += mean_loss / dense_mean - 1;
      mode_gaps.rel_l2 += curve->encoded.RelativeError();
      const double evaluated = MeanOf(curve->evaluated, 0), dense_evaluated = MeanOf(dense.evaluated, 0);
      const double eval_gap = job.evaluation ? evaluated / dense_evaluated - 1 : 0;
      mode_gaps.eval_gap += eval_gap;
      const size_t windows = curve->losses.size() / std::max<int64_t>(tail, 1);
      mode_gaps.window_gaps.resize(windows, 0.0);
      for (size_t w = 0; w < windows; ++w) {
        double sum = 0, dense_sum = 0;
        for (size_t i = w * tail; i < (w + 1) * tail; ++i) {
          sum += curve->losses[i];
          dense_sum += dense.losses[i];
        }
        mode_gaps.window_gaps[w] += sum / dense_sum - 1;
      }
      ++mode_gaps.seeds;
      printf("{\"bench\":\"error_feedback\",\"model\":\"%s\",\"layout\":\"2 nodes x 2 devices, dp=2 x tp=2\","
             "\"seed\":%llu,\"mode\":\"%s\",\"reference\":\"%s\",\"iterations\":%lld,\"tail\":%lld,\"final_loss\":%.6f,"
             "\"dense_final_loss\":%.6f,\"final_loss_gap\":%.7f,\"mean_loss\":%.6f,\"dense_mean_loss\":%.6f,"
             "\"mean_loss_gap\":%.5f,\"rel_l2\":%.4f,%s\"seconds\":%.2f}\n",
             model.c_str(), static_cast<unsigned long long>(seed), mode.c_str(), reference.c_str(), static_cast<long long>(iterations),
             static_cast<long long>(tail), final_loss, dense_final, final_loss / dense_final - 1, mean_loss,
             dense_mean, mean_loss / dense_mean - 1, curve->encoded.RelativeError(),
             job.evaluation ? absl::StrFormat("\"dense_eval_loss\":%.6f,\"dense_eval_dense_loss\":%.6f,"
                                          "\"dense_eval_gap\":%.5f,",
                                          evaluated, dense_evaluated, eval_gap)
                              .c_str()
                        : "",
             curve->seconds);
      fflush(stdout);
    }
  }
  for (const std::string& mode : modes) {
    const Gaps& mode_gaps = gaps[mode];
    const int seed_count = std::max(mode_gaps.seeds, 1);
    std::string curve;
    for (const double gap : mode_gaps.window_gaps) {
      absl::StrAppend(&curve, curve.empty() ? "" : ",", absl::StrFormat("%.5f", gap / seed_count));
    }
    printf("{\"bench\":\"error_feedback\",\"model\":\"%s\",\"layout\":\"2 nodes x 2 devices, dp=2 x tp=2\","
           "\"seed\":\"mean\",\"seeds\":%d,\"mode\":\"%s\",\"iterations\":%lld,\"tail\":%lld,"
           "\"final_loss_gap\":%.7f,\"mean_loss_gap\":%.5f,\"rel_l2\":%.4f,%s\"gap_curve\":[%s]}\n",
           model.c_str(), mode_gaps.seeds, mode.c_str(), static_cast<long long>(iterations),
           static_cast<long long>(tail), mode_gaps.final_gap / seed_count, mode_gaps.mean_gap / seed_count,
           mode_gaps.rel_l2 / seed_count,
           absl::GetFlag(FLAGS_dense_eval) > 0
               ? absl::StrFormat("\"dense_eval_gap\":%.5f,", mode_gaps.eval_gap / seed_count).c_str()
               : "",
           curve.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Main();
}
