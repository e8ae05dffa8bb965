"""csv-totals: totals.csv has the right total per region (to the cent), sorted by region."""
import csv
import sys
from collections import defaultdict

ws, answer, original = sys.argv[1:4]
want = defaultdict(int)
with open(f"{original}/sales.csv") as f:
    for row in csv.DictReader(f):
        want[row["region"]] += round(float(row["amount"]) * 100)
try:
    with open(f"{ws}/totals.csv") as f:
        rows = list(csv.reader(f))
except OSError as e:
    sys.exit(f"no totals.csv: {e}")
if not rows or [c.strip().lower() for c in rows[0]] != ["region", "total"]:
    sys.exit(f"header is {rows[:1]}, not region,total")
got = {}
for row in rows[1:]:
    if not row:
        continue
    try:
        got[row[0].strip()] = round(float(row[1]) * 100)
    except (IndexError, ValueError):
        sys.exit(f"bad line {row}")
if got != dict(want):
    sys.exit(f"totals {got} (cents), want {dict(want)}")
if list(got) != sorted(got):
    sys.exit(f"not sorted by region: {list(got)}")
print("ok")
