#!/usr/bin/env python3
"""Compares Desbordante FastOD's output with odwatch's paper mode on one file.

Usage: fastod-compare.py FILE.csv EPS FASTOD.txt ODWATCH.json

FASTOD.txt holds one dependency a line as fastod-vs-odwatch.sh writes it
("fd {1,2} : [] -> 3<=", "asc {1} : 2<= ~ 3<=", "desc ..."; columns
numbered from 1); ODWATCH.json is `odwatch discover --format json`. It
prints the FDs and OCs only one tool lists and, for odwatch's FDs and OCs
that FastOD lacks, a brute-force reading of the definitions on the CSV
(plain Python, no code shared with odwatch; a column of numbers ordered
by value, any other by its bytes, as --order-text orders them): how many
are valid at EPS (at most floor(EPS * rows) removals: g3, or per class of
the context the rows off a longest non-decreasing subsequence) and minimal
(every direct subset of the context invalid; for an OC also X: [] -> A and
X: [] -> B invalid), and how many have a context column C determined
within EPS by the rest of the context, the contexts FastOD drops. First
it checks its own reading against the removals odwatch reports for the
first 200 FDs and OCs of its output. It checks at most
$FASTOD_COMPARE_SAMPLE (default 2000, 0: all) of each kind, every k-th in
a fixed order. Only the standard library is used.
"""
import bisect
import collections
import csv
import json
import math
import os
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


def odwatch_deps(doc):
    fds, ocs = set(), set()
    for d in doc["dependencies"]:
        ctx = frozenset(d["context"])
        if d["kind"] == "ofd":
            fds.add((ctx, d["rhs"]))
        else:
            ocs.add((ctx, frozenset((d["left"], d["right"])), d["polarity"]))
    return doc["columns"], fds, ocs


class Typed:
    """The CSV's columns as odwatch's --order-text types them: a column whose
    non-empty cells all parse as finite numbers is ordered by value (equal
    values, "1" and "1.0", are one value), any other by its bytes; an
    empty cell is NULL, equal to the other NULLs and lowest."""

    def __init__(self, rows):
        self.rows, self.cols, self.parts = rows, {}, {}

    def __call__(self, col):
        if col not in self.cols:
            cells = [r[col] for r in self.rows]
            try:
                numeric = all(math.isfinite(float(c)) for c in cells if c != "")
            except ValueError:
                numeric = False
            if numeric:
                self.cols[col] = [(0, 0.0) if c == "" else (1, float(c)) for c in cells]
            else:
                self.cols[col] = [c.encode() for c in cells]
        return self.cols[col]

    def classes(self, ctx):
        """The rows grouped by their values of ctx, computed once per ctx
        (callers must not change the lists)."""
        key = frozenset(ctx)
        if key not in self.parts:
            cols = [self(c) for c in sorted(key)]
            groups = collections.defaultdict(list)
            for i in range(len(self.rows)):
                groups[tuple(v[i] for v in cols)].append(i)
            self.parts[key] = list(groups.values())
        return self.parts[key]


class G3:
    """g3 removals of X: [] -> A: per class of X, the rows off its most
    frequent value of A."""

    def __init__(self, typed):
        self.typed, self.cache = typed, {}

    def __call__(self, ctx, rhs):
        key = (frozenset(ctx), rhs)
        if key not in self.cache:
            av = self.typed(rhs)
            removals = 0
            for cls in self.typed.classes(ctx):
                removals += len(cls) - max(collections.Counter(av[i] for i in cls).values())
            self.cache[key] = removals
        return self.cache[key]


def lnds(values):
    """Length of a longest non-decreasing subsequence (patience sorting)."""
    tails = []
    for v in values:
        i = bisect.bisect_right(tails, v)
        if i == len(tails):
            tails.append(v)
        else:
            tails[i] = v
    return len(tails)


class OCRemovals:
    """Removals of X: A ~ B in a polarity: per class of X, the rows sorted by
    A then B (desc: B descending within equal A) less a longest
    non-decreasing (desc: non-increasing) subsequence of B."""

    def __init__(self, typed):
        self.typed, self.cache = typed, {}

    def __call__(self, ctx, a, b, pol):
        key = (frozenset(ctx), a, b, pol)
        if key not in self.cache:
            av, bv = self.typed(a), self.typed(b)
            removals = 0
            for cls in self.typed.classes(ctx):
                if pol == "asc":
                    cls = sorted(cls, key=lambda i: (av[i], bv[i]))
                    removals += len(cls) - lnds(bv[i] for i in cls)
                else:
                    # B descending within equal A, then a longest
                    # non-increasing subsequence of B: non-decreasing in
                    # B's reverse order.
                    cls = sorted(cls, key=lambda i: (av[i], _Rev(bv[i])))
                    removals += len(cls) - lnds(_Rev(bv[i]) for i in cls)
            self.cache[key] = removals
        return self.cache[key]


class _Rev:
    """Bytes ordered backwards."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v > other.v

    def __eq__(self, other):
        return self.v == other.v


def sample(deps, limit):
    """Every k-th of deps in a fixed order, at most limit of them (all for 0)."""
    deps = sorted(deps, key=lambda d: repr([sorted(x) if isinstance(x, frozenset) else x for x in d]))
    if limit <= 0 or len(deps) <= limit:
        return deps
    return deps[:: -(-len(deps) // limit)]


def self_check(name, eps, doc, g3, ocr):
    """Checks the brute force against the removals odwatch reports."""
    checked = disagree = 0
    for d in doc["dependencies"][:200]:
        ctx = frozenset(d["context"])
        if d["kind"] == "ofd":
            got = g3(ctx, d["rhs"])
        elif d["kind"] == "oc":
            got = ocr(ctx, d["left"], d["right"], d["polarity"])
        else:
            continue
        checked += 1
        disagree += got != d["removals"]
    print(f"{name} eps={eps}: the brute force agrees with odwatch's removals on {checked - disagree} of {checked} dependencies")


def dropped_context(g3, ctx, budget):
    """Whether some column of ctx is determined within budget by the rest."""
    return any(g3(ctx - {c}, c) <= budget for c in ctx)


def main():
    csv_path, eps, fastod_path, odwatch_path = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
    limit = int(os.environ.get("FASTOD_COMPARE_SAMPLE", "2000"))
    doc = json.load(open(odwatch_path))
    cols, ow_fds, ow_ocs = odwatch_deps(doc)
    fo_fds, fo_ocs = fastod_deps(fastod_path, cols)
    name = csv_path.split("/")[-1]
    only_fds, only_ocs = ow_fds - fo_fds, ow_ocs - fo_ocs
    print(f"{name} eps={eps}: FDs only FastOD lists {len(fo_fds - ow_fds)}, only odwatch {len(only_fds)}; "
          f"OCs only FastOD {len(fo_ocs - ow_ocs)}, only odwatch {len(only_ocs)}")
    if not only_fds and not only_ocs:
        return
    rows = list(csv.DictReader(open(csv_path, newline="")))
    budget = math.floor(eps * len(rows) + 1e-9)
    typed = Typed(rows)
    g3, ocr = G3(typed), OCRemovals(typed)
    self_check(name, eps, doc, g3, ocr)
    if only_fds:
        fds = sample(only_fds, limit)
        minimal = sum(1 for ctx, rhs in fds
                      if g3(ctx, rhs) <= budget and all(g3(ctx - {c}, rhs) > budget for c in ctx))
        dropped = sum(1 for ctx, _ in fds if dropped_context(g3, ctx, budget))
        print(f"{name} eps={eps}: of {len(fds)} of odwatch's {len(only_fds)} FDs FastOD lacks, brute force: {minimal} valid "
              f"and minimal, {dropped} with a context column C that the rest determines within eps (FastOD drops such a context)")
    if only_ocs:
        ocs = sample(only_ocs, limit)
        minimal = dropped = 0
        for ctx, pair, pol in ocs:
            a, b = sorted(pair)
            if (ocr(ctx, a, b, pol) <= budget and all(ocr(ctx - {c}, a, b, pol) > budget for c in ctx)
                    and g3(ctx, a) > budget and g3(ctx, b) > budget):
                minimal += 1
            dropped += dropped_context(g3, ctx, budget)
        print(f"{name} eps={eps}: of {len(ocs)} of odwatch's {len(only_ocs)} OCs FastOD lacks, brute force: {minimal} valid "
              f"and minimal, {dropped} with a context column C that the rest determines within eps")


if __name__ == "__main__":
    main()
