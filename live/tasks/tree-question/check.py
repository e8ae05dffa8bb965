"""tree-question: the answer gives 8 .py files and names src/app."""
import re
import sys

ws, answer_file = sys.argv[1:3]
with open(answer_file) as f:
    answer = f.read()
if not re.search(r"\b8\b|\beight\b", answer, re.I):
    sys.exit(f"the answer does not say 8: {answer[-300:]!r}")
if not re.search(r"src/app\b", answer):
    sys.exit(f"the answer does not name src/app: {answer[-300:]!r}")
print("ok")
