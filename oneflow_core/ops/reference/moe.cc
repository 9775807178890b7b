// Reference mixture-of-experts ops (oneflow_core/ops/moe.cc, docs/moe.md), the plain
// loops of their definitions. Every op works sample by sample on physical shapes: the
// signatures keep whole every axis the ops index across (tokens, experts, capacity), or
// split the expert axis only where no expert id is read (expert_matmul).
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

// Element (b, t, k) of a [B, T, K] tensor.
double At3(const Dense& d, int64_t b, int64_t t, int64_t k) {
  return d.values[(b * d.shape.dim(1) + t) * d.shape.dim(2) + k];
}

// A routing entry: the expert and slot of choice (b, t, k), or -1, -1 when dropped.
struct Choice {
  int64_t expert = -1;
  int64_t slot = -1;
  bool dropped() const { return expert < 0; }
};

absl::StatusOr<Choice> ChoiceAt(const Dense& index, const Dense& slot, int64_t b, int64_t t,
                                int64_t k, int64_t experts, int64_t capacity) {
  const double e = At3(index, b, t, k);
  const double c = At3(slot, b, t, k);
  if ((e == -1 && c == -1) || (e >= 0 && e < experts && c >= 0 && c < capacity)) {
    return Choice{static_cast<int64_t>(e), static_cast<int64_t>(c)};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "choice [", b, ", ", t, ", ", k, "] has index ", e, " and slot ", c,
      "; valid: both -1 (dropped) or index in 0..", experts - 1, " and slot in 0..",
      capacity - 1));
}

// Expert ids of token row `probs` (length E) from the largest probability down; ties go
// to the lower id.
std::vector<int64_t> Ranking(const double* probs, int64_t experts) {
  std::vector<int64_t> order(experts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return probs[a] > probs[b]; });
  return order;
}

}  // namespace

Outputs MoeRoute(const KernelArgs& args) {
  const Dense& probs = args.in(0);
  const int64_t batch = probs.shape.dim(0), tokens = probs.shape.dim(1);
  const int64_t experts = probs.shape.dim(2);
  const int64_t top_k = GetIntAttr(args.attrs, "top_k", 0);
  const int64_t capacity = GetIntAttr(args.attrs, "capacity", 0);
  Dense index = args.NewOutput(0), slot = args.NewOutput(1), dropped = args.NewOutput(2);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<std::vector<int64_t>> rankings;
    for (int64_t t = 0; t < tokens; ++t) {
      rankings.push_back(Ranking(&probs.values[(b * tokens + t) * experts], experts));
    }
    std::vector<int64_t> count(experts, 0);
    // k-major (GShard): every token's first choice before any token's second.
    for (int64_t k = 0; k < top_k; ++k) {
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t e = rankings[t][k];
        const int64_t at = (b * tokens + t) * top_k + k;
        if (count[e] < capacity) {
          index.values[at] = e;
          slot.values[at] = count[e]++;
        } else {
          index.values[at] = slot.values[at] = -1;
          dropped.values[b] += 1;
        }
      }
    }
  }
  return std::vector<Dense>{index, slot, dropped};
}

Outputs MoeDispatch(const KernelArgs& args) {
  const Dense& x = args.in(0);
  Dense buf = args.NewOutput(0);
  const int64_t tokens = x.shape.dim(1), hidden = x.shape.dim(2);
  const int64_t experts = buf.shape.dim(1), capacity = buf.shape.dim(2);
  const int64_t top_k = args.in(1).shape.dim(2);
  for (int64_t b = 0; b < x.shape.dim(0); ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < top_k; ++k) {
        absl::StatusOr<Choice> choice =
            ChoiceAt(args.in(1), args.in(2), b, t, k, experts, capacity);
        if (!choice.ok()) return choice.status();
        if (choice->dropped()) continue;
        for (int64_t h = 0; h < hidden; ++h) {
          buf.values[((b * experts + choice->expert) * capacity + choice->slot) * hidden + h] +=
              x.values[(b * tokens + t) * hidden + h];
        }
      }
    }
  }
  return std::vector<Dense>{buf};
}

Outputs MoeDispatchGrad(const KernelArgs& args) {
  const Dense& dbuf = args.in(0);
  Dense dx = args.NewOutput(0);
  const int64_t experts = dbuf.shape.dim(1), capacity = dbuf.shape.dim(2);
  const int64_t hidden = dbuf.shape.dim(3);
  const int64_t tokens = dx.shape.dim(1), top_k = args.in(1).shape.dim(2);
  for (int64_t b = 0; b < dx.shape.dim(0); ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < top_k; ++k) {
        absl::StatusOr<Choice> choice =
            ChoiceAt(args.in(1), args.in(2), b, t, k, experts, capacity);
        if (!choice.ok()) return choice.status();
        if (choice->dropped()) continue;
        for (int64_t h = 0; h < hidden; ++h) {
          dx.values[(b * tokens + t) * hidden + h] +=
              dbuf.values[((b * experts + choice->expert) * capacity + choice->slot) * hidden + h];
        }
      }
    }
  }
  return std::vector<Dense>{dx};
}

// out[b, e] = buf[b, e] . w[e].
Outputs ExpertMatMul(const KernelArgs& args) {
  const Dense& buf = args.in(0);
  const Dense& w = args.in(1);
  Dense out = args.NewOutput(0);
  const int64_t batch = buf.shape.dim(0), experts = buf.shape.dim(1);
  const int64_t capacity = buf.shape.dim(2), hidden = buf.shape.dim(3), inner = w.shape.dim(2);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t e = 0; e < experts; ++e) {
      for (int64_t c = 0; c < capacity; ++c) {
        const int64_t row = (b * experts + e) * capacity + c;
        for (int64_t f = 0; f < inner; ++f) {
          double sum = 0;
          for (int64_t h = 0; h < hidden; ++h) {
            sum += buf.values[row * hidden + h] * w.values[(e * hidden + h) * inner + f];
          }
          out.values[row * inner + f] = sum;
        }
      }
    }
  }
  return std::vector<Dense>{out};
}

// dbuf[b, e] = dout[b, e] . w[e]^T.
Outputs ExpertMatMulGradData(const KernelArgs& args) {
  const Dense& dout = args.in(0);
  const Dense& w = args.in(1);
  Dense dbuf = args.NewOutput(0);
  const int64_t batch = dout.shape.dim(0), experts = dout.shape.dim(1);
  const int64_t capacity = dout.shape.dim(2), inner = dout.shape.dim(3), hidden = w.shape.dim(1);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t e = 0; e < experts; ++e) {
      for (int64_t c = 0; c < capacity; ++c) {
        const int64_t row = (b * experts + e) * capacity + c;
        for (int64_t h = 0; h < hidden; ++h) {
          double sum = 0;
          for (int64_t f = 0; f < inner; ++f) {
            sum += dout.values[row * inner + f] * w.values[(e * hidden + h) * inner + f];
          }
          dbuf.values[row * hidden + h] = sum;
        }
      }
    }
  }
  return std::vector<Dense>{dbuf};
}

// dw[e] = sum over b of buf[b, e]^T . dout[b, e].
Outputs ExpertMatMulGradWeight(const KernelArgs& args) {
  const Dense& buf = args.in(0);
  const Dense& dout = args.in(1);
  Dense dw = args.NewOutput(0);
  const int64_t batch = buf.shape.dim(0), experts = buf.shape.dim(1);
  const int64_t capacity = buf.shape.dim(2), hidden = buf.shape.dim(3);
  const int64_t inner = dout.shape.dim(3);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t e = 0; e < experts; ++e) {
      for (int64_t c = 0; c < capacity; ++c) {
        const int64_t row = (b * experts + e) * capacity + c;
        for (int64_t h = 0; h < hidden; ++h) {
          for (int64_t f = 0; f < inner; ++f) {
            dw.values[(e * hidden + h) * inner + f] +=
                buf.values[row * hidden + h] * dout.values[row * inner + f];
          }
        }
      }
    }
  }
  return std::vector<Dense>{dw};
}

// y[b, t] = sum over kept choices k of probs[b, t, e_k] * ybuf[b, e_k, c_k].
Outputs MoeCombine(const KernelArgs& args) {
  const Dense& ybuf = args.in(0);
  const Dense& probs = args.in(1);
  Dense y = args.NewOutput(0);
  const int64_t experts = ybuf.shape.dim(1), capacity = ybuf.shape.dim(2);
  const int64_t hidden = ybuf.shape.dim(3);
  const int64_t tokens = probs.shape.dim(1), top_k = args.in(2).shape.dim(2);
  for (int64_t b = 0; b < y.shape.dim(0); ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < top_k; ++k) {
        absl::StatusOr<Choice> choice =
            ChoiceAt(args.in(2), args.in(3), b, t, k, experts, capacity);
        if (!choice.ok()) return choice.status();
        if (choice->dropped()) continue;
        const double p = probs.values[(b * tokens + t) * experts + choice->expert];
        const int64_t row = (b * experts + choice->expert) * capacity + choice->slot;
        for (int64_t h = 0; h < hidden; ++h) {
          y.values[(b * tokens + t) * hidden + h] += p * ybuf.values[row * hidden + h];
        }
      }
    }
  }
  return std::vector<Dense>{y};
}

// dybuf[b, e_k, c_k] = probs[b, t, e_k] * dy[b, t]; zeros in unused slots.
Outputs MoeCombineGradBuf(const KernelArgs& args) {
  const Dense& dy = args.in(0);
  const Dense& probs = args.in(1);
  Dense dybuf = args.NewOutput(0);
  const int64_t experts = dybuf.shape.dim(1), capacity = dybuf.shape.dim(2);
  const int64_t hidden = dybuf.shape.dim(3);
  const int64_t tokens = dy.shape.dim(1), top_k = args.in(2).shape.dim(2);
  for (int64_t b = 0; b < dy.shape.dim(0); ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < top_k; ++k) {
        absl::StatusOr<Choice> choice =
            ChoiceAt(args.in(2), args.in(3), b, t, k, experts, capacity);
        if (!choice.ok()) return choice.status();
        if (choice->dropped()) continue;
        const double p = probs.values[(b * tokens + t) * experts + choice->expert];
        for (int64_t h = 0; h < hidden; ++h) {
          dybuf.values[((b * experts + choice->expert) * capacity + choice->slot) * hidden + h] +=
              p * dy.values[(b * tokens + t) * hidden + h];
        }
      }
    }
  }
  return std::vector<Dense>{dybuf};
}

// dprobs[b, t, e_k] = dot(dy[b, t], ybuf[b, e_k, c_k]); zero for experts not chosen.
Outputs MoeCombineGradProbs(const KernelArgs& args) {
  const Dense& dy = args.in(0);
  const Dense& ybuf = args.in(1);
  Dense dprobs = args.NewOutput(0);
  const int64_t experts = ybuf.shape.dim(1), capacity = ybuf.shape.dim(2);
  const int64_t hidden = ybuf.shape.dim(3);
  const int64_t tokens = dy.shape.dim(1), top_k = args.in(2).shape.dim(2);
  for (int64_t b = 0; b < dy.shape.dim(0); ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < top_k; ++k) {
        absl::StatusOr<Choice> choice =
            ChoiceAt(args.in(2), args.in(3), b, t, k, experts, capacity);
        if (!choice.ok()) return choice.status();
        if (choice->dropped()) continue;
        double dot = 0;
        const int64_t row = (b * experts + choice->expert) * capacity + choice->slot;
        for (int64_t h = 0; h < hidden; ++h) {
          dot += dy.values[(b * tokens + t) * hidden + h] * ybuf.values[row * hidden + h];
        }
        dprobs.values[(b * tokens + t) * experts + choice->expert] += dot;
      }
    }
  }
  return std::vector<Dense>{dprobs};
}

namespace {

// f[e] = fraction of the sample's tokens whose argmax (lowest id on ties) is e.
std::vector<double> ArgmaxFractions(const Dense& probs, int64_t b) {
  const int64_t tokens = probs.shape.dim(1), experts = probs.shape.dim(2);
  std::vector<double> fraction(experts, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    const double* row = &probs.values[(b * tokens + t) * experts];
    fraction[std::max_element(row, row + experts) - row] += 1.0 / tokens;
  }
  return fraction;
}

}  // namespace

// loss[b] = E * sum_e f_e * mean_t probs[b, t, e] (Switch Transformer).
Outputs MoeAuxLoss(const KernelArgs& args) {
  const Dense& probs = args.in(0);
  Dense loss = args.NewOutput(0);
  const int64_t tokens = probs.shape.dim(1), experts = probs.shape.dim(2);
  for (int64_t b = 0; b < probs.shape.dim(0); ++b) {
    const std::vector<double> fraction = ArgmaxFractions(probs, b);
    for (int64_t e = 0; e < experts; ++e) {
      double mean = 0;
      for (int64_t t = 0; t < tokens; ++t) mean += probs.values[(b * tokens + t) * experts + e];
      loss.values[b] += experts * fraction[e] * mean / tokens;
    }
  }
  return std::vector<Dense>{loss};
}

// dprobs[b, t, e] = dy[b] * E * f_e / T (f is piecewise constant: no gradient through it).
Outputs MoeAuxLossGrad(const KernelArgs& args) {
  const Dense& dy = args.in(0);
  const Dense& probs = args.in(1);
  Dense dprobs = args.NewOutput(0);
  const int64_t tokens = probs.shape.dim(1), experts = probs.shape.dim(2);
  for (int64_t b = 0; b < probs.shape.dim(0); ++b) {
    const std::vector<double> fraction = ArgmaxFractions(probs, b);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t e = 0; e < experts; ++e) {
        dprobs.values[(b * tokens + t) * experts + e] =
            dy.values[b] * experts * fraction[e] / tokens;
      }
    }
  }
  return std::vector<Dense>{dprobs};
}

}  // namespace reference
}  // namespace oneflow
