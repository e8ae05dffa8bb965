import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import net  # noqa: E402


class FakeSocket:
    def __init__(self, data):
        self.data = data

    def recv(self, n):
        chunk, self.data = self.data[:n], self.data[n:]
        return chunk


class NetTest(unittest.TestCase):
    def test_recieve_packet(self):
        self.assertEqual(net.recieve_packet(FakeSocket(b"\x00\x03abc")), b"abc")

    def test_recieve_all(self):
        sock = FakeSocket(b"\x00\x01a\x00\x02bc")
        self.assertEqual(net.recieve_all(sock, 2), [b"a", b"bc"])


if __name__ == "__main__":
    unittest.main()
