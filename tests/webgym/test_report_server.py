"""webgym/report_server.py: the reports folder over HTTP, read-only and only that folder, and the URL a
report gets there."""

from __future__ import annotations

import http.client

import httpx

from webgym.report_server import ReportSite, report_server


def _raw_get(url: str, path: str) -> int:
    """Status of GET `path` sent as it is (httpx would normalise `..` away before sending)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", path)
    return connection.getresponse().status


def test_the_folder_is_served_read_only_and_nothing_outside_it(tmp_path):
    (tmp_path / "secret.txt").write_text("not a report")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "report.html").write_text("<h1>WebGym report</h1>")
    (reports / "escape.txt").symlink_to(tmp_path / "secret.txt")
    with report_server(reports, 0) as site:
        page = httpx.get(site.url_of(reports / "report.html"))
        assert page.status_code == 200 and "WebGym report" in page.text
        assert page.headers["cache-control"] == "no-store"  # a rewritten report shows on reload
        assert _raw_get(site.url, "/../secret.txt") == 404
        assert _raw_get(site.url, "/%2e%2e/secret.txt") == 404
        assert httpx.get(site.url + "escape.txt").status_code == 404
        assert httpx.put(site.url + "report.html", content=b"x").status_code == 501
        assert httpx.delete(site.url + "report.html").status_code == 501
    assert (reports / "report.html").read_text() == "<h1>WebGym report</h1>"


def test_a_missing_folder_is_created_and_listed(tmp_path):
    with report_server(tmp_path / "reports", 0) as site:
        assert site.url.startswith("http://127.0.0.1:") and site.url.endswith("/")
        assert httpx.get(site.url).status_code == 200


def test_urls_of_paths_inside_and_outside_the_folder_and_the_environment_round_trip(tmp_path, monkeypatch):
    site = ReportSite(tmp_path / "reports", "http://127.0.0.1:4201/")
    assert site.url_of(tmp_path / "reports" / "a b" / "report.html") == "http://127.0.0.1:4201/a%20b/report.html"
    assert site.url_of(tmp_path / "reports" / ".." / "report.html") is None
    assert site.url_of(tmp_path / "other" / "report.html") is None
    for key, value in site.env().items():
        monkeypatch.setenv(key, value)
    assert ReportSite.from_env() == site
    monkeypatch.delenv("WEBGYM_REPORTS_URL")
    assert ReportSite.from_env() is None
