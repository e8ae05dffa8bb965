"""tree-largest: the answer gives the number of files under data/ and names the largest one."""
import os
import re
import sys

ws, answer_file, original = sys.argv[1:4]
files = []
for dirpath, _, names in os.walk(os.path.join(original, "data")):
    files += [os.path.join(dirpath, n) for n in names]
largest = os.path.relpath(max(files, key=os.path.getsize), original)
with open(answer_file) as f:
    answer = f.read()
if not re.search(rf"(?<![\d.]){len(files)}(?![\d])", answer):
    sys.exit(f"the answer does not say {len(files)} files: {answer[-300:]!r}")
if not re.search(rf"(?<![\w/]){re.escape(largest)}\b|(?<![\w/])\./{re.escape(largest)}\b", answer):
    sys.exit(f"the answer does not name {largest}: {answer[-300:]!r}")
print("ok")
