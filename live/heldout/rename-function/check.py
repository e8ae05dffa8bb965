"""rename-function: load_cfg became load_config in every file (and nothing else changed); tests pass."""
import os
import re
import subprocess
import sys

ws, answer, original = sys.argv[1:4]
SKIP = (".turn", "__pycache__", ".git")


def texts(root):
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP]
        for name in files:
            with open(os.path.join(dirpath, name), errors="replace") as f:
                yield os.path.relpath(os.path.join(dirpath, name), root), f.read()


before = dict(texts(original))
after = dict(texts(ws))
left = sorted(p for p, t in after.items() if re.search(r"\bload_cfg\b", t))
if left:
    sys.exit(f"load_cfg is still in {left}")
for rel, text in before.items():
    if after.get(rel) != re.sub(r"\bload_cfg\b", "load_config", text):
        sys.exit(f"{rel} differs from the original with only the name changed")
proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=ws, capture_output=True,
                      text=True, timeout=60)
if proc.returncode != 0:
    sys.exit(f"tests fail: {proc.stderr[-300:]}")
print("ok")
