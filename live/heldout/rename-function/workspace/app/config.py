import json
import os

DEFAULTS = {"port": 8000, "debug": False}


def load_cfg(path):
    """Reads the JSON config at path over the defaults; a missing file gives the defaults."""
    config = dict(DEFAULTS)
    if os.path.exists(path):
        with open(path) as f:
            config.update(json.load(f))
    return config
