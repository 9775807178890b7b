#include "compiler/passes/memory_planning_pass.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "compiler/kernel_workspace.h"
#include "compiler/memory_layout.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "oneflow_core/run_tasks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The layout problem of one device, in positions (actor indices) rather than ids, so
// devices with the same structure and sizes (every device of an evenly split
// data/tensor-parallel job) share one solution.
struct DeviceProblem {
  std::vector<RegisterLifetime> transient;
  std::vector<int64_t> transient_ids;  // Register id of each entry of `transient`.

  bool operator==(const DeviceProblem& other) const {
    if (transient.size() != other.transient.size()) return false;
    for (size_t i = 0; i < transient.size(); ++i) {
      const RegisterLifetime& a = transient[i];
      const RegisterLifetime& b = other.transient[i];
      if (a.size_bytes != b.size_bytes || a.first != b.first || a.last != b.last) return false;
    }
    return true;
  }
  template <typename H>
  friend H AbslHashValue(H h, const DeviceProblem& problem) {
    for (const RegisterLifetime& r : problem.transient) h = H::combine(std::move(h), r.size_bytes, r.first, r.last);
    return H::combine(std::move(h), problem.transient.size());
  }
};

// The register owning the bytes of register `id`: itself, or the end of its chain of
// views. actor_graph only makes a register a view of an earlier one, so chains end.
int64_t OwnerOf(const proto::DevicePlan& device, int64_t id) {
  while (device.registers(static_cast<int>(id)).has_alias_of()) {
    id = device.registers(static_cast<int>(id)).alias_of();
  }
  return id;
}

// Per register, the actors that read its bytes: its consumers and, for a register that
// owns bytes, the consumers of every view of it (a view's own producer already consumes
// its source), sorted, without repeats. Empty for a view. All in one array (those of
// register r at [begin[r], end[r])): a device has thousands of registers.
class Readers {
 public:
  explicit Readers(const proto::DevicePlan& device) {
    const int registers = device.registers_size();
    std::vector<int64_t> owner(registers);
    begin_.assign(static_cast<size_t>(registers) + 1, 0);
    for (const proto::RegisterDef& reg : device.registers()) {
      owner[reg.id()] = OwnerOf(device, reg.id());
      begin_[owner[reg.id()] + 1] += reg.consumer_actors_size();
    }
    for (int r = 0; r < registers; ++r) begin_[r + 1] += begin_[r];
    readers_.resize(begin_[registers]);
    end_.assign(begin_.begin(), begin_.end() - 1);
    for (const proto::RegisterDef& reg : device.registers()) {
      size_t& next = end_[owner[reg.id()]];
      for (int64_t consumer : reg.consumer_actors()) readers_[next++] = consumer;
    }
    for (int r = 0; r < registers; ++r) {
      const auto first = readers_.begin() + static_cast<std::ptrdiff_t>(begin_[r]);
      auto last = readers_.begin() + static_cast<std::ptrdiff_t>(end_[r]);
      std::sort(first, last);
      last = std::unique(first, last);
      end_[r] = static_cast<size_t>(last - readers_.begin());
    }
  }

  absl::Span<const int64_t> Of(int64_t reg) const {
    return absl::MakeConstSpan(readers_.data() + begin_[reg], end_[reg] - begin_[reg]);
  }

 private:
  std::vector<int64_t> readers_;
  std::vector<size_t> begin_, end_;
};

// Registers outside the arena, each owning `count` copies of its bytes in memory block
// 2: per-iteration values of micro-batched plans (they live across the micro-batches of
// an iteration, which the arena's per-micro-batch copies cannot express) and what a
// transfer receives (the receiver runs ahead of the device's gate, which only guards the
// arena).
bool OwnsItsBytes(const proto::DevicePlan& device, const proto::RegisterDef& reg) {
  if (reg.persistent() || reg.has_alias_of()) return false;
  if (reg.per_iteration()) return true;
  const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
  const proto::ActorDef& producer = device.actors(static_cast<int>(reg.producer_actor() - first_actor));
  return producer.thread() == proto::THREAD_TRANSFER && producer.consumed_registers_size() == 0;
}

// Gradients as bucket views (PyTorch DDP's gradient_as_bucket_view): a member of a
// gradient all-reduce bucket whose input register (the member's partial sum, written by
// the op that produces the gradient) has no reader but the bucket actor is placed at the
// member's own bytes in the bucket register, so the producer writes the gradient where
// the bucket reduces it and the bucket's act copies nothing for it (bucket_behavior.cc
// copies only where an input lies elsewhere). The bucket's bytes are then live from the
// first such member's producer on. With micro-batches the bucket and its inputs (the
// accumulated gradients) are per-iteration registers of one copy outside the arena: the
// accumulator then sums into the bucket's bytes (it overwrites them at the iteration's
// first micro-batch, which comes after the previous update read them: that update is
// what the iteration's forward waits for). Not for reduce-scatter buckets (the act packs
// each rank's part of a member into another chunk), nor for inputs that are views, lie
// elsewhere than their bucket (one in the arena, the other not; a transfer's reception)
// or are read by another actor too (it would read the reduced sums). Maps each placed
// input register to (bucket register, offset in it).
struct BucketPlace {
  int64_t bucket = 0;
  int64_t offset = 0;
};
absl::flat_hash_map<int64_t, BucketPlace> InputsPlacedInBuckets(const Compilation& compilation,
                                                                const proto::DevicePlan& device) {
  absl::flat_hash_map<int64_t, BucketPlace> placed;
  for (const proto::ActorDef& actor : device.actors()) {
    if (!actor.has_bucket_id() || actor.kernels_size() != 1 || actor.bucket_id() < 0 ||
        actor.bucket_id() >= static_cast<int64_t>(compilation.buckets.size()) ||
        compilation.buckets[actor.bucket_id()].kind != BoxingKind::kAllReduce) {
      continue;
    }
    const proto::KernelDef& kernel = actor.kernels(0);
    const auto whole = kernel.outputs().find("bucket");
    if (whole == kernel.outputs().end()) continue;
    const proto::RegisterDef& bucket = device.registers(static_cast<int>(whole->second));
    const bool bucket_owns = OwnsItsBytes(device, bucket);
    if (bucket.persistent() || bucket.has_alias_of() || (bucket_owns && !bucket.per_iteration())) continue;
    for (int64_t k = 0;; ++k) {
      const auto in = kernel.inputs().find(absl::StrCat("in_", k));
      const auto out = kernel.outputs().find(absl::StrCat("out_", k));
      if (in == kernel.inputs().end() || out == kernel.outputs().end()) break;
      const proto::RegisterDef& input = device.registers(static_cast<int>(in->second));
      const proto::RegisterDef& view = device.registers(static_cast<int>(out->second));
      if (input.persistent() || input.has_alias_of() || OwnsItsBytes(device, input) != bucket_owns ||
          input.per_iteration() != bucket.per_iteration() ||
          input.size_bytes() != view.size_bytes() || input.consumer_actors_size() != 1 ||
          input.consumer_actors(0) != actor.id() || placed.contains(input.id())) {
        continue;
      }
      placed[input.id()] = {bucket.id(), view.alias_offset_bytes()};
    }
  }
  return placed;
}

// Registers that own arena bytes, live from their producer to the last reader of those
// bytes, views' readers included; views take no memory of their own. A gradient bucket's
// inputs (its members' partial sums) stay live as long as the bucket register: were their
// bytes reused by a later backward op, that op would wait (a reuse control edge) for the
// bucket's act, collective included, and backward would stop while the bucket reduces,
// which is what buckets are there to avoid (docs/gradient_buckets.md). The same holds for
// a gradient reduction that runs on its own early, while backward goes on (IsEarlyStep:
// one left alone in its bucket, or a step before a bucketed one): on gpt_dp3tp2 the lone
// cross-node all-reduces of the MLP weights each held backward up for their whole
// transfer (backward 1.7x as long) before their inputs were kept too.
// Inputs placed in their bucket (InputsPlacedInBuckets) are no entries of their own:
// their bucket's entry starts at the first one's producer.
DeviceProblem ProblemOf(const Compilation& compilation, const proto::DevicePlan& device, const Readers& readers,
                        const absl::flat_hash_map<int64_t, BucketPlace>& placed) {
  DeviceProblem problem;
  const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
  absl::flat_hash_map<int64_t, int64_t> bucket_first;  // bucket register -> first producer position
  for (const auto& [input, place] : placed) {
    const int64_t producer = device.registers(static_cast<int>(input)).producer_actor() - first_actor;
    auto [it, inserted] = bucket_first.try_emplace(place.bucket, producer);
    if (!inserted) it->second = std::min(it->second, producer);
  }
  // Per bucket or early step actor (by index), the last reader of what it produces (-1:
  // neither).
  std::vector<int64_t> bucket_release(device.actors_size(), -1);
  for (int a = 0; a < device.actors_size(); ++a) {
    const proto::ActorDef& actor = device.actors(a);
    const bool early = actor.kind() == proto::ACTOR_BOXING &&
                       IsEarlyStep(compilation, actor.boxing_id(), actor.boxing_step());
    if (!actor.has_bucket_id() && !early) continue;
    bucket_release[a] = a;
    for (int64_t produced : actor.produced_registers()) {
      for (int64_t reader : readers.Of(OwnerOf(device, produced))) {
        bucket_release[a] = std::max(bucket_release[a], reader - first_actor);
      }
    }
  }
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.persistent() || reg.has_alias_of() || OwnsItsBytes(device, reg) || placed.contains(reg.id())) continue;
    RegisterLifetime lifetime;
    lifetime.size_bytes = reg.size_bytes();
    lifetime.first = reg.producer_actor() - first_actor;
    if (const auto first = bucket_first.find(reg.id()); first != bucket_first.end()) {
      lifetime.first = std::min(lifetime.first, first->second);
    }
    lifetime.last = lifetime.first;
    for (int64_t reader : readers.Of(reg.id())) {
      lifetime.last = std::max({lifetime.last, reader - first_actor, bucket_release[reader - first_actor]});
    }
    problem.transient.push_back(lifetime);
    problem.transient_ids.push_back(reg.id());
  }
  return problem;
}

// The layouts solved so far, by problem: devices with the same structure and sizes
// share one. Devices are planned on threads; a problem two of them meet at once may be
// solved by both (LayOutRegisters depends only on the problem, so either answer is the
// same), and the first stored is kept.
class SolvedLayouts {
 public:
  const MemoryLayout& Of(const DeviceProblem& problem) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = solved_.find(problem);
      if (it != solved_.end()) return *it->second;
    }
    auto layout = std::make_unique<MemoryLayout>(LayOutRegisters(problem.transient));
    std::lock_guard<std::mutex> lock(mutex_);
    return *solved_.emplace(problem, std::move(layout)).first->second;
  }

 private:
  std::mutex mutex_;
  // Pointers: a layout handed out stays where it is while others are added.
  absl::flat_hash_map<DeviceProblem, std::unique_ptr<MemoryLayout>> solved_;
};

// Lays out one device's registers: memory blocks, offsets, peak, and the control edges
// memory reuse needs. Reads the compilation, writes only `device`.
absl::Status PlanDevice(const Compilation& compilation, const KernelWorkspaces& workspaces, int device_index,
                        SolvedLayouts& solved, proto::DevicePlan& device) {
  // The device's own slot count (pipeline stages), recorded when it differs.
  const int64_t count = compilation.device_register_count.empty()
                            ? compilation.options.register_count
                            : compilation.device_register_count[device_index];
  if (count != compilation.options.register_count) device.set_register_count(count);
  // Persistent registers: one slot each, packed in their own block.
  int64_t persistent_bytes = 0;
  for (proto::RegisterDef& reg : *device.mutable_registers()) {
    if (!reg.persistent() || reg.has_alias_of()) continue;
    reg.set_memory_block(0);
    reg.set_offset(persistent_bytes);
    persistent_bytes += AlignUp(reg.size_bytes());
  }
  const Readers readers(device);
  const absl::flat_hash_map<int64_t, BucketPlace> placed = InputsPlacedInBuckets(compilation, device);
  DeviceProblem problem = ProblemOf(compilation, device, readers, placed);
  const MemoryLayout& layout = solved.Of(problem);
  for (size_t i = 0; i < problem.transient_ids.size(); ++i) {
    proto::RegisterDef* reg = device.mutable_registers(static_cast<int>(problem.transient_ids[i]));
    reg->set_memory_block(1);
    reg->set_offset(layout.offsets[i]);
  }
  // Per bucket register, the producers of the inputs placed in it: they are the first
  // writers of its bytes.
  absl::flat_hash_map<int64_t, std::vector<int64_t>> bucket_writers;
  for (const auto& [input, place] : placed) {
    bucket_writers[place.bucket].push_back(device.registers(static_cast<int>(input)).producer_actor());
  }
  // Registers that own their bytes (OwnsItsBytes), no reuse: what a transfer receives,
  // `count` copies each (its receiver runs ahead by up to that many micro-batches), and
  // the per-iteration values of a micro-batched plan, one copy each. One copy suffices
  // for those: each is computed from the variables or from this iteration's gradients
  // (the accumulated gradients, their buckets, ZeRO's shard updates and gathers), so the
  // next iteration writes it only after this iteration's optimizer has updated the
  // variables, which waits for every reader of it (the last stage of a pipeline always ran
  // them with its register_count of 1). With `count` copies they held every gradient
  // twice more than needed: the gpt with 6 blocks and a vocabulary of 8192 at dp=2 planned
  // 92.9 MiB with 2 or 4 micro-batches, where one micro-batch planned 93.1.
  int64_t received_bytes = 0;     // a transfer's receptions: `count` copies
  int64_t single_copy_bytes = 0;  // per-iteration values: one copy
  std::vector<int64_t> single_copy;
  std::vector<int64_t> received;
  for (proto::RegisterDef& reg : *device.mutable_registers()) {
    if (!OwnsItsBytes(device, reg) || placed.contains(reg.id())) continue;
    if (reg.per_iteration()) {
      reg.set_count(1);
      reg.set_offset(single_copy_bytes);
      single_copy_bytes += AlignUp(reg.size_bytes());
      single_copy.push_back(reg.id());
    } else {
      reg.set_offset(received_bytes);
      received_bytes += AlignUp(reg.size_bytes());
      received.push_back(reg.id());
    }
  }
  // Block ids follow the blocks made: 2 for the receptions when there are any, then the
  // single-copy block.
  const int64_t received_block = 2;
  const int64_t single_copy_block = received_bytes > 0 ? 3 : 2;
  for (int64_t id : received) device.mutable_registers(static_cast<int>(id))->set_memory_block(received_block);
  for (int64_t id : single_copy) device.mutable_registers(static_cast<int>(id))->set_memory_block(single_copy_block);
  // Inputs placed in their bucket lie at their member's bytes (and hold its copies).
  for (const auto& [input, place] : placed) {
    proto::RegisterDef* reg = device.mutable_registers(static_cast<int>(input));
    const proto::RegisterDef& bucket = device.registers(static_cast<int>(place.bucket));
    reg->set_memory_block(bucket.memory_block());
    reg->set_offset(bucket.offset() + place.offset);
    reg->set_count(bucket.count());
  }
  // A view lies where its owner does (a bucket member's view at its offset inside the
  // bucket), so every reader finds the bytes by offset alone.
  for (proto::RegisterDef& reg : *device.mutable_registers()) {
    if (!reg.has_alias_of()) continue;
    int64_t inside = 0;
    for (int64_t at = reg.id(); device.registers(static_cast<int>(at)).has_alias_of();
         at = device.registers(static_cast<int>(at)).alias_of()) {
      inside += device.registers(static_cast<int>(at)).alias_offset_bytes();
    }
    const proto::RegisterDef& owner = device.registers(static_cast<int>(OwnerOf(device, reg.id())));
    reg.set_memory_block(owner.memory_block());
    reg.set_offset(owner.offset() + inside);
    reg.set_count(owner.count());
  }
  device.clear_memory_blocks();
  proto::MemoryBlock* persistent = device.add_memory_blocks();
  persistent->set_id(0);
  persistent->set_size_bytes(persistent_bytes);
  persistent->set_persistent(true);
  proto::MemoryBlock* arena = device.add_memory_blocks();
  arena->set_id(1);
  arena->set_size_bytes(layout.size_bytes * count);
  arena->set_slot_stride_bytes(layout.size_bytes);
  if (received_bytes > 0) {
    proto::MemoryBlock* block = device.add_memory_blocks();
    block->set_id(received_block);
    block->set_size_bytes(received_bytes * count);
    block->set_slot_stride_bytes(received_bytes);
  }
  if (single_copy_bytes > 0) {
    proto::MemoryBlock* block = device.add_memory_blocks();
    block->set_id(single_copy_block);
    block->set_size_bytes(single_copy_bytes);
    block->set_slot_stride_bytes(single_copy_bytes);
    block->set_copies(1);
  }
  // The kernels' scratch (compiler/kernel_workspace.h): one buffer for the largest act.
  OF_ASSIGN_OR_RETURN(const int64_t workspace, workspaces.Assign(&device));
  const int64_t workspace_bytes = workspace > 0 ? AlignUp(workspace) : 0;
  if (workspace_bytes > 0) {
    proto::MemoryBlock* block = device.add_memory_blocks();
    block->set_id(device.memory_blocks_size() - 1);
    block->set_size_bytes(workspace_bytes);
    block->set_workspace(true);
  }
  device.set_peak_bytes(persistent_bytes + layout.size_bytes * count + received_bytes * count +
                        single_copy_bytes + workspace_bytes);
  device.set_lower_bound_bytes(persistent_bytes + layout.lower_bound_bytes * count +
                               received_bytes * count + single_copy_bytes + workspace_bytes);
  // Whoever writes reused memory waits for the readers of what was there before.
  const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
  for (const auto& [earlier, later] : layout.reuses) {
    const proto::RegisterDef& old_reg = device.registers(static_cast<int>(problem.transient_ids[earlier]));
    const proto::RegisterDef& new_reg = device.registers(static_cast<int>(problem.transient_ids[later]));
    // A bucket register's bytes are first written by the producers of the inputs placed
    // in it, then by the bucket's act.
    std::vector<int64_t> writers = {new_reg.producer_actor()};
    if (const auto placed_writers = bucket_writers.find(new_reg.id()); placed_writers != bucket_writers.end()) {
      writers.insert(writers.end(), placed_writers->second.begin(), placed_writers->second.end());
    }
    for (int64_t writer_id : writers) {
      proto::ActorDef* writer = device.mutable_actors(static_cast<int>(writer_id - first_actor));
      auto add = [&](int64_t predecessor) {
        if (predecessor == writer->id()) return;
        const auto& existing = writer->control_predecessors();
        // Lists stay short (one entry per reused byte range), so a scan is cheap.
        if (std::find(existing.begin(), existing.end(), predecessor) == existing.end()) {
          writer->add_control_predecessors(predecessor);
        }
      };
      const absl::Span<const int64_t> old_readers = readers.Of(old_reg.id());
      if (old_readers.empty()) add(old_reg.producer_actor());
      for (int64_t reader : old_readers) add(reader);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> MemoryPlanningPass::Run(Compilation* compilation) {
  // The arena's slot copies are this pass's layout decision; the plan records them.
  compilation->plan.set_register_count(compilation->options.register_count);
  SolvedLayouts solved;
  OF_ASSIGN_OR_RETURN(const KernelWorkspaces workspaces, KernelWorkspaces::Of(compilation->graph));
  // Each device on its own, on threads (the first failing device in order is named).
  OF_RETURN_IF_ERROR(RunChecksOnThreads(compilation->plan.devices_size(), [&](int d) {
    return PlanDevice(*compilation, workspaces, d, solved, *compilation->plan.mutable_devices(d));
  }));
  return true;
}

}  // namespace oneflow
