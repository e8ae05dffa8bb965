"""Word statistics for plain text."""


def count_words(text):
    """Number of words in text; words are separated by any run of whitespace."""
    return len(text.split(" "))


def longest_word(text):
    """The longest word in text (the first one on a tie), or "" for no words."""
    words = text.split()
    return max(words, key=len) if words else ""
