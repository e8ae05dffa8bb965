python3 - <<'PY'
import csv
from collections import defaultdict
totals = defaultdict(float)
for row in csv.DictReader(open("sales.csv")):
    totals[row["region"]] += float(row["amount"])
with open("totals.csv", "w") as f:
    f.write("region,total\n")
    for region in sorted(totals):
        f.write(f"{region},{totals[region]:.2f}\n")
PY
