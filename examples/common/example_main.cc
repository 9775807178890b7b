#include "examples/common/example_main.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/run_locally.h"
#include "compiler/compiler.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/dsl/graph.h"
#include "plan/plan_checksum.h"
#include "plan/plan_io.h"
#include "oneflow_core/status.h"
#include "version.h"

ABSL_FLAG(int64_t, nodes, 1, "Nodes of the cluster.");
ABSL_FLAG(int64_t, devices_per_node, 1, "CPU devices per node.");
ABSL_FLAG(int64_t, dp, 1, "Data-parallel degree.");
ABSL_FLAG(int64_t, tp, 1, "Tensor-parallel degree (Megatron-style, as SBP hints).");
ABSL_FLAG(int64_t, cp, 1,
          "Context-parallel degree (docs/context_parallelism.md): the sequence split over cp devices outside "
          "attention (gpt, llama; --seq must divide by it; not with --dp > 1).");
ABSL_FLAG(std::string, cp_attention, "auto",
          "Attention under --cp > 1: ulysses (all-to-all to a head split; --kv_heads or --heads divisible by "
          "--tp x --cp), ring (K/V blocks passed around the cp ring; --kv_heads or --heads divisible by --tp), or "
          "auto (the cost model's choice). At --cp=1, ring runs attention as one ring step over the whole "
          "sequence (the blockwise kernel: no [s, s] scores kept); the others the plain attention core.");
ABSL_FLAG(std::string, cp_ring_split, "contiguous",
          "Ring attention's split of the causal sequence over --cp: contiguous (device r holds block r) or "
          "zigzag (device r holds chunks r and 2cp-1-r of 2cp, equal work on every device; see "
          "docs/context_parallelism.md for its known compile failure at cp=2).");
ABSL_FLAG(int64_t, zero, 0,
          "ZeRO stage over the data-parallel axis (docs/zero.md): 0 off; 1 optimizer state sharded; "
          "2 also gradients reduce-scattered; 3 also parameters sharded and gathered where used.");
ABSL_FLAG(int64_t, pp, 1,
          "Pipeline stages: consecutive blocks on consecutive groups of dp x tp devices; with "
          "--micro_batches the stages work on different micro-batches at once (1F1B-bounded).");
ABSL_FLAG(int64_t, micro_batches, 1,
          "Micro-batches per iteration: forward and backward run per micro-batch, gradients "
          "accumulate, the optimizer steps once per iteration. Must divide the batch.");
ABSL_FLAG(std::string, pp_schedule, "1f1b",
          "Pipeline schedule with --pp and --micro_batches (docs/pipeline.md, \"Schedules\"): 1f1b; "
          "interleaved (needs --virtual_stages >= 2); zb (zero-bubble ZB-H1: weight-gradient acts fill "
          "the bubbles, 1F1B's memory); auto (the smallest modelled bubble that fits --device_memory).");
ABSL_FLAG(int64_t, virtual_stages, 1,
          "Chunks of blocks per pipeline stage for --pp_schedule=interleaved: the blocks form "
          "pp x V chunks, chunk c on stage c mod pp; the blocks must divide by pp x V.");
ABSL_FLAG(std::string, stage_blocks, "",
          "Blocks per pipeline stage, comma-separated, first stage first (e.g. --pp=2 --stage_blocks=3,1 "
          "puts blocks 0-2 on stage 0 and block 3 with the output layer on stage 1); they must sum to the "
          "model's blocks. Empty: balanced by block count. auto: the cost model's DP over the cuts chooses them "
          "for the given layout (within --device_memory); --auto_parallel chooses them with the rest (docs/pipeline.md).");
ABSL_FLAG(int64_t, device_memory, 0,
          "Bytes one device may hold (0: no limit). With --auto_parallel, layouts whose predicted or planned "
          "peak is above are not chosen; with --pp_schedule=auto, schedules whose estimated memory is above.");
ABSL_FLAG(double, intra_node_bandwidth, 100e9, "Bytes/s between devices of one node.");
ABSL_FLAG(double, inter_node_bandwidth, 12.5e9, "Bytes/s between nodes.");
ABSL_FLAG(double, intra_node_latency, 1e-5,
          "Seconds of one message round between devices of one node (the cost model's alpha).");
ABSL_FLAG(double, inter_node_latency, 5e-4,
          "Seconds of one message round between nodes (the cost model's alpha; Gloo over TCP "
          "takes 0.4-0.5 ms for a 4 KiB all-reduce).");
ABSL_FLAG(std::string, compression, "auto",
          "How boxings move f32 tensors: off (dense); auto (by what the tensor is: activations "
          "fp8e4m3 G=128 hadamard (TACO's codec), gradient reductions two-level int8/int4, weight "
          "gathers int8, wherever the modelled link time saved exceeds the codec time); fp8, int8 or int4 (that codec on every "
          "all_reduce, reduce_scatter and all_gather). The loss, data-source inputs (labels, token "
          "ids) and integer tensors never compress; Tensor::WithCompression overrides all but off.");
ABSL_FLAG(double, codec_bytes_per_second, 0,
          "Dense f32 bytes/s one device encodes and decodes, for every codec (0: the per-codec "
          "table of sbp/codec_throughput.cc, or --codec_calibration).");
ABSL_FLAG(std::string, codec_calibration, "",
          "A codec throughput file written by `oneflow calibrate --out=FILE` on the target machine.");
ABSL_FLAG(std::string, codec_rounding, "nearest",
          "How the int4 and int8 encoders of compressed boxings round: nearest (to nearest even) or "
          "stochastic (up with probability equal to the fraction: unbiased; keyed by the tensor, "
          "iteration, rank and element, so runs and resumes repeat). fp8 steps round to nearest.");
ABSL_FLAG(int64_t, compression_warmup, 0,
          "Iterations every compressed boxing runs dense before its codecs take over (DeepSpeed 1-bit "
          "Adam's warm-up; with 50 of 200, int4 gradient reductions under AdamW end within 0.5% of dense "
          "and --compression=auto may pick them: docs/sbp_and_boxing.md).");
ABSL_FLAG(bool, compress_in_node, true,
          "With a forced --compression (fp8, int8, int4): also compress the steps whose group lies inside one "
          "node (the tensor-parallel activations of a node, say). --nocompress_in_node: only the hops that cross "
          "nodes, as DESIGN.md has it; on the gpt over 2 nodes x 2 devices, int4 there ends +0.80% above dense's "
          "final loss under AdamW, every step int4 +5.5% (docs/sbp_and_boxing.md).");
ABSL_FLAG(std::string, int4_gradient_scale, "max",
          "How the int4 steps of variables' gradients scale each group: max (its largest magnitude over 7) or "
          "fitted (of max/7 ... max/10 the scale with the least squared error, code -8 allowed). On the gpt over "
          "2 nodes x 2 devices with --compression=int4 --nocompress_in_node (AdamW lr 3e-4) fitted ends +0.47% "
          "above dense's final loss instead of +0.80%; on a small gpt at lr 1e-2 it ends further from dense "
          "(docs/sbp_and_boxing.md, \"The int4 scale chosen by error\").");
ABSL_FLAG(bool, error_feedback, false,
          "Error feedback on every compressed reduction of a variable's gradient: each device keeps what the "
          "codec dropped and adds it to the next iteration's gradient before encoding; checkpointed with the "
          "optimizer state. Needs a --compression other than off. On the gpt over 2 nodes it brings int4 "
          "cross-node gradient reductions from +0.10% to +0.02% of dense's final loss under SGD, and moves them "
          "further from dense under AdamW (docs/sbp_and_boxing.md, \"Error feedback\").");
ABSL_FLAG(std::string, gradient_wire, "fp32",
          "How variables' gradients travel in their reductions: fp32 (the default; --compression "
          "decides), bf16 (2 bytes an element on every gradient reduction and gather, added in fp32 "
          "after decoding), or auto (bf16 where the cost model finds it faster). A tensor's "
          "WithCompression hint wins.");
ABSL_FLAG(std::string, codec_accuracy_bound, "0.005",
          "The largest final-loss gap, as a fraction of dense's, that --compression=auto accepts for a codec on "
          "any tensor role, as measured (sbp/codec_accuracy.cc; 0.005 is 0.5%, the default), or off: auto may "
          "pick any codec, as before the rule.");
ABSL_FLAG(int64_t, threads_per_device, 1,
          "Threads each CPU device runs its compute kernels on (its compute thread plus helpers "
          "that large matmuls and elementwise kernels split over); recorded in the plan's cluster.");
namespace {
// Calls of --bucket_mb's OnUpdate: absl calls it once when the flag registers (at static
// initialization, FlagImpl::SetCallback) and once per value the command line gives, so a
// second call means the user gave --bucket_mb, whatever the value (an explicit
// --bucket_mb=25 wins over a node-crossing group's link-rate cap as any other does).
int bucket_mb_updates = 0;
// The same for --sbp_search: not given, it follows --auto_parallel.
int sbp_search_updates = 0;
}  // namespace
ABSL_FLAG(double, bucket_mb, 25,
          "Gradient buckets: the data-parallel gradient all-reduces of one communicator group are "
          "packed into buckets of at most this many MiB, in the order backward produces them, one "
          "collective per bucket overlapping the rest of backward (PyTorch DDP's default 25); 0: one "
          "collective per gradient. Not given: a group that crosses nodes is capped further to what its "
          "link moves in about 40 ms (docs/gradient_buckets.md).")
    .OnUpdate([] { ++bucket_mb_updates; });
ABSL_FLAG(std::string, sparse_boxing, "auto",
          "auto: where a tensor lists the rows each device uses (sparse embedding gradients, "
          "FSSDP experts), its boxing moves only those rows, falling back to dense per call when "
          "that is cheaper; off: every boxing dense (docs/sparse_boxing.md).");
ABSL_FLAG(bool, fuse_epilogues, true,
          "Fuse matmul -> bias_add (-> relu) chains whose SBPs agree into one fused_matmul_bias op "
          "(the GEMM adds the bias and applies relu on its output); false: every op as written.");
ABSL_FLAG(bool, sbp_search, false,
          "Search each op's SBP signature beyond the greedy choice: an op and the readers of its "
          "outputs move together where the modelled boxing plus kernel seconds of the graph drop "
          "(compiler/passes/sbp_search_pass.h); false: the greedy choice. Not given: on with "
          "--auto_parallel (every layout the search probes and the chosen one), off otherwise.")
    .OnUpdate([] { ++sbp_search_updates; });
ABSL_FLAG(bool, zero3_regather, true,
          "With --zero=3: backward gathers each parameter again, prefetched one parameter-reading op "
          "ahead, so forward's gathered copies die with their last forward reader (lower peak, 1.5x "
          "the parameter traffic of --zero=0); false: forward's gathered copy is kept for backward "
          "(the traffic of --zero=0: a reduce-scatter and one gather per parameter; docs/zero.md).");
ABSL_FLAG(std::string, communication_streams, "auto",
          "auto: each class of communicator groups (a hierarchy axis of a placement: data-parallel "
          "reductions, tensor-parallel activations, ...) gets its own communication stream, one thread "
          "per stream on each device, so collectives of different classes do not wait for each other; "
          "one: every collective of a device on one thread in one order (for comparison).");
ABSL_FLAG(std::string, reduction_tail, "next_forward",
          "next_forward: the node-crossing gradient reductions the cost model finds still queued when "
          "backward ends run in the order the next forward reads their parameters, so it overlaps the "
          "link (compiler/passes/reduction_tail_order.h); backward: every one in the order backward "
          "produces it (for comparison).");
ABSL_FLAG(std::string, recompute, "none",
          "Activation recomputation: none keeps every activation for backward; selective re-runs "
          "each block's attention core (scores, mask, softmax, dropout) in its backward, as Megatron; "
          "full re-runs every op of each block from its input (docs/memory_and_precision.md).");
ABSL_FLAG(bool, auto_parallel, false,
          "Let the compiler choose --dp --tp --pp --micro_batches --zero --recompute for --nodes x "
          "--devices_per_node, the links and --device_memory: every layout priced by the cost model, the "
          "cheapest that the model accepts and that fits compiled (docs/auto_parallel.md); `oneflow inspect` "
          "shows the decision.");
ABSL_FLAG(bool, predict_step, false,
          "With a hand layout (--dp --tp --pp --micro_batches --zero --recompute): price it with --auto_parallel's "
          "cost model (the same links, codecs and --codec_calibration host terms) and record the prediction in "
          "the plan, so `oneflow run` / `oneflow launch` print it beside the measured step and `oneflow inspect` "
          "shows it (docs/auto_parallel.md). Not with --cp or --virtual_stages, which the model does not price.");
ABSL_FLAG(std::string, precision, "fp32",
          "Compute precision: fp32, or bf16 mixed precision (every matrix product on bf16 "
          "operands with fp32 accumulation through oneDNN; master weights, optimizer state, "
          "reductions and other kernels fp32). bf16 needs a CPU with AVX-512 BF16 or AMX "
          "(docs/memory_and_precision.md).");
ABSL_FLAG(std::string, plan_out, "", "Write the compiled plan to this file.");
ABSL_FLAG(bool, run, false, "After compiling, train the plan on this machine's CPU devices.");
ABSL_FLAG(int64_t, iters, 10, "With --run: iterations to train.");
ABSL_FLAG(bool, print_graph, false,
          "Print the model's graph text (docs/graph_text.md) to stdout instead of compiling it; "
          "`oneflow compile FILE` with the same layout flags compiles it to the same plan.");
ABSL_FLAG(std::string, dump_after, "",
          "Comma-separated compiler pass names (or 'all') after which to print the state.");

namespace oneflow::examples {

namespace {

std::string& ProgramName() {
  static std::string* const name = new std::string;
  return *name;
}

// --help shows the flags of files under examples/ (this library's shared ones, the
// binary's own) and of a user's main file named after the binary (my_model.cc).
bool IsExampleFlagFile(absl::string_view file) {
  if (absl::StrContains(file, "examples/")) return true;
  const size_t slash = file.find_last_of('/');
  absl::string_view base = slash == absl::string_view::npos ? file : file.substr(slash + 1);
  return absl::StripSuffix(base, ".cc") == ProgramName();
}

}  // namespace

void ParseExampleFlags(int argc, char** argv, const char* usage) {
  cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::string_view program = argc > 0 ? argv[0] : "";
  const size_t slash = program.find_last_of('/');
  ProgramName() = std::string(slash == absl::string_view::npos ? program : program.substr(slash + 1));
  absl::FlagsUsageConfig config;
  config.contains_help_flags = &IsExampleFlagFile;
  config.contains_helpshort_flags = &IsExampleFlagFile;
  config.version_string = [] { return std::string("oneflow " ONEFLOW_VERSION "\n"); };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
  absl::ParseCommandLine(argc, argv);
}

absl::StatusOr<ParallelLayout> LayoutFromFlags() {
  ParallelFlags flags;
  flags.nodes = absl::GetFlag(FLAGS_nodes);
  flags.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  flags.dp = absl::GetFlag(FLAGS_dp);
  flags.tp = absl::GetFlag(FLAGS_tp);
  flags.cp = absl::GetFlag(FLAGS_cp);
  flags.cp_attention = absl::GetFlag(FLAGS_cp_attention);
  flags.cp_ring_split = absl::GetFlag(FLAGS_cp_ring_split);
  flags.zero = absl::GetFlag(FLAGS_zero);
  flags.pp = absl::GetFlag(FLAGS_pp);
  flags.micro_batches = absl::GetFlag(FLAGS_micro_batches);
  flags.virtual_stages = absl::GetFlag(FLAGS_virtual_stages);
  OF_ASSIGN_OR_RETURN(flags.stage_blocks, ParseStageBlocks(absl::GetFlag(FLAGS_stage_blocks)));
  flags.intra_node_bandwidth = absl::GetFlag(FLAGS_intra_node_bandwidth);
  flags.inter_node_bandwidth = absl::GetFlag(FLAGS_inter_node_bandwidth);
  return ParallelLayout::Create(flags);
}

CompileSettings SettingsFromFlags() {
  CompileSettings settings;
  settings.threads_per_device = absl::GetFlag(FLAGS_threads_per_device);
  settings.bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  settings.bucket_mb_given = bucket_mb_updates > 1;
  settings.sparse_boxing = absl::GetFlag(FLAGS_sparse_boxing);
  settings.fuse_epilogues = absl::GetFlag(FLAGS_fuse_epilogues);
  settings.zero3_regather = absl::GetFlag(FLAGS_zero3_regather);
  // Per-op SBP is part of what --auto_parallel searches unless --sbp_search says otherwise.
  settings.sbp_search =
      sbp_search_updates > 1 ? absl::GetFlag(FLAGS_sbp_search) : absl::GetFlag(FLAGS_auto_parallel);
  settings.communication_streams = absl::GetFlag(FLAGS_communication_streams);
  settings.reduction_tail = absl::GetFlag(FLAGS_reduction_tail);
  settings.recompute = absl::GetFlag(FLAGS_recompute);
  settings.pp_schedule = absl::GetFlag(FLAGS_pp_schedule);
  settings.device_memory = absl::GetFlag(FLAGS_device_memory);
  settings.precision = absl::GetFlag(FLAGS_precision);
  settings.compression.compression = absl::GetFlag(FLAGS_compression);
  settings.compression.codec_bytes_per_second = absl::GetFlag(FLAGS_codec_bytes_per_second);
  settings.compression.codec_calibration = absl::GetFlag(FLAGS_codec_calibration);
  settings.compression.codec_rounding = absl::GetFlag(FLAGS_codec_rounding);
  settings.compression.gradient_wire = absl::GetFlag(FLAGS_gradient_wire);
  settings.compression.compression_warmup = absl::GetFlag(FLAGS_compression_warmup);
  settings.compression.error_feedback = absl::GetFlag(FLAGS_error_feedback);
  settings.compression.compress_in_node = absl::GetFlag(FLAGS_compress_in_node);
  settings.compression.int4_gradient_scale = absl::GetFlag(FLAGS_int4_gradient_scale);
  settings.compression.codec_accuracy_bound = absl::GetFlag(FLAGS_codec_accuracy_bound);
  settings.links = LinkFlagsFromCommandLine(absl::GetFlag(FLAGS_intra_node_bandwidth), absl::GetFlag(FLAGS_inter_node_bandwidth),
                                            absl::GetFlag(FLAGS_intra_node_latency), absl::GetFlag(FLAGS_inter_node_latency));
  settings.dump_after = absl::StrSplit(absl::GetFlag(FLAGS_dump_after), ',', absl::SkipEmpty());
  return settings;
}

namespace {

// Hands `plan` to the process's exit instead of freeing it: every example ends right after
// its compile, and freeing a large plan message by message costs more CPU than writing it
// (1.8 s for the issue 29 gpt's 434,240 actors, each with kernels and three maps, against
// 1.2 s to serialize and write 91 MB; clang's -disable-free skips freeing its ASTs for
// the same reason). The pointer stays reachable, so leak checkers do not report it.
void KeepUntilExit(proto::Plan plan) {
  static proto::Plan* kept = nullptr;
  if (kept == nullptr) kept = new proto::Plan();
  kept->Swap(&plan);  // The plan kept before (a second compile) is freed with `plan`.
}
// The same for the plan's bytes: one block, but unmapping 91 MB page by page is not free.
void KeepUntilExit(std::string bytes) {
  static std::string* kept = nullptr;
  if (kept == nullptr) kept = new std::string();
  kept->swap(bytes);
}

// Attaches the recipe (what re-planning needs, Plan.recipe) unless the compile recorded it,
// writes --plan_out and runs --run: the end of every compile. `sealed_plan` holds the
// bytes of `plan` as sealed by the compile (CompileOptions::sealed_plan), or is empty.
absl::Status WriteAndRun(const proto::Job& job, const ParallelLayout& layout, const CompileSettings& settings,
                         bool auto_parallel, proto::Plan plan, std::string sealed_plan = "") {
  const std::string plan_out = absl::GetFlag(FLAGS_plan_out);
  if (!plan.has_recipe()) {
    OF_ASSIGN_OR_RETURN(const proto::CompileRecipe recipe, MakeRecipe(job, layout, settings, auto_parallel));
    *plan.mutable_recipe() = recipe;
    // Sealed again with the recipe; when the plan is written, by the one serialization
    // that is written (AttachRecipe's seal and WritePlanFile would walk the plan twice).
    if (plan_out.empty()) {
      OF_RETURN_IF_ERROR(SealPlan(&plan));
    } else {
      OF_ASSIGN_OR_RETURN(sealed_plan, SealAndSerializePlan(&plan));
    }
  }
  if (!plan_out.empty()) {
    if (sealed_plan.empty()) return absl::InternalError("the compile returned no bytes of the plan to write");
    OF_RETURN_IF_ERROR(WriteSerializedPlanFile(plan_out, sealed_plan));
    std::printf("wrote %s (inspect it with: oneflow inspect %s)\n", plan_out.c_str(), plan_out.c_str());
  }
  KeepUntilExit(std::move(sealed_plan));
  absl::Status status = absl::OkStatus();
  if (absl::GetFlag(FLAGS_run)) {
    // The same path as `oneflow run` on the written plan.
    actors::LocalRun run;
    run.iterations = absl::GetFlag(FLAGS_iters);
    status = actors::RunPlanLocally(plan, run, std::cout, /*out_is_terminal=*/false, std::cerr);
  }
  KeepUntilExit(std::move(plan));
  return status;
}

}  // namespace

namespace {

// `build` with the job's data files resolved (ResolveDataFiles), as the search's probes
// and the compiled layout need them.
JobBuilder WithDataFilesResolved(const JobBuilder& build) {
  return [&build](const ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    OF_ASSIGN_OR_RETURN(proto::Job job, build(layout));
    OF_RETURN_IF_ERROR(ResolveDataFiles(&job));
    return job;
  };
}

// A hand layout as the cost model names it (stage_blocks as given: empty when balanced).
proto::AutoParallelLayout AutoParallelLayoutOf(const ParallelLayout& layout, proto::RecomputeMode recompute,
                                               proto::PipelineSchedule schedule, bool zero3_regather) {
  proto::AutoParallelLayout given;
  given.set_dp(layout.dp());
  given.set_tp(layout.tp());
  given.set_pp(layout.pp());
  for (int64_t blocks : layout.stage_blocks()) given.add_stage_blocks(blocks);
  given.set_micro_batches(layout.micro_batches());
  given.set_zero(static_cast<int32_t>(layout.zero()));
  given.set_zero3_kept(!zero3_regather);  // the cost model refuses it without stage 3
  given.set_recompute(recompute);
  if (layout.pp() > 1) given.set_schedule(schedule);
  return given;
}

}  // namespace

bool AutoParallelRequested() { return absl::GetFlag(FLAGS_auto_parallel); }

absl::Status CompileAndReportAuto(const JobBuilder& build) {
  // The layout flags are what the search chooses: giving one is a contradiction.
  for (const char* name : {"dp", "tp", "pp", "stage_blocks", "pp_schedule", "zero", "zero3_regather", "micro_batches", "recompute"}) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && flag->CurrentValue() != flag->DefaultValue()) {
      return absl::InvalidArgumentError(absl::StrCat("--auto_parallel chooses --", name, "; do not give --", name,
                                                     "=", flag->CurrentValue(), " with it"));
    }
  }
  if (absl::GetFlag(FLAGS_print_graph)) {
    return absl::InvalidArgumentError(
        "--print_graph prints one layout's graph; compile with --auto_parallel --plan_out=FILE and inspect the plan");
  }
  if (absl::GetFlag(FLAGS_predict_step)) {
    return absl::InvalidArgumentError(
        "--predict_step prices a layout given by hand; --auto_parallel records the prediction of the layout it "
        "chooses anyway: drop --predict_step");
  }
  AutoParallelRequest request;
  request.cluster.nodes = absl::GetFlag(FLAGS_nodes);
  request.cluster.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  request.cluster.intra_node_bandwidth = absl::GetFlag(FLAGS_intra_node_bandwidth);
  request.cluster.inter_node_bandwidth = absl::GetFlag(FLAGS_inter_node_bandwidth);
  request.settings = SettingsFromFlags();
  request.device_memory = absl::GetFlag(FLAGS_device_memory);
  if (request.device_memory < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--device_memory=", request.device_memory,
                                                   " is negative; give bytes one device may hold (0: no limit)"));
  }
  const JobBuilder resolved = WithDataFilesResolved(build);
  OF_ASSIGN_OR_RETURN(AutoParallelResult result, AutoParallelCompile(resolved, request));
  std::fputs(AutoParallelSummary(result.plan.auto_parallel(), result.search_seconds).c_str(), stdout);
  for (const std::string& warning : LayoutWarnings(result.job, result.layout)) {
    std::fprintf(stderr, "%s: warning: %s\n", ProgramName().c_str(), warning.c_str());
  }
  std::fputs(CompileSummary(result.job, result.layout, result.plan, result.compile_seconds).c_str(), stdout);
  const CompileSettings chosen = SettingsForLayout(request.settings, result.plan.auto_parallel().chosen().layout());
  return WriteAndRun(result.job, result.layout, chosen, /*auto_parallel=*/true, std::move(result.plan));
}

namespace {

// The schedule of --pp_schedule the cost model prices (1F1B and ZB-H1: the bubble of the
// others is not in it, and their prediction would be 1F1B's under their name); `what`
// names the flag that asks for a price, `instead` the way out.
absl::StatusOr<proto::PipelineSchedule> PricedSchedule(const ParallelLayout& layout, const CompileSettings& settings,
                                                       absl::string_view what, absl::string_view instead) {
  OF_ASSIGN_OR_RETURN(const proto::PipelineSchedule schedule, ParsePipelineSchedule(settings.pp_schedule));
  if (layout.pp() > 1 && schedule != proto::PIPELINE_SCHEDULE_1F1B && schedule != proto::PIPELINE_SCHEDULE_ZB_H1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " prices the 1f1b and zb pipeline schedules; --pp_schedule=",
                                                   settings.pp_schedule, " is not in the cost model: ", instead));
  }
  return schedule;
}

// --predict_step: the cost model's price of `layout`, the decision record the plan carries.
absl::StatusOr<proto::AutoParallelDecision> PredictGivenLayout(const JobBuilder& build, const ParallelLayout& layout,
                                                               const CompileSettings& settings,
                                                               proto::RecomputeMode recompute) {
  if (layout.cp() > 1 || layout.virtual_stages() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--predict_step prices layouts of dp, tp, pp, micro-batches, ZeRO and recomputation; --",
        layout.cp() > 1 ? absl::StrCat("cp=", layout.cp()) : absl::StrCat("virtual_stages=", layout.virtual_stages()),
        " is not in the cost model: drop it or --predict_step"));
  }
  OF_ASSIGN_OR_RETURN(const proto::PipelineSchedule schedule, PricedSchedule(layout, settings, "--predict_step",
                                                                             "drop it or --predict_step"));
  AutoParallelRequest request;
  request.cluster.nodes = absl::GetFlag(FLAGS_nodes);
  request.cluster.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  request.cluster.intra_node_bandwidth = absl::GetFlag(FLAGS_intra_node_bandwidth);
  request.cluster.inter_node_bandwidth = absl::GetFlag(FLAGS_inter_node_bandwidth);
  request.settings = settings;
  request.settings.pp_schedule = "1f1b";  // the cost model's probes; the layout carries the schedule
  return PriceGivenLayout(WithDataFilesResolved(build), request,
                          AutoParallelLayoutOf(layout, recompute, schedule, settings.zero3_regather));
}

// --stage_blocks=auto: the layout with the cuts ChooseStageCuts gives, and the model
// built for it (the given ones when the balanced cut stays); prints the choice.
absl::Status ApplyAutoStageCuts(const JobBuilder* build, std::optional<ParallelLayout>* layout, proto::Job* job) {
  if (build == nullptr) {
    return absl::InvalidArgumentError(
        "--stage_blocks=auto: this program builds one layout only and cannot give the cost model its probe layout; "
        "give the counts (--stage_blocks=3,1), or use the gpt, mlp or llama example");
  }
  if ((*layout)->pp() < 2 || (*layout)->virtual_stages() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--stage_blocks=auto cuts consecutive blocks into pipeline stages, but ",
        (*layout)->pp() < 2 ? absl::StrCat("--pp=", (*layout)->pp(), " has one stage")
                            : absl::StrCat("--virtual_stages=", (*layout)->virtual_stages(), " interleaves chunks of equal blocks"),
        "; drop --stage_blocks"));
  }
  const CompileSettings settings = SettingsFromFlags();
  OF_ASSIGN_OR_RETURN(const proto::PipelineSchedule schedule,
                      PricedSchedule(**layout, settings, "--stage_blocks=auto", "give the counts"));
  AutoParallelRequest request;
  request.cluster = FlagsOfLayout(**layout);
  request.settings = settings;
  request.settings.pp_schedule = "1f1b";  // the cost model's probes; the layout carries the schedule
  request.device_memory = absl::GetFlag(FLAGS_device_memory);
  absl::StatusOr<proto::RecomputeMode> recompute = ParseRecomputeMode(settings.recompute);
  if (!recompute.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--recompute=", settings.recompute, " is not one of: none, selective, full"));
  }
  OF_ASSIGN_OR_RETURN(const ChosenStageCuts cuts, ChooseStageCuts(WithDataFilesResolved(*build), request,
                                                                  AutoParallelLayoutOf(**layout, *recompute, schedule,
                                                                                       settings.zero3_regather)));
  if (cuts.counts.empty()) {
    std::printf("stage cuts (--stage_blocks=auto): balanced, predicted step %.3g ms (the DP over the cuts found none "
                "faster)\n",
                1e3 * cuts.balanced_step_seconds);
    return absl::OkStatus();
  }
  std::printf("stage cuts (--stage_blocks=auto): --stage_blocks=%s, predicted step %.3g ms against %.3g ms balanced\n",
              absl::StrJoin(cuts.counts, ",").c_str(), 1e3 * cuts.chosen_step_seconds, 1e3 * cuts.balanced_step_seconds);
  ParallelFlags flags = FlagsOfLayout(**layout);
  flags.stage_blocks = cuts.counts;
  OF_ASSIGN_OR_RETURN(ParallelLayout cut, ParallelLayout::Create(flags));
  OF_ASSIGN_OR_RETURN(*job, (*build)(cut));
  *layout = std::move(cut);
  return absl::OkStatus();
}

// CompileAndReport's body; `build` is null for an example that gives no model builder
// (--predict_step and --stage_blocks=auto are then refused).
absl::Status CompileAndReportLayout(const proto::Job& written, const ParallelLayout& given_layout,
                                    const JobBuilder* build) {
  std::optional<ParallelLayout> chosen_layout = given_layout;
  proto::Job built = written;
  if (absl::GetFlag(FLAGS_stage_blocks) == "auto") OF_RETURN_IF_ERROR(ApplyAutoStageCuts(build, &chosen_layout, &built));
  const ParallelLayout& layout = *chosen_layout;
  const bool predict_step = absl::GetFlag(FLAGS_predict_step);
  if (predict_step && build == nullptr) {
    return absl::InvalidArgumentError(
        "--predict_step: this program builds one layout only and cannot give the cost model its probe layout; "
        "the gpt, mlp and llama examples take it");
  }
  if (predict_step && absl::GetFlag(FLAGS_print_graph)) {
    return absl::InvalidArgumentError("--print_graph prints the graph and compiles nothing: drop --predict_step");
  }
  proto::Job job = std::move(built);
  OF_RETURN_IF_ERROR(ResolveDataFiles(&job));
  if (absl::GetFlag(FLAGS_print_graph)) {
    OF_ASSIGN_OR_RETURN(const std::unique_ptr<Graph> graph, Graph::FromJob(job));
    std::fputs(graph->ToText(Graph::Locations::kPrint).c_str(), stdout);
    return absl::OkStatus();
  }
  const CompileSettings settings = SettingsFromFlags();
  std::vector<std::string> warnings = LayoutWarnings(job, layout);
  for (std::string& warning : SettingsWarnings(job, layout, settings)) warnings.push_back(std::move(warning));
  for (const std::string& warning : warnings) {
    std::fprintf(stderr, "%s: warning: %s\n", ProgramName().c_str(), warning.c_str());
  }
  std::string dump;
  OF_ASSIGN_OR_RETURN(CompileOptions options, CompileOptionsFor(layout, settings, &dump));
  // The recipe goes in before the compile seals the plan, and a plan to be written comes
  // back with its bytes: one serialization of the plan in the whole process (with
  // --predict_step the plan is sealed again after the record is added, so not here).
  OF_ASSIGN_OR_RETURN(options.recipe, MakeRecipe(job, layout, settings, /*auto_parallel=*/false));
  std::string sealed_plan;
  if (!absl::GetFlag(FLAGS_plan_out).empty() && !predict_step) options.sealed_plan = &sealed_plan;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fputs(dump.c_str(), stdout);
  OF_RETURN_IF_ERROR(plan.status());
  std::fputs(CompileSummary(job, layout, *plan, seconds).c_str(), stdout);
  if (predict_step) {
    const auto price_start = std::chrono::steady_clock::now();
    OF_ASSIGN_OR_RETURN(proto::AutoParallelDecision decision,
                        PredictGivenLayout(*build, layout, settings, options.recompute));
    int64_t planned_peak = 0;
    for (const proto::DevicePlan& device : plan->devices()) planned_peak = std::max(planned_peak, device.peak_bytes());
    decision.set_planned_peak_bytes(planned_peak);
    const double price_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - price_start).count();
    std::fputs(AutoParallelSummary(decision, price_seconds, /*given_layout=*/true).c_str(), stdout);
    *plan->mutable_auto_parallel() = std::move(decision);
    if (absl::GetFlag(FLAGS_plan_out).empty()) {
      OF_RETURN_IF_ERROR(SealPlan(&*plan));
    } else {
      OF_ASSIGN_OR_RETURN(sealed_plan, SealAndSerializePlan(&*plan));
    }
  }
  return WriteAndRun(job, layout, settings, /*auto_parallel=*/false, *std::move(plan), std::move(sealed_plan));
}

}  // namespace

absl::Status CompileAndReport(const proto::Job& job, const ParallelLayout& layout) {
  return CompileAndReportLayout(job, layout, nullptr);
}

absl::Status CompileAndReport(const proto::Job& job, const ParallelLayout& layout, const JobBuilder& build) {
  return CompileAndReportLayout(job, layout, &build);
}

int RunExample(const char* name, absl::Status (*body)()) {
  absl::Status status = body();
  if (status.ok()) return 0;
  std::fprintf(stderr, "%s: error: %s\n", name, std::string(status.message()).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace oneflow::examples
