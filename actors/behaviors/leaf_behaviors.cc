#include "actors/behaviors/leaf_behaviors.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/behaviors/synthetic_data.h"
#include "oneflow_core/random.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

// A text file's bytes as token ids in [0, 256).
absl::StatusOr<std::shared_ptr<std::vector<int32_t>>> ReadTextFile(const std::string& path, int64_t window) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("text file '", path, "': cannot open"));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (static_cast<int64_t>(bytes.size()) < window) {
    return absl::InvalidArgumentError(absl::StrCat("text file '", path, "' has ", bytes.size(),
                                                   " bytes, fewer than one window of ", window,
                                                   " (--seq + 1); use a longer file or a shorter --seq"));
  }
  auto tokens = std::make_shared<std::vector<int32_t>>(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) (*tokens)[i] = static_cast<unsigned char>(bytes[i]);
  return tokens;
}

absl::StatusOr<std::shared_ptr<std::vector<int32_t>>> ReadTokenFile(const std::string& path,
                                                                     int64_t window) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return absl::NotFoundError(absl::StrCat("token file '", path, "': cannot open"));
  const std::streamsize bytes = file.tellg();
  if (bytes % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("token file '", path, "' has ", bytes,
                                                   " bytes, not a whole number of int32 tokens"));
  }
  auto tokens = std::make_shared<std::vector<int32_t>>(bytes / 4);
  file.seekg(0);
  file.read(reinterpret_cast<char*>(tokens->data()), bytes);
  if (static_cast<int64_t>(tokens->size()) < window) {
    return absl::InvalidArgumentError(absl::StrCat("token file '", path, "' has ", tokens->size(),
                                                   " tokens, fewer than one window of ", window));
  }
  return tokens;
}

// Reads a record file of `source` and checks it against the source's outputs: whole
// records, at least one, integer outputs holding exact integers.
absl::StatusOr<std::shared_ptr<RecordFile>> ReadRecordFile(const PlanIndex& index,
                                                           const proto::DataSourceDef& source) {
  const std::string& path = source.file().path();
  auto file = std::make_shared<RecordFile>();
  std::vector<std::pair<std::string, int64_t>> integer_outputs;  // (name, offset)
  std::vector<int64_t> integer_widths;
  for (const std::string& tensor : source.outputs()) {
    OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(tensor));
    int64_t per_sample = 1;
    for (int d = 1; d < def->shape_size(); ++d) per_sample *= def->shape(d);
    if (def->dtype() == proto::DTYPE_I32 || def->dtype() == proto::DTYPE_I64) {
      integer_outputs.push_back({tensor, file->record_floats});
      integer_widths.push_back(per_sample);
    }
    file->record_floats += per_sample;
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("record file '", path, "' of data source '", source.name(), "': cannot open"));
  const int64_t bytes = static_cast<int64_t>(in.tellg());
  const int64_t record_bytes = 4 * file->record_floats;
  if (record_bytes == 0 || bytes % record_bytes != 0 || bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record file '", path, "' has ", bytes, " bytes; data source '", source.name(), "' needs a positive whole number of ",
        record_bytes, "-byte records (", file->record_floats, " f32 values per sample: its outputs in order)"));
  }
  file->values.resize(bytes / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(file->values.data()), bytes);
  for (size_t i = 0; i < integer_outputs.size(); ++i) {
    for (int64_t record = 0; record < file->records(); ++record) {
      for (int64_t e = 0; e < integer_widths[i]; ++e) {
        const float value = file->values[record * file->record_floats + integer_outputs[i].second + e];
        if (value != std::floor(value) || std::abs(value) > 16777216.0f) {
          return absl::InvalidArgumentError(absl::StrCat("record file '", path, "' record ", record, ": output '",
                                                         integer_outputs[i].first, "' is an integer tensor but holds ",
                                                         value, "; store labels as exact integers"));
        }
      }
    }
  }
  return file;
}

// Micro-batch m of an iteration is rows m * R .. (m + 1) * R - 1 of the iteration's
// logical batch of M * R rows (R: the job's micro-batch rows): `layout`, of one
// micro-batch, placed in the whole batch, so the data is that of the unbatched run.
TensorLayout InWholeBatch(const TensorLayout& layout, int64_t micro_batches, int64_t m) {
  if (micro_batches <= 1 || layout.logical.rank() == 0) return layout;
  std::vector<int64_t> dims = layout.logical.dims();
  const int64_t rows = dims[0];
  dims[0] *= micro_batches;
  std::vector<Range> ranges = layout.slice.ranges();
  ranges[0] = Range{ranges[0].begin + m * rows, ranges[0].end + m * rows};
  return TensorLayout{Shape(dims), TensorSlice(std::move(ranges))};
}

// Fills `out` (the slice of `layout`) from the initializer.
absl::Status Initialize(const proto::Initializer& init, const TensorLayout& layout, float* out) {
  const int64_t n = layout.slice.NumElements();
  const LogicalRandom random(init.seed());
  switch (init.kind()) {
    case proto::Initializer::ZEROS:
      std::fill(out, out + n, 0.0f);
      break;
    case proto::Initializer::ONES:
      std::fill(out, out + n, 1.0f);
      break;
    case proto::Initializer::NORMAL:
      FillNormal(layout.logical, layout.slice, random, static_cast<float>(init.mean()),
                 static_cast<float>(init.stddev()), out);
      break;
    case proto::Initializer::UNIFORM:
      FillUniform(layout.logical, layout.slice, random, static_cast<float>(init.low()),
                  static_cast<float>(init.high()), out);
      break;
    case proto::Initializer::XAVIER_UNIFORM: {
      // Fans from the last two dimensions (one dimension: both fans are its size).
      const Shape& shape = layout.logical;
      const int64_t fan_out = shape.rank() == 0 ? 1 : shape.dim(shape.rank() - 1);
      const int64_t fan_in = shape.rank() < 2 ? fan_out : shape.dim(shape.rank() - 2);
      const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      FillUniform(layout.logical, layout.slice, random, -limit, limit, out);
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown initializer kind ", init.kind()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ActFunction> BindDataSource(const PlanIndex& index, const ActorBinding& binding,
                                           const DeviceBackend& backend) {
  const proto::KernelDef& kernel = binding.actor->kernels(0);
  const proto::DataSourceDef* source = nullptr;
  for (const proto::DataSourceDef& def : index.plan().job().data_sources()) {
    if (def.name() == kernel.op_name()) source = &def;
  }
  if (source == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no data source '", kernel.op_name(), "' in the job"));
  }
  struct Output {
    int64_t register_id;
    TensorLayout layout;
    bool floating;
    int64_t position;  // Among outputs of its kind (features/labels, tokens/targets).
    int64_t record_offset;  // Where it starts in a record file's record, in floats.
  };
  std::vector<Output> outputs;
  int64_t floats = 0, ints = 0, record_offset = 0;
  for (const std::string& tensor : source->outputs()) {
    OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(tensor));
    const int64_t offset = record_offset;
    record_offset += def->shape_size() == 0 || def->shape(0) == 0
                         ? 0
                         : Shape(std::vector<int64_t>(def->shape().begin(), def->shape().end())).NumElements() /
                               def->shape(0);
    const bool floating = def->dtype() != proto::DTYPE_I32 && def->dtype() != proto::DTYPE_I64;
    const int64_t position = floating ? floats++ : ints++;
    auto it = kernel.outputs().find(tensor);
    if (it == kernel.outputs().end()) continue;  // Not on this device.
    OF_ASSIGN_OR_RETURN(TensorLayout layout, index.LeafLayout(tensor, binding.device_index));
    outputs.push_back({it->second, layout, floating, position, offset});
  }
  // Classification labels need the number of features: the width of the float output.
  int64_t features = 0;
  for (const std::string& tensor : source->outputs()) {
    OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(tensor));
    if (def->dtype() == proto::DTYPE_F32 && def->shape_size() > 0) features = def->shape(def->shape_size() - 1);
  }
  std::shared_ptr<std::vector<int32_t>> file;
  std::shared_ptr<RecordFile> records;
  if (source->has_file() && source->file().format() == proto::FileSource::RECORDS_F32) {
    OF_ASSIGN_OR_RETURN(records, ReadRecordFile(index, *source));
  } else if (source->has_file()) {
    const int64_t seq = outputs.empty() ? 1 : outputs[0].layout.logical.dim(outputs[0].layout.logical.rank() - 1);
    if (source->file().format() == proto::FileSource::TEXT_BYTES) {
      OF_ASSIGN_OR_RETURN(file, ReadTextFile(source->file().path(), seq + 1));
    } else {
      OF_ASSIGN_OR_RETURN(file, ReadTokenFile(source->file().path(), seq + 1));
    }
  }
  const proto::SyntheticSource synthetic = source->synthetic();
  const int64_t micro_batches = std::max<int64_t>(1, index.plan().job().micro_batches());
  // One host buffer per output, sized once: every output holds 4-byte values (f32
  // features, int32 labels and tokens), one micro-batch's slice of them.
  std::vector<std::vector<char>> staging;
  for (const Output& output : outputs) staging.emplace_back(4 * output.layout.slice.NumElements());
  const DeviceBackend* device = &backend;
  return ActFunction([outputs, features, synthetic, file, records, micro_batches, staging, device](
                         int64_t act, const ActContext& context) mutable {
    // One act per micro-batch: the data of micro-batch `act % M` of iteration `act / M`.
    const int64_t iteration = act / micro_batches;
    for (size_t o = 0; o < outputs.size(); ++o) {
      Output output = outputs[o];
      output.layout = InWholeBatch(output.layout, micro_batches, act % micro_batches);
      void* slot = staging[o].data();
      if (records != nullptr && output.floating) {
        FillFileRecords(*records, output.record_offset, iteration, output.layout, static_cast<float*>(slot));
      } else if (records != nullptr) {
        FillFileRecordLabels(*records, output.record_offset, iteration, output.layout, static_cast<int32_t*>(slot));
      } else if (file != nullptr) {
        FillFileTokens(*file, iteration, output.position, output.layout, static_cast<int32_t*>(slot));
      } else if (synthetic.kind() == proto::SyntheticSource::TOKENS) {
        FillSyntheticTokens(synthetic.seed(), iteration, synthetic.vocab(), output.position, output.layout,
                            static_cast<int32_t*>(slot));
      } else if (output.floating) {
        FillClassificationFeatures(synthetic.seed(), iteration, output.layout, static_cast<float*>(slot));
      } else {
        FillClassificationLabels(synthetic.seed(), iteration, features, synthetic.num_classes(),
                                 output.layout, static_cast<int32_t*>(slot));
      }
      device->CopyFromHost(context.RegisterSlot(output.register_id, act), slot,
                           static_cast<int64_t>(staging[o].size()));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<ActFunction> BindVariable(const PlanIndex& index, const ActorBinding& binding,
                                         const DeviceBackend& backend, VariableCheckpointing checkpointing) {
  const proto::KernelDef& kernel = binding.actor->kernels(0);
  const std::string& tensor = kernel.op_name();
  const proto::VariableDef* variable = nullptr;
  for (const proto::VariableDef& def : index.plan().job().variables()) {
    if (def.tensor() == tensor) variable = &def;
  }
  if (variable == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no variable '", tensor, "' in the job"));
  }
  OF_ASSIGN_OR_RETURN(TensorLayout layout, index.LeafLayout(tensor, binding.device_index));
  const int64_t register_id = kernel.outputs().at("out");
  const proto::Initializer init = variable->initializer();
  const DeviceBackend* device = &backend;
  return ActFunction([layout, register_id, init, checkpointing, device](int64_t iteration,
                                                                          const ActContext& context) {
    // Persistent: initialized (or restored) on the first iteration, then updated in
    // place by the optimizer's update actor.
    float* out = static_cast<float*>(context.RegisterSlot(register_id, iteration));
    if (iteration != checkpointing.first_iteration) {
      return checkpointing.snapshot ? checkpointing.snapshot(iteration, out) : absl::OkStatus();
    }
    if (checkpointing.restore) {
      OF_RETURN_IF_ERROR(checkpointing.restore(out));
    } else {
      // Made on the host and copied once: the first act only, so the buffer is not kept.
      std::vector<float> initial(layout.slice.NumElements());
      OF_RETURN_IF_ERROR(Initialize(init, layout, initial.data()));
      device->CopyFromHost(out, initial.data(), static_cast<int64_t>(initial.size() * sizeof(float)));
    }
    // Not a checkpoint (it would be the one resumed from): lets the writer see the memory.
    return checkpointing.snapshot ? checkpointing.snapshot(iteration, out) : absl::OkStatus();
  });
}

absl::StatusOr<ActFunction> BindLossSink(const ActorBinding& binding, const DeviceBackend& backend,
                                         std::function<void(int64_t, float)> on_loss) {
  const int64_t register_id = binding.actor->kernels(0).inputs().at("loss");
  const int64_t micro_batches = std::max<int64_t>(1, binding.plan->job().micro_batches());
  // With micro-batches the sink acts once per micro-batch; an iteration's loss is the
  // mean of its micro-batches' (each a mean over its rows, all of the same size).
  double sum = 0;
  const DeviceBackend* device = &backend;
  return ActFunction([register_id, on_loss, micro_batches, sum, device](int64_t act,
                                                                        const ActContext& context) mutable {
    float loss = 0;
    device->CopyToHost(&loss, context.RegisterSlot(register_id, act), sizeof(loss));
    if (micro_batches == 1) {
      if (on_loss) on_loss(act, loss);
      return absl::OkStatus();
    }
    sum += loss;
    if (act % micro_batches == micro_batches - 1) {
      if (on_loss) on_loss(act / micro_batches, static_cast<float>(sum / static_cast<double>(micro_batches)));
      sum = 0;
    }
    return absl::OkStatus();
  });
}

}  // namespace oneflow::actors
