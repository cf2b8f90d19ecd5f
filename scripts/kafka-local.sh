#!/bin/sh
# A single Apache Kafka node (KRaft, broker and controller in one process) on
# 127.0.0.1 for trying odwatch against a real broker, from the jars Maven
# copies (internal/kafkatest/pom.xml pins the version; the tests use the same
# jars).
#
#   scripts/kafka-local.sh fetch    copy the jars (once; needs mvn)
#   scripts/kafka-local.sh fetch-registry
#                                   unpack Apicurio Registry (once; needs mvn)
#                                   for the tests' Schema Registry
#   scripts/kafka-local.sh start    fetch if needed, then start in the background
#   scripts/kafka-local.sh stop     clean shutdown
#
# Environment: KAFKA_LOCAL_PORT (client port, default 9092; the controller
# listens on the next one), KAFKA_LOCAL_DIR (config, data and server.log;
# default ~/.cache/odwatch/kafka-local), ODWATCH_KAFKA_LIBS (the jars), JAVA
# (default java). Topics are created on first use.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
pom="$root/internal/kafkatest/pom.xml"
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
libs=${ODWATCH_KAFKA_LIBS:-$HOME/.cache/odwatch/kafka-$version/libs}
dir=${KAFKA_LOCAL_DIR:-$HOME/.cache/odwatch/kafka-local}
port=${KAFKA_LOCAL_PORT:-9092}
cport=$((port + 1))
java=${JAVA:-java}

fetch() {
  [ -f "$libs/kafka_2.13-$version.jar" ] && return
  echo "copying Kafka $version's jars into $libs" >&2
  mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$libs"
}

# The registry the tests start (internal/kafkatest/registry-pom.xml pins it):
# unpacked into ODWATCH_REGISTRY_DIR, default
# ~/.cache/odwatch/apicurio-registry-VERSION.
fetch_registry() {
  rpom="$root/internal/kafkatest/registry-pom.xml"
  rversion=$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' "$rpom")
  rdir=${ODWATCH_REGISTRY_DIR:-$HOME/.cache/odwatch/apicurio-registry-$rversion}
  [ -f "$rdir/quarkus-run.jar" ] && return
  echo "unpacking Apicurio Registry $rversion into $rdir" >&2
  mvn -q -B -f "$rpom" dependency:unpack -Dregistry.dir="$rdir"
}

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

start() {
  fetch
  if running; then
    echo "Kafka $version already running on 127.0.0.1:$port (pid $(cat "$dir/pid"))"
    return
  fi
  mkdir -p "$dir"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
  cat >"$dir/log4j2.properties" <<PROPS
appender.f.type=File
appender.f.name=F
appender.f.fileName=$dir/server.log
appender.f.layout.type=PatternLayout
appender.f.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.f.ref=F
PROPS
  jvm="-Xms128m -Xmx512m -XX:+UseSerialGC -Dlog4j2.configurationFile=$dir/log4j2.properties"
  if [ ! -f "$dir/data/meta.properties" ]; then
    # shellcheck disable=SC2086
    "$java" $jvm -cp "$libs/*" kafka.tools.StorageTool format -t b2R3YXRjaC1sb2NhbC1rYQ \
      -c "$dir/server.properties" >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; exit 1; }
  fi
  : >"$dir/server.log"
  # shellcheck disable=SC2086
  nohup "$java" $jvm -cp "$libs/*" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/pid"
  i=0
  until grep -q 'Kafka Server started' "$dir/server.log" 2>/dev/null; do
    if ! running || [ $i -ge 600 ]; then
      tail -20 "$dir/server.log" "$dir/stdout.log" >&2
      echo "Kafka did not start (logs in $dir)" >&2
      exit 1
    fi
    i=$((i + 1))
    sleep 0.2
  done
  echo "Kafka $version on 127.0.0.1:$port (logs: $dir/server.log; stop: scripts/kafka-local.sh stop)"
}

stop() {
  if ! running; then
    echo "Kafka is not running"
    return
  fi
  pid=$(cat "$dir/pid")
  kill -TERM "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    [ $i -ge 300 ] && kill -KILL "$pid"
    i=$((i + 1))
    sleep 0.2
  done
  rm -f "$dir/pid"
  echo "Kafka stopped"
}

case "${1:-}" in
fetch) fetch ;;
fetch-registry) fetch_registry ;;
start) start ;;
stop) stop ;;
*)
  echo "usage: $0 fetch|fetch-registry|start|stop" >&2
  exit 2
  ;;
esac
