"""TLS and auth as a user sets them up: the SDK takes the client as the user
made it, so a redis.asyncio.Redis with ssl and a user's password (or a
rediss:// URL) holds a lock on a server started with --tls-cert and
--users, and a client that does not trust the server's certificate never
gets as far as a hold."""

import gc
import subprocess
import time

import pytest
import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

import tenure_locks
from conftest import Server, close_client, users_file


def self_signed(tmp_path):
    """A certificate for 127.0.0.1 and its key, made with openssl."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=tenure test", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_server(tenure_bin, tmp_path):
    cert, key = self_signed(tmp_path)
    users = users_file(tmp_path / "users", {"app": ("write", "app-pass"), "ops": ("admin", "ops-pass")})
    s = Server(tenure_bin, tmp_path, users=users, flags=["--tls-cert", str(cert), "--tls-key", str(key)])
    s.start()
    s.cert = cert
    yield s
    s.stop()


async def test_hold_over_tls_with_a_password(tls_server, clients):
    s = tls_server
    app = clients(s.host, s.port, ssl=True, ssl_ca_certs=str(s.cert), username="app", password="app-pass")
    summaries = tenure_locks.Store(app).lock("summaries", ttl="2s")
    async with summaries.hold("chat-1") as lease:
        assert await app.execute_command("SET", "summary:chat-1", "text", "FENCE", lease.fence)
    assert await app.get("summary:chat-1") == b"text"

    url = aredis.from_url(f"rediss://ops:ops-pass@{s.addr}", ssl_ca_certs=str(s.cert))
    try:
        async with tenure_locks.Store(url).lock("summaries").try_hold("chat-1") as lease2:
            assert lease2.fence > lease.fence
    finally:
        await close_client(url)


# On Debian's Python 3.11.2, a TLS handshake that failed leaves its
# transport to the garbage collector, which warns "unclosed transport" when
# it gets to it (seen with redis-py 4.3): collected here, in this test, so
# that the warning is not raised in a later one.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_untrusted_certificate(tls_server, clients):
    """Retried as any connection error, with the same reqid, for a ttl."""
    s = tls_server
    untrusting = clients(s.host, s.port, ssl=True, username="app", password="app-pass", socket_timeout=2)
    with pytest.raises(redis.exceptions.ConnectionError):  # 4.3 says only "Error 1 connecting …"
        async with tenure_locks.Store(untrusting).lock("l", ttl="1s").try_hold("k"):
            raise AssertionError("held over a TLS connection that does not trust the server")
    gc.collect()


async def test_wrong_password_is_final(tls_server, clients):
    """The SDK does not retry a refused password: redis-py 4.3 raises the
    store's -WRONGPASS as a ResponseError, later ones as an
    AuthenticationError (a ConnectionError), and either ends the hold at
    once. Later redis-py versions retry connection errors themselves, a
    refused password included (3 times, about 3 s by default), longer than
    the 1 s past its WAIT that the SDK gives a HOLD's reply: with such a
    client the hold sees no answer and gives up after a ttl instead."""
    s = tls_server
    no_retries = Retry(NoBackoff(), 0)
    wrong = clients(s.host, s.port, ssl=True, ssl_ca_certs=str(s.cert), username="app", password="nope",
                    retry=no_retries)
    started = time.monotonic()
    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError),
                       match="invalid username-password pair"):
        async with tenure_locks.Store(wrong).lock("l", ttl="5s").try_hold("k"):
            raise AssertionError("held with a wrong password")
    assert time.monotonic() - started < 1

    default = clients(s.host, s.port, ssl=True, ssl_ca_certs=str(s.cert), username="app", password="nope")
    started = time.monotonic()
    # 4.3 (no aclose yet): -WRONGPASS as a ResponseError, at once. Later
    # ones: an AuthenticationError, or after their own retries the hold's
    # ConnectionError ("no answer for 1s"): both ConnectionErrors.
    old_redis_py = not hasattr(default, "aclose")
    with pytest.raises(redis.exceptions.ResponseError if old_redis_py else redis.exceptions.ConnectionError):
        async with tenure_locks.Store(default).lock("l", ttl="1s").try_hold("k"):
            raise AssertionError("held with a wrong password")
    assert time.monotonic() - started < 3
