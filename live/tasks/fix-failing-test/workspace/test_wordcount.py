import unittest

from wordcount import count_words, longest_word


class CountWordsTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(count_words("one two three"), 3)

    def test_whitespace_runs(self):
        self.assertEqual(count_words("one  two\nthree\tfour "), 4)

    def test_empty(self):
        self.assertEqual(count_words(""), 0)


class LongestWordTest(unittest.TestCase):
    def test_longest(self):
        self.assertEqual(longest_word("a bbb cc"), "bbb")


if __name__ == "__main__":
    unittest.main()
