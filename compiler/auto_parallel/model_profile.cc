#include "compiler/auto_parallel/model_profile.h"

#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/view_kernel.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"
#include "sbp/compute_cost.h"

namespace oneflow::auto_parallel {
namespace {

int64_t Elements(const proto::TensorDef& tensor) {
  int64_t elements = 1;
  for (int64_t dim : tensor.shape()) elements *= dim;
  return elements;
}

// The split axis of a hint over the probe's tp axis (its only axis), or -1.
int64_t TpSplitAxis(const proto::TensorDef& tensor, int64_t probe_tp) {
  if (probe_tp <= 1 || !tensor.has_sbp_hint() || tensor.sbp_hint().sbp_size() != 1) return -1;
  const proto::SbpParallel& sbp = tensor.sbp_hint().sbp(0);
  return sbp.has_split() ? sbp.split().axis() : -1;
}

// Proto maps iterate in no fixed order: the ports sorted by name.
std::vector<std::pair<std::string, std::string>> Sorted(const google::protobuf::Map<std::string, std::string>& ports) {
  std::map<std::string, std::string> sorted(ports.begin(), ports.end());
  return {sorted.begin(), sorted.end()};
}

class Profiler {
 public:
  Profiler(const proto::Job& job, int64_t probe_tp) : job_(job), probe_tp_(probe_tp) {}

  absl::StatusOr<ModelProfile> Run() {
    if (job_.batch_size() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", job_.name(), "' has no batch size; auto-parallel divides the batch between devices"));
    }
    for (const proto::TensorDef& tensor : job_.tensors()) {
      OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(tensor.dtype()));
      tensors_[tensor.name()] = &tensor;
      bytes_[tensor.name()] = Elements(tensor) * SizeOf(dtype);
    }
    for (const proto::VariableDef& variable : job_.variables()) {
      if (variable.trainable()) trainable_.insert(variable.tensor());
      variables_.insert(variable.tensor());
    }
    profile_.job_name = job_.name();
    profile_.batch_rows = job_.batch_size();
    if (job_.optimizer().has_adamw()) profile_.optimizer_state_copies = 2;
    if (job_.optimizer().has_sgd() && job_.optimizer().sgd().momentum() != 0) profile_.optimizer_state_copies = 1;
    for (const proto::OpDef& op : job_.ops()) {
      if (!op.block().empty()) profile_.has_blocks = true;
      if (op.attention_core()) profile_.has_attention_cores = true;
    }
    for (const proto::OpDef& op : job_.ops()) OF_RETURN_IF_ERROR(AddOp(op));
    absl::flat_hash_set<std::string> signatures;
    for (const ProfileUnit& unit : profile_.units) {
      if (unit.stageable) ++profile_.stageable_units;
      signatures.insert(unit.signature);
    }
    profile_.distinct_units = static_cast<int64_t>(signatures.size());
    return std::move(profile_);
  }

 private:
  absl::StatusOr<const proto::TensorDef*> Tensor(const proto::OpDef& op, const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.name(), "' refers to tensor '", name, "', which job '", job_.name(), "' does not define"));
    }
    return it->second;
  }

  // The unit `op` belongs to, started when its key changes.
  ProfileUnit& UnitFor(const proto::OpDef& op, const std::string& weight) {
    std::string key;
    bool stageable = false;
    if (profile_.has_blocks) {
      if (!op.block().empty()) {
        key = op.block();
        stageable = true;
        seen_stageable_ = true;
      } else {
        key = seen_stageable_ ? "epilogue" : "prologue";
      }
    } else if (IsGemmKernel(op.type()) && trainable_.contains(weight)) {
      key = op.name();  // each layer starts at its GEMM with a weight
      stageable = true;
      seen_stageable_ = true;
    } else {
      key = seen_stageable_ ? current_key_ : "prologue";
    }
    if (profile_.units.empty() || key != current_key_) {
      current_key_ = key;
      ProfileUnit unit;
      unit.name = key;
      unit.stageable = stageable;
      profile_.units.push_back(std::move(unit));
    }
    return profile_.units.back();
  }

  absl::Status AddOp(const proto::OpDef& op) {
    const auto inputs = Sorted(op.inputs());
    const auto outputs = Sorted(op.outputs());
    // The variable a GEMM multiplies by, if any.
    std::string weight;
    for (const auto& [port, tensor] : inputs) {
      if (variables_.contains(tensor)) weight = tensor;
    }
    ProfileUnit& unit = UnitFor(op, weight);
    const int64_t unit_index = static_cast<int64_t>(profile_.units.size()) - 1;
    std::string signature = absl::StrCat(op.type(), op.attention_core() ? "*" : "", "(");
    int64_t in_bytes = 0;
    int64_t out_bytes = 0;
    bool reads_tp_sharded = false;
    OpWork work;
    for (const auto& [port, name] : inputs) {
      OF_ASSIGN_OR_RETURN(const proto::TensorDef* tensor, Tensor(op, name));
      in_bytes += bytes_[name];
      const int64_t split = TpSplitAxis(*tensor, probe_tp_);
      absl::StrAppend(&signature, port, "[", absl::StrJoin(tensor->shape(), ","), "]s", split, " ");
      if (variables_.contains(name)) {
        if (split >= 0) reads_tp_sharded = true;
        if (trainable_.contains(name) && counted_.insert(name).second) {
          unit.parameter_bytes += bytes_[name];
          ++unit.parameter_tensors;
          if (split >= 0) unit.tp_parameter_bytes += bytes_[name];
          owner_unit_[name] = unit_index;
        } else if (trainable_.contains(name) && owner_unit_.at(name) != unit_index &&
                   borrowed_.insert({name, unit_index}).second) {
          unit.borrowed_variables.push_back(BorrowedVariable{name, owner_unit_.at(name), bytes_[name], split >= 0});
        }
        continue;
      }
      auto producer = producer_unit_.find(name);
      const bool from_outside = producer == producer_unit_.end() || producer->second != unit_index;
      if (from_outside && unit.input_bytes == 0 && producer != producer_unit_.end()) unit.input_bytes = bytes_[name];
      if (from_outside && producer != producer_unit_.end()) {
        const auto [producer_unit, producer_op] = producer_op_.at(name);
        profile_.units[producer_unit].op_work[producer_op].output_leaves_unit = true;
      }
    }
    absl::StrAppend(&signature, ")->");
    for (const auto& [port, name] : outputs) {
      OF_ASSIGN_OR_RETURN(const proto::TensorDef* tensor, Tensor(op, name));
      out_bytes += bytes_[name];
      producer_unit_[name] = unit_index;
      producer_op_[name] = {unit_index, static_cast<int64_t>(unit.op_work.size())};
      absl::StrAppend(&signature, "[", absl::StrJoin(tensor->shape(), ","), "]");
    }
    // Tensor parallelism divides the work of ops downstream of a column-parallel GEMM
    // until a row-parallel one (Megatron's gelu between fc1 and fc2, the heads between the
    // qkv and output projections).
    bool tp_divided = op.attention_core();
    if (!IsGemmKernel(op.type())) {
      for (const auto& [port, name] : inputs) {
        if (tp_split_tensors_.contains(name)) tp_divided = true;
      }
    }
    if (IsGemmKernel(op.type())) {
      auto a = op.inputs().find("a");
      auto b = op.inputs().find("b");
      auto out = op.outputs().find("out");
      if (a != op.inputs().end() && b != op.inputs().end() && out != op.outputs().end()) {
        const proto::TensorDef& a_tensor = *tensors_.at(a->second);
        const proto::TensorDef& out_tensor = *tensors_.at(out->second);
        const int64_t n = out_tensor.shape().empty() ? 1 : out_tensor.shape(out_tensor.shape_size() - 1);
        const double flops = GemmFlops(Elements(a_tensor), n);
        unit.gemm_flops += flops;
        work.gemm_flops = flops;
        // The shape as the kernel runs it: a product of two batched operands is `batch`
        // products of the output's last two dims (the data's rows among the batch dims);
        // against a 2-D weight, one product of every row of `a` (the rows are m).
        const proto::TensorDef& b_tensor = *tensors_.at(b->second);
        const bool batched = b_tensor.shape_size() > 2 && out_tensor.shape_size() > 2;
        const double out_elements = static_cast<double>(Elements(out_tensor));
        work.gemm_shape.n = static_cast<double>(n);
        work.gemm_shape.m = batched ? static_cast<double>(out_tensor.shape(out_tensor.shape_size() - 2))
                                    : out_elements / static_cast<double>(std::max<int64_t>(1, n));
        work.gemm_shape.batch = batched ? out_elements / (work.gemm_shape.m * work.gemm_shape.n) : 1;
        work.gemm_shape.k = static_cast<double>(Elements(a_tensor)) / (work.gemm_shape.batch * work.gemm_shape.m);
        work.gemm_rows_dim = batched ? OpWork::GemmDim::kBatch : OpWork::GemmDim::kM;
        if (op.attention_core()) unit.attention_core_gemm_flops += flops;
        const int64_t split = variables_.contains(b->second) ? TpSplitAxis(b_tensor, probe_tp_) : -1;
        bool row_parallel = false;
        if (split >= 0) {
          tp_divided = true;
          auto transpose_b = op.attrs().find("transpose_b");
          const bool transposed = transpose_b != op.attrs().end() && transpose_b->second.b();
          const int64_t contracted_axis = b_tensor.shape_size() - (transposed ? 1 : 2);
          row_parallel = split == contracted_axis;
          if (row_parallel) {
            unit.tp_forward_all_reduce_bytes.push_back(bytes_[out->second]);  // row-parallel: g
            unit.tp_forward_all_reduce_tensors.push_back(out->second);
          } else {
            // Column-parallel GEMMs of one input (q, k and v) sum their input gradients
            // before the one all-reduce.
            if (backward_reduced_.insert(a->second).second) {
              unit.tp_backward_all_reduce_bytes.push_back(bytes_[a->second]);  // column-parallel: f
              unit.tp_backward_all_reduce_tensors.push_back(a->second);
            }
            tp_split_tensors_.insert(out->second);
          }
        }
        if (!tp_divided) {
          for (const auto& [port, name] : inputs) {
            if (tp_split_tensors_.contains(name)) tp_divided = true;  // per-head products
          }
        }
        if (tp_divided && split < 0) {
          for (const auto& [port, name] : outputs) tp_split_tensors_.insert(name);
        }
        if (tp_divided) unit.tp_gemm_flops += flops;
        if (tp_divided) work.tp_gemm_flops = flops;
        // Which dimension tensor parallelism divides: a weight's split one (its rows: the
        // contracted k of a row-parallel product; its columns: n), the heads of a
        // per-head product (batch), else the rows.
        if (tp_divided) {
          work.gemm_tp_dim = split >= 0 ? (row_parallel ? OpWork::GemmDim::kK : OpWork::GemmDim::kN)
                             : batched  ? OpWork::GemmDim::kBatch
                                        : OpWork::GemmDim::kM;
        }
      }
    } else {
      unit.memory_bytes += in_bytes + out_bytes;
      work.memory_bytes = static_cast<double>(in_bytes + out_bytes);
      if (op.attention_core()) unit.attention_core_memory_bytes += in_bytes + out_bytes;
      // A vocabulary-parallel embedding's rows live on one tp device each: its output is
      // partial and all-reduced. Other ops on a sharded variable (a column-parallel bias)
      // work on the shard only.
      if (reads_tp_sharded && op.type() == "embedding") {
        for (const auto& [port, name] : outputs) {
          unit.tp_forward_all_reduce_bytes.push_back(bytes_[name]);
          unit.tp_forward_all_reduce_tensors.push_back(name);
        }
      } else if (reads_tp_sharded) {
        tp_divided = true;
      }
      if (tp_divided) {
        for (const auto& [port, name] : outputs) tp_split_tensors_.insert(name);
      }
      if (tp_divided) unit.tp_memory_bytes += in_bytes + out_bytes;
      if (tp_divided) work.tp_memory_bytes = static_cast<double>(in_bytes + out_bytes);
      const bool view = IsViewKernel(op.type()) && inputs.size() == 1 && outputs.size() == 1 && in_bytes == out_bytes;
      if (!view) {
        work.written_bytes = static_cast<double>(out_bytes);
        if (tp_divided) work.tp_written_bytes = work.written_bytes;
      }
    }
    work.attention_core = op.attention_core();
    // A view's output (a reshape, an identity: compiler/passes/view_kernel.h) is its
    // input's bytes, which the unit already counts: memory planning gives it none.
    const bool view_output = IsViewKernel(op.type()) && inputs.size() == 1 &&
                             outputs.size() == 1 && in_bytes == out_bytes;
    if (!view_output) {
      unit.activation_bytes += out_bytes;
      if (op.attention_core()) unit.attention_core_activation_bytes += out_bytes;
      for (const auto& [port, name] : outputs) {
        if (tp_split_tensors_.contains(name)) unit.tp_activation_bytes += bytes_[name];
        unit.activations.push_back({name, bytes_[name], tp_split_tensors_.contains(name), op.attention_core()});
      }
      // Every activation kept until CountKeptActivations says which backward reads.
      unit.kept_activation_bytes = unit.activation_bytes;
      unit.kept_tp_activation_bytes = unit.tp_activation_bytes;
      unit.kept_attention_core_activation_bytes = unit.attention_core_activation_bytes;
    }
    absl::StrAppend(&unit.signature, signature, ";");
    unit.op_names.push_back(op.name());
    unit.op_work.push_back(work);
    return absl::OkStatus();
  }

  const proto::Job& job_;
  const int64_t probe_tp_;
  absl::flat_hash_map<std::string, const proto::TensorDef*> tensors_;
  absl::flat_hash_map<std::string, int64_t> bytes_;
  absl::flat_hash_set<std::string> variables_;
  absl::flat_hash_set<std::string> trainable_;
  absl::flat_hash_set<std::string> counted_;
  absl::flat_hash_map<std::string, int64_t> owner_unit_;  // a counted variable's unit
  absl::flat_hash_set<std::pair<std::string, int64_t>> borrowed_;  // (variable, reading unit)
  absl::flat_hash_map<std::string, int64_t> producer_unit_;
  // A forward output's producer: (unit, op within the unit).
  absl::flat_hash_map<std::string, std::pair<int64_t, int64_t>> producer_op_;
  absl::flat_hash_set<std::string> tp_split_tensors_;
  absl::flat_hash_set<std::string> backward_reduced_;
  std::string current_key_;
  bool seen_stageable_ = false;
  ModelProfile profile_;
};

}  // namespace

absl::StatusOr<ModelProfile> ProfileJob(const proto::Job& job, int64_t probe_tp) {
  OF_ASSIGN_OR_RETURN(ModelProfile profile, Profiler(job, probe_tp).Run());
  profile.tp_hinted = false;
  for (const ProfileUnit& unit : profile.units) {
    if (unit.tp_parameter_bytes > 0) profile.tp_hinted = true;
  }
  return profile;
}

const ModelProfile& ProfileForTp(const ModelProfile& profile, int64_t tp, int64_t micro_batches) {
  // Keys are ordered by degree, then micro-batches: the last key within both bounds.
  const ModelProfile* nearest = &profile;
  for (const auto& [shape, probed] : profile.tp_probe_profiles) {
    if (shape.first <= tp && shape.second <= micro_batches) nearest = probed.get();
  }
  return *nearest;
}

}  // namespace oneflow::auto_parallel
