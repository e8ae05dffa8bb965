"""Packets over a socket-like object."""

HEADER = 2


def recieve_packet(sock):
    """Recieve one length-prefixed packet from sock."""
    size = int.from_bytes(sock.recv(HEADER), "big")
    return sock.recv(size)


def recieve_all(sock, count):
    """Packets, count of them, in the order we recieve them."""
    return [recieve_packet(sock) for _ in range(count)]
