"""json-settings: telemetry false, 2 workers, "metrics" appended to plugins; the rest as it was."""
import json
import sys

ws, answer, original = sys.argv[1:4]
with open(f"{original}/settings.json") as f:
    want = json.load(f)
want["telemetry"] = False
want["server"]["workers"] = 2
want["plugins"] = want["plugins"] + ["metrics"]
try:
    with open(f"{ws}/settings.json") as f:
        got = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"settings.json unreadable: {e}")
if got != want:
    diff = {k: got.get(k) for k in set(got) | set(want) if got.get(k) != want.get(k)}
    sys.exit(f"settings.json differs from what was asked: {json.dumps(diff)[:300]}")
print("ok")
