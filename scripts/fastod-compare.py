#!/usr/bin/env python3
"""Compares Desbordante FastOD's output with odwatch's paper mode on one file.

Usage: fastod-compare.py FILE.csv EPS FASTOD.txt ODWATCH.json

FASTOD.txt holds one dependency a line as fastod-vs-odwatch.sh writes it
("fd {1,2} : [] -> 3<=", "asc {1} : 2<= ~ 3<=", "desc ..."; columns
numbered from 1); ODWATCH.json is `odwatch discover --format json`. It
prints the FDs and OCs only one tool lists and, for odwatch's FDs that
FastOD lacks, a brute-force reading of the definitions on the CSV (plain
Python, no code shared with odwatch): how many are valid at EPS (g3 at most
floor(EPS * rows)) with every direct subset of their context invalid, and
how many have a context column C determined within EPS by the rest of the
context, the contexts FastOD drops. Only the standard library is used.
"""
import collections
import csv
import json
import math
import re
import sys


def fastod_deps(path, cols):
    fds, ocs = set(), set()
    ctx_re = r"\{([0-9,]*)\} : "
    for line in open(path):
        kind, text = line.split(" ", 1)
        m = re.match(ctx_re, text)
        ctx = frozenset(cols[int(i) - 1] for i in m.group(1).split(",") if i)
        rest = text[m.end():].strip()
        if kind == "fd":
            rhs = re.match(r"\[\] -> (\d+)", rest).group(1)
            fds.add((ctx, cols[int(rhs) - 1]))
        else:
            a, b = re.findall(r"(\d+)[<>]=", rest)
            ocs.add((ctx, frozenset((cols[int(a) - 1], cols[int(b) - 1])), kind))
    return fds, ocs


def odwatch_deps(path):
    doc = json.load(open(path))
    fds, ocs = set(), set()
    for d in doc["dependencies"]:
        ctx = frozenset(d["context"])
        if d["kind"] == "ofd":
            fds.add((ctx, d["rhs"]))
        else:
            ocs.add((ctx, frozenset((d["left"], d["right"])), d["polarity"]))
    return doc["columns"], fds, ocs


class G3:
    """g3 removals of X: [] -> A on the CSV's rows, by counting."""

    def __init__(self, rows):
        self.rows, self.cache = rows, {}

    def __call__(self, ctx, rhs):
        key = (tuple(sorted(ctx)), rhs)
        if key not in self.cache:
            groups = collections.defaultdict(collections.Counter)
            for r in self.rows:
                groups[tuple(r[c] for c in key[0])][r[rhs]] += 1
            self.cache[key] = sum(sum(c.values()) - max(c.values()) for c in groups.values())
        return self.cache[key]


def main():
    csv_path, eps, fastod_path, odwatch_path = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
    cols, ow_fds, ow_ocs = odwatch_deps(odwatch_path)
    fo_fds, fo_ocs = fastod_deps(fastod_path, cols)
    name = csv_path.split("/")[-1]
    only_ow = ow_fds - fo_fds
    print(f"{name} eps={eps}: FDs only FastOD lists {len(fo_fds - ow_fds)}, only odwatch {len(only_ow)}; "
          f"OCs only FastOD {len(fo_ocs - ow_ocs)}, only odwatch {len(ow_ocs - fo_ocs)}")
    if not only_ow:
        return
    rows = list(csv.DictReader(open(csv_path, newline="")))
    budget = math.floor(eps * len(rows) + 1e-9)
    g3 = G3(rows)
    minimal = dropped = 0
    for ctx, rhs in only_ow:
        if g3(ctx, rhs) <= budget and all(g3(ctx - {c}, rhs) > budget for c in ctx):
            minimal += 1
        if any(g3(ctx - {c}, c) <= budget for c in ctx):
            dropped += 1
    print(f"{name} eps={eps}: of odwatch's {len(only_ow)} FDs FastOD lacks, brute force: {minimal} valid and minimal, "
          f"{dropped} with a context column C that the rest determines within eps (FastOD drops such a context)")


if __name__ == "__main__":
    main()
