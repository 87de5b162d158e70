"""A TCP proxy for tests: a connection made to `proxy.address` is forwarded to a target host:port,
and `proxy.cut()` closes every open connection both ways at once (a Wi-Fi drop, as the peers see
it); new connections are accepted after a cut, so a client that reconnects comes back through it.

    proxy = TcpProxy("127.0.0.1", 5555)      # listens on 127.0.0.1, any free port
    proxy.address                            # "tcp://127.0.0.1:PORT": what a client connects to
    proxy.cut()                              # every connection open now: closed
    proxy.cut(lose=0.3)                      # ... after 0.3 s in which what is sent is lost
    proxy.close()                            # no more: its threads joined

Threads, blocking sockets: one thread accepts; each connection has one thread per direction
(a shutdown wakes both, and the second to end closes the pair's sockets).
"""
import socket
import threading
import time


class TcpProxy:
    def __init__(self, host, port):
        self.target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.accepted = 0                              # connections accepted so far
        self._lock = threading.Lock()
        self._pairs, self._threads, self._closing, self._losing = set(), [], False, False
        self._start(self._accept, "accept")

    def cut(self, lose=0.0):
        """Close every open connection, both ways, at once; first, for `lose` seconds, forward
        nothing (what either side sends then is lost, as on a link about to die). Returns how
        many connections were closed."""
        if lose > 0:
            self._losing = True
            time.sleep(lose)
        with self._lock:                               # (a pair is closed under it too)
            for pair in self._pairs:
                _shut(*pair)
            self._losing = False
            return len(self._pairs)

    def close(self):
        """Stop accepting, cut every connection, and join every thread."""
        with self._lock:
            self._closing = True
        try:                                           # wake accept() (a close would not)
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        except OSError:
            pass
        self.cut()
        while True:
            with self._lock:
                threads = [t for t in self._threads if t.is_alive()]
            if not threads:
                break
            for thread in threads:
                thread.join(10)
                assert not thread.is_alive(), f"{thread.name} did not end"
        self._listener.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the threads --------------------------------------------------------------------------
    def _start(self, target, name, *args):
        thread = threading.Thread(target=target, args=args, name=f"tcp-proxy-{self.port}-{name}",
                                  daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                closing = self._closing
            if closing:
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()                         # nobody there: the client sees it closed
                continue
            upstream.settimeout(None)
            for conn in (client, upstream):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = (client, upstream)
            with self._lock:
                self.accepted += 1
                self._pairs.add(pair)
                ended = [0]
            self._start(self._pump, f"{self.accepted}-out", client, upstream, pair, ended)
            self._start(self._pump, f"{self.accepted}-in", upstream, client, pair, ended)

    def _pump(self, source, sink, pair, ended):
        """Forward source -> sink until either side ends (or a cut); then end both directions."""
        try:
            while data := source.recv(65536):
                if not self._losing:
                    sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            _shut(*pair)                               # the other direction ends too
            ended[0] += 1
            if ended[0] == 2:                          # nobody reads them any more: close
                self._pairs.discard(pair)
                for conn in pair:
                    conn.close()


def _shut(*conns):
    for conn in conns:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:                                # already shut, or closed
            pass
