#!/usr/bin/env bash
# ingest-vs-kcat.sh measures odwatch's ingest rate against kcat (librdkafka)
# on the same broker, in one run: it starts the in-process broker of the demo
# as a process of its own (scripts/kfake), produces RECORDS payroll JSON
# records of each of SHAPES to a topic of PARTITIONS partitions with kcat
# (lz4 batches), then, ROUNDS times and per shape, times kcat consuming them
# all and `odwatch run` consuming them all with evaluations off (a window
# larger than the topic), and prints each round's rates and their ratio, with
# the load average and odwatch's CPU time (user+sys, from /proc).
#
# Shapes: int is the payroll stream of `odwatch demo` (integers and short
# text); id adds what real events carry, near-unique in the window: an
# "id" string (36 characters, unique) and a float "tax" with cents.
#
#   scripts/ingest-vs-kcat.sh                 # 1M records, 3 partitions, 3 rounds, both shapes
#   RECORDS=200000 ROUNDS=1 SHAPES=id scripts/ingest-vs-kcat.sh
#   ODWATCH_BIN=/tmp/odwatch-old scripts/ingest-vs-kcat.sh   # another build
#   ODWATCH_BINS="/tmp/old /tmp/new" scripts/ingest-vs-kcat.sh  # builds alternated in each round
#   KFAKE_BIN=/tmp/kfake ...                  # a kfake built before
#
# odwatch's time runs from the process start to the moment its
# odwatch_records_consumed_total reaches RECORDS (polled every 20 ms), so it
# includes opening the store and joining the group; "from first" starts at
# the first consumed record instead. kcat's time is the whole `kcat -C -e`
# printing every value to a pipe that counts them.
# Needs kcat (Debian: apt-get install -y kcat), curl and Go.
set -euo pipefail

RECORDS=${RECORDS:-1000000}
PARTITIONS=${PARTITIONS:-3}
ROUNDS=${ROUNDS:-3}
SHAPES=${SHAPES:-int id}
METRICS_PORT=${METRICS_PORT:-19464}

if ! command -v kcat >/dev/null 2>&1; then
	echo "ingest-vs-kcat: kcat is missing; install it (Debian/Ubuntu: apt-get install -y kcat) and run again" >&2
	exit 2
fi
for tool in curl go awk; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "ingest-vs-kcat: $tool is missing" >&2
		exit 2
	fi
done

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d -t ingest-vs-kcat.XXXXXX)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }

odwatch=${ODWATCH_BIN:-$work/odwatch}
if [ -z "${ODWATCH_BIN:-}${ODWATCH_BINS:-}" ]; then
	echo "building odwatch ..." >&2
	(cd "$root" && go build -o "$work/odwatch" ./cmd/odwatch)
fi
kfake=${KFAKE_BIN:-$work/kfake}
if [ -z "${KFAKE_BIN:-}" ]; then
	echo "building scripts/kfake ..." >&2
	(cd "$root" && go build -o "$work/kfake" ./scripts/kfake)
fi
bins=${ODWATCH_BINS:-$odwatch}

topics=()
for shape in $SHAPES; do
	topics+=(-topic "bench-$shape:$PARTITIONS")
done
"$kfake" "${topics[@]}" >"$work/kfake.out" 2>"$work/kfake.err" &
pids+=($!)
for _ in $(seq 100); do
	[ -s "$work/kfake.out" ] && break
	sleep 0.1
done
broker=$(head -n1 "$work/kfake.out")
if [ -z "$broker" ]; then
	echo "ingest-vs-kcat: the broker did not start:" >&2
	cat "$work/kfake.err" >&2
	exit 1
fi

# The payroll stream of `odwatch demo` (position, experience, salary,
# tax_group, perc, tax), clean; shape id adds a unique id and tax in cents.
produce() {
	local shape=$1
	awk -v n="$RECORDS" -v shape="$shape" 'BEGIN {
		srand(3)
		split("clerk analyst engineer manager director", pos, " ")
		split("20000 35000 50000 70000 95000", base, " ")
		for (i = 0; i < n; i++) {
			p = int(rand() * 5) + 1
			ex = int(rand() * 31)
			salary = base[p] + ex * 1000 + int(rand() * 100) * 100
			if (salary < 30000) { g = "A"; perc = 10 }
			else if (salary < 50000) { g = "B"; perc = 20 }
			else if (salary < 80000) { g = "C"; perc = 25 }
			else if (salary < 120000) { g = "D"; perc = 30 }
			else { g = "E"; perc = 40 }
			if (shape == "id") {
				id = sprintf("%08x-%04x-4%03x-%04x-%06x%06x", i, int(rand() * 65536), int(rand() * 4096), int(rand() * 65536), int(rand() * 16777216), int(rand() * 16777216))
				printf "{\"id\":\"%s\",\"position\":\"%s\",\"experience\":%d,\"salary\":%d,\"tax_group\":\"%s\",\"perc\":%d,\"tax\":%.2f}\n", id, pos[p], ex, salary, g, perc, perc * (salary + int(rand() * 10000) / 100) / 100
			} else {
				printf "{\"position\":\"%s\",\"experience\":%d,\"salary\":%d,\"tax_group\":\"%s\",\"perc\":%d,\"tax\":%d}\n", pos[p], ex, salary, g, perc, perc * salary / 100
			}
		}
	}' >"$work/payroll.jsonl"
	t0=$(now)
	kcat -P -b "$broker" -t "bench-$shape" -z lz4 -X linger.ms=50 -X batch.num.messages=10000 <"$work/payroll.jsonl"
	echo "produced $RECORDS records of shape $shape ($(du -m "$work/payroll.jsonl" | cut -f1) MB) to $PARTITIONS partitions in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}') s (kcat, lz4); first: $(head -n1 "$work/payroll.jsonl")" >&2
	rm -f "$work/payroll.jsonl"
}
for shape in $SHAPES; do
	produce "$shape"
done

consumed() {
	{ curl -fs "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null || true; } |
		awk '/^odwatch_records_consumed_total[{ ]/ {s += $NF} END {printf "%d", s}'
}

# cpu_s prints the user+sys CPU seconds of process $1 so far.
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo "?"
}

printf "%-5s %-6s %-10s %-12s %-28s %-12s %-16s %-8s %-8s %s\n" round shape kcat_s kcat_rec/s odwatch odwatch_s odwatch_rec/s ratio cpu_s "odwatch from first record (s, rec/s, ratio); load average"
run=0
for round in $(seq "$ROUNDS"); do
	for shape in $SHAPES; do
		t0=$(now)
		got=$(kcat -C -b "$broker" -t "bench-$shape" -o beginning -e -q | wc -l)
		tk=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{print b-a}')
		if [ "$got" -ne "$RECORDS" ]; then
			echo "ingest-vs-kcat: kcat consumed $got records of bench-$shape, want $RECORDS" >&2
			exit 1
		fi
		for bin in $bins; do
			run=$((run + 1))
			rm -rf "$work/state"
			t0=$(now)
			"$bin" run --brokers "$broker" --topic "bench-$shape" --group "bench-$run" --window $((2 * RECORDS)) \
				--state-dir "$work/state" --metrics-addr "127.0.0.1:$METRICS_PORT" --log-level warn 2>"$work/odwatch.err" &
			pid=$!
			pids+=($pid)
			first=""
			while :; do
				c=$(consumed)
				c=${c:-0}
				if [ -z "$first" ] && [ "$c" -gt 0 ]; then first=$(now); fi
				[ "$c" -ge "$RECORDS" ] && break
				if ! kill -0 "$pid" 2>/dev/null; then
					echo "ingest-vs-kcat: odwatch stopped:" >&2
					cat "$work/odwatch.err" >&2
					exit 1
				fi
				sleep 0.02
			done
			t1=$(now)
			cpu=$(cpu_s "$pid")
			kill -INT "$pid"
			wait "$pid" || true
			awk -v r="$round" -v shape="$shape" -v bin="$(basename "$(dirname "$bin")")/$(basename "$bin")" -v n="$RECORDS" -v tk="$tk" -v t0="$t0" -v tf="$first" -v t1="$t1" -v cpu="$cpu" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
				to = t1 - t0; tff = t1 - tf
				printf "%-5d %-6s %-10.2f %-12.0f %-28s %-12.2f %-16.0f %-8.2f %-8s %.2f s, %.0f, %.2f; load %s\n", r, shape, tk, n / tk, bin, to, n / to, tk / to, cpu, tff, n / tff, tk / tff, load
			}'
		done
	done
done
