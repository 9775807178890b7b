// The sbp_search pass on a small graph written as text: which ops it moves off the
// greedy choice, and that without CompileOptions::search_sbp it moves none.
#include "compiler/passes/sbp_search_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// Two Megatron MLP blocks with residual connections (fc column-parallel, proj
// row-parallel over the tp axis), a layer norm and a replicated head, on 2 nodes x 2
// devices: dp across the nodes, tp inside each.
constexpr char kResidualMlp[] = R"(graph residual_mlp
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[256, 64] source=data sbp=[S(0), B]
%labels = input i32[256] source=data sbp=[S(0), B]
%w_fc0 = variable f32[64, 128] init=xavier_uniform seed=1 sbp=[B, S(1)]
%w_proj0 = variable f32[128, 64] init=xavier_uniform seed=2 sbp=[B, S(0)]
%w_fc1 = variable f32[64, 128] init=xavier_uniform seed=3 sbp=[B, S(1)]
%w_proj1 = variable f32[128, 64] init=xavier_uniform seed=4 sbp=[B, S(0)]
%gamma = variable f32[64] init=ones sbp=[B, B]
%beta = variable f32[64] init=zeros sbp=[B, B]
%w_head = variable f32[64, 4] init=xavier_uniform seed=5 sbp=[B, B]
%fc0 = matmul(a=%x, b=%w_fc0) f32[256, 128]
%gelu0 = gelu(x=%fc0) f32[256, 128]
%proj0 = matmul(a=%gelu0, b=%w_proj0) f32[256, 64]
%res0 = add(x=%x, y=%proj0) f32[256, 64]
%fc1 = matmul(a=%res0, b=%w_fc1) f32[256, 128]
%gelu1 = gelu(x=%fc1) f32[256, 128]
%proj1 = matmul(a=%gelu1, b=%w_proj1) f32[256, 64]
%res1 = add(x=%res0, y=%proj1) f32[256, 64]
%ln = layer_norm(x=%res1, gamma=%gamma, beta=%beta, epsilon=1e-05) f32[256, 64]
%logits = matmul(a=%ln, b=%w_head) f32[256, 4]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[256]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

CompileOptions TwoByTwoOptions(bool search) {
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  options.search_sbp = search;
  return options;
}

// The greedy choice keeps each block's output partial over tp ([S(0), P]: the residual
// add is linear) and then reduces it at every reader: fc1 multiplies the partial rows by
// a gathered w_fc1, and backward reduce-scatters the layer norm's input. The search
// reduce-scatters each block's output once and keeps the residual stream split by rows
// over tp ([S(0), S(0)], Megatron's sequence parallelism), and moves the first block's
// backward back to Megatron's column-parallel products ([S(0), S(1)]).
TEST(SbpSearchPassTest, TheResidualStreamIsSplitWhereTheGreedyChoiceKeepsItPartial) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kResidualMlp, "sbp_search", TwoByTwoOptions(true));
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts),
            "- %res0: f32[256, 64] [S(0), P] = add(x=%x:[S(0), P], y=%proj0:[S(0), P]) @0\n"
            "- %fc1: f32[256, 128] [S(0), P] = matmul(a=%res0:[S(0), P], b=%w_fc1:[B, B]) @0\n"
            "- %res1: f32[256, 64] [S(0), P] = add(x=%res0:[S(0), P], y=%proj1:[S(0), P]) @0\n"
            "- %proj0_grad/matmul_25: f32[256, 128] [S(0), S(0)] = matmul(a=%res0_grad/add_24:[S(0), S(0)], "
            "b=%w_proj0:[B, B]) @0\n"
            "- %gelu0_grad/gelu_grad_27: f32[256, 128] [S(0), S(0)] = gelu_grad(dy=%proj0_grad/matmul_25:[S(0), S(0)], "
            "x=%fc0:[S(0), S(0)]) @0\n"
            "- %fc0_grad/matmul_29: f32[64, 128] [P, P] = matmul(a=%x:[S(0), S(0)], "
            "b=%gelu0_grad/gelu_grad_27:[S(0), S(0)]) @0\n"
            "+ %res0: f32[256, 64] [S(0), S(0)] = add(x=%x:[S(0), S(0)], y=%proj0:[S(0), S(0)]) @0\n"
            "+ %fc1: f32[256, 128] [S(0), S(0)] = matmul(a=%res0:[S(0), S(0)], b=%w_fc1:[B, B]) @0\n"
            "+ %res1: f32[256, 64] [S(0), S(0)] = add(x=%res0:[S(0), S(0)], y=%proj1:[S(0), S(0)]) @0\n"
            "+ %proj0_grad/matmul_25: f32[256, 128] [S(0), S(1)] = matmul(a=%res0_grad/add_24:[S(0), B], "
            "b=%w_proj0:[B, S(0)]) @0\n"
            "+ %gelu0_grad/gelu_grad_27: f32[256, 128] [S(0), S(1)] = gelu_grad(dy=%proj0_grad/matmul_25:[S(0), S(1)], "
            "x=%fc0:[S(0), S(1)]) @0\n"
            "+ %fc0_grad/matmul_29: f32[64, 128] [P, S(1)] = matmul(a=%x:[S(0), B], "
            "b=%gelu0_grad/gelu_grad_27:[S(0), S(1)]) @0\n");
}

TEST(SbpSearchPassTest, WithoutTheOptionNothingMoves) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kResidualMlp, "sbp_search", TwoByTwoOptions(false));
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(texts->before, texts->after);
}

// The plan records what the search did: the six ops above, and a lower objective; the
// greedy plan has no record. Two searches give the same plan bytes.
TEST(SbpSearchPassTest, ThePlanRecordsTheSearchAndIsDeterministic) {
  absl::StatusOr<proto::Job> job = JobFromText(kResidualMlp);
  ASSERT_TRUE(job.ok()) << job.status();
  std::string first_bytes, second_bytes;
  CompileOptions first_options = TwoByTwoOptions(true);
  first_options.sealed_plan = &first_bytes;
  absl::StatusOr<proto::Plan> searched = Compile(*job, first_options);
  ASSERT_TRUE(searched.ok()) << searched.status();
  ASSERT_TRUE(searched->has_sbp_search());
  EXPECT_EQ(searched->sbp_search().moved_ops(), 6);
  EXPECT_LT(searched->sbp_search().searched_seconds(), searched->sbp_search().greedy_seconds());
  EXPECT_GT(searched->sbp_search().searched_seconds(), 0);
  CompileOptions second_options = TwoByTwoOptions(true);
  second_options.sealed_plan = &second_bytes;
  ASSERT_TRUE(Compile(*job, second_options).ok());
  EXPECT_FALSE(first_bytes.empty());
  EXPECT_TRUE(first_bytes == second_bytes) << "two searches gave different plan bytes";
  absl::StatusOr<proto::Plan> greedy = Compile(*job, TwoByTwoOptions(false));
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_FALSE(greedy->has_sbp_search());
}

// Data parallelism over 4 devices with 2 micro-batches: the gradients accumulate as
// partial sums and are reduced once per iteration. Unfrozen, the search moved each
// accumulator to a split (a reduce-scatter of every micro-batch's gradient, to sum a
// quarter of the bytes), which ran slower (sbp_search_pass.cc); the accumulators keep
// the greedy layout, so the search moves nothing here and the plan has the greedy
// plan's collectives.
constexpr char kDataParallelMlp[] = R"(graph dp_mlp
placement cpu{0:0-3}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 256] source=data sbp=S(0)
%labels = input i32[64] source=data sbp=S(0)
%w_fc = variable f32[256, 512] init=xavier_uniform seed=1 sbp=B
%w_proj = variable f32[512, 4] init=xavier_uniform seed=2 sbp=B
%fc = matmul(a=%x, b=%w_fc) f32[64, 512]
%relu = relu(x=%fc) f32[64, 512]
%logits = matmul(a=%relu, b=%w_proj) f32[64, 4]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[64]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

TEST(SbpSearchPassTest, TheGradientAccumulatorsKeepTheGreedyLayout) {
  absl::StatusOr<proto::Job> job = JobFromText(kDataParallelMlp);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(4);
  options.search_sbp = true;
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "sbp_search", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "");
  absl::StatusOr<proto::Plan> searched = Compile(*job, options);
  ASSERT_TRUE(searched.ok()) << searched.status();
  options.search_sbp = false;
  absl::StatusOr<proto::Plan> greedy = Compile(*job, options);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(searched->boxings_size(), greedy->boxings_size());
  // The objective counts the ops of the micro-batch loop once per micro-batch: the text's
  // inputs are one micro-batch, so at 2 micro-batches the loop's seconds count twice
  // (plus the accumulators), the update's once.
  job->set_micro_batches(1);
  options.search_sbp = true;
  absl::StatusOr<proto::Plan> one = Compile(*job, options);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GT(searched->sbp_search().greedy_seconds(), 1.8 * one->sbp_search().greedy_seconds());
  EXPECT_LT(searched->sbp_search().greedy_seconds(), 2.5 * one->sbp_search().greedy_seconds());
}

// A token embedding whose table is tied to the output head (the gpt's wte), data
// parallel over 2 devices with 4 micro-batches. Priced on the links alone, splitting the
// embedding's table by columns (ids gathered, the output split by its last axis and moved
// back to rows by an all-to-all, both every micro-batch) saves the modelled bytes of the
// table's gradient, and the search takes it; charged what a collective call costs on a
// host whose devices take turns on its cores (CompileOptions::collective_call_seconds, as
// `oneflow calibrate` measured 115-183 us for 8 devices on 2 cores), the calls it adds
// per micro-batch outweigh that, and the greedy layout stays.
constexpr char kTiedEmbedding[] = R"(graph tied_embedding
placement cpu{0:0-1}
source data synthetic_tokens seed=1 vocab=512
%tokens = input i32[4, 64] source=data sbp=S(0)
%targets = input i32[256] source=data sbp=S(0)
%wte = variable f32[512, 256] init=normal mean=0 stddev=0.02 seed=1 sbp=B
%w = variable f32[256, 256] init=xavier_uniform seed=2 sbp=B
%emb = embedding(table=%wte, ids=%tokens) f32[4, 64, 256]
%rows = reshape(x=%emb, shape=[256, 256]) f32[256, 256]
%hidden = matmul(a=%rows, b=%w) f32[256, 256]
%logits = matmul(a=%hidden, b=%wte, transpose_b=true) f32[256, 512]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%targets) f32[256]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

TEST(SbpSearchPassTest, ACollectiveCallsCostKeepsMovesThatAddCallsPerMicroBatchOut) {
  absl::StatusOr<proto::Job> job = JobFromText(kTiedEmbedding);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(4);
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(2);
  options.search_sbp = true;
  absl::StatusOr<PassTexts> free_calls = RunThroughPass(*job, "sbp_search", options);
  ASSERT_TRUE(free_calls.ok()) << free_calls.status();
  EXPECT_EQ(ChangedLines(*free_calls),
            "- %emb: f32[4, 64, 256] S(0) = embedding(table=%wte:B, ids=%tokens:S(0)) @0\n"
            "- %rows_grad/reshape_14: f32[4, 64, 256] S(0) = reshape(x=%hidden_grad/matmul_12:S(0)) @0\n"
            "- %emb_grad/embedding_grad_15: f32[512, 256] P = embedding_grad(ids=%tokens:S(0), "
            "dy=%rows_grad/reshape_14:S(0)) @0\n"
            "- %wte_grad/add_16: f32[512, 256] P = add(x=%logits_grad/matmul_11:P, y=%emb_grad/embedding_grad_15:P) @0\n"
            "+ %emb: f32[4, 64, 256] S(2) = embedding(table=%wte:S(1), ids=%tokens:B) @0\n"
            "+ %rows_grad/reshape_14: f32[4, 64, 256] S(2) = reshape(x=%hidden_grad/matmul_12:S(1)) @0\n"
            "+ %emb_grad/embedding_grad_15: f32[512, 256] S(1) = embedding_grad(ids=%tokens:B, "
            "dy=%rows_grad/reshape_14:S(2)) @0\n"
            "+ %wte_grad/add_16: f32[512, 256] S(1) = add(x=%logits_grad/matmul_11:S(1), "
            "y=%emb_grad/embedding_grad_15:S(1)) @0\n");
  options.collective_call_seconds = 1.2e-4;
  absl::StatusOr<PassTexts> charged = RunThroughPass(*job, "sbp_search", options);
  ASSERT_TRUE(charged.ok()) << charged.status();
  EXPECT_EQ(ChangedLines(*charged), "");
}

}  // namespace
}  // namespace oneflow
