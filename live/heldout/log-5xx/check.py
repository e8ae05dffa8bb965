"""log-5xx: the answer names the client with the most 5xx responses in access.log and their count."""
import collections
import re
import sys

ws, answer_file, original = sys.argv[1:4]
counts = collections.Counter()
with open(f"{original}/access.log") as f:
    for line in f:
        fields = line.split()
        if len(fields) >= 5 and fields[4].startswith("5"):
            counts[fields[1]] += 1
(ip, count), (_, second) = counts.most_common(2)
assert count > second
with open(answer_file) as f:
    answer = f.read()
if ip not in answer:
    sys.exit(f"the answer does not name {ip}: {answer[-300:]!r}")
if not re.search(rf"(?<![\d.]){count}(?![\d]|\.\d)", answer):
    sys.exit(f"the answer does not give the count {count}: {answer[-300:]!r}")
print("ok")
