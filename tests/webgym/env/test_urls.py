"""URLs read the way Chromium reads them, and the URL policy judged on that reading."""

from __future__ import annotations

import ipaddress

import pytest

from webgym.env.safety import UrlPolicy, non_public
from webgym.env.urls import BadUrl, read_url

LOOPBACK_FORMS = [
    "http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f.1/",
    "http://127.0.0.1./", "HTTP://127.0.0.1/", "http://%31%32%37.0.0.1/", "http://１２７．０．０．１/",
    "http://good.com@127.0.0.1/", "http://good.com:pw@127.0.0.1/", "http://127.0.0.1\\@good.com/",
    " http://127.0.0.1/ ", "http://127.0.\t0.1/", "http:127.0.0.1", "http:\\\\127.0.0.1/",
]


@pytest.mark.parametrize("url", LOOPBACK_FORMS)
def test_every_way_of_writing_loopback_reads_as_127_0_0_1(url):
    assert read_url(url).host == "127.0.0.1"
    assert "127.0.0.1 is a loopback address" in UrlPolicy().refusal(url)


@pytest.mark.parametrize(("url", "host", "port"), [
    ("http://[::1]:8080/x", "[::1]", 8080),
    ("http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]", 80),
    ("HTTPS://Shop-A.TEST./cart?q=1#top", "shop-a.test", 443),
    ("http://bücher.de/", "xn--bcher-kva.de", 80),
    ("ws://example.com:81/socket", "example.com", 81),
])
def test_hosts_and_ports_are_canonical(url, host, port):
    assert (read_url(url).host, read_url(url).port) == (host, port)


@pytest.mark.parametrize("url", ["no scheme", "http://256.1/", "http://1.2.3.4.5/", "http://09.1/", "http://a:99999/",
                                 "http://a:8o/", "http://[::1/", "http://[fe80::1%25eth0]/", "http://a%2fb/",
                                 "http://"])
def test_what_a_browser_would_not_load_is_a_bad_url(url):
    with pytest.raises(BadUrl):
        read_url(url)
    assert "would not read it as a URL" in UrlPolicy().refusal(url)


@pytest.mark.parametrize(("url", "scheme"), [
    ("FILE:///etc/passwd", "file"), ("ChRoMe://settings", "chrome"), ("DATA:text/html,x", "data"),
    ("JavaScript:alert(1)", "javascript"), ("view-source:http://a.test/", "view-source"),
    ("about:config", "about"), ("about:BLANK", "about"), ("chrome-extension://abc/x.html", "chrome-extension"),
    ("ftp://example.com/", "ftp"), ("ws://example.com/", "ws"), ("blob:http://a.test/1", "blob"),
])
def test_only_http_https_and_about_blank_are_allowed(url, scheme):
    assert UrlPolicy().refusal(url) == f"the {scheme}: scheme is not allowed"
    assert UrlPolicy().refusal("about:blank") is None and UrlPolicy().refusal("ABOUT:blank") is None


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.2", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"),
    ("240.0.0.1", "private"), ("::7f00:1", "reserved"), ("100.64.0.1", "non-global"), ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fc00::1", "private"), ("ff02::1", "multicast"), ("::ffff:169.254.169.254", "link-local"),
    ("2002:7f00:1::", "loopback"), ("::", "unspecified"), ("93.184.216.34", None), ("2606:4700::1111", None),
])
def test_address_kinds(address, kind):
    assert non_public(ipaddress.ip_address(address)) == kind


def test_policy_rules():
    offline = UrlPolicy(site_hosts=frozenset({"shop-a.test"}), allow_public=False)
    assert offline.refusal("http://shop-a.test/cart") is None and offline.refusal("http://SHOP-A.test.:9/x") is None
    assert offline.is_site("http://x@shop-a.test:8123/") and offline.is_site("http://shop-a.test\\@evil.com/")
    assert not offline.is_site("http://evil.com\\@shop-a.test/") and not offline.is_site("http://shop-a.test.evil.com/")
    assert "not one of the configured sites" in offline.refusal("https://example.com/")
    assert "local host name" in UrlPolicy().refusal("http://printer.local/")
    assert "local host name" in UrlPolicy().refusal("http://LOCALHOST./")
    assert UrlPolicy().refusal("https://example.com/") is None


def test_allowed_hosts_may_be_private_or_loopback_but_never_link_local():
    policy = UrlPolicy(allowed_hosts=frozenset({"10.0.0.8:7770", "intranet.example", "127.0.0.1:8080"}),
                       allow_public=False)
    assert policy.refusal("http://10.0.0.8:7770/admin") is None and policy.refusal("http://0xa000008:7770/") is None
    assert "private" in policy.refusal("http://10.0.0.8:22/")
    assert policy.address_refusal("http://intranet.example/", "10.0.0.9") is None
    assert policy.address_refusal("http://127.0.0.1:8080/", "127.0.0.1") is None
    assert "link-local" in policy.address_refusal("http://intranet.example/", "169.254.169.254")
    public = UrlPolicy()
    assert "rebind.example resolves to 127.0.0.1, which is a loopback" in public.address_refusal(
        "http://rebind.example/", "127.0.0.1")
    assert "link-local" in public.address_refusal("http://meta.example/", "fe80::1%eth0")
    assert public.address_refusal("http://example.com/", "93.184.216.34") is None
