#!/usr/bin/env python3
"""Expected YSB counts for a generated run (peers/ysb-contract.md), written apart from the peers.

Event k (0 <= k < R*D) is template line k mod N with event_time T0 + (k*10**9 // R) // 10**6;
views of ads in the table are counted per (campaign, floor(event_time / 10000) * 10000).

    ysb-oracle.py EVENTS TABLE RATE DURATION_S START_MS [--check counts.csv ...]

Without --check it prints the expected counts.csv; with it, compares each file byte for byte
and exits 1 on the first difference (naming the file and the first differing row).
"""
import json
import sys
from collections import Counter


def expected(events_path, table_path, rate, duration_s, t0):
    table = {}
    with open(table_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                (ad, campaign), = json.loads(line).items()
                table[ad] = campaign
    # Per template line: its campaign if it is a view of a known ad, else None.
    lines = []
    with open(events_path, "rb") as f:
        for raw in f.read().split(b"\n"):
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if not raw:
                continue
            e = json.loads(raw)
            lines.append(table.get(e["ad_id"]) if e["event_type"] == "view" else None)
    counts = Counter()
    n = len(lines)
    for k in range(rate * duration_s):
        c = lines[k % n]
        if c is not None:
            t = t0 + (k * 10**9 // rate) // 10**6
            counts[(c, t // 10000 * 10000)] += 1
    rows = ["campaign_id,window_start_ms,views"]
    rows += [f"{c},{w},{v}" for (c, w), v in sorted(counts.items())]
    return "\n".join(rows) + "\n"


def main(argv):
    if len(argv) < 6:
        sys.exit(__doc__)
    want = expected(argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5]))
    checks = argv[7:] if len(argv) > 6 and argv[6] == "--check" else []
    if not checks:
        sys.stdout.write(want)
        return 0
    total = sum(int(r.rsplit(",", 1)[1]) for r in want.splitlines()[1:])
    for path in checks:
        got = open(path, encoding="utf-8").read()
        if got != want:
            for i, (g, w) in enumerate(zip(got.splitlines(), want.splitlines())):
                if g != w:
                    print(f"{path}: row {i} differs: got {g!r}, expected {w!r}")
                    break
            else:
                print(f"{path}: {len(got.splitlines())} rows, expected {len(want.splitlines())}")
            return 1
        print(f"{path}: equal to the oracle ({len(want.splitlines()) - 1} windows, {total} views)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
