#!/usr/bin/env bash
# fastod-vs-odwatch.sh runs Desbordante's FastOD (the desbordante wheel from
# the Python package registry: its C++ core, one thread) and odwatch's paper
# mode (`discover --order-text --min-strength 0`) on the same files at each
# epsilon of EPSILONS, and prints FastOD's execute time, odwatch's wall and
# user+sys time (reading the file included), and both outputs' counts: FDs,
# and OCs (FastOD lists an OC once per direction; the count here is halved).
#
# It then compares the two outputs dependency by dependency
# (scripts/fastod-compare.py): the FDs and OCs only one tool lists and, of
# those only odwatch lists, how many a brute force in plain Python (sharing
# no code with odwatch, checked first against the removals odwatch reports)
# finds valid at eps and minimal, and how many have a context column C that
# the rest of the context determines within eps (X \ {C}: [] -> C): FastOD
# drops such a context, a rule that is exact only at eps 0, where the
# context's partition is X \ {C}'s. FASTOD_COMPARE_SAMPLE caps how many of
# each kind are checked (default 2000; 0: all).
#
#   scripts/fastod-vs-odwatch.sh                                  # abalone, ncvoter-1k, hepatitis at 0 and 0.1
#   EPSILONS=0.1 FILES="adult.csv" scripts/fastod-vs-odwatch.sh
#   ODWATCH_BIN=/tmp/odwatch-old scripts/fastod-vs-odwatch.sh     # another build
#
# The virtualenv is made once, in $VENV (default /tmp/fastod-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/bench}
FILES=${FILES:-abalone.csv ncvoter-1k.csv hepatitis.csv}
EPSILONS=${EPSILONS:-0 0.1}
VENV=${VENV:-/tmp/fastod-venv}
if [ ! -x "$VENV/bin/python" ]; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q desbordante
fi
BIN=${ODWATCH_BIN:-}
if [ -z "$BIN" ]; then
	BIN=$(mktemp -d)/odwatch
	go build -o "$BIN" ./cmd/odwatch
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for f in $FILES; do
	for eps in $EPSILONS; do
		"$VENV/bin/python" - "$DATA/$f" "$eps" "$OUT/fastod.txt" <<'PY'
import sys, time, desbordante
path, eps, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
a = desbordante.od.algorithms.Fastod()
a.load_data(table=(path, ',', True))
t = time.time()
a.execute(time_limit=0, error=eps)
took = time.time() - t
ocs = (len(a.get_asc_ods()) + len(a.get_desc_ods())) // 2
print(f"{path.split('/')[-1]} eps={eps}: FastOD {took:.2f} s, {len(a.get_simple_ods())} FDs, {ocs} OCs")
with open(out, "w") as w:
    for kind, ods in (("fd", a.get_simple_ods()), ("asc", a.get_asc_ods()), ("desc", a.get_desc_ods())):
        for od in ods:
            print(kind, od, file=w)
PY
		times=$( { /usr/bin/time -f "%e %U %S" "$BIN" discover "$DATA/$f" --epsilon "$eps" --order-text --min-strength 0 >"$OUT/odwatch.txt"; } 2>&1 | tail -1)
		read -r wall user sys <<<"$times"
		summary=$(grep -E '^# [0-9]+ dependencies' "$OUT/odwatch.txt" | sed -E 's/^# [0-9]+ dependencies \(([0-9]+) ofd, ([0-9]+) oc.*/\1 FDs, \2 OCs/')
		echo "$f eps=$eps: odwatch ${wall} s wall, $(echo "$user + $sys" | bc) s user+sys, $summary"
		"$BIN" discover "$DATA/$f" --epsilon "$eps" --order-text --min-strength 0 --format json >"$OUT/odwatch.json"
		python3 scripts/fastod-compare.py "$DATA/$f" "$eps" "$OUT/fastod.txt" "$OUT/odwatch.json"
	done
done
