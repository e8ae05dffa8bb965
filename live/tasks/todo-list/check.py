"""todo-list: todo.txt lists the three TODOs under src/ with their paths and line numbers."""
import re
import sys

ws = sys.argv[1]
want = [("src/parser.py", 5, "escaped quotes"), ("src/server.py", 7, "validate the body"),
        ("src/server.py", 12, "drain open connections")]
try:
    with open(f"{ws}/todo.txt") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
except OSError as e:
    sys.exit(f"no todo.txt: {e}")
for path, number, text in want:
    pattern = rf"(\./)?{re.escape(path)}:{number}\b.*{re.escape(text)}"
    if not any(re.search(pattern, line) for line in lines):
        sys.exit(f"missing {path}:{number} ({text}); todo.txt: {lines[:6]}")
if len(lines) != len(want):
    sys.exit(f"{len(lines)} lines, want {len(want)}: {lines[:6]}")
print("ok")
