"""Durations written as a number and a unit, as in the config files: "90s", "5m"."""
import re

UNITS = {"s": 1, "m": 60}


def parse_duration(text):
    """Seconds in a duration such as "90s" or "5m"; ValueError for anything else."""
    found = re.fullmatch(r"\s*(\d+)\s*([sm])\s*", text)
    if not found:
        raise ValueError(f"not a duration: {text!r}")
    return int(found.group(1)) * UNITS[found.group(2)]
