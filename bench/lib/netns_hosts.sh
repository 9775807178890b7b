# Emulated hosts for benchmarks (sourced, not run): N Linux network namespaces joined by
# veth pairs on one bridge namespace, each link optionally shaped with tc like a NIC
# (both veth ends, so a host's sends and its receives each get the rate), and one
# `oneflowd` per namespace bound to its own address. Needs root and iproute2.
#
# The caller sets, before sourcing:
#   NETNS_PREFIX   a name unique to the run (e.g. "ofdb$$"); every namespace is named
#                  $NETNS_PREFIX-...; teardown removes exactly those
#   NETNS_SUBNET   three octets of a private /24 used only inside the namespaces, e.g. 10.232.0
# and calls netns_teardown from its EXIT trap (netns_trap_teardown installs one). Only the
# namespaces' own addresses are ever dialled.

NETNS_CREATED=()     # namespaces this run made, in creation order
NETNS_DAEMON_PIDS=() # the oneflowd processes started by netns_start_daemons
NETNS_HOSTS=0
NETNS_NODES_ARG=""   # "ip:port,ip:port,..." for `oneflow launch --nodes=`

netns_name() { echo "$NETNS_PREFIX-n$1"; }
netns_ip() { echo "$NETNS_SUBNET.$(( $1 + 1 ))"; }
netns_bridge() { echo "$NETNS_PREFIX-br"; }

# netns_create N: N host namespaces on a bridge, unshaped.
netns_create() {
  local hosts="$1" i ns bridge
  bridge="$(netns_bridge)"
  ip netns add "$bridge"
  NETNS_CREATED+=("$bridge")
  ip -n "$bridge" link set lo up
  ip -n "$bridge" link add br0 type bridge
  ip -n "$bridge" link set br0 up
  for ((i = 0; i < hosts; i++)); do
    ns="$(netns_name "$i")"
    ip netns add "$ns"
    NETNS_CREATED+=("$ns")
    ip -n "$ns" link set lo up
    # Created directly inside the namespaces: nothing appears in the caller's namespace.
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$bridge"
    ip -n "$bridge" link set "p$i" master br0
    ip -n "$bridge" link set "p$i" up
    ip -n "$ns" addr add "$(netns_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  NETNS_HOSTS="$hosts"
}

# netns_shape RATE_MBIT: a token bucket of the rate on both ends of every host's veth.
# burst: 2 ms of the rate, at least 128 KiB (veth hands tbf GSO packets up to 64 KiB).
netns_shape() {
  local rate_mbit="$1" i burst
  burst=$(( rate_mbit * 1000000 / 8 / 500 ))
  if (( burst < 131072 )); then burst=131072; fi
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    tc -n "$(netns_name "$i")" qdisc replace dev eth0 root tbf rate "${rate_mbit}mbit" burst "$burst" latency 20ms
    tc -n "$(netns_bridge)" qdisc replace dev "p$i" root tbf rate "${rate_mbit}mbit" burst "$burst" latency 20ms
  done
}

netns_unshape() {
  local i
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    tc -n "$(netns_name "$i")" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$(netns_bridge)" qdisc del dev "p$i" root 2>/dev/null || true
  done
}

# netns_link_bytes HOST: "tx rx" byte counters of the host's eth0 (traffic it sent and got).
netns_link_bytes() {
  local ns
  ns="$(netns_name "$1")"
  echo "$(ip netns exec "$ns" cat /sys/class/net/eth0/statistics/tx_bytes) $(ip netns exec "$ns" cat /sys/class/net/eth0/statistics/rx_bytes)"
}

# netns_start_daemons BIN_DIR TOKEN_FILE WORK_DIR PORT: one oneflowd per host namespace,
# listening on the host's address; waits until each says it listens.
netns_start_daemons() {
  local bin="$1" token="$2" work="$3" port="$4" i ns deadline
  NETNS_NODES_ARG=""
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    ns="$(netns_name "$i")"
    mkdir -p "$work/node$i"
    # UCX_TLS: namespaces share this machine's kernel, /dev/shm and boot id, so UCX would
    # see one host and move tensors through shared memory, past the shaped links; TCP
    # only makes the emulated hosts talk over their veths like real ones.
    ip netns exec "$ns" env UCX_TLS=tcp,self "$bin/oneflowd" --listen="$(netns_ip "$i"):$port" --token_file="$token" \
      --work_dir="$work/node$i/work" --worker_binary="$bin/oneflow_worker" \
      > "$work/node$i/oneflowd.out" 2> "$work/node$i/oneflowd.err" &
    NETNS_DAEMON_PIDS+=($!)
    [[ -n "${NETNS_HOST_CPUS:-}" ]] && netns_limit_cpus "$i" "$!"
    NETNS_NODES_ARG+="${NETNS_NODES_ARG:+,}$(netns_ip "$i"):$port"
  done
  for ((i = 0; i < NETNS_HOSTS; i++)); do
    deadline=$((SECONDS + 30))
    until grep -q "oneflowd listening on" "$work/node$i/oneflowd.out" 2>/dev/null; do
      if ! kill -0 "${NETNS_DAEMON_PIDS[$i]}" 2>/dev/null; then
        echo "oneflowd of host $i exited: $(tail -5 "$work/node$i/oneflowd.err")" >&2
        return 1
      fi
      if (( SECONDS >= deadline )); then
        echo "oneflowd of host $i did not start in 30 s" >&2
        return 1
      fi
      sleep 0.1
    done
  done
}

# netns_limit_cpus HOST PID: the host's own CPU, as a real host has: PID (a daemon, and the
# workers it forks after) in a cpu cgroup of its own whose CFS quota is NETNS_HOST_CPUS cores
# (e.g. 0.667 for three hosts on two cores) per 10 ms period. Without it the hosts'
# threads share the machine's cores as the kernel balances them: three compute threads on
# two cores run two on one core and one on the other, and the hosts' steps drift apart.
NETNS_CGROUPS=()
NETNS_CPU_PERIOD_US=10000
netns_limit_cpus() {
  local host="$1" pid="$2" dir quota
  dir="/sys/fs/cgroup/cpu/$(netns_name "$host")"
  [[ -d /sys/fs/cgroup/cpu ]] || { echo "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; return 1; }
  quota="$(netns_cpu_quota_us "$NETNS_HOST_CPUS")" || return 1
  mkdir -p "$dir"
  NETNS_CGROUPS+=("$dir")
  echo "$NETNS_CPU_PERIOD_US" > "$dir/cpu.cfs_period_us"
  echo "$quota" > "$dir/cpu.cfs_quota_us"
  echo "$pid" > "$dir/cgroup.procs"
}

# netns_cpu_quota_us CORES: the CFS quota (microseconds per NETNS_CPU_PERIOD_US) of CORES
# cores, rounded to the nearest; fails, naming what was given, unless CORES is a number
# whose quota is at least the kernel's 1 ms minimum (CORES >= 0.1).
netns_cpu_quota_us() {
  [[ "$1" =~ ^[0-9]*\.?[0-9]+$ ]] &&
    awk -v c="$1" -v p="$NETNS_CPU_PERIOD_US" 'BEGIN { q = int(c * p + 0.5); if (q < 1000) exit 1; print q }' ||
    { echo "host cores '$1': give a number >= 0.1 (e.g. 0.667)" >&2; return 1; }
}

# netns_stop_daemons: SIGTERM (the daemons stop their workers), SIGKILL after 8 s.
netns_stop_daemons() {
  local pid i
  for pid in "${NETNS_DAEMON_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${NETNS_DAEMON_PIDS[@]}"; do
    for ((i = 0; i < 80; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true  # its exit status (143 after SIGTERM) is expected
  done
  NETNS_DAEMON_PIDS=()
}

# netns_teardown: the daemons, anything left inside our namespaces, then the namespaces
# (their veths and the bridge go with them).
netns_teardown() {
  local ns pids=()
  netns_stop_daemons
  for ns in "${NETNS_CREATED[@]}"; do
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    (( ${#pids[@]} )) && kill -KILL "${pids[@]}" 2>/dev/null
  done
  sleep 0.2
  for ns in "${NETNS_CREATED[@]}"; do
    ip netns del "$ns" 2>/dev/null || echo "could not delete namespace $ns" >&2
  done
  NETNS_CREATED=()
  NETNS_HOSTS=0
  # The hosts' cgroups (netns_limit_cpus), empty now that their processes are gone.
  local group
  for group in "${NETNS_CGROUPS[@]}"; do rmdir "$group" 2>/dev/null || echo "could not remove cgroup $group" >&2; done
  NETNS_CGROUPS=()
}

# netns_trap_teardown: the EXIT/INT/TERM/HUP traps of a benchmark run. On exit: netns_teardown,
# then the work dir $RUN removed unless $KEEP is 1 or the run did not reach $OK=1 (a failed
# run's plans and logs are what one reads next), and a "failed" line through the caller's
# `log`. The caller defines log() and sets RUN, KEEP and OK (OK=1 after its last result).
netns_trap_teardown() {
  trap _netns_on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}
_netns_on_exit() {
  local rc=$?
  trap - EXIT INT TERM HUP
  set +e
  netns_teardown
  if [[ -n "$RUN" && -d "$RUN" ]]; then
    if (( KEEP )) || (( ! OK )); then log "work dir kept: $RUN"; else rm -rf "$RUN"; fi
  fi
  (( OK )) || log "failed (exit $rc); torn down"
  exit "$rc"
}

# loopback_start_daemons N BIN_DIR TOKEN_FILE WORK_DIR: N oneflowd on 127.0.0.1 (ports the
# kernel picks) in the caller's namespace, for "nodes" that are processes of this machine.
# Sets NETNS_NODES_ARG and adds the daemons to NETNS_DAEMON_PIDS (netns_teardown stops them).
loopback_start_daemons() {
  local hosts="$1" bin="$2" token="$3" work="$4" i deadline address
  NETNS_NODES_ARG=""
  local first="${#NETNS_DAEMON_PIDS[@]}"
  for ((i = 0; i < hosts; i++)); do
    mkdir -p "$work/node$i"
    "$bin/oneflowd" --listen=127.0.0.1:0 --token_file="$token" --work_dir="$work/node$i/work" \
      --worker_binary="$bin/oneflow_worker" > "$work/node$i/oneflowd.out" 2> "$work/node$i/oneflowd.err" &
    NETNS_DAEMON_PIDS+=($!)
  done
  for ((i = 0; i < hosts; i++)); do
    deadline=$((SECONDS + 30))
    until grep -q "oneflowd listening on" "$work/node$i/oneflowd.out" 2>/dev/null; do
      if ! kill -0 "${NETNS_DAEMON_PIDS[$((first + i))]}" 2>/dev/null || (( SECONDS >= deadline )); then
        echo "loopback oneflowd $i did not start: $(tail -5 "$work/node$i/oneflowd.err")" >&2
        return 1
      fi
      sleep 0.1
    done
    address="$(sed -n 's/^oneflowd listening on //p' "$work/node$i/oneflowd.out")"
    NETNS_NODES_ARG+="${NETNS_NODES_ARG:+,}$address"
  done
}

# netns_private_binaries SRC_DIR DEST_DIR PATH...: copies each SRC_DIR/PATH into DEST_DIR, a
# private copy, so a build running beside the bench cannot replace a binary mid-run (the
# daemons in the namespaces exec the workers from it). Returns 1, naming the first missing
# binary on stderr, before copying anything.
netns_private_binaries() {
  local src="$1" dest="$2" path
  shift 2
  for path in "$@"; do
    [[ -x "$src/$path" ]] || { echo "$src/$path is missing" >&2; return 1; }
  done
  mkdir -p "$dest"
  for path in "$@"; do cp "$src/$path" "$dest/"; done
}
