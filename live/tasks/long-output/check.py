"""long-output: the answer names check_1517, which sits in the middle of 3000 lines of output."""
import sys

ws, answer_file = sys.argv[1:3]
with open(answer_file) as f:
    answer = f.read()
if "1517" not in answer:
    sys.exit(f"the answer does not name check_1517: {answer[-300:]!r}")
print("ok")
