#include "tools/cli/compile_command.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "plan/plan_io.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/micro_batch_split.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/graph_text_job.h"

// The layout and compile flags of the example binaries (examples/common/example_main.cc),
// with their defaults, so that `oneflow compile` of a model's text and the model's binary
// agree. --nodes (daemon_flags.cc) and --threads_per_device (run_command.cc) are shared
// with other subcommands; compile reads --nodes as a count.
ABSL_FLAG(int64_t, devices_per_node, 1, "CPU devices per node.");
ABSL_FLAG(int64_t, dp, 1, "Data-parallel degree.");
ABSL_FLAG(int64_t, tp, 1, "Tensor-parallel degree (the graph's sbp hints say which tensors split).");
ABSL_FLAG(int64_t, pp, 1, "Pipeline stages of dp x tp devices each (the graph places its blocks on them).");
ABSL_FLAG(int64_t, micro_batches, 1,
          "Micro-batches per iteration; the graph's data tensors are one micro-batch.");
ABSL_FLAG(int64_t, zero, 0,
          "ZeRO stage 1..3 over the data-parallel axis (docs/zero.md); 0: as the graph's optimizer line says.");
ABSL_FLAG(bool, zero3_regather, true,
          "With --zero=3: backward gathers each parameter again; false keeps forward's gathered copy (the "
          "bytes of --zero=0, half of them gathered in forward; docs/zero.md).");
ABSL_FLAG(double, intra_node_bandwidth, 100e9, "Bytes/s between devices of one node.");
ABSL_FLAG(double, inter_node_bandwidth, 12.5e9, "Bytes/s between nodes.");
ABSL_FLAG(double, intra_node_latency, 1e-5,
          "Seconds of one message round between devices of one node (the cost model's alpha).");
ABSL_FLAG(double, inter_node_latency, 5e-4, "Seconds of one message round between nodes (the cost model's alpha).");
ABSL_FLAG(std::string, compression, "auto",
          "How boxings move f32 tensors: off, auto (where the cost model gains), fp8, int8 or int4 "
          "(docs/sbp_and_boxing.md).");
ABSL_FLAG(double, codec_bytes_per_second, 0,
          "Dense f32 bytes/s one device encodes and decodes (0: the built-in table or --codec_calibration).");
ABSL_FLAG(std::string, codec_calibration, "", "A codec throughput file written by `oneflow calibrate --out=FILE`.");
ABSL_FLAG(std::string, codec_rounding, "nearest",
          "How int4 and int8 encoders round: nearest or stochastic (docs/sbp_and_boxing.md).");
ABSL_FLAG(int64_t, compression_warmup, 0,
          "Iterations every compressed boxing runs dense before its codecs (docs/sbp_and_boxing.md).");
ABSL_FLAG(bool, compress_in_node, true,
          "With a forced --compression: also compress in-node steps; --nocompress_in_node: only the hops "
          "that cross nodes (docs/sbp_and_boxing.md).");
ABSL_FLAG(std::string, int4_gradient_scale, "max",
          "How gradients' int4 steps scale each group: max or fitted (docs/sbp_and_boxing.md).");
ABSL_FLAG(bool, error_feedback, false,
          "Error feedback on every compressed gradient reduction; needs a --compression other than off "
          "(docs/sbp_and_boxing.md).");
ABSL_FLAG(std::string, codec_accuracy_bound, "0.005",
          "The largest measured final-loss gap, as a fraction of dense's, --compression=auto accepts for a codec "
          "(0.005 is 0.5%, the default), or off (docs/sbp_and_boxing.md).");
ABSL_FLAG(std::string, gradient_wire, "fp32",
          "How gradient reductions travel: fp32, bf16 (added in fp32 after decoding) or auto (bf16 where "
          "modelled faster; docs/memory_and_precision.md).");
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
          "Gradient bucket size in MiB (0: one collective per gradient). Not given: a group that crosses "
          "nodes is capped further to what its link moves in about 40 ms.")
    .OnUpdate([] { ++bucket_mb_updates; });
ABSL_FLAG(std::string, sparse_boxing, "auto", "auto or off (docs/sparse_boxing.md).");
ABSL_FLAG(bool, fuse_epilogues, true, "Fuse matmul -> bias_add (-> relu) chains into fused_matmul_bias.");
ABSL_FLAG(bool, sbp_search, false,
          "Search each op's SBP beyond the greedy choice where the modelled boxing plus kernel seconds "
          "drop (compiler/passes/sbp_search_pass.h). Not given: on with --auto_parallel, off otherwise.")
    .OnUpdate([] { ++sbp_search_updates; });
ABSL_FLAG(std::string, precision, "fp32",
          "fp32, or bf16 mixed precision (matrix products on bf16 operands with fp32 accumulation; needs "
          "AVX-512 BF16 or AMX; docs/memory_and_precision.md).");
ABSL_FLAG(std::string, recompute, "none",
          "Activation recomputation: none, selective (the attention cores of the graph's blocks) or full (every op "
          "of a block from its input); the graph marks blocks with [block=NAME] (docs/memory_and_precision.md).");
ABSL_FLAG(std::string, pp_schedule, "1f1b",
          "Pipeline schedule with --pp > 1: 1f1b, interleaved (needs --virtual_stages >= 2), zb (zero-bubble "
          "ZB-H1) or auto (by --device_memory) (docs/pipeline.md).");
ABSL_FLAG(int64_t, virtual_stages, 1,
          "Chunks of blocks per pipeline stage for --pp_schedule=interleaved; the graph's op placements must be "
          "the ones the example printed for the same --pp and --virtual_stages.");
ABSL_FLAG(int64_t, cp, 1,
          "Context-parallel degree (the layout's context axis); the graph must be one printed for the same --cp, "
          "whose ops already say how attention runs.");
ABSL_FLAG(std::string, cp_attention, "auto",
          "ulysses, ring or auto: give the value the graph was printed with. The text's ops already say how its "
          "attention runs; the value is recorded in the plan's recipe, as the example records it.");
ABSL_FLAG(std::string, cp_ring_split, "contiguous",
          "zigzag or contiguous: give the value the graph was printed with. The text's ops already hold the "
          "sequence in that order; the value is recorded in the plan's recipe, as the example records it.");
ABSL_FLAG(std::string, communication_streams, "auto",
          "auto (a communication stream per group class) or one (every collective on one thread).");
ABSL_FLAG(std::string, reduction_tail, "next_forward",
          "next_forward (the node-crossing gradient reductions queued when backward ends run in the order the "
          "next forward needs them) or backward (in the order backward produces them).");
ABSL_FLAG(std::string, plan_out, "", "Write the compiled plan to this file.");
ABSL_FLAG(bool, auto_parallel, false,
          "Let the compiler choose --dp --tp --zero and recomputation for --nodes x --devices_per_node, the links "
          "and --device_memory (the examples' search; docs/auto_parallel.md). The graph must have no `placement` "
          "line; graph text has no stage map and fixes the micro-batch, so pp and micro_batches stay 1.");
ABSL_FLAG(int64_t, device_memory, 0,
          "With --auto_parallel: bytes one device may hold (0: no limit); layouts whose predicted or planned peak "
          "is above it are not chosen. With --pp_schedule=auto: the memory budget the schedule is chosen by.");
ABSL_FLAG(std::string, dump_after, "",
          "Comma-separated compiler pass names (or 'all') after which to print the state.");

ABSL_DECLARE_FLAG(int64_t, threads_per_device);

namespace oneflow::cli {
namespace {

// --nodes is the daemons' HOST:PORT list for launch; here it is a count (default 1).
absl::StatusOr<int64_t> NodeCount() {
  const std::string nodes = absl::GetFlag(FLAGS_nodes);
  if (nodes.empty()) return 1;
  int64_t count = 0;
  if (!absl::SimpleAtoi(nodes, &count)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nodes=", nodes, " is not a number of nodes; compile takes a count (--nodes=2), "
                     "launch the daemons' HOST:PORT list"));
  }
  return count;
}

absl::StatusOr<std::string> ReadGraphFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory; give a graph text file"));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open the graph file"));
  std::stringstream text;
  text << file.rdbuf();
  if (!file.good() && !file.eof()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read it (a directory?)"));
  }
  return text.str();
}

bool FlagGiven(const char* name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && flag->CurrentValue() != flag->DefaultValue();
}

// The flags the search chooses; giving one with --auto_parallel is a contradiction.
absl::Status CheckNoLayoutFlags() {
  // A graph text is searched with one pipeline stage and no context axis.
  for (const char* name : {"cp", "cp_attention", "cp_ring_split", "virtual_stages"}) {
    if (FlagGiven(name)) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", flag->CurrentValue(),
                        " is not searched: --auto_parallel on a graph text searches 1F1B and ZB-H1 pipelines of one chunk per stage and --cp=1; "
                       "compile without --auto_parallel to give it"));
    }
  }
  for (const char* name : {"dp", "tp", "pp", "pp_schedule", "micro_batches", "zero", "zero3_regather", "recompute"}) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && flag->CurrentValue() != flag->DefaultValue()) {
      return absl::InvalidArgumentError(absl::StrCat("--auto_parallel chooses --", name, "; do not give --", name,
                                                     "=", flag->CurrentValue(), " with it"));
    }
  }
  if (!absl::GetFlag(FLAGS_dump_after).empty()) {
    return absl::InvalidArgumentError(
        "--dump_after dumps one layout's compilation; compile the chosen layout's flags without --auto_parallel "
        "to dump it");
  }
  return absl::OkStatus();
}

// Writes --plan_out with the recipe attached: what `oneflow launch --elastic=shrink` needs
// to compile it again (Plan.recipe), as the examples record it: the same Job and layout
// give the same bytes.
absl::Status WritePlanOut(const proto::Job& job, const examples::ParallelLayout& layout,
                          const examples::CompileSettings& settings, bool auto_parallel, proto::Plan plan,
                          std::ostream& out) {
  const std::string plan_out = absl::GetFlag(FLAGS_plan_out);
  if (plan_out.empty()) return absl::OkStatus();
  OF_ASSIGN_OR_RETURN(const proto::CompileRecipe recipe, examples::MakeRecipe(job, layout, settings, auto_parallel));
  OF_RETURN_IF_ERROR(examples::AttachRecipe(recipe, &plan));
  OF_RETURN_IF_ERROR(WritePlanFile(plan_out, plan));
  out << "wrote " << plan_out << " (inspect it with: oneflow inspect " << plan_out << ")\n";
  return absl::OkStatus();
}

absl::Status RunCompile(const std::vector<std::string>& arguments, std::ostream& out) {
  if (absl::GetFlag(FLAGS_auto_parallel)) OF_RETURN_IF_ERROR(CheckNoLayoutFlags());
  const int64_t device_memory = absl::GetFlag(FLAGS_device_memory);
  if (device_memory < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--device_memory=", device_memory,
                                                   " is negative; give bytes one device may hold (0: no limit)"));
  }
  if (device_memory > 0 && !absl::GetFlag(FLAGS_auto_parallel) && absl::GetFlag(FLAGS_pp_schedule) != "auto") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device_memory=", device_memory,
        " is a limit for --auto_parallel's search or --pp_schedule=auto; add one of them"));
  }
  examples::ParallelFlags flags;
  OF_ASSIGN_OR_RETURN(flags.nodes, NodeCount());
  flags.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  flags.dp = absl::GetFlag(FLAGS_dp);
  flags.tp = absl::GetFlag(FLAGS_tp);
  flags.pp = absl::GetFlag(FLAGS_pp);
  flags.micro_batches = absl::GetFlag(FLAGS_micro_batches);
  flags.zero = absl::GetFlag(FLAGS_zero);
  flags.cp = absl::GetFlag(FLAGS_cp);
  flags.cp_attention = absl::GetFlag(FLAGS_cp_attention);
  flags.cp_ring_split = absl::GetFlag(FLAGS_cp_ring_split);
  flags.virtual_stages = absl::GetFlag(FLAGS_virtual_stages);
  flags.intra_node_bandwidth = absl::GetFlag(FLAGS_intra_node_bandwidth);
  flags.inter_node_bandwidth = absl::GetFlag(FLAGS_inter_node_bandwidth);
  examples::CompileSettings settings;
  // run's --threads_per_device, where 0 means "the plan's"; a new plan's default is 1.
  const int64_t threads = absl::GetFlag(FLAGS_threads_per_device);
  settings.threads_per_device = threads == 0 ? 1 : threads;
  settings.bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  settings.bucket_mb_given = bucket_mb_updates > 1;
  settings.sparse_boxing = absl::GetFlag(FLAGS_sparse_boxing);
  settings.fuse_epilogues = absl::GetFlag(FLAGS_fuse_epilogues);
  settings.zero3_regather = absl::GetFlag(FLAGS_zero3_regather);
  // Per-op SBP is part of what --auto_parallel searches unless --sbp_search says otherwise.
  settings.sbp_search =
      sbp_search_updates > 1 ? absl::GetFlag(FLAGS_sbp_search) : absl::GetFlag(FLAGS_auto_parallel);
  settings.precision = absl::GetFlag(FLAGS_precision);
  settings.recompute = absl::GetFlag(FLAGS_recompute);
  settings.pp_schedule = absl::GetFlag(FLAGS_pp_schedule);
  settings.communication_streams = absl::GetFlag(FLAGS_communication_streams);
  settings.reduction_tail = absl::GetFlag(FLAGS_reduction_tail);
  settings.device_memory = device_memory;
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
  settings.links = examples::LinkFlagsFromCommandLine(
      absl::GetFlag(FLAGS_intra_node_bandwidth), absl::GetFlag(FLAGS_inter_node_bandwidth),
      absl::GetFlag(FLAGS_intra_node_latency), absl::GetFlag(FLAGS_inter_node_latency));
  settings.dump_after = absl::StrSplit(absl::GetFlag(FLAGS_dump_after), ',', absl::SkipEmpty());
  const std::string& path = arguments[0];
  if (absl::GetFlag(FLAGS_auto_parallel)) {
    OF_ASSIGN_OR_RETURN(const std::string text, ReadGraphFile(path));
    examples::AutoParallelRequest request;
    request.cluster = flags;
    request.settings = settings;
    request.device_memory = device_memory;
    std::string tensor_parallel_note;  // what the chosen layout's job split, if inferred
    std::string search_note;           // the families the text leaves out of the search, if any
    OF_ASSIGN_OR_RETURN(const examples::AutoParallelResult result,
                        AutoParallelFromGraphText(text, path, request, &tensor_parallel_note, &search_note));
    out << examples::AutoParallelSummary(result.plan.auto_parallel(), result.search_seconds);
    out << search_note;
    if (!tensor_parallel_note.empty()) out << tensor_parallel_note << "\n";
    // The compiled job (its micro-batches; result.job is the recipe's, before the cut).
    for (const std::string& warning : examples::LayoutWarnings(result.plan.job(), result.layout)) {
      std::cerr << "oneflow compile: warning: " << warning << "\n";
    }
    out << examples::CompileSummary(result.plan.job(), result.layout, result.plan, result.compile_seconds);
    const examples::CompileSettings chosen =
        examples::SettingsForLayout(settings, result.plan.auto_parallel().chosen().layout());
    return WritePlanOut(result.job, result.layout, chosen, /*auto_parallel=*/true, result.plan, out);
  }
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions options, examples::CompileOptionsFor(layout, settings, &dump));
  OF_ASSIGN_OR_RETURN(const std::string text, ReadGraphFile(path));
  std::string tensor_parallel_note;
  OF_ASSIGN_OR_RETURN(const proto::Job job, JobFromGraphText(text, path, layout, &tensor_parallel_note));
  if (!tensor_parallel_note.empty()) out << tensor_parallel_note << "\n";
  std::vector<std::string> warnings = examples::LayoutWarnings(job, layout);
  for (std::string& warning : examples::SettingsWarnings(job, layout, settings)) warnings.push_back(std::move(warning));
  for (const std::string& warning : warnings) std::cerr << "oneflow compile: warning: " << warning << "\n";
  if (const int64_t of = examples::MicroBatchesOfInputs(job); of > 1 && layout.micro_batches() != of) {
    // A text of one micro-batch (`--print_graph --micro_batches=K`: its `batch N` line and
    // inputs of N / K rows) trains what its inputs hold times --micro_batches, not its batch.
    const int64_t rows = job.batch_size() / of;
    std::cerr << "oneflow compile: warning: " << path << "'s inputs hold " << rows << " rows, one of " << of
              << " micro-batches of its `batch " << job.batch_size() << "` line (as `--print_graph --micro_batches="
              << of << "` writes it); this plan trains " << rows * layout.micro_batches()
              << " rows an iteration: give --micro_batches=" << of << " to train the batch of " << job.batch_size()
              << "\n";
  }
  if (layout.micro_batches() > 1 && job.batch_size() == 0) {
    // Without a `batch` line the text's rows cannot be told from one micro-batch's.
    std::cerr << "oneflow compile: warning: " << path << " has no `batch N` line, so its inputs are taken as one "
              << "micro-batch and an iteration runs --micro_batches=" << layout.micro_batches()
              << " of them; write `batch N` (N = its inputs' rows) to have them cut into micro-batches instead\n";
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << dump;
  OF_RETURN_IF_ERROR(plan.status());
  out << examples::CompileSummary(job, layout, *plan, seconds);
  return WritePlanOut(RecipeJob(job, tensor_parallel_note), layout, settings, /*auto_parallel=*/false,
                      *std::move(plan), out);
}

}  // namespace

Subcommand CompileSubcommand() {
  Subcommand command;
  command.name = "compile";
  command.arguments = "GRAPH.txt";
  command.flag_usage =
      "[--nodes=N] [--devices_per_node=N] [--dp=N] [--tp=N] [--pp=N] [--micro_batches=N] [--zero=0..3] "
      "[--zero3_regather=true|false] "
      "[--cp=N] [--cp_attention=ulysses|ring|auto] [--cp_ring_split=contiguous|zigzag] [--virtual_stages=N] [--pp_schedule=1f1b|interleaved|zb|auto] [--recompute=none|selective|full] "
      "[--precision=fp32|bf16] [--compression=off|auto|fp8|int8|int4] [--auto_parallel [--device_memory=BYTES]] "
      "[--plan_out=FILE]";
  command.summary = "compile a model written in the graph text format (docs/graph_text.md) into a plan";
  command.flags = {"nodes",          "devices_per_node",       "dp",
                   "tp",             "pp",                     "micro_batches",
                   "zero",           "compression",            "plan_out",
                   "intra_node_bandwidth", "inter_node_bandwidth", "intra_node_latency",
                   "inter_node_latency",   "codec_bytes_per_second",
                   "codec_calibration",    "codec_rounding",       "bucket_mb",            "sparse_boxing",
                   "fuse_epilogues",       "threads_per_device",   "dump_after",
                   "auto_parallel",        "device_memory",
                   "recompute",            "precision",            "pp_schedule",
                   "virtual_stages",       "cp",                   "cp_attention",
                   "cp_ring_split",        "communication_streams", "gradient_wire",
                   "compression_warmup",   "codec_accuracy_bound", "error_feedback",
                   "compress_in_node",     "int4_gradient_scale",  "sbp_search",
                   "zero3_regather",       "reduction_tail"};
  command.flag_help = {{"nodes", "Nodes of the cluster (a count; default 1)."},
                       {"threads_per_device",
                        "Threads each CPU device runs its compute kernels on, kept in the plan's cluster "
                        "(0 or 1: one)."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunCompile;
  return command;
}

}  // namespace oneflow::cli
