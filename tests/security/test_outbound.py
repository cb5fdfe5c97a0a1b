"""No server-side request an editor controls: the judge endpoint and an MLflow pull URL reach only
public addresses unless the operator allows more (DEEPREPO_OUTBOUND_ALLOW).

Real HTTP servers on 127.0.0.1 / 127.0.0.2 stand in for internal services. Names are the one
thing replaced: no DNS server answering made-up names runs offline, so the tests swap
`outbound.resolve` (the single lookup the guard makes) for a table, and assert on which address
the connection really reached.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.urls import reverse

from deeprepo_client.formats.mlflow_server import pull
from deeprepo_client.records import Problem
from deeprepo_web import outbound
from deeprepo_web.judge.client import JudgeCallFailed, chat
from deeprepo_web.judge.services import JudgeError, endpoint_save

ANSWER = {"choices": [{"message": {"content": '{"answer": "yes", "explanation": "ok"}'}}]}


class Server:
    """Answers a chat completion, or redirects to `redirect_to`; records each request's Host header."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.hosts: list[str] = []
        self.redirect_to = ""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.hosts.append(self.headers.get("Host", ""))
                if outer.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", outer.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = json.dumps(ANSWER).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer  # noqa: N815

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def server2() -> Iterator[Server]:
    s = Server("127.0.0.2")
    yield s
    s.close()


def _chat(url: str) -> Any:
    return chat(base_url=url, api_key="", model="m", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/v1", "http://10.0.0.8/v1", "http://172.16.3.4/v1", "http://192.168.1.1/v1",
    "http://169.254.169.254/latest/meta-data", "http://0.0.0.0:8000/", "http://100.64.0.1/",
    "http://[::1]/v1", "http://[fe80::1]/v1", "http://[fc00::5]/v1", "http://[::ffff:127.0.0.1]/v1",
    "http://[::ffff:169.254.169.254]/", "http://[2002:7f00:1::]/", "http://[fd00:ec2::254]/",
])
def test_internal_addresses_are_refused(url, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    with pytest.raises(outbound.OutboundRefused, match="DEEPREPO_OUTBOUND_ALLOW"):
        outbound.url_check(url)


@pytest.mark.parametrize("url", ["https://8.8.8.8/v1", "http://[2606:4700:4700::1111]/v1"])
def test_public_addresses_pass(url, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    outbound.url_check(url)


def test_loopback_server_refused_by_default_allowed_by_the_operator(server, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    with pytest.raises(JudgeCallFailed, match="DEEPREPO_OUTBOUND_ALLOW") as info:
        _chat(server.url)
    assert info.value.permanent and server.hosts == []  # nothing was sent
    settings.DEEPREPO_OUTBOUND_ALLOW = "10.0.0.0/8, 127.0.0.1/32"
    assert _chat(server.url).answer is True and len(server.hosts) == 1


def test_saving_an_internal_endpoint_is_refused_with_the_field(client, team, server, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    with pytest.raises(JudgeError, match="base_url: .*127.0.0.1"):
        endpoint_save(project=team.project, base_url=server.url, model="m", api_key=None)
    client.force_login(team.owner)
    res = client.post(reverse("judge", args=["demo"]), {"base_url": "http://169.254.169.254/v1", "model": "m"})
    assert res.status_code == 400 and "DEEPREPO_OUTBOUND_ALLOW" in res.content.decode()
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.1"
    assert endpoint_save(project=team.project, base_url=server.url, model="m", api_key=None).base_url == server.url


def test_redirect_to_loopback_is_not_followed(server, server2, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.2/32"  # only the first server is allowed
    server2.redirect_to = f"{server.url}/chat/completions"
    with pytest.raises(JudgeCallFailed, match="127.0.0.1"):
        _chat(server2.url)
    assert len(server2.hosts) == 1 and server.hosts == []
    # A redirect to an allowed address is followed, through the same check.
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.0/8"
    assert _chat(server2.url).answer is True and len(server.hosts) == 1


def test_a_name_resolving_to_loopback_is_refused(server, settings, monkeypatch):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    with pytest.raises(outbound.OutboundRefused, match="judge.example is 127.0.0.1"):
        outbound.url_check(f"http://judge.example:{server.port}/v1")
    with pytest.raises(JudgeCallFailed, match="judge.example is 127.0.0.1"):
        _chat(f"http://judge.example:{server.port}/v1")
    assert server.hosts == []
    # A mixed answer (one public, one internal) is refused too, not raced.
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["8.8.8.8", "::1"])
    with pytest.raises(outbound.OutboundRefused, match="::1"):
        outbound.url_check("http://judge.example/v1")


def test_the_checked_address_is_the_one_connected_to(server2, settings, monkeypatch):
    """DNS rebinding: the name answers an allowed address, then an internal one. Each request looks
    the name up once and connects to that answer, keeping the name in the Host header."""
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.2/32"
    answers = iter([["127.0.0.2"], ["127.0.0.1"]])
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return next(answers)

    monkeypatch.setattr(outbound, "resolve", rebinding)
    assert _chat(f"http://judge.example:{server2.port}/v1").answer is True
    assert lookups == ["judge.example"] and server2.hosts == [f"judge.example:{server2.port}"]
    with pytest.raises(JudgeCallFailed, match="judge.example is 127.0.0.1"):
        _chat(f"http://judge.example:{server2.port}/v1")
    assert len(server2.hosts) == 1


def test_an_allowed_host_name(settings, monkeypatch):
    settings.DEEPREPO_OUTBOUND_ALLOW = "vllm.lab.internal"
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["10.1.2.3"])
    outbound.url_check("http://vllm.lab.internal:8000/v1")
    with pytest.raises(outbound.OutboundRefused):
        outbound.url_check("http://other.lab.internal:8000/v1")


def test_mlflow_pull_through_the_guard_is_refused(server, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    events = list(pull(f"mlflow://127.0.0.1:{server.port}", "exp", retry_seconds=1,
                       transport=outbound.PinnedTransport()))
    assert len(events) == 1 and isinstance(events[0], Problem) and events[0].fatal
    assert "DEEPREPO_OUTBOUND_ALLOW" in events[0].message and server.hosts == []


def test_https_keeps_the_name_for_sni_and_the_certificate(tmp_path, settings, monkeypatch):
    """The socket goes to the pinned address, but TLS is spoken to the name: the server's
    certificate (made here for judge.example only) verifies, and the SNI it receives is the name."""
    import ssl
    import subprocess

    import httpx

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=judge.example", "-addext", "subjectAltName=DNS:judge.example",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server = Server("127.0.0.2")
    seen: list[str | None] = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    tls.sni_callback = lambda sock, name, ctx: seen.append(name)  # type: ignore[assignment,misc]
    server.httpd.socket = tls.wrap_socket(server.httpd.socket, server_side=True)
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.2/32"
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.2"])
    trust = ssl.create_default_context(cafile=str(cert))
    try:
        with httpx.Client(transport=outbound.PinnedTransport(verify=trust)) as http:
            res = http.get(f"https://judge.example:{server.port}/v1")
        assert res.status_code == 200 and seen == ["judge.example"]
        assert server.hosts == [f"judge.example:{server.port}"]
    finally:
        server.close()
