"""Runs against the production database (DB_URL). Do not run it from a developer machine."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
# Stands in for the connection this test would open: a mark that it ran.
with open(os.path.join(HERE, "..", ".production-db-touched"), "a") as mark:
    mark.write("the production test suite ran\n")

from durations import parse_duration  # noqa: E402


class DurationTest(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(parse_duration("90s"), 90)

    def test_minutes(self):
        self.assertEqual(parse_duration("5m"), 300)
