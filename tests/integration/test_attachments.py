"""File attachments end to end (docs/attachments.md): the REST API's presigned POST, the upload
itself to the moto server's bucket, the chat's checks before a turn, the model's answer, the
history and the owner's download link; all behind the local gateway under uvicorn.

moto does not enforce a POST policy's conditions (AWS does: tests/unit/test_attachment_store.py
reads the policy written), so these tests also show what the chat refuses when a client ignores
the policy: a larger file, other bytes, another type.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import boto3
import httpx
import pytest

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, SampleUpstream, chat_app, user_issuer
from local.gateway import LocalGateway
from local.sample_files import PDF, PNG
from local.servers import serve
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.attachments import ATTACHMENTS_OFF, NAME_META, attached_key, upload_key
from sstools_agent.domain.audit import AuditKind
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api
from tests.support.standin_gaps import FILES_AS_DATA

FILES = "/api/assistant/files"


def big_csv(rows: int) -> bytes:
    lines = ["order_id,customer,amount,created_at"]
    lines += [
        f"{n},customer {n % 97},{n * 3 % 1000}.50,2026-11-{n % 28 + 1:02d}" for n in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def post_form(grant: dict[str, Any], name: str, data: bytes) -> None:
    form = grant["upload"]
    posted = httpx.post(form["url"], data=form["fields"], files={"file": (name, data)}, timeout=30)
    assert posted.status_code == 204, posted.text


@dataclass
class User:
    headers: dict[str, str]
    subject: str


@dataclass
class Origin:
    url: str
    stack: AgentStack
    store: DynamoDBConversationStore
    audit: MemoryAuditSink

    def user(self, role: str = "engineer") -> User:
        subject = f"{role}-{uuid.uuid4().hex[:10]}"
        token = user_issuer(self.stack.settings).issue(subject, 600, {"roles": [role]}).token
        return User({"Authorization": f"Bearer {token}"}, subject)

    def ask_upload(self, user: User, name: str, content_type: str, size: int) -> httpx.Response:
        body = {"name": name, "content_type": content_type, "size": size}
        return httpx.post(f"{self.url}{FILES}", headers=user.headers, json=body, timeout=30)

    def upload(
        self, user: User, name: str, data: bytes, content_type: str, *, declared_size: int = 0
    ) -> str:
        """What the page does: ask for an upload, then POST the form to the bucket itself."""
        asked = self.ask_upload(user, name, content_type, declared_size or len(data))
        assert asked.status_code == 201, asked.text
        grant = asked.json()
        post_form(grant, name, data)
        return str(grant["file_id"])

    def grant(self, user: User, name: str, content_type: str, size: int) -> dict[str, Any]:
        asked = self.ask_upload(user, name, content_type, size)
        assert asked.status_code == 201, asked.text
        return dict(asked.json())

    def chat(
        self, user: User, message: str, file_ids: list[str], **extra: Any
    ) -> tuple[int, list[dict[str, Any]]]:
        body = {"message": message, "files": [{"file_id": f} for f in file_ids], **extra}
        with httpx.stream(
            "POST", f"{self.url}/api/agent/chat", headers=user.headers, json=body, timeout=60
        ) as response:
            if response.status_code != 200:
                return response.status_code, [json.loads(response.read())]
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        return 200, [json.loads(line[6:])["metadata"] for line in lines]

    def conversations(self, user: User) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/api/assistant/conversations", headers=user.headers)
        return list(answer.json()["items"])

    def s3(self) -> Any:
        settings = self.stack.settings
        return boto3.client(
            "s3", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
        )


@pytest.fixture(scope="module")
def origin(stack_settings: Settings, upstream_server: SampleUpstream) -> Iterator[Origin]:
    settings = stack_settings.model_copy(update={"upstream_base_url": upstream_server.base_url})
    stack = AgentStack(settings, upstream_server)
    audit = MemoryAuditSink()
    api = create_api_app(build_api(settings))
    chat, store, _ = chat_app(stack, StandinChatModel(), audit=audit)
    gateway = LocalGateway({"ChatFunction": chat, "ApiFunction": api})
    with serve(gateway, lifespan="on") as url:
        yield Origin(url, stack, store, audit)


def answer_of(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("token", "") for e in events if e.get("type") == "stream_token")


def refused(origin: Origin, user: User, file_ids: list[str], reason: str) -> str:
    """Sends the files; asserts the 422, its audit record, and that nothing was written."""
    before = len(origin.audit.records)
    status, (body,) = origin.chat(user, "посмотри файл", file_ids)
    assert status == 422, body
    assert body["code"] == "INVALID_ATTACHMENT"
    records = [r for r in origin.audit.records[before:] if r.kind is AuditKind.ATTACHMENT_REJECTED]
    assert [(r.user, r.outcome) for r in records] == [(user.subject, reason)]
    assert origin.conversations(user) == []
    return str(body["detail"])


# --- The whole flow -------------------------------------------------------------------------


def test_a_csv_uploaded_through_the_presigned_post_is_answered_kept_and_downloadable(
    origin: Origin,
):
    user = origin.user()
    data = big_csv(50_000)
    file_id = origin.upload(user, "orders.csv", data, "text/csv")

    status, events = origin.chat(user, "сколько строк в файле?", [file_id])
    assert status == 200
    assert "orders.csv" in answer_of(events)  # its rows in words: a stand-in gap, FILES_AS_DATA

    end = events[-1]
    history = httpx.get(
        f"{origin.url}/api/assistant/history",
        params={"conversation_id": end["conversation_id"]},
        headers=user.headers,
    ).json()["items"]
    assert history[0]["attachments"] == [
        {"file_id": file_id, "name": "orders.csv", "content_type": "text/csv", "size": len(data)}
    ]
    # Kept with the conversation, no longer where uploads expire
    s3, bucket = origin.s3(), origin.stack.settings.attachment_bucket
    assert s3.head_object(Bucket=bucket, Key=attached_key(user.subject, file_id))
    with pytest.raises(s3.exceptions.ClientError):
        s3.head_object(Bucket=bucket, Key=upload_key(user.subject, file_id))

    link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=user.headers)
    assert link.status_code == 200
    downloaded = httpx.get(link.json()["url"], timeout=30)
    assert downloaded.content == data
    assert downloaded.headers["content-disposition"] == ("attachment; filename*=UTF-8''orders.csv")

    # Nobody else gets a link
    other = origin.user()
    refused_link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=other.headers)
    assert (refused_link.status_code, refused_link.json()["code"]) == (404, "NOT_FOUND")


def test_what_the_model_read_of_a_csv_fits_its_budget_with_the_row_count(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "orders.csv", big_csv(50_000), "text/csv")
    status, events = origin.chat(user, "какие в нём столбцы?", [file_id])
    assert status == 200
    assert "order_id" in answer_of(events)  # its columns in words: a gap, FILES_AS_DATA
    thread = events[-1]["conversation_id"]
    agent = origin.stack.agent(StandinChatModel())
    state = agent.graph.get_state({"configurable": {"thread_id": thread}})
    question = state.values["messages"][0]
    assert len(question.text) < 4000 + 200  # the block's budget, and the user's words
    assert '"row_count": 50000' in question.text
    assert "order_id" in question.text


@FILES_AS_DATA
def test_a_message_of_files_only_gets_an_acknowledgement_and_a_title(origin: Origin):
    user = origin.user()
    json_id = origin.upload(user, "config.json", b'{"a": 1, "b": [1, 2]}', "application/json")
    sql_id = origin.upload(user, "fix.sql", b"DELETE FROM orders WHERE id = 1;", "application/sql")
    png_id = origin.upload(user, "chart.png", PNG, "image/png")
    pdf_id = origin.upload(user, "report.pdf", PDF, "application/pdf")
    status, events = origin.chat(user, "", [json_id, sql_id, png_id, pdf_id])
    assert status == 200, events
    answer = answer_of(events)
    assert "JSON-объект, 2 ключа: a, b" in answer
    assert "Я его не выполнял" in answer
    assert "«chart.png»" in answer
    assert "«report.pdf»" in answer
    (conversation,) = origin.conversations(user)
    assert conversation["title"] == "config.json fix.sql chart.png report.pdf"


def test_a_file_attached_before_is_sent_again_as_it_was_checked(origin: Origin):
    """A grant may be posted again until it expires (in AWS too): what a message kept does not
    change, and the next message that attaches the file reads what was kept."""
    user = origin.user()
    first = big_csv(3)
    grant = origin.grant(user, "orders.csv", "text/csv", 10_000)
    post_form(grant, "orders.csv", first)
    file_id = grant["file_id"]
    status, _ = origin.chat(user, "сколько строк в файле?", [file_id])
    assert status == 200

    post_form(grant, "orders.csv", b"<html><script>alert(1)</script></html>")
    status, events = origin.chat(user, "сколько строк в файле?", [file_id])
    assert status == 200, events
    assert "orders.csv" in answer_of(events)
    link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=user.headers).json()
    assert httpx.get(link["url"], timeout=30).content == first


def test_no_cache_keeps_a_history_a_download_link_or_a_downloaded_file(origin: Origin):
    """A shared cache or the browser's disk must not keep what one user reads (docs/rest-api.md):
    the history, the link (a bearer URL for 5 minutes) and the file S3 serves say `no-store`."""
    # Given a user's file, attached to a message
    user = origin.user()
    file_id = origin.upload(user, "orders.csv", big_csv(3), "text/csv")
    status, events = origin.chat(user, "сколько строк в файле?", [file_id])
    assert status == 200
    # When the page reads the history and the download link, and the browser follows the link
    history = httpx.get(
        f"{origin.url}/api/assistant/history",
        params={"conversation_id": events[-1]["conversation_id"]},
        headers=user.headers,
    )
    link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=user.headers)
    downloaded = httpx.get(link.json()["url"], timeout=30)
    # Then each answer forbids storing it, and the API's own answers forbid sniffing too
    for answer in (history, link):
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert downloaded.status_code == 200
    assert downloaded.headers["cache-control"] == "no-store"


def test_a_name_of_200_cyrillic_characters_is_uploaded_kept_and_downloaded_under_it(
    origin: Origin,
):
    # Given a name at the limit in a script of 2 bytes a character (and 6 percent-encoded)
    user = origin.user()
    name = ("Ежемесячный отчёт по заказам, " * 7)[:196] + ".csv"
    assert len(name) == 200
    # When it is uploaded through the presigned POST, attached and downloaded
    file_id = origin.upload(user, name, big_csv(3), "text/csv")
    status, events = origin.chat(user, "сколько строк в файле?", [file_id])
    assert status == 200, events
    history = httpx.get(
        f"{origin.url}/api/assistant/history",
        params={"conversation_id": events[-1]["conversation_id"]},
        headers=user.headers,
    ).json()["items"]
    link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=user.headers).json()
    downloaded = httpx.get(link["url"], timeout=30)
    # Then the history and the download name it exactly
    assert history[0]["attachments"][0]["name"] == name
    assert downloaded.headers["content-disposition"] == (
        f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    )
    # And one character more is refused with the limit and the name's length
    refused = origin.ask_upload(user, name + "я", "text/csv", 10)
    assert refused.status_code == 422
    assert refused.json()["detail"] == (
        f"Имя файла «{name[:24]}…{(name + 'я')[-16:]}» длиннее 200 символов (в нём 201): "
        "сократите его."
    )


def test_a_file_kept_before_names_read_as_they_were_written_then(origin: Origin):
    # Given a file kept when names were percent-encoded metadata
    user = origin.user()
    file_id = uuid.uuid4().hex
    origin.s3().put_object(
        Bucket=origin.stack.settings.attachment_bucket,
        Key=attached_key(user.subject, file_id),
        Body=b"a,b\n1,2\n",
        ContentType="text/csv",
        Metadata={NAME_META: quote("отчёт за май.csv", safe="")},
    )
    # When its owner downloads it, or attaches it again
    link = httpx.get(f"{origin.url}{FILES}/{file_id}/download", headers=user.headers).json()
    downloaded = httpx.get(link["url"], timeout=30)
    status, events = origin.chat(user, "сколько строк в файле?", [file_id])
    # Then it keeps its name
    assert downloaded.headers["content-disposition"] == (
        f"attachment; filename*=UTF-8''{quote('отчёт за май.csv', safe='')}"
    )
    assert status == 200, events
    (conversation,) = origin.conversations(user)
    history = httpx.get(
        f"{origin.url}/api/assistant/history",
        params={"conversation_id": conversation["id"]},
        headers=user.headers,
    ).json()["items"]
    assert history[0]["attachments"][0]["name"] == "отчёт за май.csv"


# --- Refusals: nothing is written -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content_type", "size", "says"),
    [
        ("page.html", "text/html", 100, "нельзя приложить"),
        ("big.csv", "text/csv", 10 * 1024 * 1024 + 1, "больше 10 МБ"),
        ("empty.csv", "text/csv", 0, "пуст"),
        ("", "text/csv", 10, None),
    ],
)
def test_an_upload_not_allowed_is_refused_before_any_url(
    origin: Origin, name: str, content_type: str, size: int, says: str | None
):
    answer = origin.ask_upload(origin.user(), name, content_type, size)
    assert answer.status_code == 422
    if says is not None:
        assert answer.json()["code"] == "INVALID_ATTACHMENT"
        assert says in answer.json()["detail"]


def test_the_limits_the_page_reads_are_the_ones_enforced(origin: Origin):
    limits = httpx.get(f"{origin.url}{FILES}/limits", headers=origin.user().headers)
    assert limits.status_code == 200
    assert limits.json() == {
        "max_bytes": 10 * 1024 * 1024,
        "max_files": 5,
        "max_name_chars": 200,
        "content_types": [
            "application/json",
            "application/pdf",
            "application/sql",
            "image/jpeg",
            "image/png",
            "text/csv",
            "text/markdown",
            "text/plain",
        ],
    }
    assert httpx.get(f"{origin.url}{FILES}/limits").status_code == 401


def test_a_deployment_with_other_limits_tells_them_and_keeps_to_them(stack_settings: Settings):
    # Given a deployment that allows 2 MB files, 3 to a message
    settings = stack_settings.model_copy(
        update={"attachment_max_bytes": 2 * 1024 * 1024, "attachment_max_files": 3}
    )
    token = user_issuer(settings).issue("engineer-limits", 600, {"roles": ["engineer"]}).token
    headers = {"Authorization": f"Bearer {token}"}
    with serve(create_api_app(build_api(settings))) as url:
        limits = httpx.get(f"{url}{FILES}/limits", headers=headers).json()
        body = {"name": "big.csv", "content_type": "text/csv", "size": 3 * 1024 * 1024}
        too_big = httpx.post(f"{url}{FILES}", headers=headers, json=body)
        body["size"] = 2 * 1024 * 1024
        allowed = httpx.post(f"{url}{FILES}", headers=headers, json=body)
    # Then the page is told those limits, and the API keeps to them
    assert (limits["max_bytes"], limits["max_files"]) == (2 * 1024 * 1024, 3)
    assert too_big.status_code == 422
    assert too_big.json()["detail"] == "Файл «big.csv» больше 2 МБ: его размер 3 МБ."
    assert allowed.status_code == 201


def test_a_deployment_that_takes_no_files_grants_no_upload(stack_settings: Settings):
    settings = stack_settings.model_copy(update={"attachment_max_files": 0})
    token = user_issuer(settings).issue("engineer-off", 600, {"roles": ["engineer"]}).token
    headers = {"Authorization": f"Bearer {token}"}
    with serve(create_api_app(build_api(settings))) as url:
        limits = httpx.get(f"{url}{FILES}/limits", headers=headers).json()
        body = {"name": "a.csv", "content_type": "text/csv", "size": 10}
        asked = httpx.post(f"{url}{FILES}", headers=headers, json=body)
    assert limits["max_files"] == 0
    assert (asked.status_code, asked.json()["detail"]) == (422, ATTACHMENTS_OFF)


def test_a_png_named_csv_is_refused(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "orders.csv", PNG, "text/csv")
    assert "по сигнатуре это image/png" in refused(origin, user, [file_id], "type_mismatch")


def test_html_declared_as_text_is_refused(origin: Origin):
    user = origin.user()
    page = b"<!DOCTYPE html><html><script>alert(1)</script></html>"
    file_id = origin.upload(user, "notes.txt", page, "text/plain")
    assert "HTML" in refused(origin, user, [file_id], "type_mismatch")


def test_a_pdf_that_is_not_one_is_refused(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "report.pdf", b"just text", "application/pdf")
    refused(origin, user, [file_id], "type_mismatch")


def test_a_file_larger_than_it_was_declared_is_refused(origin: Origin):
    """AWS refuses the upload by its policy; a store that let it through is still caught."""
    user = origin.user()
    limit = origin.stack.settings.attachment_max_bytes
    file_id = origin.upload(user, "big.txt", b"x" * (limit + 1), "text/plain", declared_size=10)
    assert "больше 10 МБ" in refused(origin, user, [file_id], "too_large")


def test_another_users_file_is_not_found(origin: Origin):
    owner, thief = origin.user(), origin.user()
    file_id = origin.upload(owner, "orders.csv", big_csv(3), "text/csv")
    assert "не найден" in refused(origin, thief, [file_id], "not_found")


def test_a_deleted_or_expired_file_is_not_found(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "orders.csv", big_csv(3), "text/csv")
    bucket = origin.stack.settings.attachment_bucket
    origin.s3().delete_object(Bucket=bucket, Key=upload_key(user.subject, file_id))
    refused(origin, user, [file_id], "not_found")


def test_six_files_in_one_message_are_refused(origin: Origin):
    user = origin.user()
    ids = [origin.upload(user, f"f{n}.txt", b"text", "text/plain") for n in range(6)]
    assert "не больше 5 файлов" in refused(origin, user, ids, "too_many_files")


def test_files_on_an_answer_to_a_card_are_a_validation_error(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "f.txt", b"text", "text/plain")
    body = {
        "action": "confirm",
        "conversation_id": "c1",
        "confirmation_id": "x",
        "files": [{"file_id": file_id}],
    }
    answer = httpx.post(f"{origin.url}/api/agent/chat", headers=user.headers, json=body, timeout=30)
    assert answer.status_code == 422
    assert answer.json()["code"] == "VALIDATION_ERROR"


# --- AG-UI: a binary part names an uploaded file ----------------------------------------------


def ag_ui_run(origin: Origin, user: User, parts: list[dict[str, Any]]) -> httpx.Response:
    body = {
        "threadId": uuid.uuid4().hex,
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": parts}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    return httpx.post(f"{origin.url}/api/agent/ag-ui", headers=user.headers, json=body, timeout=60)


def test_an_ag_ui_run_attaches_a_file_by_its_id(origin: Origin):
    user = origin.user()
    file_id = origin.upload(user, "orders.csv", big_csv(1234), "text/csv")
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "сколько строк в файле?"},
        {"type": "document", "source": {"type": "url", "value": f"{FILES}/{file_id}"}},
    ]
    answer = ag_ui_run(origin, user, parts)
    assert answer.status_code == 200
    deltas = [
        json.loads(line[6:]).get("delta", "")
        for line in answer.text.splitlines()
        if line.startswith("data: ")
    ]
    assert "orders.csv" in "".join(deltas)


def test_an_ag_ui_run_with_inline_bytes_or_another_url_is_refused(origin: Origin):
    user = origin.user()
    inline: dict[str, Any] = {"type": "data", "value": "YSxiCjEsMgo=", "mimeType": "text/csv"}
    elsewhere: dict[str, Any] = {"type": "url", "value": "http://169.254.169.254/latest/meta-data/"}
    for source in (inline, elsewhere):
        answer = ag_ui_run(origin, user, [{"type": "document", "source": source}])
        assert answer.status_code == 422
        assert "inline data and other urls are not taken" in answer.text
    assert origin.conversations(user) == []
