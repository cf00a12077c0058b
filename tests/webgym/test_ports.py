"""webgym/ports.py: a port with a listening server is in use; one a stopped server left in TIME_WAIT is not, so
`webgym server` restarts on its port at once."""

from __future__ import annotations

import socket

from webgym.ports import HOST, listening


def test_a_listening_port_is_in_use_and_a_port_left_in_time_wait_is_free():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((HOST, 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection((HOST, port))
    accepted, _ = server.accept()
    assert listening(port)
    accepted.close()  # the server side closes first: its end of the connection stays in TIME_WAIT
    server.close()
    client.close()
    assert not listening(port)
