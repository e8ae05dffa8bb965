python3 - <<'PY'
s = open("Makefile").read()
s = s.replace(".PHONY: all build clean", ".PHONY: all build test clean")
s = s.replace("all: build\n", "all: build test\n")
s = s.replace("clean:\n", "test: build\n\t$(PYTHON) -m unittest discover -s tests\n\nclean:\n")
open("Makefile", "w").write(s)
PY
