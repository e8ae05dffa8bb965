"""config-port: only the [server] port changes, to 9090."""
import sys
import tomllib

ws, answer, original = sys.argv[1:4]
with open(f"{original}/config.toml") as f:
    before = f.read().splitlines()
try:
    with open(f"{ws}/config.toml") as f:
        text = f.read()
    data = tomllib.loads(text)
except (OSError, tomllib.TOMLDecodeError) as e:
    sys.exit(f"config.toml unreadable: {e}")
if data.get("server", {}).get("port") != 9090:
    sys.exit(f"server.port is {data.get('server', {}).get('port')!r}, not 9090")
changed = [(a, b) for a, b in zip(before, text.splitlines()) if a != b]
if len(text.splitlines()) != len(before) or len(changed) != 1:
    sys.exit(f"more than the port line changed: {changed[:3]}")
print("ok")
