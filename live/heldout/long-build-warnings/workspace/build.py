"""Builds every module of the project and reports each one (a long log)."""
import random
import sys

rng = random.Random(4242)
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta", "theta", "lambda"]
modules = [f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{n:04d}" for n in range(2400)]
deprecated = set(rng.sample(range(300, 2100), 2))
for n, module in enumerate(modules):
    print(f"[{n + 1:4d}/{len(modules)}] compiling {module} ... ok")
    if n in deprecated:
        print(f"warning: {module} uses the deprecated API `legacy_io`")
print(f"build finished: {len(modules)} modules, {len(deprecated)} warnings")
sys.exit(0)
