"""The report in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Opens the file as file://, filters, opens a dialogue, takes a screenshot; and checks that script in
recorded text (CRS and user text, annotations, titles, ids, judge explanations, the manifest) is shown
as text and never runs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crsim.report import html as report_html
from crsim.report.html import build_report, write_report
from crsim.report.titles import open_run
from report_support import PAYLOAD, poison, small_run, study_folder

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Built before the browser starts (Playwright's sync API holds the thread's event loop): the
    report of a real run of abus (patient and impatient) × popular with a handful of users, and of a
    copy with script in its records (item titles too)."""
    folder = tmp_path_factory.mktemp("browser")
    run_dir = small_run(folder / "run", users=5, patiences=(3, 1))
    write_report(build_report([open_run(run_dir)]), folder / "report.html")
    shutil.copytree(run_dir, folder / "poisoned")
    poisoned_id = poison(folder / "poisoned")
    titles = report_html.item_titles("movies")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_html, "item_titles", lambda domain: {k: PAYLOAD for k in titles})
        write_report(build_report([open_run(folder / "poisoned")]), folder / "poisoned.html")
    (folder / "poisoned-id").write_text(poisoned_id, encoding="utf-8")
    two_crss = small_run(folder / "two-crss", users=8, crss=["popular", "retrieval"])
    write_report(build_report([open_run(two_crss)]), folder / "compare.html")
    # two runs of 2 CRSs x 3 simulators: twelve pairings in one report
    many = [
        small_run(folder / name, users=6, crss=["popular", "retrieval"], patiences=(3, 1, 2))
        for name in ("six-a", "six-b")
    ]
    write_report(build_report([open_run(run) for run in many]), folder / "many.html")
    study = study_folder(folder / "study", users=8)
    write_report(build_report([open_run(study)]), folder / "studies.html")
    return {
        "studies": folder / "studies.html",
        "many": folder / "many.html",
        "compare": folder / "compare.html",
        "clean": folder / "report.html",
        "poisoned": folder / "poisoned.html",
        "id": folder / "poisoned-id",
    }


def _open(browser: Any, path: Path, width: int = 1400) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on(
        "request",
        lambda request: problems.append(f"request {request.url}") if request.url.startswith("http") else None,
    )
    page.goto(path.as_uri())
    return page, problems


def test_filter_and_open_a_dialogue(reports: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    page, problems = _open(browser, reports["clean"])
    assert page.text_content("#count") == "10 of 10 dialogues"
    assert page.locator(".dialogue-row").count() == 10
    page.select_option("#filter-simulator", "abus-p1")
    assert page.text_content("#count") == "5 of 10 dialogues"
    assert page.locator(".dialogue-row").count() == 5
    page.select_option("#filter-metric", "Turns")
    page.fill("#filter-min", "100")
    assert page.text_content("#count") == "0 of 10 dialogues"
    page.fill("#filter-min", "")
    page.locator(".dialogue-row").first.click()
    detail = page.locator("#detail")
    assert detail.locator(".utt").count() >= 3
    assert "abus-p1" in (detail.text_content() or "")
    assert detail.locator(".utt.user .acts").count() >= 1  # acts shown
    assert detail.locator(".utt.crs ol.items li").count() >= 1  # recommended items with titles
    assert "(19" in (detail.locator(".utt.crs ol.items li").first.text_content() or "") or "(20" in (
        detail.locator(".utt.crs ol.items li").first.text_content() or ""
    )
    assert page.locator("#plot-curves img").evaluate("img => img.naturalWidth") > 0
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert problems == []


def test_script_in_recorded_text_never_runs(reports: dict[str, Path], browser: Any) -> None:
    dialogue_id = reports["id"].read_text(encoding="utf-8")
    page, problems = _open(browser, reports["poisoned"])
    page.select_option("#filter-crs", PAYLOAD)
    assert page.text_content("#count") == "1 of 10 dialogues"
    page.locator(".dialogue-row").first.click()
    detail = page.locator("#detail")
    text = detail.text_content() or ""
    assert dialogue_id in text
    assert f"crs says {PAYLOAD}" in text and f"user says {PAYLOAD}" in text
    assert f"judge says {PAYLOAD}" in text
    turn_one = detail.locator(".expl", has_text="turn judge says")
    assert turn_one.count() == 1 and "crsarena7/relevance · turn 1" in (turn_one.text_content() or "")
    assert f"id {PAYLOAD}" in text  # a recommended item id
    # a mentioned item id, shown apart from the recommended ones
    assert f"mentioned, not recommendedid mentioned {PAYLOAD}" in text
    # the CRS's buttons (label and payload) and the one the user picked, as text
    assert f"optionsbutton {PAYLOAD} → payload {PAYLOAD}" in text
    assert f"picked option picked {PAYLOAD}" in text
    assert detail.locator(".utt.crs .options .option").count() >= 1
    page.locator("#detail details").last.click()  # metadata
    manifest = page.locator("details.manifest pre").first.text_content() or ""
    assert json.dumps(PAYLOAD) in manifest
    # titles: any dialogue whose CRS recommended a known item
    page.select_option("#filter-crs", "")
    page.locator(".dialogue-row").nth(1).click()
    items = page.locator("#detail ol.items li")
    assert items.count() >= 1 and PAYLOAD in (items.first.text_content() or "")
    # The poisoned CRS id is also compared (one user met both CRSs): shown as text in the tables.
    assert PAYLOAD in (page.locator("#compare table.ranking").first.text_content() or "")
    assert page.evaluate("window.pwned") is None
    assert page.locator("#detail img, #detail script, #compare img, #compare script").count() == 0
    assert problems == []


def test_comparisons_section_shows_rankings_and_pairs(reports: dict[str, Path], browser: Any) -> None:
    page, problems = _open(browser, reports["compare"])
    page.click("header nav a[href='#compare']")
    blocks = page.locator("#compare .comparison")
    assert blocks.count() == 8  # one simulator × the eight default metrics
    success = blocks.filter(has_text=re.compile("Success · abus"))  # not "Task success"
    assert success.count() == 1 and success.is_visible()
    ranking = success.locator("table.ranking tbody tr")
    assert sorted(ranking.all_inner_texts()[i].split("\t")[1] for i in range(2)) == ["popular", "retrieval"]
    cells = success.locator("table.pairs tbody tr").first.locator("td").all_inner_texts()
    assert cells[:2] == ["popular", "retrieval"] and cells[6] == "exact McNemar" and cells[7] == "8"
    assert problems == []


#: In the page: each figure's boxes (legends, axes, lines, tick labels; fractions of the image) placed
#: on the image as Chromium lays it out, in CSS pixels (the figures `selector` finds).
PLACED = """(selector) => [...document.querySelectorAll(selector)].map((figure) => {
  const img = figure.querySelector("img");
  const r = img.getBoundingClientRect();
  const x = (f) => r.left + f * r.width;
  const y = (f) => r.top + f * r.height;
  const place = (b) => [x(b[0]), y(b[1]), x(b[2]), y(b[3])];
  const boxes = JSON.parse(figure.dataset.boxes);
  const placed = {};
  for (const [kind, list] of Object.entries(boxes)) placed[kind] = list.map(place);
  return {id: figure.id, img: [r.left, r.top, r.right, r.bottom], scale: r.width / img.naturalWidth,
          caption: figure.querySelector("figcaption").textContent, ...placed};
})"""
PLACED_BOXES = f"() => ({PLACED})('#plots figure')"


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_twelve_pairings_results_fit_without_a_horizontal_scroll(
    reports: dict[str, Path], browser: Any
) -> None:
    """At a laptop's 1280 pixels every results column, the judge's too, is on screen."""
    page, problems = _open(browser, reports["many"], width=1280)
    assert page.locator("table.counts tbody tr").count() == 12
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for table in page.locator("#results table").all():
        assert table.evaluate("t => t.getBoundingClientRect().right <= window.innerWidth")
        assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth")
    headers = page.locator("#results table.results th").all_inner_texts()
    assert {"Success", "Turns", "PC@10"} <= set(headers)
    assert problems == []


def test_plots_keep_legends_off_lines_and_labels_whole(reports: dict[str, Path], browser: Any) -> None:
    page, problems = _open(browser, reports["many"], width=1280)
    figures = {f["id"]: f for f in page.evaluate(PLACED_BOXES)}
    assert {"plot-curves", "plot-proportions", "plot-distributions", "plot-ranks"} <= set(figures)
    for figure in figures.values():
        for legend in figure["legends"]:
            crossed = [box for box in figure["lines"] + figure["axes"] if _overlap(legend, box)]
            assert crossed == [], f"{figure['id']}: the legend covers {len(crossed)} lines or panels"
        left, top, right, bottom = figure["img"]
        for label in figure["labels"]:  # every tick label inside the picture, so none is cut
            assert (
                left - 1 <= label[0]
                and label[2] <= right + 1
                and top - 1 <= label[1]
                and label[3] <= bottom + 1
            )
        assert right <= 1280 and figure["scale"] >= 0.8, f"{figure['id']} shrunk to {figure['scale']:.2f}"
        assert "n " in figure["caption"] or "n per" in figure["caption"] or "k of n" in figure["caption"]
    # the pairings are named once, horizontally, along the side of the proportion plot: one label each
    assert len(figures["plot-proportions"]["labels"]) >= 12
    assert problems == []


def test_a_pairing_keeps_its_colour_everywhere(reports: dict[str, Path], browser: Any) -> None:
    page, problems = _open(browser, reports["many"], width=1280)
    swatch = "row => getComputedStyle(row.querySelector('.swatch')).backgroundColor"
    counts = page.locator("table.counts tbody tr").evaluate_all(f"rows => rows.map({swatch})")
    assert len(set(counts)) == 12  # one colour per pairing
    names = page.locator("table.results").first.locator("td.pairing").all_inner_texts()
    colours = (
        page.locator("table.results").first.locator("tbody tr").evaluate_all(f"rows => rows.map({swatch})")
    )
    assert colours == counts and len(names) == 12 and names[0] == "popular × abus [six-a]"
    assert problems == []


def test_printed_report_hides_controls_and_starts_sections_on_new_pages(
    reports: dict[str, Path], browser: Any, tmp_path: Path
) -> None:
    page, problems = _open(browser, reports["compare"])
    page.emulate_media(media="print")
    style = "([selector, property]) => getComputedStyle(document.querySelector(selector))[property]"
    assert page.evaluate(style, ["header nav", "display"]) == "none"
    assert page.evaluate(style, ["#browser", "display"]) == "none"
    assert page.evaluate(style, ["#runs", "breakBefore"]) != "page"  # the first section follows the title
    assert page.evaluate(style, ["#results", "breakBefore"]) == "page"
    assert page.evaluate(style, ["table.results", "breakInside"]) == "avoid"
    pdf = tmp_path / "report.pdf"
    page.pdf(path=str(pdf))
    assert pdf.read_bytes().startswith(b"%PDF")
    assert not problems


def test_study_sections_show_their_tables_and_figures_whole(reports: dict[str, Path], browser: Any) -> None:
    """A sensitivity study folder that also holds a fidelity study: both sections are reachable from
    the navigation, their tables and figures are on screen at a laptop's 1280 pixels without a
    horizontal scroll, and the figures keep their legends off the lines and their labels whole."""
    page, problems = _open(browser, reports["studies"], width=1280)
    for name in ("sensitivity", "fidelity"):
        page.click(f"header nav a[href='#{name}']")
        section = page.locator(f"#{name}")
        assert section.is_visible()
        table = section.locator("table").first
        assert table.is_visible() and table.locator("tbody tr").count() >= 1
        image = section.locator("figure.study-figure img").first
        image.scroll_into_view_if_needed()
        assert image.is_visible() and image.evaluate("img => img.naturalWidth") > 0
    for table in page.locator("#sensitivity table, #fidelity table").all():
        assert table.evaluate("t => t.getBoundingClientRect().right <= window.innerWidth")
        assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    cells = page.locator("#sensitivity table.sensitivity tbody tr").first.locator("td").all_inner_texts()
    assert cells[0] == "random" and cells[1] == "Success"
    assert page.locator("#fidelity table.fidelity").count() == 1  # one simulator: abus
    figures = page.evaluate(PLACED, "figure.study-figure")
    assert len(figures) == 3  # sensitivity; fidelity distances and values
    for figure in figures:
        for legend in figure["legends"]:
            crossed = [box for box in figure["lines"] + figure["axes"] if _overlap(legend, box)]
            assert crossed == [], f"the legend covers {len(crossed)} lines or panels"
        left, top, right, bottom = figure["img"]
        for label in figure["labels"]:
            assert (
                left - 1 <= label[0]
                and label[2] <= right + 1
                and top - 1 <= label[1]
                and label[3] <= bottom + 1
            )
        assert right <= 1280 and figure["scale"] >= 0.8, f"shrunk to {figure['scale']:.2f}"
        assert "n = " in figure["caption"]
    assert problems == []
