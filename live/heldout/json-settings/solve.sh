python3 - <<'PY'
import json
data = json.load(open("settings.json"))
data["telemetry"] = False
data["server"]["workers"] = 2
data["plugins"].append("metrics")
open("settings.json", "w").write(json.dumps(data, indent=2) + "\n")
PY
