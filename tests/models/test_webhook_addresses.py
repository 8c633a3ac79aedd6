"""Where outbound webhooks may go (models.webhooks.addresses), with the operator's settings off and
on, and the refusal at delivery time (api.webhook_delivery) of a host that is not public."""
from __future__ import annotations

import pytest

from api.webhook_delivery import post
from models.kernel.errors import InvalidInput
from models.webhooks import addresses
from models.webhooks.addresses import check_url, refusal
from tests.support.webhook_receiver import Receiver


@pytest.fixture(autouse=True)
def default_policy():
    addresses.configure(allow_http=False, allow_private=False)
    yield
    addresses.configure(allow_http=False, allow_private=False)


@pytest.mark.parametrize("address, reason", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("192.168.1.1", "private"), ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("fd00:ec2::254", "private"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"),
    ("100.64.0.1", "reserved"), ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
])
def test_addresses_that_are_not_public_are_refused_saying_why(address, reason):
    assert reason in refusal(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert refusal(address) is None


@pytest.mark.parametrize("url", ["https://127.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest",
                                 "https://localhost:8443/hook", "https://api.localhost/hook", "https://10.0.0.5/",
                                 "https://[::ffff:192.168.0.1]/", "https://localhost./hook"])
def test_registration_refuses_hosts_that_are_not_public_unless_the_operator_allows_them(url):
    with pytest.raises(InvalidInput, match="WEBHOOK_ALLOW_PRIVATE_ADDRESSES"):
        check_url(url)
    addresses.configure(allow_http=False, allow_private=True)
    assert check_url(url) == url


def test_http_only_when_the_operator_allows_it():
    with pytest.raises(InvalidInput, match="WEBHOOK_ALLOW_HTTP"):
        check_url("http://hooks.example.com/calls")
    addresses.configure(allow_http=True, allow_private=False)
    assert check_url("http://hooks.example.com/calls") == "http://hooks.example.com/calls"
    assert check_url("https://hooks.example.com/calls") == "https://hooks.example.com/calls"


def test_a_name_that_does_not_resolve_yet_is_accepted_and_checked_at_delivery():
    assert check_url("https://receiver-not-set-up-yet.invalid/hook")
    outcome = post("https://receiver-not-set-up-yet.invalid/hook", "evt", {"type": "ping"}, ["whsec_" + "A" * 43],
                   timeout_s=5)
    assert not outcome.succeeded and outcome.status_code is None and "does not resolve" in outcome.error


@pytest.mark.parametrize("url, stored", [
    ("https://hooks.example.com/calls?x=1", "https://hooks.example.com/calls?x=1"),
    ("https://Hooks.EXAMPLE.com/calls", "https://hooks.example.com/calls"),
    ("https://bücher.example/ü/calls?name=José&k=%20", "https://xn--bcher-kva.example/%C3%BC/calls?name=Jos%C3%A9&k=%20"),
    ("https://8.8.8.8:8443/a b", "https://8.8.8.8:8443/a%20b"),
    ("https://[2606:4700:4700::1111]/hook", "https://[2606:4700:4700::1111]/hook"),
])
def test_a_url_is_stored_as_it_goes_on_the_wire_in_ascii(url, stored):
    assert check_url(url) == stored


def test_a_url_that_utf8_cannot_encode_is_refused_naming_the_field():
    with pytest.raises(InvalidInput, match="^baseUrl must be text that UTF-8 can encode"):
        check_url("https://hooks.example.com/\ud800", "baseUrl")


def test_an_international_url_is_delivered_to_its_ascii_form():
    receiver = Receiver()
    try:
        addresses.configure(allow_http=True, allow_private=True)
        url = check_url(receiver.url + "/é?q=ü")
        assert post(url, "evt", {"type": "ping"}, ["whsec_" + "A" * 43], timeout_s=5).succeeded
        receiver.wait_for(1)
    finally:
        receiver.close()


def test_delivery_refuses_a_private_address_at_send_time_and_sends_nothing():
    receiver = Receiver()
    try:
        # Registered while private addresses were allowed; the operator has since turned it off.
        addresses.configure(allow_http=True, allow_private=False)
        for url in (receiver.url, receiver.url.replace("127.0.0.1", "localhost")):
            outcome = post(url, "evt", {"type": "ping"}, ["whsec_" + "A" * 43], timeout_s=5)
            assert not outcome.succeeded and outcome.error.startswith("Not sent:") and "loopback" in outcome.error
            assert "/hook" not in outcome.error  # no path or query (a token may be there) in the log
        assert receiver.received == []
        addresses.configure(allow_http=True, allow_private=True)
        assert post(receiver.url, "evt", {"type": "ping"}, ["whsec_" + "A" * 43], timeout_s=5).succeeded
        # The receiver records a request after its answer is written, so the sender may be first to know.
        receiver.wait_for(1)
        assert len(receiver.received) == 1
    finally:
        receiver.close()


# 127.0.0.1 and 10.0.0.1 inside the IPv6 forms that carry an IPv4 address; the Teredo ones
# (2001:0:<server>:<flags>:<port>:<client, inverted>) carry a public server and a private client,
# and the reverse.
@pytest.mark.parametrize("address, reason", [
    ("::127.0.0.1", "IPv4-compatible"), ("::10.0.0.1", "IPv4-compatible"), ("::8.8.8.8", "IPv4-compatible"),
    ("64:ff9b::7f00:1", "loopback"), ("64:ff9b::a00:1", "private"), ("64:ff9b::a9fe:a9fe", "link-local"),
    ("64:ff9b:1::a00:1", "local-use NAT64"), ("64:ff9b:1:ffff::808:808", "local-use NAT64"),
    ("2002:7f00:1::", "loopback"), ("2002:a00:1:1::1", "private"), ("2002:a9fe:a9fe::", "link-local"),
    ("2001:0:808:808:0:0:80ff:fffe", "loopback"), ("2001:0:808:808:0:0:f5ff:fffe", "private"),
    ("2001:0:7f00:1:0:0:f7f7:f7f7", "loopback"),
])
def test_ipv6_addresses_are_judged_by_the_ipv4_they_carry(address, reason):
    assert reason in refusal(address), address


@pytest.mark.parametrize("address", [
    "64:ff9b::808:808", "64:ff9b::5db8:d70e", "2002:808:808::", "2002:808:808:1::1",
    "2001:0:808:808:0:0:f7f7:fbfb",  # Teredo: server 8.8.8.8, client 8.8.4.4
    "::ffff:8.8.8.8",
])
def test_ipv6_addresses_that_carry_a_public_ipv4_pass(address):
    assert refusal(address) is None


@pytest.mark.parametrize("url", ["https://[::127.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://[2002:7f00:1::]/",
                                 "https://[2001:0:808:808::80ff:fffe]/", "https://[64:ff9b:1::a00:1]/"])
def test_registration_refuses_ipv6_forms_that_carry_a_private_ipv4(url):
    with pytest.raises(InvalidInput, match="WEBHOOK_ALLOW_PRIVATE_ADDRESSES"):
        check_url(url)
    assert check_url(url.replace("7f00:1", "808:808").replace("80ff:fffe", "f7f7:fbfb")
                     .replace("::127.0.0.1", "::ffff:8.8.8.8").replace("64:ff9b:1::a00:1", "64:ff9b::808:808"))


def test_delivery_refuses_an_ipv6_form_that_carries_a_private_ipv4_and_sends_nothing():
    for url in ("https://[64:ff9b::7f00:1]/hook", "https://[2002:7f00:1::]/hook", "https://[::127.0.0.1]/hook"):
        outcome = post(url, "evt", {"type": "ping"}, ["whsec_" + "A" * 43], timeout_s=5)
        assert not outcome.succeeded and outcome.status_code is None, url
        assert outcome.error.startswith("Not sent:") and "public addresses only" in outcome.error, outcome.error
