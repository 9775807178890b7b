// The gathers that read variables only, which the communication thread runs ahead of the
// forward: how much of them one micro-batch's forward hides. Three kinds, each once per
// iteration, priced by stage_collectives.h and exposed by ExposeGathersAhead:
//
// - ZeRO 1 and 2's gathers of the updated parameter shards. They follow the optimizer,
//   which waits for the reduced gradients: backward is over, so only the next forward can
//   hide them. With a core per device across processes it computes on the first gathered
//   layers while the later gathers cross the link, so what they take beyond its first
//   micro-batch's forward is exposed, and at least one gather's share (the forward starts
//   after the first) (2 x 1 at 1 Gbit/s, zero = 1, traced (session 60): 77 gathers, 12.5
//   ms of link time; the next forward's embedding 0.1 ms after wte's gather, 11 ms before
//   the last gather ended). Where the devices outnumber the cores they are exposed whole
//   (3 x 1 at 1 Gbit/s, zero = 1, traced (session 45): the 64 gathers ran from 126.8 to
//   181.4 ms of the iteration, the next forward's compute waiting on them in turn;
//   docs/auto_parallel_measurements.md, "ZeRO across three hosts, traced (session 45)").
//   Re-pricing the stored 3 x 1 sweeps with them ahead there too ranked them mixed
//   (0.910 / 0.803 / 0.860 -> 0.918 / 0.795 / 0.853, session 61): not taken.
// - ZeRO-3's forward gathers (half of its gathers; the other half, re-gathered for
//   backward, is price.cc's). Across processes they run ahead of the forward and hide
//   behind it, without a floor (each is prefetched one parameter-reading op ahead; traced
//   on 2 x 1 at 1 Gbit/s: the forward's 13.5 ms of gathers done while its compute ran).
//   Not where the devices outnumber the cores: the communication threads that would run
//   them ahead wait for a core the compute threads fill, and a gather's ranks meet (3
//   emulated hosts on 2 cores, zero = 3 with `auto`, traced: all 64 forward gathers on the
//   median iteration's critical path, 0.9 ms of forward compute on it;
//   docs/auto_parallel_measurements.md, "Three hosts on two cores, re-priced (session 46)").
// - tp's boxings of the variables' values (the compiler's tp plan for a small gpt gathers
//   each sharded weight whole for its readers, tp_boxings.h). Across nodes the forward
//   waits only for what they take beyond it, and at least one call's share (2 x 1 at 1
//   Gbit/s, tp = 2 without codecs, traced (session 61): 37 gathers, 12.8 ms from 0.6 to
//   11.3 ms of the iteration, the forward's compute beside them waiting 1.4 ms in all).
//   Where the devices outnumber the cores the dense ones run ahead alike (3 x 1 on 2 cores,
//   tp = 3 without codecs, traced: 19 ms of gathers, the forward computing between them,
//   backward starting 16-21 ms in), but with `--compression` on they stay whole: there a
//   gather with a codec takes far longer than the link model prices (tp = 3 with `auto`,
//   traced: 37 int8 gathers took 20.9 ms, 0.56 ms a call, priced 7.6 ms; the forward waited
//   on each in turn), and whole priced that layout nearest (+7% where hiding them gave
//   -13%). Re-priced so, five stored 3 x 1 sweeps rank at 0.869, 0.884, 0.910, 0.803 and
//   0.860 against 0.849, 0.870, 0.899, 0.781 and 0.840 with every tp gather whole there
//   (docs/auto_parallel.md, "Session 61"). Inside a node they stay whole (the one-process
//   sweeps' devices outnumber the cores).
//
// The forward hides them in that order, each behind what the kinds before it left of it:
// a forward that ZeRO's gathers took hides no tp gather.
#ifndef COMPILER_AUTO_PARALLEL_GATHERS_AHEAD_H_
#define COMPILER_AUTO_PARALLEL_GATHERS_AHEAD_H_

#include <cstdint>

namespace oneflow::auto_parallel {

// One iteration's gathers of one device, seconds, and whether each kind runs ahead of the
// forward (price.cc decides from the placement, the cores and the codecs, as above).
struct GathersAhead {
  double shard_seconds = 0;  // ZeRO 1 and 2
  int64_t shard_calls = 0;
  bool shard_ahead = false;
  double zero3_forward_seconds = 0;  // ZeRO-3's forward half
  bool zero3_forward_ahead = false;
  double tp_weight_seconds = 0;  // tp's boxings of the variables
  int64_t tp_weight_calls = 0;
  bool tp_weight_ahead = false;
};

// What of each kind the forward waits on.
struct ExposedGathers {
  double shard_seconds = 0;
  double zero3_forward_seconds = 0;
  double tp_weight_seconds = 0;
};

// `forward_seconds`: the first micro-batch's forward (as the shared cores stretch it). A
// kind not ahead is exposed whole; ahead, what it takes beyond the forward the kinds
// before it left, and for ZeRO 1 and 2's and tp's at least one call's share.
ExposedGathers ExposeGathersAhead(const GathersAhead& gathers, double forward_seconds);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_GATHERS_AHEAD_H_
