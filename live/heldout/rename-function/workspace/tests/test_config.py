import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from app.config import load_cfg  # noqa: E402
from app.server import start  # noqa: E402


class ConfigTest(unittest.TestCase):
    def test_defaults(self):
        self.assertEqual(load_cfg("/nonexistent.json")["port"], 8000)

    def test_override(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"port": 9000}')
        self.assertEqual(load_cfg(f.name)["port"], 9000)
        self.assertEqual(start(f.name), "listening on 9000")
        os.unlink(f.name)
