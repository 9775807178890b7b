// Every error of ParseGraphText, with its code and exact message: each names the line
// and quotes what was written there.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

// Lines 1-3 of most cases; the line under test is line 4.
constexpr char kHead[] =
    "graph g\n"
    "%x = input f32[8, 4] source=data\n"
    "%w = variable f32[4, 3] init=zeros\n";

struct ErrorCase {
  std::string text;
  absl::StatusCode code;
  std::string message;
};

void ExpectError(const ErrorCase& c) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(c.text);
  ASSERT_FALSE(graph.ok()) << "parsed without error:\n" << c.text;
  EXPECT_EQ(graph.status().code(), c.code) << graph.status();
  EXPECT_EQ(std::string(graph.status().message()), c.message) << "text:\n" << c.text;
}

std::string KnownOps() {
  return absl::StrJoin(OpRegistry::Get().definitions(), ", ",
                       [](std::string* out, const OpDefinition& d) { out->append(d.type); });
}

std::string Head(const std::string& line) { return absl::StrCat(kHead, line, "\n"); }

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;

TEST(GraphTextErrorsTest, OpLines) {
  const ErrorCase cases[] = {
      {Head("%y = matmull(a=%x, b=%w) f32[8, 3]"), kNotFound,
       "line 4: unknown op type 'matmull'; known: " + KnownOps()},
      {Head("%y = matmul(a=%x, b=%foo) f32[8, 3]"), kNotFound,
       "line 4: input 'b' of %y (matmul) names %foo, which is not defined above"},
      {Head("%y = matmul(a=%x, b=%w) f32[8, 4]"), kInvalid,
       "line 4: %y (matmul) is written as f32[8, 4] but its inferred type is f32[8, 3]"},
      {Head("%y = matmul(a=%x) f32[8, 3]"), kInvalid,
       "line 4: %y (matmul) is missing input 'b'; inputs: a, b"},
      {Head("%y = relu(x=%x, y=%w) f32[8, 4]"), kInvalid,
       "line 4: op type 'relu' has no input 'y'; inputs: x"},
      {Head("%y = relu(x=3) f32[8, 4]"), kInvalid,
       "line 4: input 'x' of %y (relu) must be a tensor like %x, got '3'"},
      {Head("%y = relu(x=%x)"), kInvalid,
       "line 4: expected the type of %y after ')' (e.g. f32[8, 3]), got end of line"},
      {Head("%y relu(x=%x) f32[8, 4]"), kInvalid,
       "line 4: expected '=' after %y, got 'relu(x=%x) f32[8, 4]'"},
      {Head("%y = relu(x %x) f32[8, 4]"), kInvalid,
       "line 4: expected '=' after argument 'x', got '%x) f32[8, 4]'"},
      {Head("%y = relu(x=%x f32[8, 4]"), kInvalid,
       "line 4: expected ',' or ')' after argument 'x', got 'f32[8, 4]'"},
      {Head("%y = relu x=%x f32[8, 4]"), kInvalid,
       "line 4: expected '(' after op type 'relu', got 'x=%x f32[8, 4]'"},
      {Head("%x = relu(x=%x) f32[8, 4]"), kInvalid,
       "line 4: tensor %x is already defined on line 2"},
      {Head("%y = relu(x=%x) f32[8, 4] sbp=S(zero)"), kInvalid,
       "line 4: sbp of %y: cannot parse SBP 'S(zero)': the split axis is not an integer; "
       "valid: S(axis) with axis >= 0, B, P, P(max), P(min)"},
      {Head("%y = relu(x=%x) f32[8, 4] placement=cpu{0:0}"), kInvalid,
       "line 4: placement of %y must be a quoted string (\"...\"), got 'cpu{0:0}'"},
      {Head("%y = relu(x=%x) f32[8, 4] placement=\"gpu{0:0}\""), kInvalid,
       "line 4: placement of %y: cannot parse placement 'gpu{0:0}': unknown device type 'gpu'; "
       "valid: cpu, cuda; expected e.g. cpu{0:0-3} or cuda{0:0-3, 1:0-3}[2, 4]"},
      {Head("%y = relu(x=%x) f32[8, 4] color=red"), kInvalid,
       "line 4: unknown key 'color' for %y; valid: sbp, placement, compression, recompute, block, "
       "block_recompute, attention_core, loc"},
      {Head("%y = relu(x=%x) f32[8, 4] loc=\"model.cc\""), kInvalid,
       "line 4: loc of %y is \"model.cc\"; write loc=\"FILE:LINE\", e.g. loc=\"model.cc:42\""},
      {Head("%y = relu(x=%x) f32[8, 4] loc=model.cc:4"), kInvalid,
       "line 4: loc of %y must be a quoted string (\"...\"), got 'model.cc:4'"},
      {Head("%z = input f32[8] source=data loc=\"model.cc:-1\""), kInvalid,
       "line 4: loc of %z is \"model.cc:-1\"; write loc=\"FILE:LINE\", e.g. loc=\"model.cc:42\""},
      {Head("%y = relu(x=%x) f32[8, 4] compression=fp9"), kInvalid,
       "line 4: compression of %y: compression 'fp9' is not one of: none, fp8, int8, int4"},
      {Head("%y = relu(x=%x) f32[8, 4 sbp=B"), kInvalid,
       "line 4: missing ']' in the type of %y after ')' (e.g. f32[8, 3]): 'f32[8, 4 sbp=B'"},
      {Head("%y = dropout(x=%x, rate=fast, seed=1) f32[8, 4]"), kInvalid,
       "line 4: attribute 'rate' of %y (dropout) cannot be read from 'fast'; valid: an integer "
       "(3), a float (0.5, 2.0, 1e-05), true, false, a quoted string (\"gelu\") or an integer "
       "list ([0, 2])"},
      {Head("%y = transpose(x=%x, perm=[1, a]) f32[4, 8]"), kInvalid,
       "line 4: attribute 'perm' of %y (transpose) '[1, a]': 'a' is not an integer; a list "
       "holds integers, e.g. [0, 2]"},
      {Head("%y = relu(x=%x, x=%x) f32[8, 4]"), kInvalid,
       "line 4: input 'x' of %y (relu) is given twice"},
      {Head("%y = dropout(x=%x, rate=0.1, rate=0.2, seed=1) f32[8, 4]"), kInvalid,
       "line 4: attribute 'rate' of %y (dropout) is given twice"},
      {Head("%v = variable f32[3] init=zeros init=ones"), kInvalid,
       "line 4: key 'init' is given twice"},
      // What op inference rejects comes from the graph, with the line in front.
      {Head("%y = matmul(a=%w, b=%w) f32[4, 3]"), kInvalid,
       "line 4: op 'y' (matmul) at <text>:4: inner dimensions differ: a [4, 3] "
       "(transpose_a=false) has k=3, b [4, 3] (transpose_b=false) has k=4; they must be equal "
       "(inputs: w: f32[4, 3], w: f32[4, 3])"},
  };
  for (const ErrorCase& c : cases) ExpectError(c);
}

TEST(GraphTextErrorsTest, InputAndVariableLines) {
  const ErrorCase cases[] = {
      {Head("%z = input f32[8, x] source=data"), kInvalid,
       "line 4: type of %z 'f32[8, x]': cannot parse shape '[8, x]': 'x' is not an integer"},
      {Head("%z = input f64[8] source=data"), kInvalid,
       "line 4: type of %z 'f64[8]': unknown dtype 'f64'; valid: f32, f16, bf16, i32, i64, u8, "
       "f8e4m3, f8e5m2"},
      {Head("%z = input f32 source=data"), kInvalid,
       "line 4: type of %z 'f32' has no shape; write e.g. f32[8, 3] (f32[] for a scalar)"},
      {Head("%z = input f32[8] source data"), kInvalid,
       "line 4: expected '=' after 'source', got 'data'"},
      {Head("%z = input f32[8]"), kInvalid, "line 4: input %z needs 'source=...'"},
      {Head("%z = input f32[8] source=\"data\""), kInvalid,
       "line 4: source of %z must be a data source name (letters, digits, _ . / - :), got "
       "'\"data\"'"},
      {Head("%v = variable f32[3] init=zeros sead=1"), kInvalid,
       "line 4: unknown key 'sead' for variable %v; valid: init, seed, trainable, sbp, "
       "placement, compression, sparse_rows, loc"},
      {Head("%v = variable f32[3] init=zeros sparse_rows=ids"), kInvalid,
       "line 4: sparse_rows of %v is 'ids'; write the ids tensor as %name"},
      {Head("%v = variable f32[3] init=uniform low=0.0 high=1.0 mean=0.5"), kInvalid,
       "line 4: unknown key 'mean' for variable %v; valid: init, low, high, seed, trainable, "
       "sbp, placement, compression, sparse_rows, loc"},
      {Head("%v = variable f32[3] init=glorot"), kInvalid,
       "line 4: unknown init 'glorot' for variable %v; valid: zeros, ones, normal, uniform, "
       "xavier_uniform"},
      {Head("%v = variable f32[3] init=normal mean=0.0"), kInvalid,
       "line 4: variable %v needs 'stddev=...'"},
      {Head("%v = variable f32[3] init=ones seed=-1"), kInvalid,
       "line 4: 'seed' must be an integer in [0, 18446744073709551615], got '-1'"},
      {Head("%v = variable f32[3] init=ones trainable=no"), kInvalid,
       "line 4: 'trainable' must be true or false, got 'no'"},
      {Head("%v = variable i32[3] init=zeros"), kInvalid,
       "line 4: variable 'v' at <text>:4 has dtype i32; variables must be floating (f32, f16, "
       "bf16)"},
      {Head("% = relu(x=%x) f32[8, 4]"), kInvalid,
       "line 4: expected a tensor name after '%' in a tensor (letters, digits, _ . / - :), got "
       "'= relu(x=%x) f32[8, 4]'"},
  };
  for (const ErrorCase& c : cases) ExpectError(c);
}

TEST(GraphTextErrorsTest, Statements) {
  const ErrorCase cases[] = {
      {"", kInvalid, "line 1: the text ends before its 'graph NAME' line"},
      {"# only a comment\n\n", kInvalid, "line 1: the text ends before its 'graph NAME' line"},
      {"grpah g\n", kInvalid, "line 1: a graph text starts with 'graph NAME', got 'grpah g'"},
      {"graph\n", kInvalid, "line 1: expected a graph name after 'graph'"},
      {Head("graph h"), kInvalid, "line 4: a second 'graph' statement; the first is on line 1"},
      {Head("los %x"), kInvalid,
       "line 4: unknown statement 'los'; valid: graph, batch, placement, source, optimizer, "
       "loss, %name = ..."},
      {Head("loss %nope"), kNotFound, "line 4: loss %nope is not defined above"},
      {Head("loss %x extra"), kInvalid, "line 4: unexpected 'extra' after 'loss %x'"},
      {Head("loss x"), kInvalid,
       "line 4: expected the loss tensor (a tensor like %x), got 'x'"},
      {Head("loss %x"), kInvalid,
       "line 4: loss 'x' at <text>:4 has type f32[8, 4]; the loss must be a scalar (reduce it, "
       "e.g. reduce_mean)"},
      {Head("batch 0"), kInvalid, "line 4: the batch size must be positive, got '0'"},
      {Head("batch eight"), kInvalid, "line 4: the batch size must be an integer, got 'eight'"},
      {"graph g\nbatch 8\nbatch 16\n", kInvalid,
       "line 3: a second 'batch' statement; the first is on line 2"},
      {Head("placement cpu{0:0-}"), kInvalid,
       "line 4: default placement: cannot parse placement 'cpu{0:0-}': '0:0-' is not "
       "node:device or node:first-last; expected e.g. cpu{0:0-3} or cuda{0:0-3, 1:0-3}[2, 4]"},
  };
  for (const ErrorCase& c : cases) ExpectError(c);
}

TEST(GraphTextErrorsTest, SourcesAndOptimizers) {
  const ErrorCase cases[] = {
      {Head("source d imagenet"), kInvalid,
       "line 4: unknown kind 'imagenet' of data source 'd'; valid: synthetic_classification, "
       "synthetic_tokens, token_file, record_file, text_file"},
      {Head("source d synthetic_tokens vocab=10"), kInvalid,
       "line 4: data source 'd' needs 'seed=...'"},
      {Head("source d synthetic_tokens seed=1 vocab=10 num_classes=3"), kInvalid,
       "line 4: unknown key 'num_classes' for data source 'd' (synthetic_tokens); valid: seed, "
       "vocab"},
      {Head("source d token_file path=\"abc"), kInvalid,
       "line 4: unterminated string in a value for 'path': '\"abc'"},
      {Head("source d token_file path=abc"), kInvalid,
       "line 4: 'path' must be a quoted string (\"...\"), got 'abc'"},
      {"graph g\nsource d record_file path=\"a\"\nsource d record_file path=\"b\"\n", kInvalid,
       "line 3: data source 'd' is already declared on line 2"},
      // Checked at the end: a source may be declared after the inputs that read it.
      {"graph g\n%x = input f32[8] source=dat\nsource data record_file path=\"r\"\n", kInvalid,
       "line 2: input %x reads data source 'dat', which is not declared; declared: data"},
      {Head("optimizer adam lr=0.1"), kInvalid,
       "line 4: unknown optimizer 'adam'; valid: sgd, adamw"},
      {Head("optimizer sgd momentum=0.9"), kInvalid, "line 4: optimizer sgd needs 'lr=...'"},
      {Head("optimizer sgd lr=fast"), kInvalid,
       "line 4: 'lr' must be a number (0.1, 1e-08), got 'fast'"},
      {Head("optimizer sgd lr=0.1 schedule=cosine"), kInvalid,
       "line 4: unknown schedule 'cosine' for optimizer sgd; valid: constant, warmup_cosine"},
      {Head("optimizer sgd lr=0.1 schedule=warmup_cosine warmup=10 min_lr=0.0"), kInvalid,
       "line 4: optimizer sgd with schedule=warmup_cosine needs 'total=...'"},
      {Head("optimizer sgd lr=0.1 warmup=10"), kInvalid,
       "line 4: unknown key 'warmup' for optimizer sgd; valid: lr, momentum, schedule, zero, "
       "zero_axis"},
      {Head("optimizer adamw lr=0.1 beta=0.9"), kInvalid,
       "line 4: unknown key 'beta' for optimizer adamw; valid: lr, beta1, beta2, epsilon, "
       "weight_decay, variance_frozen_from, schedule, zero, zero_axis"},
      {Head("optimizer adamw lr=0.1 variance_frozen_from=later"), kInvalid,
       "line 4: 'variance_frozen_from' must be an integer, got 'later'"},
      {"graph g\noptimizer sgd lr=0.1\noptimizer sgd lr=0.2\n", kInvalid,
       "line 3: a second 'optimizer' statement; the first is on line 2"},
  };
  for (const ErrorCase& c : cases) ExpectError(c);
}

}  // namespace
}  // namespace oneflow
