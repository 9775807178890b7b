#include "examples/common/cp_traffic.h"

#include <map>

#include "oneflow_core/ops/ring_blocks.h"

namespace oneflow::examples {

std::vector<CpLayerTraffic> CpAttentionTraffic(const proto::Plan& plan) {
  // The tagged ops by name, and the producer of every tensor.
  std::map<std::string, const proto::OpDef*> tagged;
  std::map<std::string, const proto::OpDef*> producer;
  for (const proto::OpDef& op : plan.job().ops()) {
    for (const auto& [arg, tensor] : op.outputs()) producer[tensor] = &op;
    auto tag = op.attrs().find(kCpAttentionAttr);
    if (tag != op.attrs().end() && tag->second.has_s()) tagged[op.name()] = &op;
  }
  std::vector<CpLayerTraffic> layers;
  std::map<std::string, size_t> index_of_block;
  auto layer_of = [&](const proto::OpDef& op) -> CpLayerTraffic& {
    auto [it, inserted] = index_of_block.emplace(op.block(), layers.size());
    if (inserted) layers.push_back({op.block(), op.attrs().at(kCpAttentionAttr).s()});
    return layers[it->second];
  };
  for (const proto::OpDef& op : plan.job().ops()) {
    if (tagged.count(op.name())) layer_of(op);
  }
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    const proto::OpDef* op = nullptr;
    auto consumer = tagged.find(boxing.consumer_op());
    if (consumer != tagged.end()) {
      op = consumer->second;
    } else {
      // Into a forward consumer only: the autograd's ops are named "<op>_grad/...", and
      // what the backward moves is the backward's (the tag marks the forward's collectives).
      auto from = producer.find(boxing.tensor());
      const bool backward = boxing.consumer_op().find("_grad") != std::string::npos;
      if (!backward && from != producer.end() && tagged.count(from->second->name())) op = from->second;
    }
    if (op == nullptr) continue;
    CpLayerTraffic& layer = layer_of(*op);
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.collective_id() < 0 || step.bytes_per_device() == 0) continue;
      ++layer.collectives;
      layer.bytes_per_device += step.bytes_per_device();
    }
  }
  // Ring attention's steps: the block count is the q input's dimension on the op's axis.
  std::map<std::string, const proto::TensorDef*> tensors;
  for (const proto::TensorDef& tensor : plan.job().tensors()) tensors[tensor.name()] = &tensor;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() != "ring_attention") continue;
    auto index = index_of_block.find(op.block());
    auto q = op.inputs().find("q");
    if (index == index_of_block.end() || q == op.inputs().end() || !tensors.count(q->second)) continue;
    auto int_attr = [&](const char* name) {
      auto it = op.attrs().find(name);
      return it == op.attrs().end() ? int64_t{0} : it->second.i();
    };
    auto zigzag_attr = op.attrs().find("zigzag");
    const bool zigzag = zigzag_attr != op.attrs().end() && zigzag_attr->second.b();
    const int64_t blocks = tensors[q->second]->shape(int_attr("axis"));
    CpLayerTraffic& layer = layers[index->second];
    // Ulysses' local attention is one ring step over whole heads: no ring, no ranks.
    if (layer.attention != "ring") continue;
    layer.ring_tiles_per_rank.resize(blocks, 0);
    layer.ring_zigzag = zigzag;
    layer.ring_tiles_per_rank_total += RingChunks(zigzag) * RingChunks(zigzag);
    for (int64_t rank = 0; rank < blocks; ++rank) {
      layer.ring_tiles_per_rank[rank] +=
          RingTilesComputed(rank, RingKeyBlock(rank, int_attr("step"), blocks), blocks, zigzag);
    }
  }
  return layers;
}

}  // namespace oneflow::examples
