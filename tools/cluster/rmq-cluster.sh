#!/usr/bin/env bash
# A throwaway RabbitMQ cluster of three nodes (or NODE_COUNT) beside the machine's own node (5672 and its cookie
# untouched), for the failover and TLS tests. From reference/distributed (rmq-cluster.sh), with the ports, node names,
# directory and configuration configurable.
# usage: rmq-cluster.sh up|down|status|kill N|start N|pid N|ctl N args...
#   BASE       working directory (config, cookie, mnesia, logs, pid files); default ${TMPDIR:-/tmp}/naalya-rmq-cluster
#   PORT_BASE  node i listens for AMQP on PORT_BASE+i (default 5680: 5681-5683)
#   DIST_BASE  node i's Erlang distribution port is DIST_BASE+i (default 25680)
#   NODE_PREFIX node i is named ${NODE_PREFIX}i@localhost (default r)
#   NODE_COUNT how many nodes (default 3); nodes 2.. join node 1
#   EXTRA_CONF rabbitmq.conf lines added to every node's (a TLS listener, ssl_options...); when they set listeners.tcp,
#              the default plain listener on PORT_BASE+i is left out (`listeners.tcp = none`: TLS only)
set -euo pipefail
BASE=${BASE:-${TMPDIR:-/tmp}/naalya-rmq-cluster}
PORT_BASE=${PORT_BASE:-5680}
DIST_BASE=${DIST_BASE:-25680}
NODE_PREFIX=${NODE_PREFIX:-r}
NODE_COUNT=${NODE_COUNT:-3}
EXTRA_CONF=${EXTRA_CONF:-}
# Not /usr/sbin/*: those wrappers su to the rabbitmq user (its HOME, the system node's cookie) and log to /var/log.
RMQ_BIN=${RMQ_BIN:-/usr/lib/rabbitmq/bin}
export HOME=$BASE/home                  # an Erlang cookie of its own, never the system node's
NODES=($(seq 1 "$NODE_COUNT"))

node_env() { # $1 = index
  local i=$1 d=$BASE/n$1
  export RABBITMQ_NODENAME=$NODE_PREFIX$i@localhost
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$((PORT_BASE + i))
  export RABBITMQ_DIST_PORT=$((DIST_BASE + i))
  export RABBITMQ_CONF_ENV_FILE=$d/rabbitmq-env.conf     # the default one sets NODENAME=rabbit@localhost
  export RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf           # the default one pins the listener to 5672
  export RABBITMQ_ADVANCED_CONFIG_FILE=$d/advanced.config
  export RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins
  export RABBITMQ_MNESIA_BASE=$d/mnesia
  export RABBITMQ_LOG_BASE=$d/log
  export RABBITMQ_PID_FILE=$d/beam.pid
  # One scheduler per node (small CI machines) and distribution on loopback only.
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +S 1:1"
  export ERL_EPMD_ADDRESS=127.0.0.1
}

ctl() { local i=$1; shift; ( node_env "$i"; "$RMQ_BIN/rabbitmqctl" -n "$NODE_PREFIX$i@localhost" "$@" ); }
ctl_within() { local seconds=$1 i=$2; shift 2; ( node_env "$i"; timeout "$seconds" "$RMQ_BIN/rabbitmqctl" -n "$NODE_PREFIX$i@localhost" "$@" ); }

prep() {
  mkdir -p "$HOME"
  if [ ! -f "$HOME/.erlang.cookie" ]; then
    # A fresh random cookie per working directory: no other Erlang node can join or be joined by mistake.
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$HOME/.erlang.cookie"
  fi
  chmod 400 "$HOME/.erlang.cookie"     # Erlang refuses a cookie others can read
  for i in "${NODES[@]}"; do
    local d=$BASE/n$i; mkdir -p "$d/log" "$d/mnesia"
    : > "$d/rabbitmq-env.conf"
    echo '[].' > "$d/enabled_plugins"   # no management plugin: no 15672 clash with the system node
    echo '[].' > "$d/advanced.config"
    # Absolute limits: relative ones would size alarms on the whole host's memory.
    if grep -q '^listeners\.tcp' <<< "$EXTRA_CONF"; then : > "$d/rabbitmq.conf"
    else echo "listeners.tcp.1 = 127.0.0.1:$((PORT_BASE + i))" > "$d/rabbitmq.conf"; fi
    cat >> "$d/rabbitmq.conf" <<CONF
loopback_users = none
disk_free_limit.absolute = 50MB
vm_memory_high_watermark.absolute = 512MiB
log.console = false
log.file.level = info
CONF
    if [ -n "$EXTRA_CONF" ]; then printf '%s\n' "$EXTRA_CONF" >> "$d/rabbitmq.conf"; fi
  done
}

start() { # $1 = index; detached, in a session of its own; the beam's PID lands in the pid file
  local i=$1 d=$BASE/n$1
  ( node_env "$i"; setsid "$RMQ_BIN/rabbitmq-server" > "$d/log/stdout.log" 2>&1 < /dev/null & echo $! > "$d/wrapper.pid" )
}

await() { # await_startup fails at once while the node is not yet registered with epmd: poll ping first, bounded
  local i=$1 deadline=$(( $(date +%s) + ${2:-90} ))
  until ctl "$i" -q ping >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "$NODE_PREFIX$i not up in time" >&2; tail -20 "$BASE/n$i/log/$NODE_PREFIX$i@localhost.log" >&2 || true; return 1; }
    sleep 0.5
  done
  ctl "$i" await_startup --timeout "${2:-90}" >/dev/null
}

case "${1:-}" in
  up)
    for i in "${NODES[@]}"; do rm -rf "$BASE/n$i"; done   # fresh mnesia: no stale cluster membership
    prep
    for i in "${NODES[@]}"; do start "$i"; done
    for i in "${NODES[@]}"; do await "$i"; done
    for i in "${NODES[@]:1}"; do
      ctl "$i" stop_app >/dev/null; ctl "$i" join_cluster "${NODE_PREFIX}1@localhost" >/dev/null; ctl "$i" start_app >/dev/null
    done
    echo "cluster up: $NODE_COUNT node(s), ${NODE_PREFIX}1..${NODE_PREFIX}$NODE_COUNT@localhost"
    ;;
  down) # graceful, then by the PIDs this script recorded: never by process name
    for i in "${NODES[@]}"; do
      d=$BASE/n$i
      if [ -f "$d/beam.pid" ] && kill -0 "$(cat "$d/beam.pid")" 2>/dev/null; then
        ctl_within 20 "$i" shutdown >/dev/null 2>&1 || kill -9 "$(cat "$d/beam.pid")" 2>/dev/null || true
      fi
      if [ -f "$d/wrapper.pid" ] && kill -0 "$(cat "$d/wrapper.pid")" 2>/dev/null; then kill "$(cat "$d/wrapper.pid")" 2>/dev/null || true; fi
    done ;;
  status) ctl "${2:-1}" cluster_status ;;
  kill)  kill -9 "$(cat "$BASE/n$2/beam.pid")"; echo "killed $NODE_PREFIX$2" ;;
  start) start "$2"; await "$2" ;;
  pid)   cat "$BASE/n$2/beam.pid" ;;
  ctl)   shift; i=$1; shift; ctl "$i" "$@" ;;
  *) echo "usage: $0 up|down|status|kill N|start N|pid N|ctl N ..."; exit 2 ;;
esac
