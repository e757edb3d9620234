"""File attachments from the page (docs/attachments.md): a file chosen in the composer goes
straight to the bucket with the presigned POST, the message carries it, the agent answers about
it, the history shows it after a reload and gives the same bytes back; the page's own limits
refuse a sixth file in the user's words before anything is uploaded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, expect

from local.browser import AgentPage, PageStack

Tabs = Callable[[PageStack, str], AgentPage]
ORDERS_CSV = b"order_id,customer,amount\n1,alpha,10.50\n2,beta,20.00\n3,gamma,7.25\n"


def orders_csv(tmp_path: Path, name: str = "orders.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(ORDERS_CSV)
    return path


def expect_uploaded(tab: AgentPage, count: int) -> Locator:
    """The composer's chips: `count` of them, each done (its bytes are in the bucket)."""
    chips = tab.by("attachment-chip")
    expect(chips).to_have_count(count)
    for n in range(count):
        expect(chips.nth(n)).to_have_attribute("data-state", "done", timeout=15_000)
    return chips


def test_a_csv_attached_in_the_composer_is_answered_and_downloadable_after_a_reload(
    site: PageStack, tabs: Tabs, tmp_path: Path
):
    # Given a user on the page with a small CSV
    tab = tabs(site, site.token("analyst")).open()
    # When they choose it with the paperclip's file input
    expect(tab.by("attach-button")).to_have_accessible_name("Приложить файл")
    tab.by("attach-input").set_input_files(str(orders_csv(tmp_path)))
    # Then its chip reaches done (the bytes are in the bucket), and it can be sent
    chip = tab.by("attachment-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("orders.csv")
    expect(chip).to_have_attribute("data-state", "done", timeout=15_000)
    expect(tab.by("attachment-progress")).to_have_count(0)
    expect(tab.by("attachment-error")).to_have_count(0)
    tab.screenshot("attachment-uploaded")

    # When they ask about it
    tab.send("сколько строк в файле?")
    tab.wait_answered()
    # Then the answer is about the file (its rows in words: a stand-in gap, FILES_AS_DATA), and
    # the sent message shows its file at once
    expect(tab.by("error-card")).to_have_count(0)
    assert "orders.csv" in tab.last_answer(), tab.last_answer()
    expect(tab.by("message-user").last.get_by_test_id("message-attachment")).to_contain_text(
        "orders.csv"
    )
    expect(tab.by("attachment-chip")).to_have_count(0)  # the composer is empty again
    tab.screenshot("attachment-answered")

    # When the page is reloaded, the history shows the file with the message
    tab.page.reload()
    tab.wait_ready()
    stored = tab.by("message-user").last.get_by_test_id("message-attachment")
    expect(stored).to_have_count(1)
    expect(stored).to_contain_text("orders.csv")
    # and a click on it downloads exactly the bytes that were attached
    with tab.page.expect_download() as download_info:
        stored.click()
    download = download_info.value
    assert Path(download.path()).read_bytes() == ORDERS_CSV
    expect(tab.by("error-card")).to_have_count(0)
    tab.screenshot("attachment-history")


def test_a_sixth_file_is_refused_in_the_users_words_and_nothing_of_it_uploads(
    site: PageStack, tabs: Tabs, tmp_path: Path
):
    # Given a user who chooses six files at once
    tab = tabs(site, site.token("analyst")).open()
    files = [str(orders_csv(tmp_path, f"part-{n}.csv")) for n in range(1, 7)]
    tab.by("attach-input").set_input_files(files)
    # Then five become chips and upload; the sixth is refused, by name, before any upload
    chips = expect_uploaded(tab, 5)
    refusal = tab.by("attachment-error")
    expect(refusal).to_have_count(1)
    expect(refusal).to_contain_text("Можно приложить не больше 5 файлов")
    expect(refusal).to_contain_text("part-6.csv")
    expect(chips.filter(has_text="part-6.csv")).to_have_count(0)
    tab.screenshot("attachment-sixth-refused")
    # and removing one chip makes room again
    chips.first.get_by_test_id("attachment-remove").click()
    expect(chips).to_have_count(4)
    expect(tab.by("attachment-error")).to_have_count(0)


def test_a_deployments_own_limits_are_the_ones_the_page_refuses_by(
    sites: Callable[[str], PageStack], tabs: Tabs, tmp_path: Path
):
    # Given a deployment that takes files of 2 KB at most, 2 to a message
    site = sites("small_files")
    tab = tabs(site, site.token("analyst")).open()
    big = tmp_path / "big.csv"
    big.write_bytes(ORDERS_CSV * 45)  # 3015 bytes
    files = [orders_csv(tmp_path, "part-1.csv"), big, orders_csv(tmp_path, "part-2.csv")]
    files.append(orders_csv(tmp_path, "part-3.csv"))
    # When the user chooses four files, one of them over the limit
    tab.by("attach-input").set_input_files([str(path) for path in files])
    # Then the page refuses by the deployment's limits, not its defaults, in the server's words
    expect_uploaded(tab, 2)
    refusals = tab.by("attachment-error")
    expect(refusals).to_have_count(2)
    expect(refusals.nth(0)).to_have_text("Файл «big.csv» больше 2 КБ: его размер 3 КБ.")
    expect(refusals.nth(1)).to_have_text(
        "Можно приложить не больше 2 файлов к сообщению: «part-3.csv» не приложен."
    )
    tab.screenshot("attachment-deployment-limits")
