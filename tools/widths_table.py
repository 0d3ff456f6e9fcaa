"""The records of an Inductor log whose index does not fit int32 at some size its ranges allow,
as a Markdown table (docs/widths.md is made with it).

    verifidx range --log LOG --json | python tools/widths_table.py LOG

Reads the JSON of `verifidx range --log` on stdin; one row per record whose expression (or
verifidx's simplification of it) overflows: the line, the expression, the lexicographically
smallest sizes at which it does, and the index's value there. The counts line above the table
is the summary of the same JSON.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    source = sys.argv[1] if len(sys.argv) > 1 else "<stdin>"
    doc = json.load(sys.stdin)
    s = doc["summary"]
    print(f"`{source}`: {sum(s.values())} records: " +
          ", ".join(f"{v} {k}" for k, v in s.items()) + ".\n")
    rows = [r for r in doc["records"] if r["verdict"] == "overflows"]
    if not rows:
        print("No record overflows int32 at any size its ranges allow.\n")
        return
    print("| line | expression | smallest sizes | index there |")
    print("|---:|---|---|---:|")
    for r in rows:
        e = r["expr"] if r["expr"]["verdict"] == "overflows" else r["simplified"]
        text = r["input"] if len(r["input"]) <= 70 else r["input"][:67] + "..."
        sizes = ", ".join(f"{k}={v:,}" for k, v in e["smallest"].items()) or "(static)"
        mark = "" if e.get("smallest_proven", True) else " (not shown smallest)"
        print(f"| {r['line']} | `{text}` | {sizes}{mark} | {e['value']:,} |")
    print()


if __name__ == "__main__":
    main()
