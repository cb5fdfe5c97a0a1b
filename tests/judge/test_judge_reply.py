"""Reading a judge's reply, and the endpoint's key stored encrypted and never shown."""

from __future__ import annotations

import pytest
from django.urls import reverse

from deeprepo_web.judge.client import parse_reply
from deeprepo_web.judge.services import JudgeError, endpoint_save


@pytest.mark.parametrize(("text", "answer", "cites"), [
    ('{"answer": "yes", "explanation": "x", "citations": [3, 1, "2"]}', True, [1, 2, 3]),
    ('Sure! ```json\n{"answer": "No", "explanation": "x", "citations": []}\n```', False, []),
    ("I think yes", None, []),
    ('{"answer": "maybe"}', None, []),
])
def test_parse_reply(text, answer, cites):
    reply = parse_reply(text)
    assert (reply.answer, reply.citations) == (answer, cites)


def test_key_is_encrypted_and_never_rendered(client, team):
    endpoint = endpoint_save(project=team.project, base_url="http://8.8.8.8:9/v1", model="m",
                             api_key="sk-very-secret-123")
    endpoint.refresh_from_db()
    assert "sk-very-secret" not in endpoint.key_token and endpoint.api_key() == "sk-very-secret-123"
    client.force_login(team.owner)
    html = client.get(reverse("judge", args=["demo"])).content.decode()
    assert "sk-very-secret" not in html and "API key: stored" in html
    # Saving without a key keeps it.
    client.post(reverse("judge", args=["demo"]), {"base_url": "http://8.8.8.8:9/v1", "model": "m2"})
    endpoint.refresh_from_db()
    assert endpoint.model == "m2" and endpoint.api_key() == "sk-very-secret-123"


def test_bad_endpoint_is_refused_with_the_field(team):
    with pytest.raises(JudgeError, match="base_url"):
        endpoint_save(project=team.project, base_url="file:///etc/passwd", model="m", api_key=None)


def test_viewer_and_outsider_cannot_write(client, team):
    client.force_login(team.viewer)
    assert client.post(reverse("judge", args=["demo"]), {"base_url": "http://x/v1", "model": "m"}).status_code == 404
    client.force_login(team.outsider)
    assert client.get(reverse("judge", args=["demo"])).status_code == 404
