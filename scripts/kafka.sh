#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft: broker and controller in one JVM) on 127.0.0.1, from
# Kafka's own jars on Maven Central: no Docker, no download outside the package registries.
#
#   scripts/kafka.sh start  [--port 9092]   fetch the jars if needed, format, start; prints the
#                                           bootstrap address once the broker answers
#                           [--owner PID]   also stop the broker once process PID is gone (tests
#                                           and benchmarks pass their own: a kill -9 of them
#                                           must not leave a JVM behind)
#                           [--forget]      with --owner: also remove the broker's folder once
#                                           it stopped (a broker a test process shares)
#   scripts/kafka.sh stop   [--port 9092]   ends the broker by its PID (SIGTERM, then SIGKILL)
#   scripts/kafka.sh status [--port 9092]   says whether it runs and answers; exit 1 if not
#   scripts/kafka.sh fetch                  fetches the jars only (CI does it while it builds)
#
# Everything lives under $XORFLOW_KAFKA_DIR (default target/kafka, git-ignored): libs/ (the jars,
# about 55 MB, fetched once with `mvn dependency:copy-dependencies` from scripts/kafka/pom.xml)
# and one folder per port (broker-<port>/: server.properties, data, server.log, pid). A start
# on a port whose folder exists reuses its data; `stop` keeps it (rm -rf the folder to forget).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
home=${XORFLOW_KAFKA_DIR:-$repo/target/kafka}
cmd=${1:-}
shift || true
port=9092
owner=
forget=
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=${2:?--port needs a value}; shift 2 ;;
    --owner) owner=${2:?--owner needs a process id}; shift 2 ;;
    --forget) forget=1; shift ;;
    *) echo "kafka.sh: unknown option '$1' (usage: kafka.sh start|stop|status [--port P] [--owner PID [--forget]])" >&2; exit 2 ;;
  esac
done
case "$port" in ''|*[!0-9]*) echo "kafka.sh: --port '$port' is not a port number" >&2; exit 2 ;; esac
case "$owner" in *[!0-9]*) echo "kafka.sh: --owner '$owner' is not a process id" >&2; exit 2 ;; esac
dir=$home/broker-$port
libs=$home/libs

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_of() { [ -s "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null && cat "$dir/pid"; }

fetch() {
  [ -s "$libs/.complete" ] && return
  command -v mvn >/dev/null || { echo "kafka.sh: mvn not found (needed once to fetch Kafka's jars)" >&2; exit 2; }
  echo "kafka.sh: fetching Kafka's jars from Maven Central into $libs" >&2
  rm -rf "$libs"
  mvn -q -B -f "$repo/scripts/kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$libs" >&2
  date > "$libs/.complete"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

configure() {
  mkdir -p "$dir"
  [ -s "$dir/server.properties" ] && return
  local controller; controller=$(free_port)
  cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
  cat > "$dir/log4j2.properties" <<LOG
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
LOG
  # A cluster id as Kafka's `random-uuid` makes it (16 random bytes, URL-safe base64 without
  # padding), without a JVM: under load (tests start several brokers at once) that JVM's failure
  # went unnoticed and the format failed on an empty id. Like Kafka's Uuid.randomUuid, an id that
  # starts with '-' is drawn again: the storage tool would read it as an option (1 run in 64).
  local id; id=$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s); break')
  java -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$libs/*" kafka.tools.StorageTool \
    format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
    || { echo "kafka.sh: formatting the storage failed (cluster id '$id'): $(tail -n 5 "$dir/format.log")" >&2
         rm -f "$dir/server.properties"; exit 1; }
}

# Stops broker $1 (SIGTERM, then SIGKILL after 20 s) once $owner has exited, and with --forget
# removes its folder; detached, with its output closed, so whoever runs `start` and reads its
# output is not kept waiting.
watch_owner() {
  local broker=$1 remove=
  [ -n "$forget" ] && remove=$dir
  nohup bash -c '
    while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
    stopped() { [ -z "$3" ] || rm -rf "$3"; exit 0; }
    kill "$2" 2>/dev/null || stopped "$@"
    for _ in $(seq 1 200); do kill -0 "$2" 2>/dev/null || stopped "$@"; sleep 0.1; done
    kill -9 "$2" 2>/dev/null; sleep 0.5; stopped "$@"' _ "$owner" "$broker" "$remove" >/dev/null 2>&1 </dev/null &
}

start() {
  if pid=$(pid_of); then echo "kafka.sh: a broker already runs on port $port (pid $pid)" >&2; echo "127.0.0.1:$port"; return; fi
  if answers "$port"; then echo "kafka.sh: port $port is taken by another program" >&2; exit 1; fi
  command -v java >/dev/null || { echo "kafka.sh: java not found (Java 17 or later)" >&2; exit 2; }
  fetch
  configure
  nohup java -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$libs/*" \
    kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  echo $! > "$dir/pid"
  for _ in $(seq 1 600); do
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "kafka.sh: the broker exited during start: see $dir/server.log and $dir/stdout.log" >&2
      tail -n 5 "$dir/stdout.log" >&2 || true
      # The folder may be removed once the caller gives up (--forget): show why here.
      grep -m 5 -i "error\|exception" "$dir/server.log" >&2 || true
      exit 1
    fi
    if answers "$port" && grep -q "Kafka Server started\|\[KafkaRaftServer nodeId=1\] Kafka Server started" "$dir/server.log" 2>/dev/null; then
      [ -n "$owner" ] && watch_owner "$(cat "$dir/pid")"
      echo "127.0.0.1:$port"
      return
    fi
    sleep 0.1
  done
  echo "kafka.sh: the broker did not answer on port $port within 60 s: see $dir/server.log" >&2
  stop; exit 1
}

stop() {
  local pid
  if ! pid=$(pid_of); then echo "kafka.sh: no broker runs on port $port" >&2; rm -f "$dir/pid"; return; fi
  kill "$pid"
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || { rm -f "$dir/pid"; return; }; sleep 0.1; done
  echo "kafka.sh: the broker (pid $pid) did not stop within 20 s: killing it" >&2
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

status() {
  local pid
  if pid=$(pid_of) && answers "$port"; then echo "running: pid $pid, 127.0.0.1:$port"; return; fi
  if pid=$(pid_of); then echo "starting or stuck: pid $pid does not answer on port $port"; exit 1; fi
  echo "stopped (port $port)"; exit 1
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  fetch) fetch ;;
  *) echo "usage: kafka.sh start|stop|status|fetch [--port P]" >&2; exit 2 ;;
esac
