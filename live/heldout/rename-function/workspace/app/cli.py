import sys

from app import config


def main(argv):
    settings = config.load_cfg(argv[1] if len(argv) > 1 else "config.json")
    for key, value in sorted(settings.items()):
        print(f"{key} = {value}")


if __name__ == "__main__":
    main(sys.argv)
