"""The presigned POST's policy, as S3 enforces it in AWS (moto does not: it accepts any form)."""

from __future__ import annotations

import asyncio
import base64
import json
from urllib.parse import parse_qs, urlparse

import pytest

from sstools_agent.adapters.attachment_store import S3AttachmentStore
from sstools_agent.domain.attachments import upload_key


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def test_the_policy_fixes_the_key_the_type_the_name_and_the_length():
    store = S3AttachmentStore("sstools-agent-prod-attachments-1", region="eu-central-1")
    key = upload_key("user-1", "a" * 32)
    upload = asyncio.run(store.presigned_upload(key, "text/csv", 1834, "отчёт.csv", 600))
    assert upload.url == "https://sstools-agent-prod-attachments-1.s3.eu-central-1.amazonaws.com/"
    policy = json.loads(base64.b64decode(upload.fields["policy"]))
    conditions = policy["conditions"]
    assert ["eq", "$key", key] in conditions
    assert ["eq", "$Content-Type", "text/csv"] in conditions
    # The name as UTF-8 in base64 (RFC 2047): 200 characters of any script fit S3's metadata
    assert ["eq", "$x-amz-meta-name", "=?UTF-8?B?0L7RgtGH0ZHRgi5jc3Y=?="] in conditions
    assert upload.fields["x-amz-meta-name"] == "=?UTF-8?B?0L7RgtGH0ZHRgi5jc3Y=?="
    assert ["content-length-range", 1, 1834] in conditions
    assert {"bucket": "sstools-agent-prod-attachments-1"} in conditions
    # The key comes from the owner and the id alone: the file's name is only metadata
    assert "csv" not in key
    assert upload.fields["key"] == key


def test_the_download_link_serves_an_attachment_of_the_checked_type():
    store = S3AttachmentStore("bucket-1", region="eu-central-1")
    url = asyncio.run(store.download_url("attachments/x/y", "a b.csv", "text/csv", 300))
    query = parse_qs(urlparse(url).query)
    assert query["response-content-disposition"] == ["attachment; filename*=UTF-8''a%20b.csv"]
    assert query["response-content-type"] == ["text/csv"]
    assert query["response-cache-control"] == ["no-store"]
    assert query["X-Amz-Expires"] == ["300"]
