// llama: compiles a Llama-class decoder (docs/llama.md) for a cluster layout.
//
//   llama --nodes=1 --devices_per_node=4 --tp=4 --layers=2 --plan_out=/tmp/llama.plan
//   oneflow inspect /tmp/llama.plan
//
// --dp=1 --tp=1 on one device is the single-device reference.
#include "absl/flags/flag.h"
#include "examples/common/example_main.h"
#include "examples/llama/llama_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, batch, 8, "Sequences per iteration (the logical batch).");
ABSL_FLAG(int64_t, seq, 64, "Sequence length.");
ABSL_FLAG(int64_t, layers, 2, "Decoder blocks.");
ABSL_FLAG(int64_t, hidden, 128, "Hidden width.");
ABSL_FLAG(int64_t, heads, 4, "Query heads (must divide --hidden; --tp should divide it).");
ABSL_FLAG(int64_t, kv_heads, 2,
          "Key/value heads of grouped-query attention (must divide --heads; --heads: multi-head "
          "attention). Split over --tp when --tp divides them, replicated otherwise.");
ABSL_FLAG(int64_t, ffn_hidden, 0, "SwiGLU inner width; 0: 2/3 of 4 x --hidden rounded up to a multiple of 32.");
ABSL_FLAG(int64_t, vocab, 512, "Vocabulary size.");
ABSL_FLAG(double, rope_base, 10000.0, "Base of the rotary embeddings' angles.");
ABSL_FLAG(std::string, token_file, "", "Little-endian int32 tokens; empty: synthetic tokens.");
ABSL_FLAG(std::string, text_file, "",
          "Train on the bytes of any file (vocabulary 256, next-byte prediction; --vocab is ignored), "
          "e.g. /usr/share/common-licenses/GPL-3.");
ABSL_FLAG(double, lr, 3e-4, "Peak learning rate (AdamW, warmup-cosine).");
ABSL_FLAG(int64_t, adamw_freeze_variance_from, 0,
          "AdamW's second moment v frozen from this step on (1-bit Adam's freeze_step; 0: never). "
          "Error feedback on compressed gradients (--error_feedback) needs it under AdamW, "
          "set to the dense warm-up's end: --compression_warmup=N --adamw_freeze_variance_from=N --error_feedback "
          "(docs/sbp_and_boxing.md, \"Error feedback under a frozen variance\").");
ABSL_FLAG(bool, vocab_parallel_loss, true,
          "Megatron's vocab-parallel cross-entropy: the logits stay split by vocabulary over --tp "
          "(false: the whole-row cross-entropy, which gathers the logits on every tp device).");

namespace oneflow::examples {
namespace {

absl::Status Main() {
  LlamaConfig config;
  config.batch = absl::GetFlag(FLAGS_batch);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.kv_heads = absl::GetFlag(FLAGS_kv_heads);
  config.ffn_hidden = absl::GetFlag(FLAGS_ffn_hidden);
  config.vocab = absl::GetFlag(FLAGS_vocab);
  config.rope_base = absl::GetFlag(FLAGS_rope_base);
  config.token_file = absl::GetFlag(FLAGS_token_file);
  config.text_file = absl::GetFlag(FLAGS_text_file);
  config.learning_rate = absl::GetFlag(FLAGS_lr);
  config.adamw_freeze_variance_from = absl::GetFlag(FLAGS_adamw_freeze_variance_from);
  config.vocab_parallel_loss = absl::GetFlag(FLAGS_vocab_parallel_loss);
  const JobBuilder build = [&config](const ParallelLayout& layout) { return BuildLlama(config, layout); };
  if (AutoParallelRequested()) return CompileAndReportAuto(build);
  OF_ASSIGN_OR_RETURN(ParallelLayout layout, LayoutFromFlags());
  OF_ASSIGN_OR_RETURN(proto::Job job, BuildLlama(config, layout));
  return CompileAndReport(job, layout, build);
}

}  // namespace
}  // namespace oneflow::examples

int main(int argc, char** argv) {
  oneflow::examples::ParseExampleFlags(argc, argv, "Compiles a Llama-class decoder to a per-device plan.");
  return oneflow::examples::RunExample("llama", &oneflow::examples::Main);
}
