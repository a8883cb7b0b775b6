#!/usr/bin/env python3
"""Summarises bench_cuda_backend's "== partial KEY: JSON" lines (stderr of the --*-only modes).

Usage: summarize_partials.py BENCH_STDERR [SWITCH ...]
Launch parts (lists of rows): the rows grouped by launch shape, each switch's off and on rounds averaged,
"off X on Y xR" (R = off / on, above 1 when on is faster); with "column_slots_total" also the slots
each way. SWITCH: the rows' boolean key (the first of them a part's rows carry; default: every key the
benchmark's side-by-side parts use). Engine parts (dicts of model -> rounds): each model's medians.
"""
import collections
import json
import sys

KNOWN = ["k_split", "quant_a", "half_x", "host_sizes", "prefill_columns", "prefill_mma", "prefill_mma_rule", "columns_rule"]


def launch_key(r):
    pairs = r.get("pairs_per_expert", r.get("group_pairs"))
    return (r["type"], r["experts_per_launch"], r["rows"], r["cols"], r.get("tiled", False), str(pairs)[:40])


def main():
    path, switches = sys.argv[1], sys.argv[2:] or KNOWN
    for line in open(path):
        if not line.startswith("== partial "):
            continue
        key, _, body = line[len("== partial "):].partition(": ")
        part = json.loads(body)
        if isinstance(part, dict):
            for model, v in part.items():
                print(key, model, {k: round(x, 3) for k, x in v.items() if k != "rounds"})
            continue
        if not part:
            print(key, "(empty)")
            continue
        sw = next((s for s in switches if s in part[0]), None)
        if sw is None:
            print(key, "(no switch among", switches, ")")
            continue
        times = collections.defaultdict(lambda: {True: [], False: []})
        slots = {}
        for r in part:
            k = launch_key(r)
            times[k][r[sw]].append(r["us_per_launch"])
            if "column_slots_total" in r:
                slots[k, r[sw]] = r["column_slots_total"]
        for k, v in times.items():
            off, on = sum(v[False]) / len(v[False]), sum(v[True]) / len(v[True])
            extra = f" slots {slots[k, False]} -> {slots[k, True]}" if (k, False) in slots else ""
            print(key, *k, f"off {off:7.1f} on {on:7.1f} x{off / on:.2f}{extra}")


if __name__ == "__main__":
    main()
