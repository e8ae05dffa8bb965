"""typo-files: no "recieve" left in any spelling, every one became "receive", tests pass."""
import os
import re
import subprocess
import sys

ws, answer, original = sys.argv[1:4]


def texts(root):
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".turn", "__pycache__")]
        for name in files:
            with open(os.path.join(dirpath, name), errors="replace") as f:
                yield os.path.relpath(os.path.join(dirpath, name), root), f.read()


before = dict(texts(original))
after = dict(texts(ws))
left = [p for p, t in after.items() if re.search("recieve", t, re.I)]
if left:
    sys.exit(f"still misspelled in {left}")
for rel, text in before.items():
    want = re.sub("recieve", "receive", re.sub("Recieve", "Receive", text))
    if after.get(rel) != want:
        sys.exit(f"{rel} differs from the original with only the spelling fixed")
proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=ws, capture_output=True,
                      text=True, timeout=60)
if proc.returncode != 0:
    sys.exit(f"tests fail: {proc.stderr[-300:]}")
print("ok")
