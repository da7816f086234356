#!/usr/bin/env python3
"""Markdown tables from `bench/run --json` output (one JSON object per line).

    bench/run --json > run.jsonl && bench/report.py run.jsonl

One row per (work, threads): ours, then each peer's figure and ratio
(above 1 means strideweave is better). docs/performance.md is made of these
tables plus the targets.
"""
import json
import sys


def main(path):
    rows = {}
    peers_of = {}
    units = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        key = (d["work"], d["threads"])
        rows.setdefault(key, {"ours": d["ours"], "peers": {}})
        rows[key]["peers"][d["peer"]] = (d["peer_value"], d["ratio"])
        peers_of.setdefault(d["work"], [])
        if d["peer"] not in peers_of[d["work"]]:
            peers_of[d["work"]].append(d["peer"])
        units[d["work"]] = d["unit"]
    groups = {}
    for (work, threads) in rows:
        groups.setdefault(tuple(peers_of[work]), []).append((work, threads))
    for peers, keys in groups.items():
        header = "| work | threads | unit | ours | " + " | ".join(f"{p} | ratio" for p in peers) + " |"
        print(header)
        print("|" + "---|" * (4 + 2 * len(peers)))
        for work, threads in sorted(keys, key=lambda k: (k[1], list(rows).index(k))):
            r = rows[(work, threads)]
            cells = []
            for p in peers:
                v, ratio = r["peers"][p]
                cells.append(f"{v:.4g} | {ratio:.2f}")
            print(f"| {work} | {threads} | {units[work]} | {r['ours']:.4g} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
