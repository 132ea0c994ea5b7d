"""A TLS terminator in front of the plain dev server, with certificates made on the spot.

The dev server speaks plaintext gRPC only; a cluster behind TLS or mTLS is this
proxy plus it. The proxy also reads the HTTP/2 header blocks the client sends, so
a test can see the credentials (`authorization`) a client presents.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hpack import Decoder  # pyright: ignore[reportMissingTypeStubs]

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_HEADERS, _CONTINUATION = 0x1, 0x9
_END_HEADERS, _PADDED, _PRIORITY = 0x4, 0x8, 0x20


@dataclass(frozen=True)
class Pem:
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(folder: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    cert_path, key_path = folder / f"{stem}.pem", folder / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return Pem(cert_path, key_path)


class CertificateAuthority:
    """A throwaway CA that issues server and client certificates for 127.0.0.1."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.pem = _write(folder, name, self._cert, self._key)

    def issue(self, stem: str, *, server: bool) -> Pem:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name("localhost" if server else stem))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        return _write(self.folder, stem, builder.sign(self._key, hashes.SHA256()), key)


@dataclass
class TlsTerminator:
    """Accepts TLS (HTTP/2 by ALPN) on 127.0.0.1 and forwards the plaintext to `upstream`."""

    upstream: str
    server: Pem
    client_ca: Path | None = None
    headers: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    port: int = 0
    _writers: set[asyncio.StreamWriter] = field(default_factory=set[asyncio.StreamWriter])

    def _context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server.cert, self.server.key)
        context.set_alpn_protocols(["h2"])  # gRPC refuses a TLS server that does not agree on h2
        if self.client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.client_ca)
        return context

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Closed when the proxy stops at the latest: a client in this process (not a child that exits first)
        # may still hold its connection then.
        self._writers.add(writer)
        host, port = self.upstream.rsplit(":", 1)
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer, watch=True), self._pipe(up_reader, writer, watch=False))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, watch: bool) -> None:
        frames = _HeaderWatcher(self.headers) if watch else None
        try:
            while data := await reader.read(65536):
                if frames is not None:
                    frames.feed(data)
                writer.write(data)
                await writer.drain()
        except (OSError, ssl.SSLError):
            pass
        finally:
            with suppress(OSError, ssl.SSLError, RuntimeError):
                writer.close()

    @contextmanager
    def running(self) -> Generator[str]:
        """Serve from a thread of its own (test helpers block the caller's loop while they wait)."""
        started = threading.Event()
        handles: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda _loop, _context: None)  # refused handshakes are the point of some tests
            listener = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self._context())
            self.port = listener.sockets[0].getsockname()[1]
            current = asyncio.current_task()
            assert current is not None
            handles.append((loop, current))
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                listener.close()
                connections = [task for task in asyncio.all_tasks() if task is not current]
                for task in connections:
                    task.cancel()
                await asyncio.gather(*connections, return_exceptions=True)
                # Aborted, not closed: a TLS close waits for the peer's reply, and the loop ends now; a socket
                # left open is collected later, as a ResourceWarning in whichever test runs then.
                for writer in self._writers:
                    writer.transport.abort()
                await listener.wait_closed()

        def run() -> None:
            with suppress(asyncio.CancelledError):
                asyncio.run(serve())

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        if not started.wait(10):
            raise TimeoutError("the TLS terminator did not start")
        try:
            yield f"127.0.0.1:{self.port}"
        finally:
            loop, task = handles[0]
            loop.call_soon_threadsafe(task.cancel)
            thread.join(10)


class _HeaderWatcher:
    """Decodes the header blocks of a client's HTTP/2 stream (HPACK state spans the whole connection)."""

    def __init__(self, sink: list[tuple[str, str]]) -> None:
        self._sink = sink
        self._buffer = b""
        self._preface_seen = False
        self._block = b""
        self._decoder = Decoder()
        self._decoder.max_allowed_table_size = 1 << 20

    def feed(self, data: bytes) -> None:
        self._buffer += data
        if not self._preface_seen:
            if len(self._buffer) < len(_PREFACE):
                return
            self._buffer = self._buffer[len(_PREFACE) :]
            self._preface_seen = True
        while len(self._buffer) >= 9:
            length = int.from_bytes(self._buffer[:3], "big")
            if len(self._buffer) < 9 + length:
                return
            kind, flags = self._buffer[3], self._buffer[4]
            payload = self._buffer[9 : 9 + length]
            self._buffer = self._buffer[9 + length :]
            if kind == _HEADERS:
                if flags & _PADDED:
                    payload = payload[1 : len(payload) - payload[0]]
                if flags & _PRIORITY:
                    payload = payload[5:]
                self._block = payload
            elif kind == _CONTINUATION:
                self._block += payload
            else:
                continue
            if flags & _END_HEADERS:
                decoded = self._decoder.decode(self._block)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                self._sink.extend((str(name), str(value)) for name, value in decoded)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
                self._block = b""
