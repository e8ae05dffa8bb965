from app.config import load_cfg


def start(path="config.json"):
    config = load_cfg(path)
    return f"listening on {config['port']}"
