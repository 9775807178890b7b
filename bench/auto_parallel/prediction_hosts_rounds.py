#!/usr/bin/env python3
"""The order prediction_hosts_bench.sh launches its plans in, round by round.

  prediction_hosts_rounds.py PLANS ROUNDS STEP

Prints one line per round, the plans' indices (0..PLANS-1) in launch order. Every round
launches every plan once, in the list's order turned: round r starts STEP(r) plans into
the list, where STEP "spread" is r * PLANS // ROUNDS (the sweep: over its rounds each plan
runs early, midway and late in a round, and after other neighbours at the turn, so a drift of
the machine within a round lands on no plan every time) and STEP "one" is r (the confirming
round: with two plans, the searched layout and the sweep's best alternate which goes first).
"""
import sys


def round_orders(plans, rounds, step):
    orders = []
    for r in range(rounds):
        start = r * plans // rounds if step == "spread" else r
        orders.append([(start + k) % plans for k in range(plans)] if plans else [])
    return orders


def main():
    if len(sys.argv) != 4 or not sys.argv[1].isdigit() or not sys.argv[2].isdigit() or sys.argv[3] not in ("spread", "one"):
        sys.exit("usage: prediction_hosts_rounds.py PLANS ROUNDS spread|one")
    for order in round_orders(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]):
        print(" ".join(str(i) for i in order))


if __name__ == "__main__":
    main()
