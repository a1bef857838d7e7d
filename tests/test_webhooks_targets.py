"""Webhook targets against IANA's special-purpose address registries: each
block the table names is refused with its reason, the addresses around
them stay allowed, an IPv6 address carrying an IPv4 one is judged by it,
and a refusal never says what a name resolves to."""

import pytest

from tests.test_webhooks_api import register
from webhooks.targets import BLOCKS, TargetRefused, is_public, refusal, resolve


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("fec0::1", "site-local"),
        ("192.0.0.8", "IETF protocol assignment"),
        ("192.0.0.170", "IETF protocol assignment"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("192.88.99.1", "6to4 relay"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("5f00::1", "segment-routing"),
        ("100::1", "discard-only"),
        ("100:0:0:1::1", "dummy"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("ff02::1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1%eth0", "link-local"),
        ("2001:2::1", "IETF protocol assignment"),
        # IPv6 carrying a private IPv4 address: judged by what it carries.
        ("64:ff9b::c000:8", "NAT64 address (64:ff9b::/96) carrying an IETF protocol assignment"),
        ("64:ff9b::a00:1", "NAT64 address (64:ff9b::/96) carrying a private address"),
        ("::ffff:100.64.0.1", "IPv4-mapped address (::ffff:0:0/96) carrying a carrier-grade NAT"),
        ("2002:c612:1::1", "6to4 address (2002::/16) carrying a benchmarking"),
        # Teredo: server 65.54.227.120, client 10.0.0.1 (stored inverted).
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo address (2001::/32) carrying a private address"),
    ],
)
def test_special_purpose_addresses_are_refused_with_their_reason(address, reason):
    assert reason in (refusal(address) or "")
    assert not is_public(address)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "93.184.215.14",
        "100.63.255.255",  # just below 100.64.0.0/10
        "100.128.0.0",  # just above
        "198.17.255.255",
        "198.20.0.0",
        "192.0.1.1",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",  # NAT64 to a public address
        "2002:808:808::1",  # 6to4 of a public address
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, client 8.8.8.8
    ],
)
def test_the_addresses_around_them_stay_public(address):
    assert refusal(address) is None


def test_every_block_of_the_table_is_refused_at_its_first_and_last_address():
    for block in BLOCKS:
        if block.carries is None:
            for address in (block.network[0], block.network[-1]):
                assert refusal(str(address)), address


def test_the_refusal_of_a_name_does_not_say_what_it_resolves_to(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(TargetRefused) as refused:
        resolve("http://localhost:8000/hook")
    message = str(refused.value)
    assert "public addresses" in message
    for leak in ("127.0.0.1", "::1", "loopback"):
        assert leak not in message


def test_an_address_written_in_the_url_is_refused_with_its_reason(alice_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    for url, reason in [("http://[fec0::1]/", "site-local"), ("http://192.0.0.8/", "IETF protocol assignment")]:
        response = register(alice_client, url=url)
        assert response.status_code == 400, url
        assert reason in str(response.json()["url"])
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    assert register(alice_client, url="http://[fec0::1]/").status_code == 201
