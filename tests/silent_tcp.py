"""A TCP client that reads what the server sends and never acknowledges it,
then resets: what a client with a TCP stack of its own can do to a
download. The kernel's own clients always acknowledge what they receive, so
this one is written by hand, in IP packets through a TUN device, inside a
network namespace of its own (run it under `unshare --net`, as root): the
machine's own network is never touched.

`python -m tests.silent_tcp` prints, as JSON, the bytes the server's socket
took, the bytes the client received, and what links.delivery.Delivery says
the client can have received once the reset came.
"""

import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import time

from links.delivery import Delivery

SERVER, CLIENT = "10.9.0.1", "10.9.0.2"
CLIENT_PORT = 40000
CLIENT_ISN = 1000
SYN, RST, ACK = 0x02, 0x04, 0x10
TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def segment(server_port: int, seq: int, ack: int, flags: int) -> bytes:
    """An IPv4 packet holding one TCP segment of the client, no payload."""
    src, dst = socket.inet_aton(CLIENT), socket.inet_aton(SERVER)
    tcp = struct.pack("!HHIIBBHHH", CLIENT_PORT, server_port, seq, ack, 5 << 4, flags, 65535, 0, 0)
    pseudo = src + dst + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, socket.IPPROTO_TCP, 0, src, dst)
    return ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:] + tcp


def arriving(tun: int, seconds: float):
    """(seq, flags, payload) of each segment the server sends the client, for `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([tun], [], [], left)[0]:
            continue
        raw = os.read(tun, 65536)
        if len(raw) < 40 or raw[0] >> 4 != 4 or raw[9] != socket.IPPROTO_TCP:
            continue  # not IPv4 TCP (the kernel's own chatter)
        tcp = raw[(raw[0] & 15) * 4 :]
        _, port, seq, _, offset, flags = struct.unpack("!HHIIBB", tcp[:14])
        if port == CLIENT_PORT:
            yield seq, flags, tcp[(offset >> 4) * 4 :]


def main() -> None:
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", b"silent0", IFF_TUN | IFF_NO_PI))
    subprocess.run(["ip", "addr", "add", f"{SERVER}/24", "dev", "silent0"], check=True)
    subprocess.run(["ip", "link", "set", "silent0", "mtu", "1500", "up"], check=True)
    listener = socket.create_server((SERVER, 0))
    listener.settimeout(5)
    port = listener.getsockname()[1]

    os.write(tun, segment(port, CLIENT_ISN, 0, SYN))
    server_isn = next(seq for seq, flags, _ in arriving(tun, 5) if flags & (SYN | ACK) == SYN | ACK)
    os.write(tun, segment(port, CLIENT_ISN + 1, server_isn + 1, ACK))  # the handshake's last step
    server, _ = listener.accept()

    delivery = Delivery(server)  # a response begins
    server.setblocking(False)
    taken = 0
    try:
        while True:
            taken += server.send(b"x" * 65536)
    except BlockingIOError:
        pass  # the socket's buffer is full
    received = 0  # the furthest byte received, counted from the response's first
    for seq, _, payload in arriving(tun, 1.0):  # read it all, acknowledge nothing
        received = max(received, (seq - server_isn - 1) % 2**32 + len(payload))
    os.write(tun, segment(port, CLIENT_ISN + 1, 0, RST))

    deadline = time.monotonic() + 5
    while (counted := delivery.received_at_most()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    print(json.dumps({"taken": taken, "received": received, "counted": counted}))


if __name__ == "__main__":
    main()
