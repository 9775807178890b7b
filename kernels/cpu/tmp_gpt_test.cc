#include <cmath>
#include <random>
#include "gtest/gtest.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/kernel_testing.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/registry.h"
namespace oneflow {
namespace {
// CPU-kernel version of EvaluateGraph.
absl::StatusOr<TensorValues> EvaluateCpu(const Graph& graph, TensorValues values, int64_t step) {
  ReferenceContext context; context.step = step;
  for (const Graph::OpRecord& op : graph.ops()) {
    std::vector<Dense> inputs;
    for (const auto& [arg, id] : op.inputs) {
      const auto& t = graph.tensor(id);
      auto it = values.find(t.name);
      if (it == values.end()) return absl::NotFoundError(t.name);
      Dense d = it->second; d.dtype = t.type.dtype; inputs.push_back(RoundToFloat(d));
    }
    auto outputs = RunCpuKernel(op.type, inputs, op.attrs, context);
    if (!outputs.ok()) return absl::InternalError(op.name + ": " + std::string(outputs.status().message()));
    const OpDefinition* def = *OpRegistry::Get().Find(op.type);
    if (def->outputs.empty()) {
      for (size_t u = 0; u < def->updated_inputs.size(); ++u)
        for (size_t i = 0; i < op.inputs.size(); ++i)
          if (op.inputs[i].first == def->updated_inputs[u]) values[graph.tensor(op.inputs[i].second).name] = (*outputs)[u];
      continue;
    }
    for (size_t i = 0; i < op.outputs.size(); ++i) values[graph.tensor(op.outputs[i].second).name] = (*outputs)[i];
  }
  return values;
}
TEST(Gpt, CpuKernelsTrainLikeTheReference) {
  examples::ParallelFlags flags;
  auto layout = examples::ParallelLayout::Create(flags);
  examples::GptConfig config;
  config.batch = 4; config.seq = 8; config.layers = 1; config.hidden = 32; config.heads = 4; config.vocab = 32;
  config.learning_rate = 1e-2; config.warmup_steps = 5;
  auto job = examples::BuildGpt(config, *layout);
  ASSERT_TRUE(job.ok()) << job.status();
  CompileOptions options; options.cluster = layout->cluster();
  auto plan = Compile(*job, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto graph = Graph::FromJob(plan->job());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 1);
  TensorValues ref_vars, cpu_vars;
  for (const auto& v : plan->job().variables()) {
    Tensor t = (*graph)->FindTensor(v.tensor());
    const TensorType type = (*graph)->tensor(t.id()).type;
    Dense d = Dense::Zeros(type.shape, type.dtype);
    const auto& init = v.initializer();
    for (double& x : d.values) {
      if (init.kind() == proto::Initializer::ONES) x = 1;
      else if (init.kind() == proto::Initializer::NORMAL) x = init.mean() + init.stddev() * normal(rng);
      else if (init.kind() != proto::Initializer::ZEROS) x = 0.1 * normal(rng);
    }
    d = RoundToFloat(d);
    ref_vars[v.tensor()] = d; cpu_vars[v.tensor()] = d;
  }
  const std::string loss = (*graph)->loss().name();
  for (int64_t step = 0; step < 30; ++step) {
    Dense tokens = Dense::Zeros(Shape{4, 8}, DType::kI32), targets = tokens;
    for (int b = 0; b < 4; ++b) { int first = rng() % 32; for (int s = 0; s < 8; ++s) { tokens.values[b*8+s] = (first + s) % 32; targets.values[b*8+s] = (first + s + 1) % 32; } }
    TensorValues feeds_ref = ref_vars, feeds_cpu = cpu_vars;
    feeds_ref["tokens"] = tokens; feeds_ref["targets"] = targets;
    feeds_cpu["tokens"] = tokens; feeds_cpu["targets"] = targets;
    auto r = EvaluateGraph(**graph, feeds_ref, step);
    ASSERT_TRUE(r.ok()) << r.status();
    auto c = EvaluateCpu(**graph, feeds_cpu, step);
    ASSERT_TRUE(c.ok()) << c.status();
    printf("step %2lld reference %.6f cpu %.6f\n", (long long)step, r->at(loss).values[0], c->at(loss).values[0]);
    for (auto& [name, value] : ref_vars) value = r->at(name);
    for (auto& [name, value] : cpu_vars) value = c->at(name);
  }
}
}  // namespace
}  // namespace oneflow
