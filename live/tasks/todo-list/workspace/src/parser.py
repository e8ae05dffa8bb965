"""Parses the config language."""


def tokenize(text):
    # TODO: support escaped quotes inside strings
    return text.split()


def parse(tokens):
    tree = []
    for token in tokens:
        tree.append(token)
    return tree
