"""long-build-warnings: the answer names both modules that build.py warns about (amid ~2400 lines)."""
import subprocess
import sys

ws, answer_file, original = sys.argv[1:4]
out = subprocess.run([sys.executable, "build.py"], cwd=original, capture_output=True, text=True, timeout=60).stdout
warned = [line.split()[1] for line in out.splitlines() if line.startswith("warning:")]
assert len(warned) == 2
with open(answer_file) as f:
    answer = f.read()
missing = [m for m in warned if m not in answer]
if missing:
    sys.exit(f"the answer does not name {missing}: {answer[-300:]!r}")
print("ok")
